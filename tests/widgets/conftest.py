"""Fixtures for the widget tests: a small workspace made by real compactions, a transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorylab.widgets._stepper import DEMO_SCRIPT, CompactionStepper


def _run(workspace: Path, agent: str, context_length: int) -> None:
    stepper = CompactionStepper(
        workspace=workspace, agent_name=agent, context_length=context_length
    )
    while not stepper.done:
        stepper.step()
    stepper.close()


@pytest.fixture
def workspace(isolated_workspace: Path) -> Path:
    """Two agents (alpha: 2 compactions, beta: 3), written by Conversation + ContextCompressor."""
    _run(isolated_workspace, "alpha", 600)
    _run(isolated_workspace, "beta", 500)
    return isolated_workspace


@pytest.fixture
def messages() -> list[dict[str, Any]]:
    """A transcript of 85 messages (the demo script five times)."""
    return [dict(m) for m in DEMO_SCRIPT] * 5
