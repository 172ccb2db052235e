"""Prioritized replay's importance-sampling weights, from what a SAMPLE reply
carries (each experience's priority, the table's total and size)."""

from __future__ import annotations

import numpy as np


def importance_weights(priority: np.ndarray, total: np.ndarray, size: np.ndarray,
                       beta: float) -> np.ndarray:
    """PER weights (N * P(i))^-beta normalised by the batch maximum, P(i) = p_i / total."""
    prob = np.maximum(np.asarray(priority, dtype=np.float64), 1e-12) / np.asarray(total)
    w = (np.asarray(size, dtype=np.float64) * prob) ** (-beta)
    return (w / w.max()).astype(np.float32)
