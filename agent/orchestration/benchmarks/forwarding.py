"""Plain IPv4 forwarding through the switch: UDP from one host namespace to
another, measured two ways on one socket pair.

packets/s  the sender keeps at most `window` packets unreceived; when nothing
           arrives for `stall` seconds the packets in flight are written off as
           lost, so the loop always moves on.
latency    one packet in flight: each carries a sequence number, is sent from
           SENDER and timed until it arrives at RECEIVER (one-way, host to host;
           both sockets are in this process, so one clock times both ends). A
           packet not in within `stall` is counted lost and the next one is sent;
           late arrivals of earlier packets are skipped by their number.

Each stops after its count or its seconds, whichever first; the traffic stays
between the testbed's own namespaces.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agent.orchestration.benchmarks.harness import Figures, latency_figures
from bmv2.testbed.netns import udp_socket_in
from bmv2.testbed.netns_bed import Testbed

SENDER, RECEIVER = "actor1", "actor2"
PORT = 46000
PAYLOAD_BYTES = 64
PAYLOAD = bytes(PAYLOAD_BYTES)
SEQ = struct.Struct("!Q")
WARMUP_TIMEOUT = 2.0


def forwarding_figures(bed: Testbed, count: int, seconds: float, window: int, pings: int,
                       stall: float = 0.05) -> Figures:
    """packets/s and loss with `window` in flight, then one-way latency of `pings`."""
    with _socket_pair(bed) as (tx, rx):
        figs = _blast(tx, rx, count, seconds, window, stall)
        _drain(rx, stall)
        return figs | _ping(tx, rx, pings, seconds, stall)


@contextmanager
def _socket_pair(bed: Testbed) -> Iterator[tuple[socket.socket, socket.socket]]:
    """A sender in SENDER connected to a non-blocking receiver in RECEIVER, warmed up."""
    cfg = bed.config
    rx = udp_socket_in(bed.ns_name(RECEIVER))
    tx = udp_socket_in(bed.ns_name(SENDER))
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        rx.bind((cfg.host(RECEIVER).ip, PORT))
        rx.setblocking(False)
        tx.connect((cfg.host(RECEIVER).ip, PORT))
        _warm_up(tx, rx)
        yield tx, rx
    finally:
        rx.close()
        tx.close()


def _warm_up(tx: socket.socket, rx: socket.socket) -> None:
    """One packet end to end first, so ARP is resolved before timing."""
    deadline = time.monotonic() + WARMUP_TIMEOUT
    while time.monotonic() < deadline:
        tx.send(PAYLOAD)
        if select.select([rx], [], [], 0.2)[0]:
            _drain(rx, 0.0)
            return
    raise TimeoutError("no forwarded packet arrived within the warm-up")


def _recv(rx: socket.socket) -> bytes | None:
    try:
        return rx.recv(2048)
    except BlockingIOError:
        return None


def _drain(rx: socket.socket, wait: float) -> None:
    """Read everything queued, until nothing has arrived for `wait` seconds."""
    while True:
        while _recv(rx) is not None:
            pass
        if not select.select([rx], [], [], wait)[0]:
            return


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
            while _recv(rx) is not None:
                received += 1
        else:
            lost = sent - received
    while sent - received - lost > 0 and select.select([rx], [], [], stall)[0]:
        while _recv(rx) is not None:
            received += 1
    elapsed = time.perf_counter() - start
    return {"forward.pps": received / elapsed, "forward.sent": float(sent),
            "forward.received": float(received),
            "forward.loss": (sent - received) / sent if sent else 0.0}


def _ping(tx: socket.socket, rx: socket.socket, count: int, seconds: float,
          stall: float) -> Figures:
    """One-way latency of up to `count` packets, one in flight, within `seconds`."""
    latencies: list[float] = []
    lost = 0
    deadline = time.perf_counter() + seconds
    for seq in range(count):
        if time.perf_counter() >= deadline:
            break
        took = _one_way(tx, rx, seq, stall)
        if took is None:
            lost += 1
        else:
            latencies.append(took)
    figs = latency_figures("forward.latency", latencies)
    return figs | {"forward.latency.lost": float(lost)}


def _one_way(tx: socket.socket, rx: socket.socket, seq: int, stall: float) -> float | None:
    """Seconds from sending packet `seq` until it arrives, or None if not within `stall`."""
    payload = SEQ.pack(seq) + PAYLOAD[SEQ.size:]
    t0 = time.perf_counter()
    tx.send(payload)
    until = t0 + stall
    while (wait := until - time.perf_counter()) > 0 and select.select([rx], [], [], wait)[0]:
        while (data := _recv(rx)) is not None:
            if data[:SEQ.size] == payload[:SEQ.size]:
                return time.perf_counter() - t0
    return None
