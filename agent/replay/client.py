"""One replay client API with three interchangeable backends.

    switch     UDP to the replay VIP; the switch answers (in-network replay)
    host       UDP to the host replay server (the baseline); same code path
    inprocess  requests go straight to a ReplayService in this process

All three exchange `agent.contract.protocol.Message`s through a transport, so the
client logic (request ids, retries, reply collection) is the same everywhere.

Loss handling (UDP is lossy; every call is bounded in time):

* Each request has a fresh request id. A request that needs a reply (INSERT or
  UPDATE with ACK, SAMPLE) waits its timeout, then is resent with backoff, at
  most `retries` times; then it fails with `ReplayTimeout`. The first timeout is
  `RetryPolicy.timeout` until a few requests of the same kind (op, batch size)
  have been timed; from then on it adapts as TCP's does (RFC 6298: smoothed
  round-trip time plus four times its variation, only requests answered at the
  first attempt timed), kept within [min_timeout, timeout]; retries back off
  from `timeout`. A switch that drops a reply now costs a few round trips
  rather than the whole configured timeout. With several requests in
  flight, the later ones wait in the service's queue behind the earlier
  ones, so (as TCP restarts its timer on an ACK, RFC 6298 5.3) a request's
  first wait restarts when a request started before it is answered, and once
  when one times out (so a dead service costs one extra first wait, not one
  per request in flight).
* INSERT with ACK is resent with the same request id, so a late ACK still
  matches and each request counts once. Delivery is at least once: an insert
  whose ACK (not the request) was lost is stored twice.
* `update` sends priorities as UPDATE_BATCH requests of up to
  MAX_UPDATE_BATCH entries (a slot and stamp repeated in one call is sent
  once, with its last priority). With ACK a batch is resent with a new request
  id (the switch tallies a batch's copies by request id: docs/protocol.md),
  registered with the first, so a late ACK to either still matches; applying
  an entry twice sets the same priority twice.
* INSERT/UPDATE_BATCH without ACK are fire-and-forget and counted as sent. Error
  replies the switch sends for them anyway are counted as `refused` when they
  are next drained (and logged once per op and status). INSERTs refused
  RATE_LIMITED (the table's per-host limit) are also counted in `rate_limited`.
* SAMPLE n: replies are collected by (request id, index); duplicates and
  replies to finished requests are dropped. Each reply is an independent draw,
  so on timeout with k < n replies the client sends a top-up SAMPLE for the
  n - k missing ones (a new request id, counted as a retry). When retries run
  out, a partial batch is returned if at least one reply arrived (counted in
  `partial_batches`), else `ReplayTimeout` is raised. With
  `RetryPolicy.partial_ok` below 1, a batch that has that fraction of its
  replies is returned as it is, without a top-up, when its timeout expires or
  when no reply of it came for `partial_gap` seconds (a batch's replies come
  back to back): under packet loss almost every large batch misses a reply or
  two, and waiting for them costs more than a slightly smaller batch. An error reply (e.g.
  BELOW_MIN_SIZE) raises `ReplayRefused` unless replies already arrived.
* A SAMPLE reply NOT_READY (its drawn slot held no experience yet) is a
  missing sample, known at once: counted in `not_ready`, never returned as
  data. Once every reply of the batch is in, a batch short of `partial_ok` is
  topped up at once for the missing ones (an attempt, as after a timeout, but
  not counted as a retry); when attempts run out the batch is returned as it
  is, or `ReplayRefused` (NOT_READY) is raised if no reply carried data.
* `lost_replies` counts the replies still missing whenever a request's
  deadline passes (then asked for again, or given up on): a lost ACK is 1, a
  SAMPLE n with k replies in is n - k, at every deadline it misses.

A client is not thread-safe: use one per thread.
"""

from __future__ import annotations

import logging
import random
import select
import socket
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from agent.contract import protocol
from agent.contract.protocol import (
    MAX_UPDATE_BATCH,
    REPLAY_UDP_PORT,
    BatchAck,
    Inserted,
    Message,
    Mode,
    Op,
    ProtocolError,
    SampleBatch,
    Status,
)
from agent.replay.memory import ReplayService
from agent.replay.udp import udp_socket

log = logging.getLogger(__name__)

