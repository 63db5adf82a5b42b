"""Fixtures of the analysis tests (the helpers live in analysis_support.py, a uniquely named
module: several test folders have a conftest.py, so "from conftest import" is ambiguous)."""

from analysis_support import own_workspace, reference_workspace, snapshot_tree

__all__ = ["own_workspace", "reference_workspace", "snapshot_tree"]
