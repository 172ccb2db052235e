"""The transition payload layout, round trip through the wire and a SampleBatch."""

from __future__ import annotations

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import ALLOW_ALL
from agent.replay.memory import ReplayService, TableConfig
from agent.rl import transition
from agent.rl.transition import Transitions


def sample_transitions(n: int, d: int = 4) -> Transitions:
    rng = np.random.default_rng(0)
    return Transitions(
        obs=rng.normal(size=(n, d)).astype(np.float32),
        action=rng.integers(0, 2, size=n),
        ret=rng.normal(size=n).astype(np.float32),
        next_obs=rng.normal(size=(n, d)).astype(np.float32),
        done=(rng.random(n) < 0.3).astype(np.float32),
        discount=np.full(n, 0.99 ** 3, dtype=np.float32),
        actor=rng.integers(0, 8, size=n),
    )


def assert_same(a: Transitions, b: Transitions) -> None:
    for name in ("obs", "action", "ret", "next_obs", "done", "discount", "actor"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_encode_decode_round_trip_is_exact() -> None:
    t = sample_transitions(10)
    words = transition.encode(t)
    assert words.shape == (10, protocol.PAYLOAD_WORDS)
    assert not words[:, 13:].any()  # CartPole uses words 0..12
    assert_same(transition.decode(words, 4), t)


def test_payloads_match_the_protocol_codec() -> None:
    t = sample_transitions(3)
    words = transition.encode(t)
    for row, raw in zip(words, protocol.to_payloads(words), strict=True):
        assert raw == protocol.floats_to_payload(row)


def test_decode_over_a_sample_batch_from_the_service() -> None:
    svc = ReplayService(seed=0)
    svc.configure(0, TableConfig(capacity=16))
    svc.allow("h", 0, ALLOW_ALL)
    t = sample_transitions(16)
    for raw in protocol.to_payloads(transition.encode(t)):
        svc.handle(protocol.insert(0, raw), "h")
    batch = protocol.decode_batch(svc.handle(protocol.sample(0, 32), "h"))
    got = transition.decode(batch.payload, 4)
    assert np.array_equal(got.obs, t.obs[batch.slot])
    assert np.array_equal(got.action, t.action[batch.slot])


def test_too_large_observations_are_refused() -> None:
    assert transition.max_obs_dim() == 5
    with pytest.raises(ValueError, match=r"observation of 6 floats does not fit \(max 5\)"):
        transition.encode(sample_transitions(1, d=6))
