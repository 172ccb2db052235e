"""Switch packets/s for plain IPv4 forwarding: UDP from one host namespace to
another through the switch, with a bounded window of packets in flight.

The sender keeps at most `window` packets unreceived; when nothing arrives for
`stall` seconds the packets in flight are written off as lost, so the loop
always moves on. It stops after `count` packets or `seconds`, whichever first.
"""

from __future__ import annotations

import select
import socket
import time

from agent.benchmarks.harness import Figures
from bmv2.netns import udp_socket
from bmv2.testbed import Testbed

SENDER, RECEIVER = "actor1", "actor2"
PORT = 46000
PAYLOAD = bytes(64)
WARMUP_TIMEOUT = 2.0


def forwarding_pps(bed: Testbed, count: int, seconds: float, window: int = 64,
                   stall: float = 0.05) -> Figures:
    """Delivered packets/s and loss between SENDER and RECEIVER through the switch."""
    cfg = bed.config
    rx = udp_socket(bed.ns_name(RECEIVER))
    tx = udp_socket(bed.ns_name(SENDER))
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        rx.bind((cfg.host(RECEIVER).ip, PORT))
        rx.setblocking(False)
        tx.connect((cfg.host(RECEIVER).ip, PORT))
        _warm_up(tx, rx)
        return _blast(tx, rx, count, seconds, window, stall)
    finally:
        rx.close()
        tx.close()


def _warm_up(tx: socket.socket, rx: socket.socket) -> None:
    """One packet end to end first, so ARP is resolved before timing."""
    deadline = time.monotonic() + WARMUP_TIMEOUT
    while time.monotonic() < deadline:
        tx.send(PAYLOAD)
        if select.select([rx], [], [], 0.2)[0]:
            while _recv(rx):
                pass
            return
    raise TimeoutError("no forwarded packet arrived within the warm-up")


def _recv(rx: socket.socket) -> bool:
    try:
        rx.recv(2048)
    except BlockingIOError:
        return False
    return True


def _blast(tx: socket.socket, rx: socket.socket, count: int, seconds: float, window: int,
           stall: float) -> Figures:
    sent = received = lost = 0
    start = time.perf_counter()
    deadline = start + seconds
    while sent < count and time.perf_counter() < deadline:
        while sent < count and sent - received - lost < window:
            tx.send(PAYLOAD)
            sent += 1
        if select.select([rx], [], [], stall)[0]:
            while _recv(rx):
                received += 1
        else:
            lost = sent - received
    while sent - received - lost > 0 and select.select([rx], [], [], stall)[0]:
        while _recv(rx):
            received += 1
    elapsed = time.perf_counter() - start
    return {"forward.pps": received / elapsed, "forward.sent": float(sent),
            "forward.received": float(received),
            "forward.loss": (sent - received) / sent if sent else 0.0}