BACKENDS = ("switch", "host", "inprocess")
_REPLY, _SAMPLE = int(protocol.Flag.REPLY), int(Op.SAMPLE)
_OK, _NOT_READY = int(Status.OK), int(Status.NOT_READY)
STAT_KEYS = ("inserts", "samples", "sample_batches", "partial_batches", "updates", "stale",
             "update_requests", "retries", "timeouts", "lost_replies", "refused",
             "dropped_replies", "malformed_replies", "rate_limited", "not_ready")


class ReplayError(RuntimeError):
    """A replay request that did not succeed."""


class ReplayTimeout(ReplayError):
    """No (complete) answer within the retry policy's time bound."""


class ReplayRefused(ReplayError):
    """The replay service answered with an error status."""

    def __init__(self, op: int, status: int) -> None:
        self.op = op
        self.status = status
        super().__init__(f"{_op_name(op)} refused: {_status_name(status)}")


def _status_name(status: int) -> str:
    try:
        return Status(status).name
    except ValueError:
        return f"status {status}"


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return f"op {op}"


@dataclass(frozen=True)
class RetryPolicy:
    """Timeout of the first attempt, growing by `backoff` per retry up to `max_timeout`.

    With `adaptive`, the first attempt's timeout follows the measured round-trip
    time (see RttEstimator), between `min_timeout` and `timeout`. A SAMPLE with
    at least `partial_ok` of its replies is done when a timeout expires or no
    reply came for `partial_gap` seconds."""

    timeout: float = 0.25
    retries: int = 3
    backoff: float = 2.0
    max_timeout: float = 2.0
    adaptive: bool = True
    min_timeout: float = 0.05
    partial_ok: float = 1.0
    partial_gap: float = 0.01

    def timeout_for(self, attempt: int, first: float | None = None) -> float:
        """Timeout of attempt `attempt` (0 = first). Only the first may be the
        adaptive `first`; retries back off from `timeout` as configured, so a
        machine that stalls for a moment does not use up the retries."""
        if attempt == 0 and first is not None:
            return first
        return min(self.timeout * self.backoff ** attempt, self.max_timeout)


@dataclass
class RttEstimator:
    """Smoothed round-trip time and its variation (RFC 6298, alpha 1/8, beta 1/4)."""

    srtt: float = 0.0
    rttvar: float = 0.0
    samples: int = 0

    WARMUP = 3  # round trips timed before the estimate is used

    def observe(self, rtt: float) -> None:
        if self.samples == 0:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.samples += 1

    def timeout(self, policy: RetryPolicy) -> float:
        """The first attempt's timeout under `policy`."""
        if not policy.adaptive or self.samples < self.WARMUP:
            return policy.timeout
        rto = self.srtt + 4 * self.rttvar
        return min(max(rto, policy.min_timeout), policy.timeout)


class Transport(Protocol):
    """Carries requests to a replay service and its replies back."""

    malformed: int

    def send(self, msg: Message) -> None: ...

    def recv(self, timeout: float) -> Message | None: ...

    def close(self) -> None: ...


class UdpTransport:
    """A UDP socket connected to the replay service (switch VIP or host server)."""

    def __init__(self, address: tuple[str, int], bind: tuple[str, int] = ("0.0.0.0", 0)) -> None:
        self.malformed = 0
        self._sock = udp_socket(bind)
        self._sock.connect(address)
        self._poll = select.poll()
        self._poll.register(self._sock, select.POLLIN)

    def send(self, msg: Message) -> None:
        try:
            self._sock.send(protocol.encode(msg))
        except OSError as exc:  # a full buffer or an ICMP error: the same as a loss
            log.debug("send failed: %s", exc)

    def recv(self, timeout: float) -> Message | None:
        deadline = None
        while True:
            try:
                data = self._sock.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if deadline is None:
                    deadline = time.monotonic() + timeout
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._poll.poll(remaining * 1000.0):
                    return None
                continue
            except OSError as exc:  # ICMP port unreachable and friends: keep waiting
                log.debug("recv: %s", exc)
                continue
            try:
                return protocol.decode(data)
            except ProtocolError:
                self.malformed += 1

    def close(self) -> None:
        self._sock.close()


