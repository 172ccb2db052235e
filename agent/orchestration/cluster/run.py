"""`make run CLUSTER=ray`: the launcher's training step with the Learner and the Actors
placed by Ray, on a Ray cluster made on the testbed (nodes.RayCluster) or on an
existing one (--ray-address).

On the testbed the driver runs in the Learner's namespace, on the head. With
--kill-actor-node-at T, T seconds after the Actors are placed every process of actor
0's node is killed (its machine dies); the node is started again --node-down seconds
later, as the machine coming back, and Ray restarts the Actor there.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agent.orchestration.cluster.nodes import (
    MGMT_NET,
    MGMT_PREFIX_LEN,
    RayCluster,
    RayStartError,
)
from bmv2.testbed.netns_bed import Testbed
from controller.config import Config

Relay = Callable[..., int]   # launch.relay(cmd, suffix, env): run a command, its exit code


def say(text: str) -> None:
    print(f"[run] {text}", flush=True)


def run_hosts(cfg: Config) -> list[tuple[str, str]]:
    """(name, data address) of the run's Learner, then of its Actors in config order."""
    learner = next(h for h in cfg.hosts if h.role == "learner")
    return [(learner.name, learner.ip), *((h.name, h.ip) for h in cfg.hosts if h.role == "actor")]


def driver_command(args: argparse.Namespace, cfg: Config, address: str,
                   replay: tuple[str, int], train_options: list[str]) -> list[str]:
    """`python -m agent.orchestration.cluster.driver ...` for this run."""
    cmd = [sys.executable, "-m", "agent.orchestration.cluster.driver", "--address", address,
           "--replay", f"{replay[0]}:{replay[1]}", "--run-dir", str(args.run_dir),
           "--restarts", str(args.actor_restarts), "--restart-wait", str(args.restart_wait)]
    for name, ip in run_hosts(cfg):
        cmd += ["--host", f"{name}={ip}"]
    return [*cmd, "--", *train_options]


def train_options(args: argparse.Namespace, cfg: Config, replay: tuple[str, int],
                  weights_dest: str) -> list[str]:
    """agent.rl.train's options for the Learner's run: the hosts' own addresses, the
    Actors' weights on every address of their host (the switch's broadcast)."""
    hosts = run_hosts(cfg)
    opts = ["--backend", args.backend, "--actors", str(args.actors), "--env", args.env,
            "--seed", str(args.seed), "--max-env-steps", str(args.max_env_steps),
            "--max-seconds", str(args.max_seconds), "--run-dir", str(args.run_dir),
            "--table", str(args.table), "--replay", f"{replay[0]}:{replay[1]}",
            "--bind", hosts[0][1], "--actor-mode", "process", "--actor-bind", "0.0.0.0",
            "--weights-dest", weights_dest]
    opts += [a for item in args.set for a in ("--set", item)]
    for _, ip in hosts[1:]:
        opts += ["--actor-ip", ip]
    return opts


class NodeKiller(threading.Thread):
    """Kills actor 0's Ray node `at` seconds after the Actors are placed (the run
    dir's pids.json appears), brings it back `down` seconds later."""

    def __init__(self, cluster: RayCluster, host: str, at: float, down: float,
                 run_dir: Path) -> None:
        super().__init__(name="node-killer", daemon=True)
        self.cluster, self.host, self.at, self.down = cluster, host, at, down
        self.pids = run_dir / "pids.json"
        self.stopping = threading.Event()
        self.report: dict[str, object] = {}

    def run(self) -> None:
        while not self.pids.exists():
            if self.stopping.wait(0.2):
                return
        if self.stopping.wait(self.at):
            return
        killed = self.cluster.kill(self.host)
        self.report = {"host": self.host, "killed_at_s": self.at, "pids": killed}
        say(f"[faults] killed host {self.host}'s Ray node: {len(killed)} processes "
            f"(SIGKILL); it comes back in {self.down:g} s")
        if self.stopping.wait(self.down):
            return
        started = time.monotonic()
        try:
            self.cluster.start_node(self.host)
        except RayStartError as exc:
            self.report["error"] = str(exc)
            say(f"[faults] error: {exc}")
            return
        self.report["back_after_s"] = round(self.down + time.monotonic() - started, 1)
        say(f"[faults] host {self.host}'s Ray node is back")


def train_on_testbed(args: argparse.Namespace, bed: Testbed, replay: tuple[str, int],
                     weights_dest: str, kind: str, relay: Relay) -> int:
    """A Ray cluster on the bed's namespaces, the driver on its head; the driver's code."""
    hosts = [name for name, _ in run_hosts(bed.config)]
    say(f"Ray cluster: head in {hosts[0]}'s namespace {bed.ns_name(hosts[0])}, a worker node "
        f"in each of {', '.join(hosts[1:])}'s, management network "
        f"{MGMT_NET}.0/{MGMT_PREFIX_LEN}")
    started = time.monotonic()
    with RayCluster(bed, hosts, args.run_dir / "logs") as cluster:
        say(f"Ray cluster up at {cluster.address} in {time.monotonic() - started:.1f} s: "
            + ", ".join(f"{h}={n.ip}" for h, n in cluster.nodes.items()))
        killer = None
        if args.kill_actor_node_at is not None:
            killer = NodeKiller(cluster, hosts[1], args.kill_actor_node_at, args.node_down,
                                args.run_dir)
            killer.start()
        try:
            cmd = driver_command(args, bed.config, cluster.address, replay,
                                 train_options(args, bed.config, replay, weights_dest))
            code = relay([*bed.exec_prefix(hosts[0]), *cmd], f"switch={kind} cluster=ray",
                         cluster.auth_env)
        finally:
            if killer is not None:
                killer.stopping.set()
                killer.join()
                (args.run_dir / "faults.json").write_text(json.dumps(killer.report, indent=1))
        say("stopping the Ray cluster")
    return code

