"""Fixtures of every agent test."""

from __future__ import annotations

import pytest

from agent.rl.dqn import set_torch_threads


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """Tiny networks run much faster (and fairer to the build) on one thread."""
    set_torch_threads(1)
