"""The payload layout of one n-step transition in the 16 float32 payload words.

For an observation of D floats (CartPole: D = 4, at most D = 5):

    words 0 .. D-1       obs            s_t
    words D .. 2D-1      next_obs       s_{t+k} (k = steps actually summed, <= n)
    word  2D             action         a_t (as a float)
    word  2D+1           ret            sum_{i<k} gamma^i r_{t+i}
    word  2D+2           done           1.0 if the episode terminated within the k steps
    word  2D+3           discount       gamma^k (bootstrap factor when not done)
    word  2D+4           actor          actor id
    remaining words      0

Target: ret + discount * (1 - done) * Q(next_obs). Truncated episodes keep
done = 0 and bootstrap from their last observation.

This module maps transitions to and from rows of float words; the rows become
wire payloads and come back from them in agent.contract.protocol (to_payloads,
decode_batch), the one place that handles payload bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent.contract.protocol import PAYLOAD_WORDS

EXTRA_WORDS = 5  # action, ret, done, discount, actor


@dataclass(frozen=True)
class Transitions:
    """A batch of n-step transitions as arrays (one row per transition)."""

    obs: np.ndarray        # (B, D) float32, or (B, C, H, W) uint8 frames (by reference)
    action: np.ndarray     # (B,) int64
    ret: np.ndarray        # (B,) float32
    next_obs: np.ndarray   # like obs
    done: np.ndarray       # (B,) float32, 1.0 = terminated
    discount: np.ndarray   # (B,) float32, gamma^k
    actor: np.ndarray      # (B,) int64

    def __len__(self) -> int:
        return int(self.action.shape[0])


def max_obs_dim() -> int:
    """Largest observation that fits: 2D + EXTRA_WORDS <= PAYLOAD_WORDS."""
    return (PAYLOAD_WORDS - EXTRA_WORDS) // 2


def encode(t: Transitions) -> np.ndarray:
    """Pack transitions into (B, PAYLOAD_WORDS) float32 rows."""
    d = t.obs.shape[1]
    if d > max_obs_dim():
        raise ValueError(f"observation of {d} floats does not fit (max {max_obs_dim()})")
    words = np.zeros((len(t), PAYLOAD_WORDS), dtype=np.float32)
    words[:, :d] = t.obs
    words[:, d:2 * d] = t.next_obs
    words[:, 2 * d:2 * d + EXTRA_WORDS] = np.stack(
        [t.action, t.ret, t.done, t.discount, t.actor], axis=1)
    return words


def decode(words: np.ndarray, obs_dim: int) -> Transitions:
    """Unpack (B, PAYLOAD_WORDS) float32 rows, e.g. SampleBatch.payload."""
    words = np.asarray(words, dtype=np.float32)
    d = obs_dim
    extra = words[:, 2 * d:2 * d + EXTRA_WORDS]
    return Transitions(
        obs=words[:, :d].copy(),
        action=extra[:, 0].astype(np.int64),
        ret=extra[:, 1].copy(),
        next_obs=words[:, d:2 * d].copy(),
        done=extra[:, 2].copy(),
        discount=extra[:, 3].copy(),
        actor=extra[:, 4].astype(np.int64),
    )
