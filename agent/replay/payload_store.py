"""An Actor's payload store: the bytes of its experiences kept by reference, and the
UDP server that answers the Learner's FETCH requests for them
(agent/replay/fetch.py, docs/protocol.md "Payloads by reference").

The store is a ring of `capacity` payloads by sequence number (1, 2, ...): storing
one more evicts the oldest. A replay table holds at most `capacity` experiences, so
a store at least as large as the table still has every payload of this Actor the
table can still sample. Its epoch, drawn when it is made, is in every reference:
a restarted Actor (a new store) answers STALE to the old ones, never with another
payload of the same number.
"""

from __future__ import annotations

import logging
import random
import select
import socket
import threading
import zlib
from collections import Counter

from agent.contract.protocol import ProtocolError
from agent.replay import fetch
from agent.replay.fetch import FetchEntry, FetchStatus
from agent.replay.reference import Reference
from agent.replay.udp import udp_socket

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1   # how often the server thread looks at its stop flag


class PayloadStore:
    """The last `capacity` payloads, by sequence number (thread-safe)."""

    def __init__(self, capacity: int, epoch: int | None = None) -> None:
        if capacity < 1:
            raise ValueError("a payload store holds at least one payload")
        self.capacity = capacity
        self.epoch = epoch if epoch is not None else random.randrange(1, 1 << 32)
        self._ring: list[tuple[int, bytes] | None] = [None] * capacity
        self._seq = 0
        self._lock = threading.Lock()

    @property
    def last_seq(self) -> int:
        return self._seq

    def put(self, payload: bytes) -> int:
        """Store `payload` (evicting the oldest when full); its sequence number."""
        if len(payload) > fetch.MAX_PAYLOAD_BYTES:
            raise ValueError(f"a payload by reference is at most {fetch.MAX_PAYLOAD_BYTES} "
                             f"bytes, got {len(payload)}")
        with self._lock:
            self._seq = (self._seq + 1) & 0xFFFFFFFF or 1
            self._ring[self._seq % self.capacity] = (self._seq, payload)
            return self._seq

    def get(self, seq: int) -> bytes | None:
        """The payload numbered `seq`, or None if it was evicted or never stored."""
        with self._lock:
            entry = self._ring[seq % self.capacity]
        return entry[1] if entry is not None and entry[0] == seq else None

    def reference(self, payload: bytes, owner: tuple[str, int], actor: int,
                  inline: bytes) -> Reference:
        """Store `payload` and return its reference (owner = this store's address)."""
        seq = self.put(payload)
        return Reference(owner[0], owner[1], actor, self.epoch, seq, len(payload),
                         zlib.crc32(payload), inline)

    def answer(self, req: fetch.FetchRequest) -> list[FetchEntry]:
        """The entries answering a FETCH: OK with the bytes, MISSING, or STALE."""
        if req.epoch != self.epoch:
            return [FetchEntry(i, FetchStatus.STALE, s) for i, s in enumerate(req.seqs)]
        out = []
        for i, seq in enumerate(req.seqs):
            data = self.get(seq)
            out.append(FetchEntry(i, FetchStatus.MISSING, seq) if data is None
                       else FetchEntry(i, FetchStatus.OK, seq, data))
        return out


class PayloadServer:
    """Serves a PayloadStore's FETCH requests from a UDP socket, in a daemon thread."""

    def __init__(self, store: PayloadStore, bind: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.store = store
        self.sock = udp_socket(bind)
        self.address: tuple[str, int] = self.sock.getsockname()
        self.counts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="payload-server", daemon=True)

    def start(self) -> PayloadServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2 * POLL_SECONDS + 1.0)
        self.sock.close()

    def _serve(self) -> None:
        poll = select.poll()
        poll.register(self.sock, select.POLLIN)
        while not self._stop.is_set():
            if not poll.poll(POLL_SECONDS * 1000):
                continue
            try:
                data, peer = self.sock.recvfrom(65535, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                log.debug("payload server recv: %s", exc)
                continue
            self.handle(data, peer)

    def handle(self, data: bytes, peer: tuple[str, int]) -> None:
        """Answer one datagram (malformed ones are counted and dropped)."""
        try:
            req = fetch.decode_request(data)
        except ProtocolError:
            self.counts["malformed"] += 1
            return
        entries = self.store.answer(req)
        self.counts["requests"] += 1
        for e in entries:
            self.counts[FetchStatus(e.status).name.lower()] += 1
        for datagram in fetch.encode_replies(req.request_id, self.store.epoch, entries):
            try:
                self.sock.sendto(datagram, peer)
            except OSError as exc:  # a full buffer: the same as a loss, the Learner asks again
                log.debug("payload server send: %s", exc)
