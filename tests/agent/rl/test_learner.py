"""Learner: beta annealing, a short smoke run, checkpoints."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from agent.contract.protocol import ALLOW_ALL, Op, Status
from agent.replay.client import make_client
from agent.replay.memory import ReplayService, TableConfig
from agent.rl.actor import Actor
from agent.rl.dqn import flat_parameters
from agent.rl.hparams import Hyperparams, apply_overrides
from agent.rl.learner import Learner
from agent.rl.weights import WeightReceiver, WeightSender

HP = Hyperparams(learning_starts=100, batch_size=32, target_update=50, broadcast_every=20,
                 env_steps_per_update=0.0, prefetch_depth=2)


def test_beta_anneals_to_one() -> None:
    hp = Hyperparams(per_beta0=0.4, per_beta_steps=100)
    assert hp.beta(0) == pytest.approx(0.4) and hp.beta(50) == pytest.approx(0.7)
    assert hp.beta(10_000) == 1.0


def test_overrides() -> None:
    hp = apply_overrides(Hyperparams(), ["lr=5e-4", "hidden=32,32,16", "actor_priorities=0"])
    assert (hp.lr, hp.hidden, hp.actor_priorities) == (5e-4, (32, 32, 16), False)
    with pytest.raises(ValueError, match="--set nope=1: unknown hyperparameter; known: actor_pri"):
        apply_overrides(hp, ["nope=1"])


def filled_service(steps: int) -> ReplayService:
    svc = ReplayService(seed=0)
    svc.configure(0, TableConfig(capacity=1024, min_size=HP.learning_starts))
    svc.allow("127.0.0.1", 0, ALLOW_ALL)
    actor = Actor(0, 1, HP, make_client("inprocess", service=svc), None, seed=3)
    actor.run(threading.Event(), max_steps=steps)
    return svc


def test_learner_smoke_run_trains_updates_priorities_and_broadcasts(tmp_path: Path) -> None:
    svc = filled_service(400)
    receiver = WeightReceiver(("127.0.0.1", 0))
    client = make_client("inprocess", service=svc)
    learner = Learner(HP, client, 4, 2, WeightSender([receiver.address]), seed=0)
    before = flat_parameters(learner.q)
    infos = [learner.step() for _ in range(300)]
    assert all(i is not None for i in infos)
    assert all(np.isfinite(i.loss) for i in infos)  # type: ignore[union-attr]
    assert not np.array_equal(before, flat_parameters(learner.q))
    stats = client.stats()
    assert stats["samples"] == stats["updates"] == 300 * HP.batch_size
    # a step's priorities go out as UPDATE_BATCHes of 16: two per step of 32 (one when
    # repeats in the batch leave 16 slots or fewer)
    assert 300 <= stats["update_requests"] <= 2 * 300
    entries = sum(svc.count(0, Op.UPDATE_BATCH, st) for st in (Status.OK, Status.STALE))
    assert 300 * 16 < entries <= 300 * HP.batch_size and svc.count(0, Op.UPDATE, Status.OK) == 0
    update = receiver.poll(timeout=1.0)
    assert update is not None and update.version == 300
    assert np.array_equal(update.flat, flat_parameters(learner.q))
    receiver.close()


def test_learner_waits_while_the_table_is_below_min_size() -> None:
    svc = filled_service(20)
    learner = Learner(HP, make_client("inprocess", service=svc), 4, 2)
    assert learner.step() is None and learner.waits == 1


def test_checkpoint_resume_restores_networks_optimizer_and_step(tmp_path: Path) -> None:
    svc = filled_service(300)
    a = Learner(HP, make_client("inprocess", service=svc), 4, 2, seed=0)
    for _ in range(20):
        a.step()
    a.save(tmp_path / "ck.pt", env_steps=300)
    b = Learner(replace(HP), make_client("inprocess", service=svc), 4, 2, seed=1)
    assert b.load(tmp_path / "ck.pt") == {"env_steps": 300}
    assert b.steps == 20
    assert np.array_equal(flat_parameters(a.q), flat_parameters(b.q))
    assert np.array_equal(flat_parameters(a.target), flat_parameters(b.target))
    sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    assert all(torch.equal(sa[k]["exp_avg"], sb[k]["exp_avg"]) for k in sa)
