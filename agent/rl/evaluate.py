"""Greedy evaluation: mean return of a Q-network over a fixed set of episodes.

    python -m agent.rl.evaluate --checkpoint runs/<run>/checkpoint.pt --episodes 20

Exit codes: 0 evaluated; 2 bad usage, or a checkpoint or environment that cannot
be loaded (one line on stderr).
"""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from agent.contract.cli_args import EXIT_USAGE, ArgumentParser, int_range
from agent.rl.dqn import ConvQNetwork, QNetwork, build_q_network, set_torch_threads
from agent.rl.envs import make_env

EVAL_SEED = 100_000


@dataclass(frozen=True)
class EvalResult:
    """Returns of the episodes run; `complete` is False if evaluation gave up early."""

    returns: tuple[float, ...]
    complete: bool

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns)) if self.returns else 0.0


def evaluate(q: QNetwork | ConvQNetwork, env_id: str, episodes: int = 20, seed: int = EVAL_SEED,
             give_up_below: float | None = None, max_return: float | None = None) -> EvalResult:
    """Run `episodes` greedy episodes (seeds seed, seed+1, ...).

    With give_up_below and max_return, stop as soon as the mean can no longer
    reach give_up_below even if every remaining episode scored max_return."""
    env = make_env(env_id)
    returns: list[float] = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(q.greedy(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        if give_up_below is not None and max_return is not None:
            best = sum(returns) + (episodes - len(returns)) * max_return
            if best < give_up_below * episodes:
                env.close()
                return EvalResult(tuple(returns), complete=False)
    env.close()
    return EvalResult(tuple(returns), complete=True)


def load_checkpoint(path: Path, env_id: str | None) -> tuple[QNetwork | ConvQNetwork, str]:
    """The greedy Q-network of a learner checkpoint and the env to run it on (the
    checkpoint's, unless `env_id`); ValueError saying what is wrong with either."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as exc:
        raise ValueError(f"--checkpoint {path}: cannot read: {exc.strerror or exc}") from None
    except (pickle.UnpicklingError, KeyError, RuntimeError, EOFError, ValueError):
        raise ValueError(f"--checkpoint {path}: not a file torch.load can read") from None
    try:
        hp = state["hparams"]
        env_id = env_id or hp["env_id"]
        hidden = tuple(hp["hidden"])
    except (KeyError, TypeError):
        raise ValueError(f"--checkpoint {path}: not a learner checkpoint (no hparams with "
                         "env_id and hidden)") from None
    try:
        env = make_env(env_id)
    except (gym.error.Error, ImportError) as exc:
        raise ValueError(f"--env {env_id}: {exc}") from None
    try:
        q = build_q_network(tuple(env.observation_space.shape), int(env.action_space.n),
                            hidden)
        q.load_state_dict(state["q"])
    except (KeyError, RuntimeError, AttributeError) as exc:
        raise ValueError(f"--checkpoint {path} does not fit {env_id}: "
                         f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    finally:
        env.close()
    return q, env_id


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m agent.rl.evaluate",
                            description="Greedy evaluation of a learner checkpoint")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--episodes", type=int_range(1, 100_000), default=20)
    parser.add_argument("--env", default=None, help="default: the checkpoint's env")
    parser.add_argument("--seed", type=int_range(0, 2**32 - 1), default=EVAL_SEED)
    args = parser.parse_args(argv)
    set_torch_threads(1)
    try:
        q, env_id = load_checkpoint(args.checkpoint, args.env)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_USAGE)
    result = evaluate(q, env_id, args.episodes, args.seed)
    print(f"eval env={env_id} episodes={len(result.returns)} mean_return={result.mean:.1f} "
          f"min={min(result.returns):.0f} max={max(result.returns):.0f}", flush=True)


if __name__ == "__main__":
    main()
