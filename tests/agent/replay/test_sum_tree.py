"""SumTree against brute force, and the distributions it samples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from agent.replay.sum_tree import SumTree


def test_scalar_updates_keep_every_node_a_sum() -> None:
    rng = np.random.default_rng(0)
    tree = SumTree(64)
    leaves = np.zeros(64, dtype=np.int64)
    for _ in range(500):
        slot, value = int(rng.integers(64)), int(rng.integers(0, 2**32))
        assert tree.update(slot, value) == leaves.sum() - leaves[slot] + value
        leaves[slot] = value
    assert np.array_equal(tree.leaves(), leaves)
    assert tree.total == int(leaves.sum())


def test_vectorised_set_matches_scalar_and_last_write_wins() -> None:
    rng = np.random.default_rng(1)
    a, b = SumTree(32), SumTree(32)
    for _ in range(50):
        slots = rng.integers(0, 32, size=20)
        values = rng.integers(0, 2**32, size=20)
        a.set(slots, values)
        for s, v in zip(slots, values, strict=True):
            b.update(int(s), int(v))
        assert np.array_equal(a.leaves(), b.leaves())
        assert a.total == b.total == int(b.leaves().sum())


def test_find_matches_prefix_sums_and_skips_zero_leaves() -> None:
    rng = np.random.default_rng(2)
    tree = SumTree(16)
    values = rng.integers(0, 100, size=16)
    values[[0, 5, 15]] = 0
    tree.set(np.arange(16), values)
    r = np.arange(tree.total)
    expected = np.searchsorted(np.cumsum(values), r, side="right")
    assert np.array_equal(tree.find(r), expected)
    assert not np.isin(tree.find(r), [0, 5, 15]).any()


def test_proportional_sampling_is_exact_chi_square() -> None:
    rng = np.random.default_rng(3)
    tree = SumTree(16)
    priorities = np.array([1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 1, 2, 3, 5, 8, 13]) * 65536
    tree.set(np.arange(16), priorities)
    draws = tree.sample(40_000, rng)
    counts = np.bincount(draws, minlength=16)
    assert counts[8] == 0
    nz = priorities > 0
    expected = priorities[nz] / priorities.sum() * draws.size
    assert chisquare(counts[nz], expected).pvalue > 1e-3


def test_uniform_sampling_covers_the_occupied_prefix() -> None:
    rng = np.random.default_rng(4)
    tree = SumTree(16)
    draws = tree.sample_uniform(20_000, 10, rng)
    assert draws.min() >= 0 and draws.max() < 10
    assert chisquare(np.bincount(draws, minlength=10)).pvalue > 1e-3


def test_capacity_one_and_bad_arguments() -> None:
    tree = SumTree(1)
    assert tree.update(0, 5) == 5
    assert list(tree.find(np.array([0, 4]))) == [0, 0]
    with pytest.raises(ValueError, match="capacity must be a power of two, got 12"):
        SumTree(12)
    with pytest.raises(IndexError, match=r"slot 1 out of range 0\.\.0"):
        tree.update(1, 1)
    with pytest.raises(ValueError, match="priority 4294967296 is not a 32-bit value"):
        tree.update(0, 2**32)
    with pytest.raises(ValueError, match="cannot sample proportionally from an all-zero tree"):
        SumTree(4).sample(1, np.random.default_rng())
