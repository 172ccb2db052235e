"""An Ape-X Actor: one gymnasium environment, epsilon-greedy on a local Q copy.

Actor i of N explores with eps_i = eps_base ** (1 + eps_alpha * i / (N - 1)),
turns steps into n-step transitions, optionally computes their initial
priorities with its local network (|n-step TD error| like the Learner, else
the table's running max applies), inserts them in batches and takes the
Learner's weight broadcasts as they complete.

Pacing: with env_steps_per_update > 0 an actor keeps its env steps within
(learning_starts + env_steps_per_update * learner_steps) / N, learner_steps
being how far the weight versions received have advanced since the first one
(so actors joining a resumed Learner pace from where it is). Each THROTTLE_PATIENCE
seconds without a new version (a stalled or restarted Learner, lost inserts
keeping the table below its min size) grants one more insert batch of steps,
so pacing can slow an actor down but never deadlock it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from agent.contract.protocol import INSERT_WINDOW_US
from agent.replay.client import ReplayClient, ReplayError
from agent.replay.payload_store import PayloadServer, PayloadStore
from agent.rl import transition
from agent.rl.dqn import build_q_network, load_flat_parameters, priorities, q_and_targets
from agent.rl.envs import info_of, make_env, storage_for
from agent.rl.hparams import Hyperparams
from agent.rl.nstep import NStep, NStepAccumulator, stack
from agent.rl.storage import make_writer
from agent.rl.weights import WeightReceiver

THROTTLE_PATIENCE = 1.0
THROTTLE_POLL = 0.005
# INSERTs refused RATE_LIMITED (the table's per-host limit, docs/config.md): the
# actor pauses, from BACKOFF_MIN doubling up to one limit window, until a flush
# goes through unrefused; the refused experiences are dropped (and counted).
BACKOFF_MIN = 0.05
BACKOFF_MAX = INSERT_WINDOW_US / 1e6


class StopFlag(Protocol):
    """threading.Event or multiprocessing.Event."""

    def is_set(self) -> bool: ...


def actor_epsilon(index: int, num_actors: int, base: float = 0.4, alpha: float = 7.0) -> float:
    """Ape-X per-actor exploration rate."""
    if num_actors <= 1:
        return base
    return base ** (1.0 + alpha * index / (num_actors - 1))


@dataclass(frozen=True)
class ActorReport:
    """Progress an actor reports to the runner."""

    actor: int
    env_steps: int                 # since the previous report
    inserts: int                   # since the previous report (client-counted)
    returns: tuple[float, ...]     # episodes finished since the previous report
    weights_version: int


class Actor:
    """Steps one environment and feeds the replay table."""

    def __init__(self, index: int, num_actors: int, hp: Hyperparams, client: ReplayClient,
                 receiver: WeightReceiver | None, seed: int,
                 store_host: str = "127.0.0.1") -> None:
        self.index = index
        self.num_actors = num_actors
        self.hp = hp
        self.client = client
        self.receiver = receiver
        self.seed = seed
        self.env = make_env(hp.env_id)
        info = info_of(hp.env_id, self.env)
        self.n_actions = info.n_actions
        self.epsilon = actor_epsilon(index, num_actors, hp.eps_base, hp.eps_alpha)
        torch.manual_seed(seed)
        self.q = build_q_network(info.obs_shape, self.n_actions, hp.hidden)
        self.store_server: PayloadServer | None = None
        storage = storage_for(hp.storage, info)
        if storage == "reference":  # this actor keeps the bytes; the table the references
            store = PayloadStore(hp.capacity)  # (the table holds at most capacity of ours)
            self.store_server = PayloadServer(store, (store_host, 0)).start()
            self.writer = make_writer(storage, store, self.store_server.address, index)
        else:
            self.writer = make_writer(storage)
        self.nstep = NStepAccumulator(hp.n_step, hp.gamma)
        self.rng = np.random.default_rng(seed)
        self.version = -1
        self.env_steps = 0
        self._pending: list[NStep] = []
        self._reported = (0, 0)
        self._last_weights = time.monotonic()
        self._granted = 0
        self._first_version: int | None = None
        self._backoff = 0.0
        self._backoff_until = 0.0

    def run(self, stop: StopFlag, report: Callable[[ActorReport], None] | None = None,
            max_steps: int | None = None) -> None:
        """Act until `stop` is set or `max_steps` env steps were taken (a payload store
        goes on serving the Learner until close())."""
        obs, _ = self.env.reset(seed=self.seed)
        self.env.action_space.seed(self.seed)
        episode_return = 0.0
        returns: list[float] = []
        while not stop.is_set() and (max_steps is None or self.env_steps < max_steps):
            self._take_weights(0.0)
            if self._backing_off():
                continue
            if self._throttled():
                self._take_weights(THROTTLE_POLL)
                continue
            action = self._act(obs)
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            self.env_steps += 1
            episode_return += float(reward)
            self._pending.extend(self.nstep.push(obs, action, float(reward), next_obs,
                                                 terminated, truncated))
            obs = next_obs
            if terminated or truncated:
                returns.append(episode_return)
                episode_return = 0.0
                obs, _ = self.env.reset()
            if len(self._pending) >= self.hp.insert_batch:
                self._flush()
                if report is not None:
                    report(self._report(returns))
                    returns = []
        self._flush()
        if report is not None:
            report(self._report(returns))

    def close(self) -> None:
        """Stop serving payloads by reference (their references become missing samples)."""
        if self.store_server is not None:
            self.store_server.stop()
        self.env.close()

    def _report(self, returns: list[float]) -> ActorReport:
        inserts = self.client.stats()["inserts"]
        out = ActorReport(self.index, self.env_steps - self._reported[0],
                          inserts - self._reported[1], tuple(returns), self.version)
        self._reported = (self.env_steps, inserts)
        return out

    def _act(self, obs: np.ndarray) -> int:
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.n_actions))
        return self.q.greedy(obs)

    def _throttled(self) -> bool:
        if self.hp.env_steps_per_update <= 0:
            return False
        learner_steps = 0 if self._first_version is None else self.version - self._first_version
        allowance = (self.hp.learning_starts + self.hp.env_steps_per_update * learner_steps) \
            / self.num_actors + 2 * self.hp.insert_batch + self.hp.n_step
        if self.env_steps < allowance + self._granted:
            return False
        if time.monotonic() - self._last_weights < THROTTLE_PATIENCE:
            return True
        self._granted += self.hp.insert_batch
        self._last_weights = time.monotonic()
        return False

    def _backing_off(self) -> bool:
        """Wait a little (for weights, or asleep) while the insert backoff runs."""
        remaining = self._backoff_until - time.monotonic()
        if remaining <= 0:
            return False
        if self.receiver is None:
            time.sleep(min(remaining, 10 * THROTTLE_POLL))
        else:
            self._take_weights(min(remaining, THROTTLE_POLL))
        return True

    def _take_weights(self, timeout: float) -> None:
        if self.receiver is None:
            return
        update = self.receiver.poll(timeout)
        if update is not None:
            load_flat_parameters(self.q, update.flat)
            self.version = update.version
            if self._first_version is None:
                self._first_version = update.version
            self._last_weights = time.monotonic()
            self._granted = 0

    def _flush(self) -> None:
        if not self._pending:
            return
        batch = stack(self._pending, self.index)
        self._pending = []
        priorities = self._priorities(batch) if self.hp.actor_priorities else None
        limited = self.client.stats()["rate_limited"]
        with contextlib.suppress(ReplayError):  # counted in the client's stats; carry on
            self.client.insert_many(self.writer.payloads(batch), priorities)
        # (without ACK, refusals of a flush are seen when the next one drains them)
        if self.client.stats()["rate_limited"] > limited:
            self._backoff = min(BACKOFF_MAX, max(BACKOFF_MIN, 2 * self._backoff))
            self._backoff_until = time.monotonic() + self._backoff
        else:
            self._backoff = 0.0

    @torch.inference_mode()
    def _priorities(self, t: transition.Transitions) -> np.ndarray | None:
        """(|n-step TD error| + eps)^alpha from the local network (None before weights)."""
        if self.version < 0:
            return None
        q, y = q_and_targets(self.q, t)
        return priorities((y - q).numpy(), self.hp.priority_eps, self.hp.per_alpha)
