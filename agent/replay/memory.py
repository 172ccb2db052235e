"""The replay tables of p4src/replay.p4, in Python.

`TableState` is one table's state (ring pointer, occupancy, insert sequence,
running max priority, sum tree, slot records of stamp, priority and payload:
table_state.p4, sum_tree.p4, slot_store.p4). As on the switch, a reply's
priority is the slot record's, not the sum tree's. `ReplayService` is the request pipeline of
replay_admission.p4 and replay_service.p4 over NUM_TABLES tables: admission
(statuses in the switch's precedence), per-table config, the ACL, the
per-host INSERT limit (insert_limit.p4), the operation, the replies and the
request counters (an UPDATE_BATCH's once per entry). The host replay server and
the in-process client backend both run requests through `ReplayService.handle`,
so they answer exactly as the switch does: same statuses, same reply fields, the
same replies omitted.

Python-only choices where the switch has no defined behaviour: a table's
default mode must be UNIFORM or PRIORITIZED, and a uniform draw never indexes
past the table's NUM_SLOTS after a SET_STATE with an oversized size.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agent.contract.protocol import (
    ALLOW_ALL,
    ALLOW_BIT,
    CPU_ONLY_OPS,
    EMPTY_SLOT_REDRAWS,
    FLAGS_RESERVED,
    INSERT_WINDOW_SHIFT,
    MAX_BATCH,
    MAX_INSERT_LIMIT,
    MAX_UPDATE_BATCH,
    MODE_MASK,
    MODE_SHIFT,
    NUM_SLOTS,
    NUM_TABLES,
    PAYLOAD_BYTES,
    PRIORITY_ONE,
    RESET_FANOUT,
    VERSION,
    Flag,
    Inserted,
    Message,
    Mode,
    Op,
    Status,
    encode,
    parse_request,
)
from agent.replay.sum_tree import SumTree

OP_LAST = max(Op)
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class TableConfig:
    """One replay_table_config entry (what the controller writes per table)."""

    enabled: bool = True
    capacity: int = NUM_SLOTS
    min_size: int = 1
    max_batch: int = MAX_BATCH
    default_mode: int = Mode.PRIORITIZED

    def __post_init__(self) -> None:
        for name in ("capacity", "min_size"):
            if not 0 <= getattr(self, name) <= _U32:
                raise ValueError(f"{name} must be a 32-bit value")
        if not 0 <= self.max_batch <= 0xFF:
            raise ValueError("max_batch must be 0..255")
        if self.default_mode not in (Mode.UNIFORM, Mode.PRIORITIZED):
            raise ValueError("default_mode must be UNIFORM or PRIORITIZED")


class TableState:
    """One replay table: a FIFO ring of slots with priorities in a sum tree."""

    def __init__(self, num_slots: int = NUM_SLOTS) -> None:
        self.num_slots = num_slots
        self.config: TableConfig | None = None
        self.tree = SumTree(num_slots)
        self.stamps = np.zeros(num_slots, dtype=np.int64)
        self.priorities = np.zeros(num_slots, dtype=np.int64)   # slot_record_priority
        self.payloads = np.zeros((num_slots, PAYLOAD_BYTES), dtype=np.uint8)
        self.pointer = 0
        self.size = 0
        self.sequence = 0
        self.max_priority = 0

    @property
    def capacity(self) -> int:
        """Capacity in use: the configured one, clamped to the slots that exist."""
        return 0 if self.config is None else min(self.config.capacity, self.num_slots)

    def insert(self, payload: bytes, priority: int | None) -> Inserted:
        """Write the next ring slot; priority None takes the running max (1.0 at first)."""
        capacity = self.capacity
        slot = self.pointer if self.pointer < capacity else 0
        self.pointer = 0 if slot + 1 >= capacity else slot + 1
        self.size = self.size + 1 if self.size < capacity else capacity
        self.sequence = (self.sequence + 1) & _U32
        if priority is None:
            priority = self.max_priority or PRIORITY_ONE
        self.max_priority = max(self.max_priority, priority)
        total = self.tree.update(slot, priority)
        self.stamps[slot] = self.sequence
        self.priorities[slot] = priority
        self.payloads[slot] = np.frombuffer(payload, dtype=np.uint8)
        return Inserted(slot, self.sequence, priority, self.size, total)

    def sample(self, n: int, mode: int, rng: np.random.Generator) -> np.ndarray | None:
        """n slots, uniform over the occupied prefix or proportional; None if all zero.
        A draw of a slot that holds no experience (stamp 0) is drawn again, at most
        EMPTY_SLOT_REDRAWS times, as the switch does; it may still be such a slot."""
        if mode != Mode.UNIFORM and self.tree.total == 0:
            return None
        slots = self._draw(n, mode, rng)
        for _ in range(EMPTY_SLOT_REDRAWS):
            unwritten = np.flatnonzero(self.stamps[slots] == 0)
            if unwritten.size == 0:
                break
            slots[unwritten] = self._draw(unwritten.size, mode, rng)
        return slots

    def _draw(self, n: int, mode: int, rng: np.random.Generator) -> np.ndarray:
        if mode == Mode.UNIFORM:
            return self.tree.sample_uniform(n, min(self.size, self.num_slots), rng)
        return self.tree.sample(n, rng)

    def update(self, slot: int, stamp: int, priority: int) -> int | None:
        """Set a slot's priority if its stamp matches; the new total, or None if stale."""
        stored = int(self.stamps[slot])
        if stored == 0 or stored != stamp:
            return None
        self.max_priority = max(self.max_priority, priority)
        self.priorities[slot] = priority
        return self.tree.update(slot, priority)

    def write(self, slot: int, stamp: int, priority: int, payload: bytes) -> int:
        """Controller WRITE of one slot (restore); returns the new total."""
        total = self.tree.update(slot, priority)
        self.stamps[slot] = stamp
        self.priorities[slot] = priority
        self.payloads[slot] = np.frombuffer(payload, dtype=np.uint8)
        return total

    def reset(self) -> None:
        """Clear every slot and the ring state."""
        self.tree.clear()
        self.stamps[:] = 0
        self.priorities[:] = 0
        self.payloads[:] = 0
        self.pointer = self.size = self.sequence = self.max_priority = 0

    def set_state(self, pointer: int, sequence: int, max_priority: int, size: int) -> None:
        """Controller SET_STATE (restore of the ring registers)."""
        self.pointer, self.sequence, self.max_priority, self.size = (
            pointer, sequence, max_priority, size)


