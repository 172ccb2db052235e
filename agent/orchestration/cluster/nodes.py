"""A Ray cluster on the namespace testbed: one Ray node per host, inside that host's
namespace, as a real cluster has one per machine.

Ray's own traffic (its GCS, raylets, object managers) runs on a management network
apart from the data network the switch serves, as on a cluster whose machines
have a management NIC: a Linux bridge in a namespace of its own, a veth from it into
each host's namespace, addresses 198.19.250.N/24 (inside the benchmarking range,
outside the data hosts' /24s and the broadcast address). The data interface keeps
the host's configured address, so a role placed on a node talks to the switch from
its host's address and port, as the ACL and the source guard require.

The head runs in the Learner's namespace with resource `host:<learner>`, a worker
node in each Actor's namespace with `host:<actor>`. Each node is one `ray start
--block` process group, small (no dashboard, a 100 MB object store: nothing large
goes through it); `kill(host)` kills every process in a host's namespace, as a
machine dying would, and `start_node(host)` brings its node back.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.contract.cli_args import REPO
from agent.orchestration.cluster.placement import resource
from bmv2.testbed.netns import (
    Namespace,
    VethPair,
    configure_host,
    ip,
    netns_id,
    pids_in,
)
from bmv2.testbed.netns_bed import PREFIX, BedLifecycle, Testbed

MGMT_NET = "198.19.250"          # the management /24
MGMT_PREFIX_LEN = 24
MGMT_IFACE = "mgmt0"             # the management interface's name in each host namespace
BRIDGE = "br0"
HEAD_PORT = 6379                 # the GCS port, on the head's management address
NODE_START_TIMEOUT = 90.0        # seconds a `ray start` gets to print that it is up
NODE_START_ATTEMPTS = 5          # a loaded machine can miss Ray's 30 s registration often
NODE_STOP_GRACE = 5.0
OBJECT_STORE_BYTES = 100 * 2**20
# The GCS declares a node dead after 3 missed 1 s health checks (Ray's default is
# 5 of 3 s), so an Actor on a dead node is restarted within seconds.
HEAD_ENV = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3",
            "RAY_health_check_timeout_ms": "1000"}
STARTED = "Ray runtime started"
# A node's own processes (raylet, agents) start at niceness -10, ahead of what else a
# busy machine runs: Ray gives a starting raylet a fixed 30 s to register, and its
# agents' imports alone can take that on 2 loaded cores. Workers add
# WORKER_NICENESS (Ray's nice() increment) and so run the roles at niceness 0,
# competing with the switch as plain processes do.
NODE_NICENESS = -10
WORKER_NICENESS = -NODE_NICENESS
# The node's agents listen on fixed ports (each node has its own namespace): a
# raylet told its agents' ports starts without waiting for them to write their
# port files, a wait a busy machine can make it lose (ray_start passes the raylet
# the one port `ray start` leaves out).
AGENT_PORTS = {"--metrics-export-port": 58080, "--dashboard-agent-listen-port": 58081,
               "--dashboard-agent-grpc-port": 58082, "--runtime-env-agent-port": 58083}


class RayStartError(RuntimeError):
    """A Ray node did not come up (one line, naming its log)."""


def node_env(auth: dict[str, str]) -> dict[str, str]:
    """The environment of every Ray process on the testbed: the cluster's token
    (`auth`), the repository importable by Ray's workers, no usage reports."""
    env = dict(os.environ) | auth
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_worker_niceness"] = str(WORKER_NICENESS)
    env["RAY_DISABLE_DOCKER_CPU_WARNING"] = "1"
    return env


