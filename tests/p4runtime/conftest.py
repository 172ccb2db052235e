"""Fixtures: the P4Runtime server under test, in-process (Python switch) or bmv2.

Tests that go through gRPC only run on both, so that the Python switch's
answers are checked against simple_switch_grpc's wherever bmv2 is installed.
"""

from __future__ import annotations

import os

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from bmv2.launch import DEFAULT_CPU_PORT, SwitchProcess, find_bmv2
from tests.p4runtime.p4rt_client import Client, Names, load_p4info

if TYPE_CHECKING:
    from bmv2.pyswitch.p4runtime.dataplane import Dataplane

DEVICE_ID = 0

# Streams of earlier tests may still be closing on the server: each test takes
# election ids above all earlier ones, so that leftovers never win or collide.
_ELECTION_BASES = itertools.count(1000, 1000)


@dataclass
class Target:
    """A running switch with a P4Runtime server."""

    kind: str
    address: str
    device_id: int = DEVICE_ID
    cpu_port: int = DEFAULT_CPU_PORT
    dataplane: Dataplane | None = None
    sent: list[tuple[int, bytes]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def capture(self, port: int, frame: bytes) -> None:
        """Record a frame the Python switch sent out of a data port."""
        with self._lock:
            self.sent.append((port, frame))

    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run a frame through the Python switch; the data-port frames it sent."""
        if self.dataplane is None:
            pytest.skip("frames are injected in-process on the Python switch only")
        with self._lock:
            self.sent.clear()
        self.dataplane.receive(port, frame)
        with self._lock:
            return list(self.sent)


def _python_target() -> Iterator[Target]:
    from bmv2.pyswitch.p4runtime.dataplane import Dataplane
    from bmv2.pyswitch.p4runtime.server import P4RuntimeServer

    dataplane = Dataplane(cpu_port=DEFAULT_CPU_PORT)
    server = P4RuntimeServer(dataplane, DEVICE_ID, "127.0.0.1:0")
    port = server.start()
    target = Target("python", f"127.0.0.1:{port}", dataplane=dataplane)
    dataplane.set_transmit(target.capture)
    yield target
    server.stop(grace=0)


def _bmv2_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if find_bmv2() is None:
        pytest.skip("simple_switch_grpc is not installed (set $SIMPLE_SWITCH_GRPC or PATH)")
    log_path = tmp_path_factory.mktemp("bmv2") / "simple_switch_grpc.log"
    process = SwitchProcess("bmv2", {}, device_id=DEVICE_ID, log_path=log_path)
    process.start()
    yield Target("bmv2", process.grpc_addr)
    process.stop()


@pytest.fixture(scope="module", params=["python", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def target(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The switch under test, shared by a module's tests."""
    if request.param == "python":
        yield from _python_target()
    else:
        yield from _bmv2_target(tmp_path_factory)


@pytest.fixture
def python_target() -> Iterator[Target]:
    """A fresh in-process Python switch, for tests of its own behaviour."""
    yield from _python_target()


@pytest.fixture
def election_base() -> int:
    """An election id above every id earlier tests used (use base + 1, base + 2, ...)."""
    return next(_ELECTION_BASES)


@pytest.fixture
def client(target: Target, election_base: int) -> Iterator[Client]:
    """The primary client (election id base + 500) with the test program pushed."""
    c = Client(target.address, target.device_id, election_id=election_base + 500)
    c.arbitrate()
    c.set_pipeline()
    yield c
    c.close()


@pytest.fixture(scope="session")
def names() -> Names:
    """Name lookups in the test program's P4Info."""
    return Names(load_p4info())
