"""Learner -> Actors weight broadcast over UDP: chunked, versioned, loss tolerant.

The Learner sends each chunk of a weight vector once to every destination:
through the switch that is one broadcast-group address (the switch multicasts
to every Actor); on loopback it is one address per actor. An Actor applies a
version only when all its chunks arrived and the CRC matches; an incomplete
version is dropped as soon as a newer one completes. Versions only move
forward, except that a new sender nonce (a restarted Learner) starts over.

Datagram (big-endian): a 24-byte header, then up to CHUNK_BYTES of the
float32 vector's little-endian bytes:

    magic "P4RW" | nonce u32 | version u32 | total_len u32 |
    index u16 | count u16 | crc32 u32 (of the whole vector)
"""

from __future__ import annotations

import logging
import random
import select
import socket
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from agent.replay.udp import udp_socket

log = logging.getLogger(__name__)

WEIGHTS_UDP_PORT = 45001
MAGIC = b"P4RW"
CHUNK_HEADER = struct.Struct("!4sIIIHHI")
MAX_DATAGRAM = 1400  # below the Ethernet MTU: no IP fragments through the switch
CHUNK_BYTES = MAX_DATAGRAM - CHUNK_HEADER.size
MAX_PARTIAL_VERSIONS = 4
MAX_DATAGRAMS_PER_POLL = 4096


def chunk(version: int, flat: np.ndarray, nonce: int) -> list[bytes]:
    """Split a float32 vector into broadcast datagrams."""
    blob = np.asarray(flat, dtype="<f4").tobytes()
    count = max(1, -(-len(blob) // CHUNK_BYTES))
    if count > 0xFFFF:
        raise ValueError("weight vector too large to broadcast")
    crc = zlib.crc32(blob)
    return [CHUNK_HEADER.pack(MAGIC, nonce, version, len(blob), i, count, crc)
            + blob[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES] for i in range(count)]


class WeightSender:
    """Broadcasts versioned weight vectors to a list of (ip, port) destinations."""

    def __init__(self, destinations: list[tuple[str, int]],
                 bind: tuple[str, int] = ("0.0.0.0", 0)) -> None:
        self.destinations = list(destinations)
        self.nonce = random.getrandbits(32)
        self._sock = udp_socket(bind)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)

    def send(self, version: int, flat: np.ndarray) -> int:
        """Send every chunk once per destination; returns datagrams sent."""
        sent = 0
        for datagram in chunk(version, flat, self.nonce):
            for dest in self.destinations:
                try:
                    self._sock.sendto(datagram, dest)
                    sent += 1
                except OSError as exc:  # full buffer, no route: the same as a loss
                    log.debug("weight chunk to %s not sent: %s", dest, exc)
        return sent

    def close(self) -> None:
        self._sock.close()


@dataclass
class _Assembly:
    count: int
    total_len: int
    crc: int
    chunks: dict[int, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class WeightUpdate:
    """A complete weight version."""

    version: int
    flat: np.ndarray


class WeightReceiver:
    """Reassembles broadcast weight versions on one UDP port."""

    def __init__(self, bind: tuple[str, int]) -> None:
        self._sock = udp_socket(bind)
        self._sock.setblocking(False)
        self._poller = select.poll()
        self._poller.register(self._sock, select.POLLIN)
        self.version = -1
        self.nonce: int | None = None
        self.applied = 0
        self.dropped = 0
        self.bad = 0
        self._partial: dict[int, _Assembly] = {}

    @property
    def address(self) -> tuple[str, int]:
        return self._sock.getsockname()

    def poll(self, timeout: float = 0.0) -> WeightUpdate | None:
        """Read what has arrived (waiting up to `timeout` for the first datagram);
        returns the newest version completed by it, if any."""
        if timeout > 0 and not self._poller.poll(timeout * 1000.0):
            return None
        newest: WeightUpdate | None = None
        for _ in range(MAX_DATAGRAMS_PER_POLL):
            try:
                data = self._sock.recv(65535)
            except BlockingIOError:
                break
            except OSError as exc:
                log.debug("weights recv: %s", exc)
                break
            newest = self._accept(data) or newest
        return newest

    def close(self) -> None:
        self._sock.close()

    def _accept(self, data: bytes) -> WeightUpdate | None:
        if len(data) < CHUNK_HEADER.size:
            self.bad += 1
            return None
        magic, nonce, version, total_len, index, count, crc = CHUNK_HEADER.unpack_from(data)
        if magic != MAGIC or not 0 <= index < count:
            self.bad += 1
            return None
        if nonce != self.nonce:  # a new (restarted) sender: start over
            self.nonce, self.version = nonce, -1
            self._partial.clear()
        if version <= self.version:
            return None
        asm = self._partial.get(version)
        if asm is None:
            asm = self._partial[version] = _Assembly(count, total_len, crc)
            while len(self._partial) > MAX_PARTIAL_VERSIONS:
                del self._partial[min(self._partial)]
                self.dropped += 1
        if (count, total_len, crc) != (asm.count, asm.total_len, asm.crc):
            self.bad += 1
            return None
        asm.chunks[index] = bytes(data[CHUNK_HEADER.size:])
        if len(asm.chunks) < asm.count:
            return None
        blob = b"".join(asm.chunks[i] for i in range(asm.count))
        del self._partial[version]
        if len(blob) != asm.total_len or zlib.crc32(blob) != asm.crc:
            self.bad += 1
            return None
        self.version = version
        for old in [v for v in self._partial if v < version]:
            del self._partial[old]
            self.dropped += 1
        self.applied += 1
        return WeightUpdate(version, np.frombuffer(blob, dtype="<f4").astype(np.float32))