_NO_HEADER = Message(op=0)


def _monotonic_us() -> int:
    return time.monotonic_ns() // 1000


class ReplayService:
    """NUM_TABLES replay tables behind the switch's request pipeline (thread-safe).

    `clock` (microseconds) times the INSERT limit's windows, as the switch's
    ingress_global_timestamp does."""

    def __init__(self, seed: int | None = None,
                 clock: Callable[[], int] = _monotonic_us) -> None:
        self.tables = [TableState() for _ in range(NUM_TABLES)]
        self.acl: dict[tuple[str, int], int] = {}
        self.insert_limits: dict[tuple[str, int], int] = {}
        self.rate_limited: Counter[tuple[str, int]] = Counter()
        self._windows: dict[tuple[str, int], tuple[int, int]] = {}
        self._clock = clock
        self.counters: Counter[tuple[int, int, int]] = Counter()
        self.sampled: Counter[int] = Counter()      # per table: experiences SAMPLE returned
        self.not_ready: Counter[int] = Counter()    # per table: SAMPLE replies NOT_READY
        self.rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def configure(self, table: int, config: TableConfig | None) -> None:
        """Install (or with None remove) a table's config entry."""
        self.tables[table].config = config

    def allow(self, src_ip: str, table: int, ops: int = ALLOW_ALL) -> None:
        """ACL entry: which of insert/sample/update `src_ip` may do on `table` (0 = deny)."""
        if ops:
            self.acl[(src_ip, table)] = ops
        else:
            self.acl.pop((src_ip, table), None)

    def limit_inserts(self, src_ip: str, table: int, max_inserts: int | None) -> None:
        """insert_limit entry: at most `max_inserts` INSERTs of `table` from `src_ip` per
        window of 2^INSERT_WINDOW_SHIFT us (None: unlimited, the switch's default)."""
        if max_inserts is None:
            self.insert_limits.pop((src_ip, table), None)
        elif not 0 <= max_inserts <= MAX_INSERT_LIMIT:
            raise ValueError(f"max_inserts must be 0..{MAX_INSERT_LIMIT}")
        else:
            self.insert_limits[(src_ip, table)] = max_inserts

    def _within_limit(self, src_ip: str, table: int) -> bool:
        """InsertLimit.count_insert: count the INSERT in its window if the budget allows."""
        key = (src_ip, table)
        budget = self.insert_limits.get(key)
        if budget is None:
            return True
        window = (self._clock() >> INSERT_WINDOW_SHIFT) & 0xFFFF
        last, used = self._windows.get(key, (0, 0))
        used = used if last == window else 0
        if used >= budget:
            self._windows[key] = (window, used)
            self.rate_limited[key] += 1
            return False
        self._windows[key] = (window, used + 1)
        return True

    def count(self, table: int | None, op: int, status: int) -> int:
        """Requests counted for (table, op, status); table None = the no-table bucket."""
        return self.counters[(NUM_TABLES if table is None else table, op, status)]

    def handle_datagram(self, data: bytes, src_ip: str, *, from_cpu: bool = False) -> list[bytes]:
        """Serve one datagram's payload; returns the encoded replies to send back."""
        return [encode(m) for m in self.handle(parse_request(data), src_ip, from_cpu=from_cpu)]

    def handle(self, req: Message | None, src_ip: str, *, from_cpu: bool = False) -> list[Message]:
        """Serve one parsed request (None: shorter than a header); returns its replies."""
        with self._lock:
            status = self._admit(req, src_ip, from_cpu)
            replies, counted = self._serve(req, status) if status == Status.OK else (
                [self._reply(req, status)], [status])
            valid_table = req is not None and req.table < NUM_TABLES
            bucket = req.table if valid_table and status != Status.UNKNOWN_TABLE else NUM_TABLES
            op = req.op if req is not None and req.op <= OP_LAST else 0
            for done in counted:
                self.counters[(bucket, int(op), int(done))] += 1
        return replies

    def _admit(self, req: Message | None, src_ip: str, from_cpu: bool) -> int:
        if req is None:
            return Status.TRUNCATED
        op, flags = req.op, req.flags
        if (req.version != VERSION or req.reserved or flags & (FLAGS_RESERVED | Flag.REPLY)
                or (flags & MODE_MASK) >> MODE_SHIFT == 3 or req.status):
            return Status.MALFORMED
        if op == 0 or op > OP_LAST:
            return Status.UNKNOWN_OP
        if ((op in (Op.INSERT, Op.WRITE) and req.payload is None)
                or (op == Op.UPDATE_BATCH and req.entries is None)):
            return Status.TRUNCATED
        if op in CPU_ONLY_OPS and not from_cpu:
            return Status.DENIED
        if req.table >= NUM_TABLES or self.tables[req.table].config is None:
            return Status.UNKNOWN_TABLE
        table = self.tables[req.table]
        if not table.config.enabled and op not in CPU_ONLY_OPS:  # type: ignore[union-attr]
            return Status.DISABLED
        if not from_cpu and not self.acl.get((src_ip, req.table), 0) & ALLOW_BIT[Op(op)]:
            return Status.DENIED
        if op == Op.INSERT and not from_cpu and not self._within_limit(src_ip, req.table):
            return Status.RATE_LIMITED
        if op in (Op.UPDATE, Op.READ, Op.WRITE) and req.slot >= table.capacity:
            return Status.BAD_SLOT
        return Status.OK

    def _serve(self, req: Message, status: int) -> tuple[list[Message], list[int]]:
        """The operation of an admitted request: (replies, statuses to count)."""
        replies, counted = self._execute(req, status)
        return replies, counted if isinstance(counted, list) else [counted]

    def _execute(self, req: Message, status: int) -> tuple[list[Message], int | list[int]]:
        table = self.tables[req.table]
        op, ack = req.op, bool(req.flags & Flag.ACK)
        if op == Op.INSERT:
            priority = req.priority if req.flags & Flag.HAS_PRIORITY else None
            ins = table.insert(req.payload, priority)  # type: ignore[arg-type]
            return ([self._reply(req, status, slot=ins.slot, stamp=ins.stamp,
                                 priority=ins.priority, size=ins.size, total=ins.total)]
                    if ack else []), status
        if op == Op.SAMPLE:
            return self._sample(req, table)
        if op == Op.UPDATE:
            total = table.update(req.slot, req.stamp, req.priority)
            if total is None:
                return ([self._reply(req, Status.STALE, size=table.size, total=table.tree.total)]
                        if ack else []), Status.STALE
            return ([self._reply(req, status, size=table.size, total=total)] if ack else []), status
        if op == Op.UPDATE_BATCH:
            return self._update_batch(req, table, ack)
        if op == Op.READ:
            return [self._reply(req, status, stamp=int(table.stamps[req.slot]),
                                priority=int(table.priorities[req.slot]), size=table.size,
                                total=table.tree.total,
                                payload=table.payloads[req.slot].tobytes())], status
        if op == Op.WRITE:
            total = table.write(req.slot, req.stamp, req.priority, req.payload)  # type: ignore[arg-type]
            return [self._reply(req, status, size=table.size, total=total)], status
        if op == Op.RESET:
            table.reset()
            return [self._reply(req, status, index=RESET_FANOUT - 1, slot=NUM_SLOTS - 1,
                                stamp=0, priority=0)], status
        if op == Op.GET_STATE:
            return [self._reply(req, status, slot=table.pointer, stamp=table.sequence,
                                priority=table.max_priority, size=table.size,
                                total=table.tree.total)], status
        table.set_state(req.slot, req.stamp, req.priority, req.size)  # SET_STATE
        return [self._reply(req, status, size=req.size)], status

    def _update_batch(self, req: Message, table: TableState,
                      ack: bool) -> tuple[list[Message], int | list[int]]:
        """Each entry as an UPDATE of its own (BAD_SLOT past the capacity, STALE where
        the stamp changed), in order; one ACK with the entries applied (slot) and
        STALE (index); every entry counted with its status."""
        if req.count == 0:
            return [self._reply(req, Status.MALFORMED)], Status.MALFORMED
        if req.count > MAX_UPDATE_BATCH:
            return [self._reply(req, Status.BATCH_TOO_LARGE)], Status.BATCH_TOO_LARGE
        statuses = []
        for e in req.entries or ():
            if e.slot >= table.capacity:
                statuses.append(Status.BAD_SLOT)
            elif table.update(e.slot, e.stamp, e.priority) is None:
                statuses.append(Status.STALE)
            else:
                statuses.append(Status.OK)
        reply = self._reply(req, Status.OK, slot=statuses.count(Status.OK),
                            index=statuses.count(Status.STALE), stamp=0, priority=0)
        return ([reply] if ack else []), statuses

    def _sample(self, req: Message, table: TableState) -> tuple[list[Message], int]:
        config = table.config
        assert config is not None
        mode = (req.flags & MODE_MASK) >> MODE_SHIFT or config.default_mode
        size = table.size
        if req.count == 0:
            status = Status.MALFORMED
        elif req.count > config.max_batch:
            status = Status.BATCH_TOO_LARGE
        elif size < config.min_size or size == 0:
            return [self._reply(req, Status.BELOW_MIN_SIZE, size=size,
                                total=table.tree.total)], Status.BELOW_MIN_SIZE
        else:
            slots = table.sample(req.count, mode, self.rng)
            if slots is None:
                return [self._reply(req, Status.EMPTY, size=size)], Status.EMPTY
            total = table.tree.total
            return [self._sample_reply(req, table, k, int(s), total)
                    for k, s in enumerate(slots)], Status.OK
        return [self._reply(req, status)], status

    def _sample_reply(self, req: Message, table: TableState, index: int, slot: int,
                      total: int) -> Message:
        """Reply `index` of a SAMPLE: OK with the slot's record (stamp, priority,
        payload), or NOT_READY (no payload) for a slot that holds none."""
        stamp = int(table.stamps[slot])
        priority = int(table.priorities[slot])
        if stamp == 0:
            self.not_ready[req.table] += 1
            return self._reply(req, Status.NOT_READY, index=index, slot=slot, stamp=0,
                               priority=priority, size=table.size, total=total)
        self.sampled[req.table] += 1
        return self._reply(req, Status.OK, index=index, slot=slot, stamp=stamp,
                           priority=priority, size=table.size, total=total,
                           payload=table.payloads[slot].tobytes())

    @staticmethod
    def _reply(req: Message | None, status: int, *, index: int = 0, slot: int | None = None,
               stamp: int | None = None, priority: int | None = None, size: int = 0,
               total: int = 0, payload: bytes | None = None) -> Message:
        """The request turned into its reply (replay_reply.p4); unset fields echo it.
        A reply is always well formed: this VERSION, reserved bits and byte zero, the
        header alone or with a payload (never a request's payload or entries)."""
        base = _NO_HEADER if req is None else req
        return Message(
            op=base.op, table=base.table, flags=(base.flags & ~FLAGS_RESERVED) | Flag.REPLY,
            status=status,
            count=base.count, index=index & 0xFF, request_id=base.request_id,
            slot=base.slot if slot is None else slot,
            stamp=base.stamp if stamp is None else stamp,
            priority=base.priority if priority is None else priority,
            size=size, total=total, payload=payload)
