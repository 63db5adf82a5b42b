"""memorylab and the real reference framework writing one agent's memory at the same time (see
``mixed_writers.py``): memorylab loses none of its messages, ever; how many of the reference's
own appends survive memorylab's compactions is printed (its target is 0 lost as well)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_writers import run, swarms_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        swarms_python() is None,
        reason="needs the reference framework: set $MEMORYLAB_SWARMS_PYTHON to a Python with "
        "swarms==16.0.3 (.ci/run makes one)",
    ),
]


@pytest.mark.parametrize("reference_compacts", [False, True], ids=["ref-appends", "ref-compacts"])
def test_both_writers_at_once(tmp_path: Path, reference_compacts: bool) -> None:
    outcome = run(tmp_path, count=400, every=20, reference_every=100 if reference_compacts else 0)
    print(f"\nmixed writers ({'reference compacts too' if reference_compacts else 'reference appends'}): {outcome}")
    assert outcome.memorylab_lost == 0 and outcome.memorylab_duplicated == 0
    assert outcome.unparseable == 0
    assert outcome.reference_duplicated == 0
