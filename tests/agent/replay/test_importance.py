"""Importance-sampling weights from a SAMPLE reply's priorities, total and size."""

from __future__ import annotations

import numpy as np
import pytest

from agent.replay.importance import importance_weights


def test_importance_weights_formula() -> None:
    priority = np.array([1.0, 2.0, 4.0])
    total = np.full(3, 10.0)
    size = np.full(3, 5)
    w = importance_weights(priority, total, size, beta=0.5)
    raw = (5 * priority / 10.0) ** -0.5
    assert np.allclose(w, raw / raw.max())
    assert w.max() == pytest.approx(1.0) and w[0] == pytest.approx(1.0)  # rarest: largest
    assert np.allclose(importance_weights(np.ones(4), np.full(4, 4.0), np.full(4, 4), 1.0), 1.0)
    beta1 = importance_weights(priority, total, size, beta=1.0)
    assert np.allclose(beta1, priority.min() / priority)