@dataclass
class RayNode:
    """One host's Ray node: its namespace, management address and `ray start` process."""

    host: str
    ns: str
    ip: str
    head: bool
    log: Path
    proc: subprocess.Popen | None = None
    starts: int = 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class RayCluster(BedLifecycle):
    """Ray nodes in a testbed's namespaces: the head on `hosts[0]` (the Learner's),
    a worker node on each of the others; `num_cpus` per node (the roles ask for no
    CPU, only their host's resource)."""

    bed: Testbed
    hosts: list[str]
    log_dir: Path
    num_cpus: int = 1
    nodes: dict[str, RayNode] = field(default_factory=dict)
    mgmt: Namespace | None = None
    links: list[VethPair] = field(default_factory=list)
    token: str = field(default_factory=lambda: secrets.token_hex(32))

    @property
    def auth_env(self) -> dict[str, str]:
        """What a driver's environment needs to join: Ray's token authentication with
        this cluster's own token (made for the run, never written to a file)."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    @property
    def tag(self) -> str:
        return self.bed.tag

    @property
    def address(self) -> str:
        """The GCS address a driver or a worker node joins (on the management network)."""
        return f"{self.nodes[self.hosts[0]].ip}:{HEAD_PORT}"

    @property
    def temp_dir(self) -> Path:
        """Ray's session files (sockets, logs) of this cluster, a folder per node as on
        separate machines (each node's log monitor sends only its own workers' logs);
        short: socket paths are limited to 107 bytes."""
        return Path("/tmp") / f"{PREFIX}-ray-{self.tag}"

    def mgmt_ip(self, host: str) -> str:
        return f"{MGMT_NET}.{self.hosts.index(host) + 1}"

    def _bring_up(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._management_network()
        for i, host in enumerate(self.hosts):
            self.nodes[host] = RayNode(host, self.bed.ns_name(host), self.mgmt_ip(host),
                                       head=i == 0, log=self.log_dir / f"ray-node-{host}.log")
        for host in self.hosts:  # the head first: the workers join it
            self.start_node(host)

    def _management_network(self) -> None:
        """The bridge in its own namespace and a veth from it into each host."""
        self.mgmt = Namespace(f"{PREFIX}{self.tag}-mgmt").create()
        ip("link", "add", BRIDGE, "type", "bridge", ns=self.mgmt.name)
        ip("link", "set", BRIDGE, "up", ns=self.mgmt.name)
        for i, host in enumerate(self.hosts):
            ns = self.bed.ns_name(host)
            # both ends are renamed once moved; the names here only need to be unique
            pair = VethPair(f"{PREFIX}{self.tag}b{i}", f"{PREFIX}{self.tag}g{i}",
                            self.mgmt.name, ns).create()
            self.links.append(pair)
            ip("link", "set", pair.a, "master", BRIDGE, ns=self.mgmt.name)
            ip("link", "set", pair.b, "down", ns=ns)
            ip("link", "set", pair.b, "name", MGMT_IFACE, ns=ns)
            pair.b = MGMT_IFACE
            configure_host(ns, MGMT_IFACE, f"{self.mgmt_ip(host)}/{MGMT_PREFIX_LEN}",
                           default_dev=False)

    def command(self, node: RayNode) -> list[str]:
        """`ray start --block` for `node`, run inside its namespace."""
        cmd = [sys.executable, "-m", "agent.orchestration.cluster.ray_start", "start", "--block",
               "--node-ip-address", node.ip, "--num-cpus", str(self.num_cpus),
               "--resources", json.dumps({resource(node.host): 1}),
               "--object-store-memory", str(OBJECT_STORE_BYTES),
               "--temp-dir", str(self.temp_dir / node.host), "--disable-usage-stats"]
        cmd += [str(a) for item in AGENT_PORTS.items() for a in item]
        if node.head:
            cmd += ["--head", "--port", str(HEAD_PORT), "--include-dashboard", "false"]
        else:
            cmd += ["--address", self.address]
        return ["ip", "netns", "exec", node.ns, "nice", "-n", str(NODE_NICENESS), *cmd]

    def start_node(self, host: str) -> RayNode:
        """Start `host`'s Ray node (again) and wait until `ray start` says it is up; a
        start that fails (Ray gives a raylet 30 s to register, which a loaded machine
        can miss) is cleared away and tried again, NODE_START_ATTEMPTS times in all."""
        attempts = 1
        while True:
            try:
                return self._start_once(host)
            except RayStartError:
                if attempts == NODE_START_ATTEMPTS:
                    raise
            self.kill(host)   # what the failed start left in the namespace
            attempts += 1

    def _start_once(self, host: str) -> RayNode:
        node = self.nodes[host]
        env = node_env(self.auth_env) | (HEAD_ENV if node.head else {})
        with node.log.open("a") as out:
            out.write(f"--- start {node.starts + 1} at {time.strftime('%H:%M:%S')}\n")
            out.flush()
            offset = out.tell()
            node.proc = subprocess.Popen(self.command(node), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, cwd=REPO,
                                         start_new_session=True)
        node.starts += 1
        deadline = time.monotonic() + NODE_START_TIMEOUT
        while time.monotonic() < deadline:
            with node.log.open() as f:
                f.seek(offset)
                if STARTED in f.read():
                    return node
            if not node.alive():
                raise RayStartError(f"the Ray node of host {host} exited "
                                   f"(code {node.proc.returncode}); see {node.log}")
            time.sleep(0.2)
        raise RayStartError(f"the Ray node of host {host} did not start within "
                           f"{NODE_START_TIMEOUT:.0f} s; see {node.log}")

    def kill(self, host: str) -> list[int]:
        """Kill every process in `host`'s namespace at once (SIGKILL), as the machine
        dying would: its Ray node and the roles placed on it. The PIDs killed."""
        nsid = netns_id(self.nodes[host].ns)
        killed = pids_in(nsid)
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node = self.nodes[host]
        if node.proc is not None:
            node.proc.wait()
        return killed

    def _stop_node(self, node: RayNode) -> None:
        """SIGTERM the node's process group (ray start stops what it started), then
        SIGKILL whatever of it is left."""
        if node.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, NODE_STOP_GRACE), (signal.SIGKILL, 2.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, sig)
            try:
                node.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGKILL)

    def _tear_down(self) -> None:
        """Workers first, then the head; whatever Ray left in the namespaces is stopped
        with them (Testbed's teardown); the logs are kept under log_dir/ray."""
        for host in reversed(list(self.nodes)):
            self._stop_node(self.nodes[host])
        for node in self.nodes.values():
            with contextlib.suppress(FileNotFoundError):
                for pid in pids_in(netns_id(node.ns)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        for pair in self.links:
            pair.delete()
        self.links.clear()
        if self.mgmt is not None:
            self.mgmt.delete()
            self.mgmt = None
        for host in self.nodes:
            logs = self.temp_dir / host / "session_latest" / "logs"
            if logs.is_dir():
                shutil.copytree(logs, self.log_dir / "ray" / host, dirs_exist_ok=True)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
