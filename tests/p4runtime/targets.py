"""The P4Runtime servers the tests run against: the Python switch in-process, or
simple_switch_grpc. Used by conftest.py's fixtures and by tests that need a
target of their own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from bmv2.launch import DEFAULT_CPU_PORT, SwitchProcess, find_bmv2

if TYPE_CHECKING:
    from bmv2.pyswitch.p4runtime.dataplane import Dataplane

DEVICE_ID = 0

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


def start_python_target() -> Iterator[Target]:
    """An in-process Python switch with its P4Runtime server, until the generator ends."""
    from bmv2.pyswitch.p4runtime.dataplane import Dataplane
    from bmv2.pyswitch.p4runtime.server import P4RuntimeServer

    dataplane = Dataplane(cpu_port=DEFAULT_CPU_PORT)
    server = P4RuntimeServer(dataplane, DEVICE_ID, "127.0.0.1:0")
    port = server.start()
    target = Target("python", f"127.0.0.1:{port}", dataplane=dataplane)
    dataplane.set_transmit(target.capture)
    yield target
    server.stop(grace=0)


def start_bmv2_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """simple_switch_grpc with no pipeline, until the generator ends (skips without it)."""
    if find_bmv2() is None:
        pytest.skip("simple_switch_grpc is not installed (set $SIMPLE_SWITCH_GRPC or PATH)")
    log_path = tmp_path_factory.mktemp("bmv2") / "simple_switch_grpc.log"
    process = SwitchProcess("bmv2", {}, device_id=DEVICE_ID, log_path=log_path)
    process.start()
    yield Target("bmv2", process.grpc_addr)
    process.stop()
