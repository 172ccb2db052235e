"""Greedy evaluation: mean return of a Q-network over a fixed set of episodes.

    python -m agent.evaluate --checkpoint runs/<run>/checkpoint.pt --episodes 20
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from agent.dqn import QNetwork, set_torch_threads

EVAL_SEED = 100_000


@dataclass(frozen=True)
class EvalResult:
    """Returns of the episodes run; `complete` is False if evaluation gave up early."""

    returns: tuple[float, ...]
    complete: bool

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns)) if self.returns else 0.0


def evaluate(q: QNetwork, env_id: str, episodes: int = 20, seed: int = EVAL_SEED,
             give_up_below: float | None = None, max_return: float | None = None) -> EvalResult:
    """Run `episodes` greedy episodes (seeds seed, seed+1, ...).

    With give_up_below and max_return, stop as soon as the mean can no longer
    reach give_up_below even if every remaining episode scored max_return."""
    env = gym.make(env_id)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Greedy evaluation of a learner checkpoint")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--env", default=None, help="default: the checkpoint's env")
    parser.add_argument("--seed", type=int, default=EVAL_SEED)
    args = parser.parse_args(argv)
    set_torch_threads(1)
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    hp = state["hparams"]
    env_id = args.env or hp["env_id"]
    env = gym.make(env_id)
    q = QNetwork(int(np.prod(env.observation_space.shape)), int(env.action_space.n),
                 tuple(hp["hidden"]))
    q.load_state_dict(state["q"])
    result = evaluate(q, env_id, args.episodes, args.seed)
    print(f"eval env={env_id} episodes={len(result.returns)} mean_return={result.mean:.1f} "
          f"min={min(result.returns):.0f} max={max(result.returns):.0f}", flush=True)


if __name__ == "__main__":
    main()
