"""The Learner's actors: started as threads (the inprocess backend) or as processes
(UDP backends, each in its network namespace when given), watched for deaths while
training goes on, and stopped at the end. Their reports come back on one queue."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from agent.replay.client import ReplayClient, make_client
from agent.replay.memory import ReplayService
from agent.rl.actor import Actor, ActorReport, StopFlag
from agent.rl.dqn import set_torch_threads
from agent.rl.hparams import Hyperparams
from agent.rl.namespace import enter
from agent.rl.weights import WeightReceiver

log = logging.getLogger(__name__)

JOIN_TIMEOUT = 5.0   # seconds the actors get to stop before processes are terminated
ACTOR_MODES = ("thread", "process")
ANY_ADDRESS, LOOPBACK = "0.0.0.0", "127.0.0.1"


@dataclass(frozen=True)
class ActorSpec:
    """Everything an actor needs to build its client and weight receiver (picklable)."""

    index: int
    num_actors: int
    hp: Hyperparams
    seed: int
    backend: str
    replay: tuple[str, int] | None
    bind: str                      # the actor's own address for replay traffic
    weights_bind: tuple[str, int]
    table: int
    ack_inserts: bool
    netns: str | None = None       # network namespace (name or path) the actor runs in


def _client(spec: ActorSpec, service: ReplayService | None) -> ReplayClient:
    return make_client(spec.backend, address=spec.replay, service=service,
                       bind=(spec.bind, 0), table=spec.table, ack_inserts=spec.ack_inserts)


def run_actor(spec: ActorSpec, stop: StopFlag, reports: queue.Queue,
              service: ReplayService | None, receiver: WeightReceiver) -> None:
    """One actor's whole life, in the calling thread."""
    store_host = LOOPBACK if spec.bind == ANY_ADDRESS else spec.bind  # where refs point
    actor = Actor(spec.index, spec.num_actors, spec.hp, _client(spec, service), receiver,
                  spec.seed, store_host)
    try:
        actor.run(stop, reports.put)
    finally:
        actor.close()


class StopOrOrphaned:
    """The run's stop flag, also set once the process that started this one is gone
    (an actor whose trainer was killed stops instead of running on unowned)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.parent = os.getppid()

    def is_set(self) -> bool:
        return self.stop.is_set() or os.getppid() != self.parent


def actor_process(spec: ActorSpec, stop: threading.Event, reports: queue.Queue) -> None:
    """Entry point of an actor process (UDP backends): into its namespace first."""
    if spec.netns:
        enter(spec.netns)
    set_torch_threads(1)
    run_actor(spec, StopOrOrphaned(stop), reports, None, WeightReceiver(spec.weights_bind))


Worker = threading.Thread | mp.process.BaseProcess


class ActorPool:
    """The actors of one run, as threads or processes (`mode`); `service` is the
    in-process replay the thread actors share (None for UDP backends)."""

    def __init__(self, mode: str, service: ReplayService | None = None) -> None:
        if mode not in ACTOR_MODES:
            raise ValueError(f"actor mode {mode!r}: must be one of {', '.join(ACTOR_MODES)}")
        self.mode = mode
        self.service = service
        self.ctx = mp.get_context("spawn")
        threads = mode == "thread"
        self.stop_flag = threading.Event() if threads else self.ctx.Event()
        self.queue: queue.Queue = queue.Queue() if threads else self.ctx.Queue()
        self.workers: list[Worker] = []
        self.died: dict[int, int | None] = {}   # actor -> exit code, for dead actors

    def start(self, specs: list[ActorSpec], pids_file: Path) -> None:
        """Start one actor per spec; write this process's and the actors' pids."""
        for spec in specs:
            if self.mode == "thread":
                worker: Worker = threading.Thread(
                    target=run_actor, name=f"actor-{spec.index}", daemon=True,
                    args=(spec, self.stop_flag, self.queue, self.service,
                          WeightReceiver(spec.weights_bind)))
            else:
                worker = self.ctx.Process(target=actor_process, name=f"actor-{spec.index}",
                                          daemon=True, args=(spec, self.stop_flag, self.queue))
            worker.start()
            self.workers.append(worker)
        pids = [w.pid for w in self.workers if isinstance(w, mp.process.BaseProcess)]
        pids_file.write_text(json.dumps({"trainer": os.getpid(), "actors": pids}))

    def reports(self) -> list[ActorReport]:
        """The reports that arrived since the last call."""
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except (queue.Empty, OSError, ValueError):
                return out

    def check(self) -> int:
        """Report actors that died since the last check; how many are still running."""
        for i, worker in enumerate(self.workers):
            if i in self.died or worker.is_alive():
                continue
            code = worker.exitcode if isinstance(worker, mp.process.BaseProcess) else None
            self.died[i] = code
            pid = f"pid {worker.pid}, " if isinstance(worker, mp.process.BaseProcess) else ""
            print(f"actor {i} died ({pid}exit code {code}); "
                  f"{len(self.workers) - len(self.died)} of {len(self.workers)} actors left, "
                  "training goes on", flush=True)
        return len(self.workers) - len(self.died)

    def stop(self) -> list[ActorReport]:
        """Stop every actor (terminating a process that does not stop within
        JOIN_TIMEOUT); the reports that arrived meanwhile."""
        self.stop_flag.set()
        reports = []
        deadline = time.monotonic() + JOIN_TIMEOUT
        for worker in self.workers:
            while worker.is_alive() and time.monotonic() < deadline:
                reports += self.reports()
                worker.join(timeout=0.1)
        for worker in self.workers:
            if isinstance(worker, mp.process.BaseProcess) and worker.is_alive():
                log.warning("actor %s (pid %s) did not stop; terminating", worker.name,
                            worker.pid)
                worker.terminate()
                worker.join(timeout=1.0)
        return reports + self.reports()
