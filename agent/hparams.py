"""All hyperparameters of a training run, in one dataclass with CartPole defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Hyperparams:
    """Ape-X DQN settings (the defaults solve CartPole-v1)."""

    env_id: str = "CartPole-v1"
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


def apply_overrides(hp: Hyperparams, items: list[str]) -> Hyperparams:
    """Hyperparams with 'name=value' overrides (tuples as comma lists, bools as 0/1/true)."""
    types = {f.name: type(getattr(hp, f.name)) for f in fields(hp)}
    changes: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in types:
            raise ValueError(f"unknown hyperparameter override {item!r}; known: {sorted(types)}")
        kind = types[name]
        if kind is tuple:
            changes[name] = tuple(int(v) for v in text.split(",") if v)
        elif kind is bool:
            changes[name] = text.lower() in ("1", "true", "yes", "on")
        else:
            changes[name] = kind(text)
    return replace(hp, **changes)
