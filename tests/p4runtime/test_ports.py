"""AF_PACKET ports on veth interfaces, in namespaces this test creates."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator

import pytest

from bmv2.pyswitch.ports import PortError, PortSet, parse_port_spec
from bmv2.testbed.netns import Namespace, VethPair, inside, raw_socket
from tests import needs

TAG = f"p4rt{os.getpid() % 10000}"


@pytest.fixture
def wires() -> Iterator[dict[str, str]]:
    """Namespace sw with s1, s2 wired to h1-eth0 in ns h1 and h2-eth0 in ns h2."""
    needs.netns()
    spaces = {n: Namespace(f"{TAG}{n}").create() for n in ("sw", "h1", "h2")}
    pairs = [VethPair(f"{TAG}s{i}", f"{TAG}h{i}", spaces["sw"].name, spaces[f"h{i}"].name)
             for i in (1, 2)]
    try:
        for pair in pairs:
            pair.create()
        yield {name: ns.name for name, ns in spaces.items()}
    finally:
        for ns in spaces.values():
            ns.delete()


@pytest.mark.netns
def test_frames_in_and_out(wires: dict[str, str]) -> None:
    received: queue.Queue[tuple[int, bytes]] = queue.Queue()
    with inside(wires["sw"]):
        ports = PortSet({1: f"{TAG}s1", 2: f"{TAG}s2"},
                        lambda port, frame: received.put((port, frame)))
    ports.start()
    h1 = raw_socket(f"{TAG}h1", wires["h1"])
    h2 = raw_socket(f"{TAG}h2", wires["h2"])
    h2.settimeout(5)
    try:
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x88\x88" + b"hello".ljust(46, b"\x00")
        h1.send(frame)
        deadline = time.monotonic() + 5
        while True:
            port, got = received.get(timeout=max(0.1, deadline - time.monotonic()))
            if got == frame:
                break
        assert port == 1
        out = b"\x06" * 6 + b"\x02" * 6 + b"\x88\x88" + b"world".ljust(46, b"\x00")
        ports.send(2, out)
        while h2.recv(65535) != out:
            pass
        ports.send(9, out)  # no interface: dropped silently
        # What the switch sent on port 2 is not taken for a frame received on it.
        time.sleep(0.2)
        assert all(got != out for _, got in list(received.queue))
    finally:
        ports.close()
        h1.close()
        h2.close()


def test_missing_interface_is_a_clear_error() -> None:
    with pytest.raises(PortError, match="cannot open interface nosuch0 for port 1"):
        PortSet({1: "nosuch0"}, lambda port, frame: None)


def test_port_spec_parsing() -> None:
    assert parse_port_spec("3@veth3").iface == "veth3"
    with pytest.raises(PortError):
        parse_port_spec("3@" + "x" * 20)
