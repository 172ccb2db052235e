"""Fixtures for the agent tests: a host replay server on loopback and a raw UDP peer."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from agent.contract import protocol
from agent.contract.protocol import ALLOW_ALL, Message
from agent.replay.host_server import HostServer, build_service
from agent.replay.memory import TableConfig
from agent.rl.dqn import set_torch_threads

LOOPBACK = "127.0.0.1"
OUTSIDER = "127.0.0.2"  # a loopback source address the ACL does not list


class RawPeer:
    """A UDP socket that sends raw datagrams to a server and collects its replies."""

    def __init__(self, server: tuple[str, int], bind_ip: str = LOOPBACK) -> None:
        self.server = server
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind_ip, 0))

    def send(self, data: bytes | Message) -> None:
        self.sock.sendto(protocol.encode(data) if isinstance(data, Message) else data,
                         self.server)

    def replies(self, expect: int, timeout: float = 2.0) -> list[Message]:
        """Exactly the replies that arrive within `timeout` (stops early at `expect`)."""
        out: list[Message] = []
        self.sock.settimeout(timeout)
        while len(out) < expect:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                break
            out.append(protocol.decode(data))
        return out

    def none_within(self, timeout: float = 0.2) -> bool:
        """True if no datagram arrives within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            self.sock.recv(4096)
        except TimeoutError:
            return True
        return False

    def request(self, msg: Message, expect: int = 1) -> list[Message]:
        self.send(msg)
        return self.replies(expect)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """Tiny networks run much faster (and fairer to the build) on one thread."""
    set_torch_threads(1)


@pytest.fixture
def server() -> Iterator[HostServer]:
    """A host server: table 0 prioritized (capacity 8), table 1 uniform, table 2 disabled,
    table 3 unconfigured; 127.0.0.1 may do everything on tables 0-2."""
    service = build_service([0], TableConfig(capacity=8, min_size=2, max_batch=16),
                            [(LOOPBACK, ALLOW_ALL)], seed=7)
    service.configure(1, TableConfig(capacity=64, default_mode=protocol.Mode.UNIFORM))
    service.configure(2, TableConfig(enabled=False))
    for table in (1, 2):
        service.allow(LOOPBACK, table, ALLOW_ALL)
    srv = HostServer(service, (LOOPBACK, 0)).start()
    yield srv
    srv.stop()


@pytest.fixture
def peer(server: HostServer) -> Iterator[RawPeer]:
    p = RawPeer(server.address)
    yield p
    p.close()
