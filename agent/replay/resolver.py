"""The Learner's side of payloads by reference: the bytes of a sampled batch's
references, fetched from the payload stores that hold them.

One FETCH per store (per epoch) per batch, all sent at once, so the stores answer in
parallel; replies are collected from one socket until every entry is answered or
no reply came for the attempt's timeout (it runs from the last reply, so a large
batch streaming back through a slow switch is not cut short), then the unanswered
entries are asked for again (a new request id, the timeout backing off), at most
`retries` times. A payload comes
back only if it is the one its reference names: same epoch and sequence number,
length and CRC-32. Everything else is a missing sample, counted by why:

    missing      the store no longer has it (evicted) or never had it
    stale        the store has another epoch (its Actor restarted)
    corrupt      bytes that do not match the reference's length or CRC
    unanswered   no answer after every attempt (the Actor is gone, or replies lost)

A store none of whose entries was answered is held off for `holdoff` seconds: its
entries are unanswered at once, without a request, so a dead Actor costs one
timeout per holdoff, not one per batch.
"""

from __future__ import annotations

import logging
import random
import select
import socket
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.contract.protocol import ProtocolError
from agent.replay import fetch
from agent.replay.fetch import FetchRequest, FetchStatus
from agent.replay.reference import Reference
from agent.replay.udp import udp_socket

log = logging.getLogger(__name__)

RESOLVER_STAT_KEYS = ("fetched", "missing", "stale", "corrupt", "unanswered", "requests",
                      "retries", "held_off", "dropped_replies", "malformed_replies")


@dataclass(frozen=True)
class FetchPolicy:
    """First attempt's timeout, growing by `backoff` per retry; a silent store's holdoff."""

    timeout: float = 0.25
    retries: int = 2
    backoff: float = 2.0
    holdoff: float = 5.0


@dataclass(eq=False)
class _Ask:
    """The entries of one batch that one store (epoch) still owes."""

    store: tuple[str, int]
    epoch: int
    wanted: dict[int, int]                     # batch position -> seq, still unanswered
    request_id: int = 0
    order: list[int] = field(default_factory=list)  # batch positions, in request order
    answered: bool = False


class PayloadResolver:
    """Fetches the payloads of references from their stores (not thread-safe)."""

    def __init__(self, bind: tuple[str, int] = ("0.0.0.0", 0),
                 policy: FetchPolicy | None = None) -> None:
        self.policy = policy or FetchPolicy()
        self.sock = udp_socket(bind)
        self.counts: Counter[str] = Counter()
        self._held_off: dict[tuple[str, int], float] = {}
        self._next_id = random.getrandbits(31) | 1
        self._poll = select.poll()
        self._poll.register(self.sock, select.POLLIN)

    def stats(self) -> dict[str, int]:
        return {key: self.counts[key] for key in RESOLVER_STAT_KEYS}

    def close(self) -> None:
        self.sock.close()

    def fetch(self, refs: Sequence[Reference]) -> list[bytes | None]:
        """The payload of each reference, or None where it is a missing sample."""
        out: list[bytes | None] = [None] * len(refs)
        asks: dict[tuple[str, int, int], _Ask] = {}
        now = time.monotonic()
        for pos, ref in enumerate(refs):
            if self._held_off.get(ref.store, 0.0) > now:
                self.counts["unanswered"] += 1
                self.counts["held_off"] += 1
                continue
            key = (*ref.store, ref.epoch)
            ask = asks.setdefault(key, _Ask(ref.store, ref.epoch, {}))
            ask.wanted[pos] = ref.seq
        pending = list(asks.values())
        for attempt in range(self.policy.retries + 1):
            pending = [a for a in pending if a.wanted]
            if not pending:
                break
            if attempt:
                self.counts["retries"] += len(pending)
            by_id = {self._send(a): a for a in pending}
            self._collect(by_id, refs, out, self.policy.timeout * self.policy.backoff ** attempt)
        for ask in pending:
            self.counts["unanswered"] += len(ask.wanted)
            if not ask.answered:
                self._held_off[ask.store] = time.monotonic() + self.policy.holdoff
                log.warning("payload store %s:%d did not answer: held off for %.0f s",
                            *ask.store, self.policy.holdoff)
        for ask in asks.values():
            if ask.answered:
                self._held_off.pop(ask.store, None)
        return out

    def _send(self, ask: _Ask) -> int:
        rid = self._next_id
        self._next_id = (rid + 1) & 0xFFFFFFFF or 1
        ask.request_id = rid
        ask.order = list(ask.wanted)
        data = fetch.encode_request(FetchRequest(rid, ask.epoch,
                                                 tuple(ask.wanted[p] for p in ask.order)))
        self.counts["requests"] += 1
        try:
            self.sock.sendto(data, ask.store)
        except OSError as exc:  # unreachable, full buffer: the same as a loss
            log.debug("fetch to %s: %s", ask.store, exc)
        return rid

    def _collect(self, by_id: dict[int, _Ask], refs: Sequence[Reference],
                 out: list[bytes | None], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while any(a.wanted for a in by_id.values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poll.poll(remaining * 1000.0):
                return
            while True:
                try:
                    data = self.sock.recv(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                except OSError as exc:  # ICMP port unreachable from a dead store
                    log.debug("fetch recv: %s", exc)
                    continue
                if self._take(data, by_id, refs, out):
                    deadline = time.monotonic() + timeout

    def _take(self, data: bytes, by_id: dict[int, _Ask], refs: Sequence[Reference],
              out: list[bytes | None]) -> bool:
        """Take one reply datagram in; whether it belonged to this attempt."""
        try:
            reply = fetch.decode_reply(data)
        except ProtocolError:
            self.counts["malformed_replies"] += 1
            return False
        ask = by_id.get(reply.request_id)
        if ask is None:
            self.counts["dropped_replies"] += 1
            return False
        ask.answered = True
        for entry in reply.entries:
            if entry.index >= len(ask.order):
                self.counts["malformed_replies"] += 1
                continue
            pos = ask.order[entry.index]
            if pos not in ask.wanted:
                self.counts["dropped_replies"] += 1
                continue
            del ask.wanted[pos]
            out[pos] = self._check(entry, reply.epoch, refs[pos])
        return True

    def _check(self, entry: fetch.FetchEntry, epoch: int, ref: Reference) -> bytes | None:
        """The entry's bytes if they are the reference's payload; else count why not."""
        if entry.status == FetchStatus.STALE or epoch != ref.epoch:
            self.counts["stale"] += 1
        elif entry.status != FetchStatus.OK:
            self.counts["missing"] += 1
        elif (entry.seq != ref.seq or len(entry.payload) != ref.length
              or zlib.crc32(entry.payload) != ref.crc):
            self.counts["corrupt"] += 1
        else:
            self.counts["fetched"] += 1
            return entry.payload
        return None
