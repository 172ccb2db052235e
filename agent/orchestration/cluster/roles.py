"""The Learner and the Actors as Ray actors, each on the node that stands for its host.

LearnerRole runs agent.rl.train's run on the Learner's node; its actors come from a
RayActorPool, which places one ActorRole per Actor on the node carrying `host:NAME`
for that Actor's host. Ray restarts an ActorRole whose node dies once a node for
the same host is up again (`restarts` times at most); the pool resumes it there, or
counts it out after `restart_wait` seconds and training goes on without it.

What goes through Ray: placement, the roles' lifecycle, their logs (streamed to the
driver), and the Actors' small progress reports (env steps, inserts, returns) the
run's metrics are made of. Experiences, samples and weights go through the switch.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray.exceptions import RayActorError, RayError

from agent.orchestration.cluster.placement import resource
from agent.rl import train
from agent.rl.actor import ActorReport
from agent.rl.actors import JOIN_TIMEOUT, ActorSpec, run_actor
from agent.rl.dqn import set_torch_threads
from agent.rl.weights import WeightReceiver

REPORT_WAIT = 0.5       # seconds an ActorRole holds a report call open waiting for one
PLACE_TIMEOUT = 120.0   # seconds a role gets to be placed and constructed
RETRY_EVERY = 1.0       # seconds between asks whether a restarting Actor is back


def node_info() -> dict[str, object]:
    """Where the calling Ray worker runs: node id, node address, pid."""
    ctx = ray.get_runtime_context()
    return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(), "at": round(time.time(), 1)}


class ActorRole:
    """One Actor (agent.rl.actor) in a Ray worker on its host's node. Threaded
    (max_concurrency 3): `run` steps the environment while `take_reports` and `stop`
    are served."""

    def __init__(self, spec: ActorSpec) -> None:
        self.spec = spec
        self.stop_flag = threading.Event()
        self.queue: queue.Queue[ActorReport] = queue.Queue()
        self.info = node_info()

    def where(self) -> dict[str, object]:
        return self.info

    def run(self) -> list[ActorReport]:
        """Act until stopped; the reports not yet taken."""
        set_torch_threads(1)
        run_actor(self.spec, self.stop_flag, self.queue, None,
                  WeightReceiver(self.spec.weights_bind))
        return self._drain()

    def take_reports(self, wait: float) -> list[ActorReport]:
        """The reports since the last call, waiting up to `wait` s for the first."""
        try:
            first = self.queue.get(timeout=wait)
        except queue.Empty:
            return []
        return [first, *self._drain()]

    def stop(self) -> None:
        self.stop_flag.set()

    def _drain(self) -> list[ActorReport]:
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                return out


@dataclass
class Placed:
    """One Actor's Ray actor and what became of it."""

    index: int
    host: str
    handle: ray.actor.ActorHandle
    run_ref: ray.ObjectRef | None = None
    report_ref: ray.ObjectRef | None = None
    ready_ref: ray.ObjectRef | None = None     # asked while it restarts
    asked: float = 0.0
    lost_at: float | None = None               # monotonic time its node was lost
    given_up: bool = False
    nodes: list[dict] = field(default_factory=list)   # where it ran, one entry per start
    losses: list[dict] = field(default_factory=list)  # when and why it was lost


