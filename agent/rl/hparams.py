"""All hyperparameters of a training run, in one dataclass with CartPole defaults,
the checks a run's settings must pass before anything starts, and the run's
command-line options (declared once for the trainer and the launcher)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace
from pathlib import Path

from agent.contract.cli_args import int_range, positive_float
from agent.contract.protocol import MAX_BATCH, NUM_SLOTS, NUM_TABLES, SAMPLING_MODES
from agent.contract.storage import STORAGE_MODES
from agent.replay.client import BACKENDS
from agent.rl.envs import EnvInfo, describe, env_defaults, storage_for

MAX_ACTORS = 64  # the most actors one run may start (threads or processes)


@dataclass(frozen=True)
class Hyperparams:
    """Ape-X DQN settings (the defaults solve CartPole-v1)."""

    env_id: str = "CartPole-v1"
    storage: str = "auto"                 # slot, float16, reference; auto: from the env
    hidden: tuple[int, ...] = (64, 64)    # Q-network hidden layer widths
    lr: float = 1e-3                      # Adam learning rate
    gamma: float = 0.99
    n_step: int = 3
    batch_size: int = 64
    target_update: int = 250              # learner steps between hard target syncs
    grad_clip: float = 10.0               # max gradient norm
    learning_starts: int = 1000           # table min size before the first sample
    capacity: int = 4096                  # replay table capacity (slots)
    sample_mode: str = "prioritized"      # or "uniform"
    per_alpha: float = 0.6                # stored priority = (|td| + eps) ** alpha
    per_beta0: float = 0.4                # importance-weight exponent, annealed to 1
    per_beta_steps: int = 10_000          # learner steps to anneal beta over
    priority_eps: float = 1e-3
    prefetch_depth: int = 2               # SAMPLE requests in flight while training
    partial_batch: float = 0.9            # a batch this complete at its timeout is used as is
    broadcast_every: int = 25             # learner steps between weight broadcasts
    eps_base: float = 0.4                 # Ape-X: eps_i = eps_base ** (1 + eps_alpha i/(N-1))
    eps_alpha: float = 7.0
    actor_priorities: bool = True         # actors compute initial priorities
    insert_batch: int = 16                # transitions per actor insert_many
    env_steps_per_update: float = 4.0     # actor throttle (all actors); 0 = unthrottled
    eval_every: int = 500                 # learner steps between greedy evaluations
    eval_episodes: int = 20
    solve_return: float = 475.0           # mean greedy return that stops the run
    checkpoint_every: int = 2000          # learner steps between checkpoints
    log_every: int = 250                  # learner steps between metrics rows

    def beta(self, step: int) -> float:
        """Importance-sampling exponent at a learner step (linear to 1.0)."""
        frac = min(1.0, step / max(1, self.per_beta_steps))
        return self.per_beta0 + frac * (1.0 - self.per_beta0)


def for_env(env_id: str, items: list[str], storage: str | None = None) -> Hyperparams:
    """A run's hyperparameters: the CartPole defaults, `env_id`'s own (agent/rl/envs.py),
    the storage mode if given, then the 'name=value' overrides, checked."""
    hp = replace(Hyperparams(env_id=env_id), **env_defaults(env_id))  # type: ignore[arg-type]
    if storage is not None:
        hp = replace(hp, storage=storage)
    return apply_overrides(hp, items)


def apply_overrides(hp: Hyperparams, items: list[str]) -> Hyperparams:
    """Hyperparams with 'name=value' overrides (tuples as comma lists, bools as 0/1/true),
    checked with `check`."""
    types = {f.name: type(getattr(hp, f.name)) for f in fields(hp)}
    changes: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in types:
            raise ValueError(f"--set {item}: unknown hyperparameter; known: "
                             f"{', '.join(sorted(types))}")
        kind = types[name]
        try:
            if kind is tuple:
                changes[name] = tuple(int(v) for v in text.split(",") if v)
            elif kind is bool:
                changes[name] = text.lower() in ("1", "true", "yes", "on")
            else:
                changes[name] = kind(text)
        except ValueError:
            raise ValueError(f"--set {item}: '{text}' is not a {kind.__name__}") from None
    return check(replace(hp, **changes))


def check(hp: Hyperparams) -> Hyperparams:
    """`hp` if every setting is in range, else ValueError naming the first one that is not."""
    positive = ("lr", "target_update", "per_beta_steps", "insert_batch", "eval_every",
                "eval_episodes", "checkpoint_every", "log_every", "broadcast_every")
    problems = [(name, "must be more than 0") for name in positive if getattr(hp, name) <= 0]
    problems += [(name, "must be 0 or more") for name in ("prefetch_depth", "priority_eps",
                                                          "env_steps_per_update", "eps_alpha",
                                                          "per_alpha") if getattr(hp, name) < 0]
    if not 0 < hp.gamma <= 1:
        problems.append(("gamma", "must be in (0, 1]"))
    if hp.n_step < 1:
        problems.append(("n_step", "must be 1 or more"))
    if not 1 <= hp.batch_size <= MAX_BATCH:
        problems.append(("batch_size", f"must be 1..{MAX_BATCH}"))
    if not 1 <= hp.capacity <= NUM_SLOTS:
        problems.append(("capacity", f"must be 1..{NUM_SLOTS} (slots of a replay table)"))
    if not 0 <= hp.learning_starts <= hp.capacity:
        problems.append(("learning_starts", f"must be 0..capacity ({hp.capacity})"))
    if hp.sample_mode not in SAMPLING_MODES:
        problems.append(("sample_mode", "must be prioritized or uniform"))
    if hp.storage not in STORAGE_MODES:
        problems.append(("storage", f"must be one of {', '.join(STORAGE_MODES)}"))
    if not hp.hidden or min(hp.hidden) < 1:
        problems.append(("hidden", "must be one or more layer widths, e.g. 64,64"))
    for name, problem in problems:
        raise ValueError(f"hyperparameter {name}={getattr(hp, name)}: {problem}")
    return hp


def check_env(hp: Hyperparams) -> tuple[Hyperparams, EnvInfo]:
    """`hp` with its storage mode resolved for its environment, and the environment's
    description; ValueError (one line) for an environment or a storage mode that
    cannot work (agent/rl/envs.py)."""
    info = describe(hp.env_id)
    return replace(hp, storage=storage_for(hp.storage, info)), info


def add_run_options(p: argparse.ArgumentParser, *, backend: str, backend_help: str | None = None,
                    actors_help: str | None = None, run_dir_help: str | None = None) -> None:
    """The options of one training run, declared once: this trainer's parser and the
    launcher's (which passes them on to the trainer) both take them."""
    p.add_argument("--backend", choices=BACKENDS, default=backend, help=backend_help)
    p.add_argument("--actors", type=int, default=2, help=actors_help)
    p.add_argument("--env", default="CartPole-v1",
                   help="a gymnasium environment with discrete actions")
    p.add_argument("--storage", choices=STORAGE_MODES, default=None,
                   help="how the table keeps experiences: slot, float16 (observations as "
                        "float16 in the slot), reference (the actors keep the bytes); "
                        "auto: slot where a transition fits, else reference")
    p.add_argument("--seed", type=int_range(0, 2**32 - 1), default=1)
    p.add_argument("--max-env-steps", type=int_range(1, 10**10), default=500_000)
    p.add_argument("--max-seconds", type=positive_float, default=900.0)
    p.add_argument("--table", type=int_range(0, NUM_TABLES - 1), default=0,
                   help="replay table to train on")
    p.add_argument("--run-dir", type=Path, default=None, help=run_dir_help)
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="hyperparameter override (agent/rl/hparams.py), e.g. --set lr=5e-4")