class InProcessTransport:
    """Hands requests to a ReplayService directly; replies are queued at once."""

    def __init__(self, service: ReplayService, src_ip: str = "127.0.0.1") -> None:
        self.malformed = 0
        self.service = service
        self.src_ip = src_ip
        self._inbox: deque[Message] = deque()

    def send(self, msg: Message) -> None:
        self._inbox.extend(self.service.handle(msg, self.src_ip))

    def recv(self, timeout: float) -> Message | None:
        if self._inbox:
            return self._inbox.popleft()
        if timeout > 0:  # nothing can arrive meanwhile: only the caller's clock moves
            time.sleep(timeout)
        return None

    def close(self) -> None:
        self._inbox.clear()


@dataclass(eq=False)
class PendingRequest:
    """A request awaiting its reply or replies (a SAMPLE handle for callers)."""

    op: int
    message: Message
    want: int
    sent: float
    first_timeout: float
    deadline: float
    order: int = 0  # the client's count of requests started before this one
    restarted: bool = False  # first wait restarted by an earlier request's timeout
    last_reply: float = 0.0
    attempt: int = 0
    ids: list[int] = field(default_factory=list)
    replies: dict[tuple[int, int], Message] = field(default_factory=dict)
    not_ready: set[tuple[int, int]] = field(default_factory=set)  # SAMPLE: since the last top-up
    status: int | None = None
    done: bool = False


