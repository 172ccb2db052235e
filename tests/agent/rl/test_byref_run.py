"""A small Atari run by reference: actors step Breakout and keep the frames, the
learner samples references and trains on the frames it fetched; every payload it
got is byte for byte the one its actor stored."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from agent.contract.protocol import ALLOW_ALL, SAMPLING_MODES
from agent.replay.client import make_client
from agent.replay.memory import ReplayService, TableConfig
from agent.replay.payload_store import PayloadStore
from agent.replay.resolver import PayloadResolver
from agent.rl.actor import Actor
from agent.rl.hparams import check_env, for_env
from agent.rl.learner import Learner
from agent.rl.storage import make_reader

pytest.importorskip("ale_py", reason="the atari extra is not installed (make setup EXTRAS=atari)")
pytest.importorskip("cv2", reason="the atari extra is not installed (make setup EXTRAS=atari)")

LOOPBACK = "127.0.0.1"
STEPS = 100  # per actor


def test_every_sampled_frame_is_the_one_its_actor_stored(monkeypatch) -> None:
    stored: dict[tuple[int, int], bytes] = {}
    put = PayloadStore.put

    def recording_put(self: PayloadStore, payload: bytes) -> int:
        seq = put(self, payload)
        stored[(self.epoch, seq)] = bytes(payload)
        return seq

    fetched = []
    fetch = PayloadResolver.fetch

    def recording_fetch(self: PayloadResolver, refs):  # type: ignore[no-untyped-def]
        out = fetch(self, refs)
        fetched.extend(zip(refs, out, strict=True))
        return out

    monkeypatch.setattr(PayloadStore, "put", recording_put)
    monkeypatch.setattr(PayloadResolver, "fetch", recording_fetch)
    hp, info = check_env(for_env("ALE/Breakout-v5", [
        "learning_starts=64", "batch_size=16", "capacity=512", "env_steps_per_update=0",
        "insert_batch=8", "prefetch_depth=1"]))
    assert hp.storage == "reference" and info.image
    svc = ReplayService(seed=0)
    svc.configure(0, TableConfig(capacity=hp.capacity, min_size=hp.learning_starts))
    svc.allow(LOOPBACK, 0, ALLOW_ALL)
    actors = [Actor(i, 2, hp, make_client("inprocess", service=svc), None, seed=i)
              for i in range(2)]
    resolver = PayloadResolver((LOOPBACK, 0))
    client = make_client("inprocess", service=svc)
    mode = SAMPLING_MODES[hp.sample_mode]
    learner = Learner(hp, client, info.obs_shape, info.n_actions, seed=0,
                      reader=make_reader("reference", info, resolver,
                                         lambda k: client.sample(k, mode)))
    try:
        for actor in actors:
            actor.run(threading.Event(), max_steps=STEPS)
        infos = [learner.step() for _ in range(8)]
    finally:
        for actor in actors:
            actor.close()
        resolver.close()
    assert all(i is not None and np.isfinite(i.loss) for i in infos)
    assert len(fetched) >= 8 * hp.batch_size
    assert {ref.actor for ref, _ in fetched} == {0, 1}
    for ref, data in fetched:
        assert data is not None and data == stored[(ref.epoch, ref.seq)]
        frames = np.frombuffer(data, dtype=np.uint8).reshape(2, *info.obs_shape)
        assert frames.any()  # real frames, not zeros
    assert learner.reader.stats()["fetched"] == len(fetched)
