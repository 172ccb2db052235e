"""The benchmark testbed: controller/testbed.yaml with min size 1 and the Learner
allowed every op, the switch, and the host replay server in the `replay`
namespace behind the same switch. Clients for every backend come from here:

    switch     the learner namespace -> the VIP, answered by the switch
    host       the learner namespace -> the replay host's 198.18.0.2:45000, through the switch
    inprocess  a ReplayService in this process (no network)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.contract.protocol import REPLAY_UDP_PORT
from agent.orchestration.benchmarks.cpu import CpuMeter
from agent.replay.client import ReplayClient, RetryPolicy, make_client
from agent.replay.host_server import Pacing
from agent.replay.memory import ALLOW_ALL, ReplayService
from agent.replay.server_process import ServerProcess
from bmv2.testbed.netns import inside
from bmv2.testbed.netns_bed import BedLifecycle, Testbed, host_table_config, start_host_server
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG, AclRule, Config

CLIENT_HOST = "learner"
SERVER_HOST = "replay"
TABLE = 0
CLIENT_WINDOW = 32
POLICY = RetryPolicy(timeout=0.25, retries=3)
ALL_OPS = ("insert", "sample", "update")


def bench_config(base: Config) -> Config:
    """`base` with min size 1 on every table and the client host allowed every op."""
    tables = tuple(replace(t, min_size=1) for t in base.tables)
    acl = tuple(a for a in base.acl if a.host != CLIENT_HOST)
    acl += tuple(AclRule(CLIENT_HOST, t.id, ALL_OPS) for t in tables)
    return replace(base, tables=tables, acl=acl)


def _options() -> dict[str, object]:
    return {"table": TABLE, "ack_inserts": True, "ack_updates": True, "policy": POLICY,
            "window": CLIENT_WINDOW}


def inprocess_client(cfg: Config, seed: int = 1) -> ReplayClient:
    """A client of a fresh in-process ReplayService configured like the switch table."""
    service = ReplayService(seed=seed)
    service.configure(TABLE, host_table_config(cfg.table(TABLE)))
    service.allow("127.0.0.1", TABLE, ALLOW_ALL)
    return make_client("inprocess", service=service, **_options())


class NetworkBed(BedLifecycle):
    """A started Testbed plus the host replay server (replies paced by `pacing`);
    stop() undoes both. With deploy_config False the switch starts without a
    pipeline (the caller pushes another program)."""

    def __init__(self, cfg: Config, switch_kind: str, log_dir: Path,
                 pacing: Pacing | None = None, deploy_config: bool = True) -> None:
        self.cfg = cfg
        self.kind = switch_kind
        self.log_dir = log_dir
        self.pacing = pacing or Pacing()
        self.testbed = Testbed(cfg, switch_kind, ip_stack=True, log_dir=log_dir,
                               deploy_config=deploy_config)
        self.server: ServerProcess | None = None

    def _bring_up(self) -> None:
        self.testbed.start()
        self.cfg = self.testbed.config
        self._start_server()

    def _start_server(self) -> None:
        self.server = start_host_server(
            self.testbed, SERVER_HOST, TABLE, [self.cfg.host(CLIENT_HOST).ip],
            self.log_dir / f"host-server-{self.kind}.log", pacing=self.pacing)

    def set_pacing(self, pacing: Pacing) -> None:
        """Restart the host server with `pacing` if it runs with another (its table
        starts empty again)."""
        if pacing == self.pacing and self.server is not None:
            return
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.pacing = pacing
        self._start_server()

    def client(self, backend: str, policy: RetryPolicy = POLICY) -> ReplayClient:
        """A client in the learner namespace for 'switch' (the VIP) or 'host'."""
        target = self.cfg.vip if backend == "switch" else self.cfg.host(SERVER_HOST).ip
        with inside(self.testbed.ns_name(CLIENT_HOST)):
            return make_client(backend, address=(target, REPLAY_UDP_PORT),
                               bind=(self.cfg.host(CLIENT_HOST).ip, 0),
                               **(_options() | {"policy": policy}))

    def cpu_meters(self) -> dict[str, CpuMeter]:
        """Per backend, the processes that serve it (cpu.py): the switch, and for
        'host' the host replay server too."""
        switch = self.testbed.switch
        if switch is None or switch.proc is None:
            return {}
        pids = {"switch": switch.proc.pid}
        meters = {"switch": CpuMeter(pids)}
        if self.server is not None and self.server.proc is not None:
            meters["host"] = CpuMeter(pids | {"server": self.server.proc.pid})
        return meters

    def _tear_down(self) -> None:
        """Stop the host server (by its PID) and tear the testbed down."""
        if self.server is not None:
            self.server.stop()
        self.server = None
        self.testbed.stop()


def load_config(path: Path = DEFAULT_CONFIG) -> Config:
    """The benchmark config derived from `path`."""
    return bench_config(cfgmod.load(path))
