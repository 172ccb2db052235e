"""n-step returns for one environment.

Each step (s_t, a_t, r_t) waits until n rewards are known, then becomes the
transition (s_t, a_t, sum_{i<n} gamma^i r_{t+i}, s_{t+n}, done=0, gamma^n).
When the episode ends, every waiting step is emitted with the rewards up to
the end: on termination with done=1 (no bootstrap), on truncation (time
limit) with done=0 and the last observation to bootstrap from.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from agent.rl.transition import Transitions


class NStep(NamedTuple):
    """One n-step transition."""

    obs: np.ndarray
    action: int
    ret: float
    next_obs: np.ndarray
    done: bool
    discount: float


class NStepAccumulator:
    """Turns one environment's steps into n-step transitions."""

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError("n must be >= 1")
        self.n = n
        self.gamma = gamma
        self._steps: deque[tuple[np.ndarray, int, float]] = deque()

    def __len__(self) -> int:
        return len(self._steps)

    def push(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
             terminated: bool, truncated: bool) -> list[NStep]:
        """Record one step; returns the transitions that became complete."""
        self._steps.append((obs, action, float(reward)))
        if terminated or truncated:
            out = [self._emit(i, next_obs, terminated) for i in range(len(self._steps))]
            self._steps.clear()
            return out
        if len(self._steps) == self.n:
            out = [self._emit(0, next_obs, False)]
            self._steps.popleft()
            return out
        return []

    def _emit(self, i: int, next_obs: np.ndarray, done: bool) -> NStep:
        ret = 0.0
        for k, (_, _, reward) in enumerate(list(self._steps)[i:]):
            ret += self.gamma ** k * reward
        obs, action, _ = self._steps[i]
        return NStep(obs, action, ret, next_obs, done, self.gamma ** (len(self._steps) - i))


def _observations(obs: list[np.ndarray]) -> np.ndarray:
    """Observations stacked: float ones as float32, frames (uint8) as they are."""
    out = np.asarray(obs)
    return out.astype(np.float32) if out.dtype.kind != "u" else out


def stack(steps: list[NStep], actor: int) -> Transitions:
    """Stack n-step transitions from one actor into arrays."""
    return Transitions(
        obs=_observations([s.obs for s in steps]),
        action=np.asarray([s.action for s in steps], dtype=np.int64),
        ret=np.asarray([s.ret for s in steps], dtype=np.float32),
        next_obs=_observations([s.next_obs for s in steps]),
        done=np.asarray([s.done for s in steps], dtype=np.float32),
        discount=np.asarray([s.discount for s in steps], dtype=np.float32),
        actor=np.full(len(steps), actor, dtype=np.int64),
    )
