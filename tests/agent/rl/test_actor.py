"""Actor: the Ape-X epsilon schedule, inserts, weight broadcasts, pacing."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from agent.contract.protocol import ALLOW_ALL, Op, Status, decode_batch, sample
from agent.replay.client import make_client
from agent.replay.memory import ReplayService, TableConfig
from agent.rl import actor as actor_mod
from agent.rl import transition
from agent.rl.actor import Actor, ActorReport, actor_epsilon
from agent.rl.dqn import QNetwork, flat_parameters
from agent.rl.hparams import Hyperparams
from agent.rl.weights import WeightReceiver, WeightSender

HP = Hyperparams(env_steps_per_update=0.0, insert_batch=8)


def service() -> ReplayService:
    svc = ReplayService(seed=0)
    svc.configure(0, TableConfig(capacity=4096))
    svc.allow("127.0.0.1", 0, ALLOW_ALL)
    return svc


def test_apex_epsilon_schedule() -> None:
    assert actor_epsilon(0, 1) == 0.4
    assert actor_epsilon(0, 8) == pytest.approx(0.4)
    assert actor_epsilon(7, 8) == pytest.approx(0.4 ** 8)
    assert actor_epsilon(1, 3) == pytest.approx(0.4 ** 4.5)
    eps = [actor_epsilon(i, 16) for i in range(16)]
    assert eps == sorted(eps, reverse=True)


def test_actor_inserts_n_step_transitions_and_reports() -> None:
    svc = service()
    reports: list[ActorReport] = []
    actor = Actor(2, 4, HP, make_client("inprocess", service=svc), None, seed=1)
    actor.run(threading.Event(), reports.append, max_steps=300)
    assert sum(r.env_steps for r in reports) == 300
    assert sum(r.inserts for r in reports) == svc.tables[0].size
    assert 300 - HP.n_step < svc.tables[0].size <= 300
    episodes = sum(len(r.returns) for r in reports)
    assert episodes >= 1 and sum(sum(r.returns) for r in reports) <= 300
    batch = decode_batch(svc.handle(sample(0, 64), "127.0.0.1"))
    t = transition.decode(batch.payload, 4)
    assert set(t.actor) == {2} and set(t.action) <= {0, 1}
    assert np.all(np.isclose(t.discount[:, None], [0.99, 0.99**2, 0.99**3]).any(axis=1))
    assert np.all(t.ret <= 3.0) and np.all(t.ret >= 1.0)


@pytest.mark.parametrize("ack", [False, True])
def test_a_rate_limited_actor_backs_off_and_carries_on(monkeypatch: pytest.MonkeyPatch,
                                                       ack: bool) -> None:
    monkeypatch.setattr(actor_mod, "BACKOFF_MIN", 0.01)
    monkeypatch.setattr(actor_mod, "BACKOFF_MAX", 0.04)
    svc = ReplayService(seed=0, clock=lambda: 0)  # one window for the whole test
    svc.configure(0, TableConfig(capacity=4096))
    svc.allow("127.0.0.1", 0, ALLOW_ALL)
    svc.limit_inserts("127.0.0.1", 0, 16)
    client = make_client("inprocess", service=svc, ack_inserts=ack)
    actor = Actor(0, 1, HP, client, None, seed=1)
    started = time.monotonic()
    actor.run(threading.Event(), max_steps=80)  # ~10 flushes of 8: 2 stored, ~8 refused
    elapsed = time.monotonic() - started
    assert actor.env_steps == 80 and svc.tables[0].size == 16
    refused = svc.count(0, Op.INSERT, Status.RATE_LIMITED)
    assert refused > 40 and svc.rate_limited[("127.0.0.1", 0)] == refused
    # without ACK the last flush's refusals are still undrained
    assert refused - HP.insert_batch <= client.stats()["rate_limited"] <= refused
    assert actor._backoff == 0.04 and elapsed >= 0.01 + 0.02 + 4 * 0.04


def test_actor_takes_broadcast_weights_and_then_computes_priorities() -> None:
    svc = service()
    receiver = WeightReceiver(("127.0.0.1", 0))
    actor = Actor(0, 1, HP, make_client("inprocess", service=svc), receiver, seed=1)
    net = QNetwork(4, 2)
    WeightSender([receiver.address]).send(42, flat_parameters(net))
    actor.run(threading.Event(), max_steps=50)
    assert actor.version == 42
    assert np.array_equal(flat_parameters(actor.q), flat_parameters(net))
    assert svc.tables[0].max_priority != 65536  # priorities came from the network
    receiver.close()


def test_pacing_follows_the_learner_steps_from_weight_versions() -> None:
    hp = Hyperparams(env_steps_per_update=2.0, learning_starts=100, insert_batch=8, n_step=3)
    receiver = WeightReceiver(("127.0.0.1", 0))
    sender = WeightSender([receiver.address])
    actor = Actor(0, 2, hp, make_client("inprocess", service=service()), receiver, seed=1)
    weights = flat_parameters(actor.q)
    slack = 2 * 8 + 3
    actor.env_steps = 50 + slack - 1
    assert not actor._throttled()
    actor.env_steps = 50 + slack
    assert actor._throttled()
    sender.send(1000, weights)  # the first version seen (a resumed learner): no extra steps
    actor._take_weights(1.0)
    assert actor._throttled()
    sender.send(1100, weights)  # 100 learner steps later: 2 * 100 / 2 more env steps
    actor._take_weights(1.0)
    assert not actor._throttled()
    actor.env_steps = 150 + slack
    assert actor._throttled()
    actor._last_weights -= 10.0  # a silent learner: one more insert batch, then wait again
    assert not actor._throttled()
    actor.env_steps += 8
    assert actor._throttled()  # the grant is used up and the timer restarted
    receiver.close()
