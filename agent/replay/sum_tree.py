"""A numpy sum tree over integer (Q16.16) priorities, as the switch keeps it.

The tree is one flat int64 array of 2*capacity nodes: node 1 is the root,
node i has children 2i and 2i+1, and leaf s (the priority of slot s) sits at
capacity + s. Sums are exact integers (4096 leaves of at most 2**32 - 1 fit in
int64), so proportional sampling is exact: slot s is drawn with probability
leaf[s] / total. The descent is the one in p4src/v1model/sum_tree.p4: draw r in
[0, total) and at every level go left if r < left child, else subtract it and
go right.
"""

from __future__ import annotations

import numpy as np

from agent.contract.protocol import PRIORITY_MAX


class SumTree:
    """Fixed-capacity (power of two) sum tree with vectorised batch operations."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1 or capacity & (capacity - 1):
            raise ValueError(f"capacity must be a power of two, got {capacity}")
        self.capacity = capacity
        self.depth = capacity.bit_length() - 1
        self._tree = np.zeros(2 * capacity, dtype=np.int64)

    @property
    def total(self) -> int:
        """Sum of all leaf priorities."""
        return int(self._tree[1])

    def get(self, slots: np.ndarray | int) -> np.ndarray:
        """Leaf priorities of the given slots."""
        return self._tree[self.capacity + self._check_slots(slots)]

    def leaves(self) -> np.ndarray:
        """A copy of all leaf priorities."""
        return self._tree[self.capacity:].copy()

    def update(self, slot: int, priority: int) -> int:
        """Set one leaf (the per-packet path); returns the new total."""
        if not 0 <= slot < self.capacity:
            raise IndexError(f"slot {slot} out of range 0..{self.capacity - 1}")
        if not 0 <= priority <= PRIORITY_MAX:
            raise ValueError(f"priority {priority} is not a 32-bit value")
        node = self.capacity + slot
        tree = self._tree
        delta = priority - int(tree[node])
        while node:
            tree[node] += delta
            node >>= 1
        return int(tree[1])

    def set(self, slots: np.ndarray, priorities: np.ndarray) -> int:
        """Set many leaves at once (the last value wins for repeated slots)."""
        slots = self._check_slots(slots)
        values = np.asarray(priorities, dtype=np.int64).ravel()
        if values.shape != slots.shape:
            raise ValueError("slots and priorities must have the same length")
        if values.size and (values.min() < 0 or values.max() > PRIORITY_MAX):
            raise ValueError("priorities must be 32-bit values")
        if slots.size == 0:
            return self.total
        _, last = np.unique(slots[::-1], return_index=True)
        keep = slots.size - 1 - last
        nodes = self.capacity + slots[keep]
        self._tree[nodes] = values[keep]
        for _ in range(self.depth):
            nodes = np.unique(nodes >> 1)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
        return self.total

    def find(self, r: np.ndarray) -> np.ndarray:
        """Slots whose prefix-sum interval contains each r in [0, total)."""
        r = np.asarray(r, dtype=np.int64).ravel().copy()
        if r.size and (r.min() < 0 or r.max() >= self.total):
            raise ValueError("every r must be in [0, total)")
        node = np.ones(r.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = self._tree[2 * node]
            right = r >= left
            r -= left * right
            node = 2 * node + right
        return node - self.capacity

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n slots drawn independently with probability priority / total."""
        total = self.total
        if total == 0:
            raise ValueError("cannot sample proportionally from an all-zero tree")
        return self.find(rng.integers(0, total, size=n, dtype=np.int64))

    def sample_uniform(self, n: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """n slots drawn uniformly from 0..size-1 (the occupied ring prefix)."""
        if not 1 <= size <= self.capacity:
            raise ValueError(f"size must be 1..{self.capacity}, got {size}")
        return rng.integers(0, size, size=n, dtype=np.int64)

    def clear(self) -> None:
        """Set every leaf to zero."""
        self._tree[:] = 0

    def _check_slots(self, slots: np.ndarray | int) -> np.ndarray:
        arr = np.asarray(slots, dtype=np.int64).ravel()
        if arr.size and (arr.min() < 0 or arr.max() >= self.capacity):
            raise IndexError(f"slots must be in 0..{self.capacity - 1}")
        return arr
