"""Storage modes: transitions through slot payloads and back (float32, float16, by
reference with the Actor's store and the Learner's resolver on loopback), and the
checks that pick a mode for an environment."""

from __future__ import annotations

import re

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import SampleBatch
from agent.replay.payload_store import PayloadServer, PayloadStore
from agent.replay.reference import payloads_to_words
from agent.replay.resolver import FetchPolicy, PayloadResolver
from agent.rl import envs, storage
from agent.rl.envs import EnvInfo
from agent.rl.transition import Transitions

LOOPBACK = "127.0.0.1"
ACROBOT = EnvInfo("Acrobot-v1", (6,), np.dtype(np.float32), 3)
FRAMES = EnvInfo("ALE/Breakout-v5", (4, 84, 84), np.dtype(np.uint8), 4)


def transitions(info: EnvInfo, n: int, seed: int = 0) -> Transitions:
    rng = np.random.default_rng(seed)
    if info.obs_dtype == np.uint8:
        obs = rng.integers(0, 256, (n, *info.obs_shape), dtype=np.uint8)
        nxt = rng.integers(0, 256, (n, *info.obs_shape), dtype=np.uint8)
    else:
        obs = rng.normal(0, 5, (n, *info.obs_shape)).astype(np.float32)
        nxt = rng.normal(0, 5, (n, *info.obs_shape)).astype(np.float32)
    return Transitions(obs=obs, action=rng.integers(0, info.n_actions, n),
                       ret=rng.normal(size=n).astype(np.float32), next_obs=nxt,
                       done=(rng.random(n) < 0.3).astype(np.float32),
                       discount=np.full(n, 0.99 ** 3, dtype=np.float32),
                       actor=np.full(n, 2, dtype=np.int64))


def batch_of(payloads: list[bytes]) -> SampleBatch:
    """A SampleBatch as the client returns it, carrying these slot payloads."""
    n = len(payloads)
    return SampleBatch(index=np.arange(n, dtype=np.uint8), slot=np.arange(n, dtype=np.uint32),
                       stamp=np.arange(1, n + 1, dtype=np.uint32), priority=np.ones(n),
                       total=np.full(n, float(n)), size=np.full(n, n, dtype=np.uint32),
                       payload=payloads_to_words(payloads))


def test_float16_keeps_each_value_within_half_precision_and_the_rest_exact() -> None:
    t = transitions(ACROBOT, 32)
    payloads = storage.Float16Writer().payloads(t)
    assert all(len(p) == protocol.PAYLOAD_BYTES for p in payloads)
    _, back = storage.Float16Reader(6).transitions(batch_of(payloads))
    for name in ("obs", "next_obs"):
        got, want = getattr(back, name), getattr(t, name)
        assert np.all(np.abs(got - want) <= np.abs(want) * 2.0 ** -11 + 1e-7)
        assert not np.array_equal(got, want)  # lossy, as documented
    for name in ("action", "ret", "done", "discount", "actor"):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))


def test_float16_refuses_an_observation_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not fit as float16"):
        storage.encode_f16(transitions(EnvInfo("x", (12,), np.dtype(np.float32), 2), 1))


@pytest.fixture
def actor_store():
    server = PayloadServer(PayloadStore(64), (LOOPBACK, 0)).start()
    resolver = PayloadResolver((LOOPBACK, 0), FetchPolicy(timeout=0.1, retries=1))
    yield server, resolver
    server.stop()
    resolver.close()


@pytest.mark.parametrize("info", [ACROBOT, FRAMES], ids=["vector", "frames"])
def test_by_reference_every_transition_comes_back_exactly(actor_store, info: EnvInfo) -> None:
    server, resolver = actor_store
    t = transitions(info, 16)
    writer = storage.make_writer("reference", server.store, server.address, actor=2)
    batch, back = storage.make_reader("reference", info, resolver).transitions(
        batch_of(writer.payloads(t)))
    assert len(batch) == 16
    for name in ("obs", "next_obs", "action", "ret", "done", "discount", "actor"):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))
    assert back.obs.dtype == info.obs_dtype


