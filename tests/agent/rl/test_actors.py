"""The Learner's actor pool: deaths reported once, reports collected, a bad mode refused."""

from __future__ import annotations

import threading

import pytest

from agent.rl.actor import ActorReport
from agent.rl.actors import ActorPool


def test_a_dead_actor_is_reported_once_and_the_rest_counted(
        capsys: pytest.CaptureFixture) -> None:
    pool = ActorPool("thread")
    done, running = threading.Thread(target=lambda: None), threading.Event()
    alive = threading.Thread(target=running.wait, daemon=True)
    pool.workers += [done, alive]
    done.start()
    alive.start()
    done.join()
    assert pool.check() == 1
    assert pool.check() == 1
    assert pool.died == {0: None}
    assert capsys.readouterr().out == (
        "actor 0 died (exit code None); 1 of 2 actors left, training goes on\n")
    running.set()
    alive.join()
    assert pool.check() == 0 and pool.died == {0: None, 1: None}


def test_stop_sets_the_flag_and_returns_the_reports_not_yet_taken() -> None:
    pool = ActorPool("thread")
    report = ActorReport(actor=1, env_steps=5, inserts=4, returns=(9.0,), weights_version=2)
    pool.queue.put(report)
    assert pool.stop() == [report]
    assert pool.stop_flag.is_set() and pool.reports() == []


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="actor mode 'fiber': must be one of thread, process"):
        ActorPool("fiber")