class RayActorPool:
    """agent.rl.actors.ActorPool's interface over ActorRoles placed by Ray; `hosts[i]`
    is actor i's host."""

    def __init__(self, hosts: list[str], restarts: int, restart_wait: float) -> None:
        self.hosts = hosts
        self.restarts = restarts
        self.restart_wait = restart_wait
        self.placed: list[Placed] = []
        self.died: dict[int, int | None] = {}
        self.started = time.monotonic()

    def start(self, specs: list[ActorSpec], pids_file: Path) -> None:
        role = ray.remote(ActorRole)
        for spec in specs:
            host = self.hosts[spec.index]
            handle = role.options(name=f"actor-{spec.index}", num_cpus=0,
                                  resources={resource(host): 1}, max_restarts=self.restarts,
                                  max_concurrency=3).remote(spec)
            self.placed.append(Placed(spec.index, host, handle))
        infos = ray.get([p.handle.where.remote() for p in self.placed], timeout=PLACE_TIMEOUT)
        for p, info in zip(self.placed, infos, strict=True):
            self._resume(p, info)
            print(f"[cluster] actor {p.index} (host {p.host}) on node {short(info)}", flush=True)
        pids_file.write_text(json.dumps({"trainer": os.getpid(),
                                         "actors": [p.nodes[-1]["pid"] for p in self.placed]}))

    def _resume(self, p: Placed, info: dict) -> None:
        p.nodes.append(info)
        p.run_ref = p.handle.run.remote()
        p.report_ref = p.handle.take_reports.remote(REPORT_WAIT)
        p.ready_ref, p.lost_at = None, None
        if p.given_up:
            p.given_up = False
            self.died.pop(p.index, None)

    def reports(self) -> list[ActorReport]:
        refs = {p.report_ref: p for p in self.placed if p.report_ref is not None}
        if not refs:
            return []
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        out: list[ActorReport] = []
        for ref in ready:
            p = refs[ref]
            try:
                out += ray.get(ref)
            except RayError:
                p.report_ref = None   # its node is gone: check() sees to it
                continue
            p.report_ref = p.handle.take_reports.remote(REPORT_WAIT)
        return out

    def check(self) -> int:
        now = time.monotonic()
        for p in self.placed:
            if p.lost_at is None:
                self._check_running(p, now)
            else:
                self._check_restarting(p, now)
        return sum(1 for p in self.placed if p.index not in self.died)

    def _check_running(self, p: Placed, now: float) -> None:
        assert p.run_ref is not None
        done, _ = ray.wait([p.run_ref], timeout=0)
        if not done:
            return
        try:
            ray.get(p.run_ref)
            why, restartable = "its run ended", False
        except RayActorError as exc:
            why, restartable = f"its worker or node died ({type(exc).__name__})", True
        except RayError as exc:
            why, restartable = f"it failed: {str(exc).splitlines()[0]}", False
        p.run_ref = p.report_ref = None
        p.losses.append({"at_s": round(now - self.started, 1), "why": why,
                         "node": p.nodes[-1]["node_id"]})
        used = len(p.nodes) - 1
        if restartable and used < self.restarts:
            p.lost_at, p.asked = now, 0.0
            print(f"actor {p.index} (host {p.host}) lost: {why}; Ray restarts it on a node "
                  f"for host {p.host} (restart {used + 1} of {self.restarts}), training goes "
                  "on meanwhile", flush=True)
            return
        self.died[p.index] = None
        print(f"actor {p.index} died ({why}); {len(self.placed) - len(self.died)} of "
              f"{len(self.placed)} actors left, training goes on", flush=True)

    def _check_restarting(self, p: Placed, now: float) -> None:
        assert p.lost_at is not None
        if p.ready_ref is None and now - p.asked >= RETRY_EVERY:
            p.ready_ref, p.asked = p.handle.where.remote(), now
        if p.ready_ref is not None and ray.wait([p.ready_ref], timeout=0)[0]:
            ref, p.ready_ref = p.ready_ref, None
            try:
                info = ray.get(ref)
            except RayError:
                info = None    # asked before Ray knew it was restarting: ask again
            if info is not None and info["pid"] != p.nodes[-1]["pid"]:
                down = now - p.lost_at
                self._resume(p, info)
                print(f"actor {p.index} (host {p.host}) restarted on node {short(info)} "
                      f"{down:.1f} s after its node was lost", flush=True)
                return
        if not p.given_up and now - p.lost_at > self.restart_wait:
            p.given_up = True
            self.died[p.index] = None
            print(f"actor {p.index} died (no node for host {p.host} within "
                  f"{self.restart_wait:.0f} s); {len(self.placed) - len(self.died)} of "
                  f"{len(self.placed)} actors left, training goes on", flush=True)

    def stop(self) -> list[ActorReport]:
        for p in self.placed:
            if p.run_ref is not None:
                p.handle.stop.remote()
        refs = [r for p in self.placed for r in (p.run_ref, p.report_ref) if r is not None]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=JOIN_TIMEOUT)
        out: list[ActorReport] = []
        for ref in ready:
            try:
                out += ray.get(ref)
            except RayError:
                continue
        for p in self.placed:
            ray.kill(p.handle, no_restart=True)
        return out

    def record(self) -> list[dict]:
        """Where each Actor ran and what happened to it, for the summary."""
        return [{"actor": p.index, "host": p.host, "nodes": p.nodes, "losses": p.losses,
                 "restarts": len(p.nodes) - 1, "running": p.index not in self.died}
                for p in self.placed]


class ClusterRun(train.Run):
    """agent.rl.train's run with its Actors placed by Ray."""

    def __init__(self, args, hosts: list[str], restarts: int, restart_wait: float) -> None:
        super().__init__(args)
        self.pool = RayActorPool(hosts, restarts, restart_wait)

    def make_pool(self) -> RayActorPool:  # type: ignore[override]
        return self.pool


class LearnerRole:
    """The Learner (and the run's loop) in a Ray worker on the Learner's node."""

    def __init__(self) -> None:
        self.info = node_info()

    def where(self) -> dict[str, object]:
        return self.info

    def train(self, argv: list[str], actor_hosts: list[str], restarts: int,
              restart_wait: float) -> dict:
        """agent.rl.train's run with these options; its summary, with where each role ran."""
        run = ClusterRun(train.parse_args(argv), actor_hosts, restarts, restart_wait)
        summary = run.run()
        summary["cluster"] = {"learner": self.info, "actors": run.pool.record()}
        return summary


def short(info: dict) -> str:
    """A node as the run's output names it: its address and id's first 8 digits, the pid."""
    return f"{info['node_ip']} ({str(info['node_id'])[:8]}, pid {info['pid']})"