class ReplayClient:
    """Insert, sample and update one replay table through a transport."""

    def __init__(self, transport: Transport, *, table: int = 0, ack_inserts: bool = False,
                 ack_updates: bool = False, policy: RetryPolicy | None = None,
                 window: int = 64) -> None:
        self.transport = transport
        self.table = table
        self.ack_inserts = ack_inserts
        self.ack_updates = ack_updates
        self.policy = policy or RetryPolicy()
        self.window = window
        self._next_id = random.getrandbits(31) | 1
        self._by_id: dict[int, PendingRequest] = {}
        self._active: set[PendingRequest] = set()
        self._counts: Counter[str] = Counter()
        self._warned: set[tuple[int, int]] = set()
        self._rtt: dict[tuple[int, int], RttEstimator] = {}
        self._started = 0

    # --- public API -------------------------------------------------------------

    def first_timeout(self, op: int, want: int = 1) -> float:
        """The timeout a new request of this kind waits before its first retry."""
        est = self._rtt.get((op, want))
        return est.timeout(self.policy) if est else self.policy.timeout

    def stats(self) -> dict[str, int]:
        """Counters: inserts, samples, updates, retries, timeouts, stale, ..."""
        self._counts["malformed_replies"] = self.transport.malformed
        return {key: self._counts[key] for key in STAT_KEYS}

    def insert(self, payload: bytes, priority: float | None = None) -> Inserted | None:
        """Insert one experience; with ack_inserts returns where it was stored."""
        acks = self.insert_many([payload], None if priority is None else [priority])
        return acks[0] if acks else None

    def insert_many(self, payloads: Sequence[bytes],
                    priorities: Sequence[float] | np.ndarray | None = None) -> list[Inserted]:
        """Insert a batch (priorities None: the table's running max). Returns the ACKs."""
        if priorities is not None and len(priorities) != len(payloads):
            raise ValueError("payloads and priorities differ in length")
        msgs = [protocol.insert(self.table, payload, ack=self.ack_inserts,
                                priority=None if priorities is None else float(priorities[i]),
                                request_id=self._new_id())
                for i, payload in enumerate(payloads)]
        if not self.ack_inserts:
            self._fire(msgs, "inserts")
            return []
        pendings = self._run_acked(Op.INSERT, msgs)
        acked = [m for p in pendings for m in p.replies.values()]
        self._counts["inserts"] += len(acked)
        self._raise_failures(Op.INSERT, pendings)
        return [Inserted(m.slot, m.stamp, m.priority, m.size, m.total) for m in acked]

    def update(self, slots: Iterable[int], stamps: Iterable[int],
               priorities: Iterable[float]) -> int:
        """Set priorities of sampled slots (ignored where the stamp changed), in
        UPDATE_BATCH requests of up to MAX_UPDATE_BATCH entries: a learner step's
        64 priorities are 4 requests. A (slot, stamp) given twice is sent once,
        with its last priority.

        Returns the number of STALE entries, known only with ack_updates. Counts
        `updates` (the entries asked for, less the STALE ones with ack_updates),
        `stale` and `update_requests`."""
        latest: dict[tuple[int, int], float] = {}
        asked = 0
        for s, t, p in zip(slots, stamps, priorities, strict=True):
            latest[(int(s), int(t))] = float(p)
            asked += 1
        keys = list(latest)
        msgs = []
        for i in range(0, len(keys), MAX_UPDATE_BATCH):
            part = keys[i:i + MAX_UPDATE_BATCH]
            msgs.append(protocol.update_batch(
                self.table, [k[0] for k in part], [k[1] for k in part],
                [latest[k] for k in part], ack=self.ack_updates, request_id=self._new_id()))
        if not self.ack_updates:
            self._fire(msgs, "update_requests")
            self._counts["updates"] += asked
            return 0
        self._counts["update_requests"] += len(msgs)
        pendings = self._run_acked(Op.UPDATE_BATCH, msgs)
        stale = sum(BatchAck.of(m).stale for p in pendings for m in p.replies.values())
        self._counts["updates"] += asked - stale
        self._counts["stale"] += stale
        self._raise_failures(Op.UPDATE_BATCH, pendings)
        return stale

    def sample_async(self, n: int, mode: int = Mode.DEFAULT) -> PendingRequest:
        """Send a SAMPLE n request now; collect it later with wait()."""
        self._drain()
        msg = protocol.sample(self.table, n, mode=mode, request_id=self._new_id())
        return self._start(Op.SAMPLE, msg, want=n)

    def wait(self, pending: PendingRequest) -> SampleBatch:
        """The batch of a sample_async request (may be partial, see module doc)."""
        self._pump(lambda: pending.done)
        replies = list(pending.replies.values())[: pending.want]
        if replies:
            self._counts["samples"] += len(replies)
            self._counts["sample_batches"] += 1
            if len(replies) < pending.want:
                self._counts["partial_batches"] += 1
            return protocol.decode_batch(replies)
        if pending.status is not None:
            raise ReplayRefused(Op.SAMPLE, pending.status)
        raise ReplayTimeout(f"SAMPLE {pending.want}: no reply after "
                            f"{pending.attempt + 1} attempts")

    def sample(self, n: int, mode: int = Mode.DEFAULT) -> SampleBatch:
        """Sample n experiences (blocking, bounded by the retry policy)."""
        return self.wait(self.sample_async(n, mode))

    def sampler(self, n: int, mode: int = Mode.DEFAULT, depth: int = 2) -> PrefetchingSampler:
        """An iterator of batches that keeps `depth` SAMPLE requests in flight."""
        return PrefetchingSampler(self, n, mode, depth)

    def close(self) -> None:
        self.transport.close()

    # --- request machinery ---------------------------------------------------------

    def _new_id(self) -> int:
        rid = self._next_id
        self._next_id = (rid + 1) & 0xFFFFFFFF or 1
        return rid

    def _fire(self, msgs: list[Message], stat: str) -> None:
        self._drain()
        for msg in msgs:
            self.transport.send(msg)
        self._counts[stat] += len(msgs)

    def _start(self, op: int, msg: Message, want: int = 1) -> PendingRequest:
        first = self.first_timeout(op, want)
        now = time.monotonic()
        pending = PendingRequest(op=op, message=msg, want=want, sent=now, first_timeout=first,
                                 deadline=now + first, order=self._started)
        self._started += 1
        self._register(pending, msg)
        return pending

    def _register(self, pending: PendingRequest, msg: Message) -> None:
        pending.ids.append(msg.request_id)
        self._by_id[msg.request_id] = pending
        self._active.add(pending)
        self.transport.send(msg)

    def _finish(self, pending: PendingRequest) -> None:
        now = time.monotonic()
        if pending.attempt == 0 and len(pending.replies) >= pending.want:  # Karn: unretried
            est = self._rtt.setdefault((pending.op, pending.want), RttEstimator())
            est.observe(now - pending.sent)
        pending.done = True
        self._active.discard(pending)
        for rid in pending.ids:
            self._by_id.pop(rid, None)
        if pending.replies:
            self._restart_timers(pending, now, timed_out=False)

    def _restart_timers(self, ahead: PendingRequest, now: float, timed_out: bool) -> None:
        """Requests started after `ahead` and still on their first wait were queued
        behind it: now that it is answered (or timed out, once), their first wait
        runs from now."""
        for p in self._active:
            if p.attempt > 0 or p.order <= ahead.order or (timed_out and p.restarted):
                continue
            p.restarted = p.restarted or timed_out
            p.deadline = max(p.deadline, now + p.first_timeout)

    def _run_acked(self, op: int, msgs: list[Message]) -> list[PendingRequest]:
        """Send with at most `window` requests outstanding; wait for all to finish."""
        self._drain()
        pendings: list[PendingRequest] = []
        for msg in msgs:
            self._pump(lambda: len(self._active) < self.window)
            pendings.append(self._start(op, msg))
        self._pump(lambda: all(p.done for p in pendings))
        return pendings

    @staticmethod
    def _raise_failures(op: int, pendings: list[PendingRequest]) -> None:
        for p in pendings:
            if p.status is not None:
                raise ReplayRefused(op, p.status)
        lost = sum(1 for p in pendings if not p.replies)
        if lost:
            raise ReplayTimeout(f"{_op_name(op)}: {lost} of {len(pendings)} requests unanswered")

    def _pump(self, done: Callable[[], bool]) -> None:
        """Receive and retry until done() (bounded: every request expires)."""
        self._drain()  # replies that came in while the caller worked are not late
        while not done() and self._active:
            now = time.monotonic()
            self._expire(now)
            if done() or not self._active:
                return
            wait = min(self._due(p) for p in self._active) - now
            msg = self.transport.recv(max(wait, 0.0))
            while msg is not None:  # then what else is queued, before the timers again
                self._dispatch(msg)
                msg = None if done() else self.transport.recv(0.0)

    def _drain(self) -> None:
        """Take in whatever replies have already arrived."""
        while (msg := self.transport.recv(0.0)) is not None:
            self._dispatch(msg)

    def _expire(self, now: float) -> None:
        expired = sorted((p for p in self._active if self._due(p) <= now), key=lambda p: p.order)
        for pending in expired:
            if self._due(pending) > now:  # restarted by an earlier one in this loop
                continue
            if self._enough(pending):
                self._finish(pending)  # enough of the batch: no top-up
                continue
            self._counts["lost_replies"] += (pending.want - len(pending.replies)
                                             - len(pending.not_ready))
            if pending.attempt == 0:
                self._restart_timers(pending, now, timed_out=True)
            if pending.attempt >= self.policy.retries:
                self._counts["timeouts"] += 1
                self._finish(pending)
                continue
            self._counts["retries"] += 1
            self._ask_again(pending, now)

    def _ask_again(self, pending: PendingRequest, now: float) -> None:
        """The next attempt: the request again (an UPDATE_BATCH under a new request
        id, whose tally starts afresh), or a SAMPLE for the replies missing."""
        pending.attempt += 1
        pending.deadline = now + self.policy.timeout_for(pending.attempt, pending.first_timeout)
        if pending.op == Op.SAMPLE:
            pending.not_ready.clear()
            missing = pending.want - len(pending.replies)
            msg = protocol.sample(self.table, missing, mode=pending.message.mode,
                                  request_id=self._new_id())
            self._register(pending, msg)
        elif pending.op == Op.UPDATE_BATCH:
            self._register(pending, protocol.with_request_id(pending.message, self._new_id()))
        else:
            self.transport.send(pending.message)

    def _enough(self, pending: PendingRequest) -> bool:
        """A SAMPLE with `partial_ok` of its replies (it may end before it is complete)."""
        return pending.op == Op.SAMPLE and bool(pending.replies) and (
            len(pending.replies) >= self.policy.partial_ok * pending.want)

    def _due(self, pending: PendingRequest) -> float:
        """When `pending` is next looked at: its timeout, or sooner once it has
        enough replies and they stopped coming."""
        if self._enough(pending):
            return min(pending.deadline, pending.last_reply + self.policy.partial_gap)
        return pending.deadline

    def _dispatch(self, msg: Message) -> None:
        pending = self._by_id.get(msg.request_id)
        status = msg.status
        if pending is None or not msg.flags & _REPLY or msg.op != pending.op:
            if msg.is_reply and msg.op == Op.SAMPLE and status == Status.NOT_READY:
                self._counts["not_ready"] += 1  # of a batch already done: a missing sample
            elif msg.is_reply and not msg.ok and status != Status.STALE:
                self._note_refusal(msg)
            else:
                self._counts["dropped_replies"] += 1
            return
        key = (msg.request_id, msg.index)
        if pending.op == _SAMPLE:  # the per-reply path: plain ints, no enum lookups
            if status == _NOT_READY:
                self._not_ready(pending, key)
                return
            if status == _OK:
                replies = pending.replies
                if key in replies:
                    self._counts["dropped_replies"] += 1
                    return
                replies[key] = msg
                pending.last_reply = time.monotonic()
                if len(replies) >= pending.want:
                    self._finish(pending)
                elif len(replies) + len(pending.not_ready) >= pending.want:
                    self._short_of_data(pending)
                return
        if msg.ok or (pending.op == Op.UPDATE and msg.status == Status.STALE):
            pending.replies[key] = msg
        else:
            pending.status = msg.status
            self._counts["refused"] += 1
            self._counts["rate_limited"] += msg.status == Status.RATE_LIMITED
        self._finish(pending)

    def _not_ready(self, pending: PendingRequest, key: tuple[int, int]) -> None:
        """A SAMPLE reply without data: a missing sample, known at once."""
        if key in pending.not_ready or key in pending.replies:
            self._counts["dropped_replies"] += 1
            return
        pending.not_ready.add(key)
        self._counts["not_ready"] += 1
        pending.last_reply = time.monotonic()
        if len(pending.replies) + len(pending.not_ready) >= pending.want:
            self._short_of_data(pending)

    def _short_of_data(self, pending: PendingRequest) -> None:
        """Every reply of a SAMPLE is in, some NOT_READY: done if enough came with data
        or no attempt is left, else a top-up for the missing ones now."""
        if self._enough(pending):
            self._finish(pending)
        elif pending.attempt >= self.policy.retries:
            if not pending.replies:
                pending.status = Status.NOT_READY
            self._finish(pending)
        else:
            self._ask_again(pending, time.monotonic())

    def _note_refusal(self, msg: Message) -> None:
        self._counts["refused"] += 1
        self._counts["rate_limited"] += msg.status == Status.RATE_LIMITED
        key = (msg.op, msg.status)
        if key not in self._warned:
            self._warned.add(key)
            log.warning("replay table %d: %s refused with %s", msg.table, _op_name(msg.op),
                        msg.status_name())


