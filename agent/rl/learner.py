"""The Learner: double DQN with a target network over prioritized replay.

One step, top to bottom:
  1. take the next prefetched SAMPLE batch (the replay service draws it,
     uniformly or proportionally to priority),
  2. importance weights w = (N * P(i))^-beta / max w from each reply's
     priority, total and size,
  3. n-step double-DQN target y = R + gamma^k (1 - done) Q_target(s', argmax Q(s')),
     weighted Huber loss, Adam step with gradient clipping,
  4. new priorities (|y - Q(s, a)| + eps)^alpha sent back stamp-guarded, in
     UPDATE_BATCH requests of up to 16 entries (4 for a batch of 64),
  5. every target_update steps copy Q into the target network, every
     broadcast_every steps broadcast the weights to the actors.
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from agent.contract.protocol import SAMPLING_MODES, Mode, SampleBatch, Status
from agent.replay.client import ReplayClient, ReplayRefused, ReplayTimeout
from agent.replay.importance import importance_weights
from agent.rl import transition
from agent.rl.dqn import build_q_network, flat_parameters, priorities, q_and_targets
from agent.rl.hparams import Hyperparams
from agent.rl.storage import Reader, SlotReader
from agent.rl.weights import WeightSender

log = logging.getLogger(__name__)

# Refusals that mean "not yet": a table still filling, disabled while the
# controller restores it after a switch restart, or a batch whose every draw
# found a slot still being written (NOT_READY).
WAIT_STATUSES = (Status.BELOW_MIN_SIZE, Status.EMPTY, Status.DISABLED, Status.NOT_READY)


@dataclass(frozen=True)
class StepInfo:
    """What one learner step did."""

    step: int
    loss: float


class Learner:
    """Trains a QNetwork from replay samples and feeds priorities and weights back."""

    def __init__(self, hp: Hyperparams, client: ReplayClient, obs_dim: int | tuple[int, ...],
                 n_actions: int, sender: WeightSender | None = None, seed: int = 0,
                 reader: Reader | None = None) -> None:
        torch.manual_seed(seed)
        self.hp = hp
        self.client = client
        self.sender = sender
        shape = (obs_dim,) if isinstance(obs_dim, int) else tuple(obs_dim)
        self.reader = reader or SlotReader(int(np.prod(shape)))  # storage: agent/rl/storage.py
        self.q = build_q_network(shape, n_actions, hp.hidden)
        self.target = copy.deepcopy(self.q)
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=hp.lr)
        self.mode = SAMPLING_MODES[hp.sample_mode]
        self.sampler = client.sampler(hp.batch_size, self.mode, hp.prefetch_depth)
        self.steps = 0
        self.waits = 0

    def step(self) -> StepInfo | None:
        """One gradient step; None when no batch is available yet (or it was lost)."""
        batch = self._next_batch()
        if batch is None:
            return None
        batch, t = self.reader.transitions(batch)
        if not len(batch):  # every sample missing (payloads by reference)
            self.waits += 1
            return None
        if self.mode == Mode.PRIORITIZED:
            weights = importance_weights(batch.priority, batch.total, batch.size,
                                         self.hp.beta(self.steps))
        else:
            weights = np.ones(len(batch), dtype=np.float32)
        loss, td = self._train(t, weights)
        if self.mode == Mode.PRIORITIZED:
            self.client.update(batch.slot, batch.stamp,
                               priorities(td, self.hp.priority_eps, self.hp.per_alpha))
        self.steps += 1
        if self.steps % self.hp.target_update == 0:
            self.target.load_state_dict(self.q.state_dict())
        if self.steps % self.hp.broadcast_every == 0:
            self.broadcast()
        return StepInfo(self.steps, loss)

    def broadcast(self) -> None:
        """Send the current weights to the actors (version = learner step)."""
        if self.sender is not None:
            self.sender.send(self.steps, flat_parameters(self.q))

    def _next_batch(self) -> SampleBatch | None:
        try:
            return next(self.sampler)
        except ReplayRefused as exc:
            if exc.status not in WAIT_STATUSES:
                raise
        except ReplayTimeout as exc:
            log.warning("learner: %s", exc)
        self.waits += 1
        return None

    def _train(self, t: transition.Transitions,
               weights: np.ndarray) -> tuple[float, np.ndarray]:
        q, y = q_and_targets(self.q, t, self.target)
        loss = (torch.from_numpy(weights) * F.smooth_l1_loss(q, y, reduction="none")).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.q.parameters(), self.hp.grad_clip)
        self.optimizer.step()
        td = (y - q).detach().numpy()
        return float(loss.item()), td

    # --- checkpoints ------------------------------------------------------------------

    def save(self, path: Path, **extra: object) -> None:
        """Write a checkpoint atomically (networks, optimizer, step, `extra`)."""
        state = {"q": self.q.state_dict(), "target": self.target.state_dict(),
                 "optimizer": self.optimizer.state_dict(), "steps": self.steps,
                 "hparams": asdict(self.hp), "extra": extra}
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)

    def load(self, path: Path) -> dict[str, object]:
        """Resume from a checkpoint; returns the `extra` it was saved with."""
        state = torch.load(path, map_location="cpu", weights_only=True)
        self.q.load_state_dict(state["q"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps = int(state["steps"])
        return dict(state["extra"])
