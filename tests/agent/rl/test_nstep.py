"""n-step returns, including episode ends and time-limit truncation."""

from __future__ import annotations

import numpy as np
import pytest

from agent.rl.nstep import NStepAccumulator, stack

G = 0.9


def obs(i: int) -> np.ndarray:
    return np.full(4, i, dtype=np.float32)


def run(acc: NStepAccumulator, rewards: list[float], end: str | None):
    out = []
    for t, r in enumerate(rewards):
        last = t == len(rewards) - 1
        out += acc.push(obs(t), t % 2, r, obs(t + 1), last and end == "terminated",
                        last and end == "truncated")
    return out


def test_full_windows_have_n_rewards_and_bootstrap_from_s_t_plus_n() -> None:
    acc = NStepAccumulator(3, G)
    out = run(acc, [1.0, 2.0, 3.0, 4.0, 5.0], None)
    assert len(out) == 3 and len(acc) == 2
    first = out[0]
    assert first.ret == pytest.approx(1 + G * 2 + G**2 * 3)
    assert np.array_equal(first.obs, obs(0)) and np.array_equal(first.next_obs, obs(3))
    assert first.discount == pytest.approx(G**3) and not first.done
    assert out[2].ret == pytest.approx(3 + G * 4 + G**2 * 5)
    assert out[2].action == 0


def test_termination_flushes_shorter_returns_without_bootstrap() -> None:
    acc = NStepAccumulator(3, G)
    out = run(acc, [1.0, 1.0, 1.0, 1.0], "terminated")
    assert len(out) == 4 and len(acc) == 0
    rets = [o.ret for o in out]
    assert rets == pytest.approx([1 + G + G**2, 1 + G + G**2, 1 + G, 1])
    assert [o.done for o in out] == [False, True, True, True]
    assert [o.discount for o in out] == pytest.approx([G**3, G**3, G**2, G])
    assert all(np.array_equal(o.next_obs, obs(4)) for o in out[1:])


def test_truncation_bootstraps_from_the_last_observation() -> None:
    acc = NStepAccumulator(3, G)
    out = run(acc, [1.0, 1.0], "truncated")
    assert [o.done for o in out] == [False, False]
    assert [o.discount for o in out] == pytest.approx([G**2, G])
    assert all(np.array_equal(o.next_obs, obs(2)) for o in out)


def test_episodes_do_not_leak_into_each_other() -> None:
    acc = NStepAccumulator(3, G)
    run(acc, [1.0, 1.0], "terminated")
    out = run(acc, [5.0, 5.0, 5.0], None)
    assert len(out) == 1 and out[0].ret == pytest.approx(5 + 5 * G + 5 * G**2)


def test_n_equal_one_and_stack() -> None:
    acc = NStepAccumulator(1, G)
    out = run(acc, [2.0, 3.0], "terminated")
    assert [o.ret for o in out] == [2.0, 3.0] and [o.done for o in out] == [False, True]
    t = stack(out, actor=5)
    assert t.obs.shape == (2, 4) and list(t.actor) == [5, 5] and list(t.done) == [0.0, 1.0]
    with pytest.raises(ValueError, match="n must be >= 1"):
        NStepAccumulator(0, G)