class PrefetchingSampler:
    """Iterator of SampleBatch with `depth` requests in flight while the caller works.

    An error (ReplayRefused, ReplayTimeout) surfaces from next(); the sampler
    stays usable afterwards."""

    def __init__(self, client: ReplayClient, n: int, mode: int, depth: int) -> None:
        self.client = client
        self.n = n
        self.mode = mode
        self.depth = depth
        self._queue: deque[PendingRequest] = deque()

    def __iter__(self) -> PrefetchingSampler:
        return self

    @property
    def in_flight(self) -> int:
        """Requests sent ahead and not yet handed to the caller."""
        return len(self._queue)

    def __next__(self) -> SampleBatch:
        while len(self._queue) <= self.depth:
            self._queue.append(self.client.sample_async(self.n, self.mode))
        return self.client.wait(self._queue.popleft())


def make_client(backend: str, *, address: tuple[str, int] | None = None,
                service: ReplayService | None = None, bind: tuple[str, int] = ("0.0.0.0", 0),
                src_ip: str = "127.0.0.1", **options: object) -> ReplayClient:
    """A ReplayClient for `backend`: switch/host need `address` (ip, port), inprocess
    needs `service` (and uses `src_ip` for the ACL). Options go to ReplayClient."""
    if backend in ("switch", "host"):
        if address is None:
            raise ValueError(f"backend {backend!r} needs address=(ip, port), e.g. "
                             f"(vip, {REPLAY_UDP_PORT})")
        transport: Transport = UdpTransport(address, bind)
    elif backend == "inprocess":
        if service is None:
            raise ValueError("backend 'inprocess' needs service=ReplayService(...)")
        transport = InProcessTransport(service, src_ip)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose from {BACKENDS}")
    return ReplayClient(transport, **options)  # type: ignore[arg-type]
