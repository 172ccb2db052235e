"""The benchmark testbed: controller/testbed.yaml with min size 1 and the Learner
allowed every op, the switch, and the host replay server in the `replay`
namespace behind the same switch. Clients for every backend come from here:

    switch     the learner namespace -> the VIP, answered by the switch
    host       the learner namespace -> the replay host's 198.18.0.2:45000, through the switch
    inprocess  a ReplayService in this process (no network)

Host interfaces get TX checksum offload switched off (`ethtool -K IFACE tx off`,
done here by ioctl): on a veth the sender's kernel leaves UDP checksums for the
"hardware", the switch reads frames through a packet socket and sends them on
with the partial checksum, and the receiving host drops them. Replies from the
switch's VIP are unaffected (their UDP checksum is 0), host-to-host UDP is not.
"""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from agent.protocol import REPLAY_UDP_PORT
from agent.replay_client import ReplayClient, RetryPolicy, make_client
from agent.replay_memory import ALLOW_ALL, ReplayService, TableConfig
from bmv2.netns import inside
from bmv2.testbed import Testbed
from controller import config as cfgmod
from controller.config import AclRule, Config

REPO = Path(__file__).resolve().parents[2]
BASE_CONFIG = REPO / "controller" / "testbed.yaml"
CLIENT_HOST = "learner"
SERVER_HOST = "replay"
TABLE = 0
CLIENT_WINDOW = 32
POLICY = RetryPolicy(timeout=0.25, retries=3)
SERVER_START_TIMEOUT = 20.0
ALL_OPS = ("insert", "sample", "update")
SIOCETHTOOL = 0x8946
ETHTOOL_STXCSUM = 0x17


def bench_config(base: Config) -> Config:
    """`base` with min size 1 on every table and the client host allowed every op."""
    tables = tuple(replace(t, min_size=1) for t in base.tables)
    acl = tuple(a for a in base.acl if a.host != CLIENT_HOST)
    acl += tuple(AclRule(CLIENT_HOST, t.id, ALL_OPS) for t in tables)
    return replace(base, tables=tables, acl=acl)


def table_config(cfg: Config) -> TableConfig:
    """The benchmark table's switch config, for the host server and in-process service."""
    t = cfg.table(TABLE)
    return TableConfig(capacity=t.capacity, min_size=t.min_size, max_batch=t.max_batch,
                       default_mode=t.mode_code)


def _options() -> dict[str, object]:
    return {"table": TABLE, "ack_inserts": True, "ack_updates": True, "policy": POLICY,
            "window": CLIENT_WINDOW}


def inprocess_client(cfg: Config, seed: int = 1) -> ReplayClient:
    """A client of a fresh in-process ReplayService configured like the switch table."""
    service = ReplayService(seed=seed)
    service.configure(TABLE, table_config(cfg))
    service.allow("127.0.0.1", TABLE, ALLOW_ALL)
    return make_client("inprocess", service=service, **_options())


class NetworkBed:
    """A started Testbed plus the host replay server; stop() undoes both."""

    def __init__(self, cfg: Config, switch_kind: str, log_dir: Path) -> None:
        self.cfg = cfg
        self.kind = switch_kind
        self.log_dir = log_dir
        self.testbed = Testbed(cfg, switch_kind, ip_stack=True, log_dir=log_dir)
        self.server: subprocess.Popen | None = None

    def start(self) -> NetworkBed:
        try:
            self.testbed.start()
            self.cfg = self.testbed.config
            for h in self.cfg.hosts:
                tx_checksum_off(self.testbed.ns_name(h.name), self.testbed.host_iface(h.name))
            self._start_server()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_server(self) -> None:
        t = table_config(self.cfg)
        ip = self.cfg.host(SERVER_HOST).ip
        log_path = self.log_dir / f"host-server-{self.kind}.log"
        cmd = [*self.testbed.exec_prefix(SERVER_HOST), sys.executable, "-m", "agent.host_server",
               "--bind", ip, "--port", str(REPLAY_UDP_PORT), "--tables", str(TABLE),
               "--capacity", str(t.capacity), "--min-size", str(t.min_size),
               "--max-batch", str(t.max_batch), "--allow", self.cfg.host(CLIENT_HOST).ip,
               "--seed", "1"]
        with log_path.open("wb") as log:
            self.server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while b"host replay server on" not in log_path.read_bytes():
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"host replay server did not start; see {log_path}")
            time.sleep(0.05)

    def client(self, backend: str) -> ReplayClient:
        """A client in the learner namespace for 'switch' (the VIP) or 'host'."""
        target = self.cfg.vip if backend == "switch" else self.cfg.host(SERVER_HOST).ip
        with inside(self.testbed.ns_name(CLIENT_HOST)):
            return make_client(backend, address=(target, REPLAY_UDP_PORT),
                               bind=(self.cfg.host(CLIENT_HOST).ip, 0), **_options())

    def stop(self) -> None:
        """Stop the host server (by its PID) and tear the testbed down."""
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(timeout=5.0)
        self.server = None
        self.testbed.stop()


def tx_checksum_off(ns: str, iface: str) -> None:
    """`ethtool -K iface tx off` inside namespace `ns` (the SIOCETHTOOL ioctl)."""
    cmd = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_STXCSUM, 0))
    ifreq = struct.pack("16sP", iface.encode(), ctypes.addressof(cmd)).ljust(40, b"\0")
    with inside(ns):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(sock, SIOCETHTOOL, ifreq)
    finally:
        sock.close()


def load_config(path: Path = BASE_CONFIG) -> Config:
    """The benchmark config derived from `path`."""
    return bench_config(cfgmod.load(path))