def test_missing_samples_are_dropped_and_topped_up(actor_store) -> None:
    server, resolver = actor_store
    writer = storage.make_writer("reference", server.store, server.address, actor=2)
    old = writer.payloads(transitions(ACROBOT, 64, seed=1))   # the store holds 64:
    fresh_t = transitions(ACROBOT, 64, seed=2)
    fresh = writer.payloads(fresh_t)                          # these evict all of `old`
    asked: list[int] = []

    def sample_more(k: int) -> SampleBatch:
        asked.append(k)
        return batch_of(fresh[:k])

    reader = storage.make_reader("reference", ACROBOT, resolver, sample_more)
    batch, back = reader.transitions(batch_of(old[:8] + fresh[:8]))
    assert asked == [8] and len(batch) == 16
    np.testing.assert_array_equal(back.obs[:8], fresh_t.obs[:8])
    np.testing.assert_array_equal(back.obs[8:], fresh_t.obs[:8])
    assert reader.stats()["missing"] == 8 and reader.stats()["topups"] == 1


def test_a_reader_without_top_up_returns_what_it_could_resolve(actor_store) -> None:
    server, resolver = actor_store
    writer = storage.make_writer("reference", server.store, server.address, actor=0)
    payloads = writer.payloads(transitions(ACROBOT, 4))
    in_slot = storage.SlotWriter().payloads(transitions(
        EnvInfo("CartPole-v1", (4,), np.dtype(np.float32), 2), 2))
    reader = storage.make_reader("reference", ACROBOT, resolver)
    batch, back = reader.transitions(batch_of(payloads + in_slot))
    assert len(batch) == len(back) == 4
    np.testing.assert_array_equal(batch.stamp, [1, 2, 3, 4])
    assert reader.stats()["not_references"] == 2


@pytest.mark.parametrize(("requested", "info", "mode"), [
    ("auto", EnvInfo("CartPole-v1", (4,), np.dtype(np.float32), 2), "slot"),
    ("auto", ACROBOT, "reference"),
    ("float16", ACROBOT, "float16"),
    ("auto", FRAMES, "reference"),
])
def test_storage_modes_an_environment_gets(requested: str, info: EnvInfo, mode: str) -> None:
    assert envs.storage_for(requested, info) == mode


@pytest.mark.parametrize(("requested", "info", "message"), [
    ("slot", ACROBOT, "do not fit a replay slot (at most 5 floats)"),
    ("float16", EnvInfo("x", (12,), np.dtype(np.float32), 2), "as float16 (at most 11"),
    ("float16", FRAMES, "as float16"),
    ("reference", EnvInfo("x", (3, 210, 160), np.dtype(np.uint8), 2), "over the 65483"),
])
def test_a_mode_that_cannot_carry_the_transition_is_refused(requested: str, info: EnvInfo,
                                                             message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        envs.storage_for(requested, info)


def test_an_environment_whose_extra_is_missing_says_which(monkeypatch) -> None:
    monkeypatch.setattr(envs.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"needs the atari extra \(make setup EXTRAS=atari\)"):
        envs.describe("ALE/Breakout-v5")


def test_atari_frames_are_stacked_grey_84x84() -> None:
    pytest.importorskip("ale_py", reason="the atari extra is not installed")
    info = envs.describe("ALE/Breakout-v5")
    assert (info.obs_shape, info.obs_dtype, info.image) == ((4, 84, 84), np.uint8, True)
    assert info.transition_bytes == 56448


def test_a_missing_box2d_names_its_extra(monkeypatch) -> None:
    def no_box2d(env_id: str, **_: object) -> None:
        raise envs.gym.error.DependencyNotInstalled(
            'Box2D is not installed, you can install it by run `pip install swig` followed '
            'by `pip install "gymnasium[box2d]"`')

    monkeypatch.setattr(envs.gym, "make", no_box2d)
    with pytest.raises(ValueError, match=r"^--env LunarLander-v3: needs the box2d extra "
                                         r"\(make setup EXTRAS=box2d\)$"):
        envs.describe("LunarLander-v3")
