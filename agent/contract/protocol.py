"""The replay wire protocol: the one Python codec every agent, tool and test uses.

A replay message is the UDP payload of a datagram to the replay VIP on
``REPLAY_UDP_PORT``: a 36-byte header, followed for INSERT/WRITE requests and
SAMPLE/READ replies by ``PAYLOAD_WORDS`` 32-bit words, and for UPDATE_BATCH
requests by `count` 12-byte (slot, stamp, priority) entries. All fields are
big-endian.
docs/protocol.md is the normative description; p4src/include/constants.p4 holds
the same numbers for the data plane.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from itertools import chain

import numpy as np

VERSION = 2
REPLAY_UDP_PORT = 45000

NUM_TABLES = 4
SLOT_BITS = 12
NUM_SLOTS = 1 << SLOT_BITS
PAYLOAD_WORDS = 16
PAYLOAD_BYTES = 4 * PAYLOAD_WORDS
FLOAT_WORD = ">f4"  # a payload word holding a float: big-endian float32
MAX_BATCH = 255

# UPDATE_BATCH: at most MAX_UPDATE_BATCH (slot, stamp, priority) entries per request
# (the switch replicates the request once per entry: docs/protocol.md).
MAX_UPDATE_BATCH = 16
ENTRY = struct.Struct("!3I")
ENTRY_BYTES = ENTRY.size  # 12

# The data plane's replication (docs/protocol.md, "Replication"): RESET is
# multicast to RESET_GROUP, RESET_FANOUT copies (slots) per round.
RESET_GROUP = 255
RESET_FANOUT = 64

# The per-host INSERT limit (p4src/v1model/insert_limit.p4): a budget per
# window of 2^INSERT_WINDOW_SHIFT microseconds, in one of NUM_INSERT_LIMITERS limiters.
INSERT_WINDOW_SHIFT = 20
INSERT_WINDOW_US = 1 << INSERT_WINDOW_SHIFT
NUM_INSERT_LIMITERS = 1024
MAX_INSERT_LIMIT = 0xFFFF

# A SAMPLE reply whose drawn slot holds no experience (stamp 0) is drawn again at
# most EMPTY_SLOT_REDRAWS times, then answered NOT_READY (p4src/include/constants.p4).
EMPTY_SLOT_REDRAWS = 3

HEADER = struct.Struct("!8B5IQ")
#: Message's fields in HEADER's order.
WIRE_ORDER = ("version", "op", "flags", "status", "table", "count", "index", "reserved",
              "request_id", "slot", "stamp", "priority", "size", "total")
HEADER_BYTES = HEADER.size  # 36
_wire_values = operator.attrgetter(*WIRE_ORDER)

PRIORITY_FRACTION_BITS = 16
PRIORITY_ONE = 1 << PRIORITY_FRACTION_BITS
PRIORITY_MAX = (1 << 32) - 1


class Op(IntEnum):
    """Operation codes (header byte 1)."""

    INSERT = 1
    SAMPLE = 2
    UPDATE = 3
    READ = 4
    WRITE = 5
    RESET = 6
    GET_STATE = 7
    SET_STATE = 8
    UPDATE_BATCH = 9


class Status(IntEnum):
    """Reply status codes (header byte 3)."""

    OK = 0
    UNKNOWN_TABLE = 1
    DISABLED = 2
    BELOW_MIN_SIZE = 3
    BATCH_TOO_LARGE = 4
    MALFORMED = 5
    TRUNCATED = 6
    UNKNOWN_OP = 7
    BAD_SLOT = 8
    DENIED = 9
    STALE = 10
    EMPTY = 11
    RATE_LIMITED = 12
    NOT_READY = 13


class Mode(IntEnum):
    """Sampling mode (flags bits 4-5)."""

    DEFAULT = 0
    UNIFORM = 1
    PRIORITIZED = 2


class Flag(IntEnum):
    """Header flag bits (header byte 2)."""

    REPLY = 0x01
    ACK = 0x02
    HAS_PRIORITY = 0x04


MODE_SHIFT = 4
MODE_MASK = 0x30
FLAGS_RESERVED = 0xC8

# --- the contract's vocabulary (one definition each; docs/protocol.md, docs/config.md) ---

# A table's sampling modes by the names configs, hyperparameters and command lines use.
SAMPLING_MODES = {"uniform": Mode.UNIFORM, "prioritized": Mode.PRIORITIZED}

# ACL permission bits (the replay_acl table's `ops`), by the op names configs and replayctl use.
ALLOW_INSERT = 0x01
ALLOW_SAMPLE = 0x02
ALLOW_UPDATE = 0x04
ALLOW_ALL = ALLOW_INSERT | ALLOW_SAMPLE | ALLOW_UPDATE
ACL_OPS = {"insert": ALLOW_INSERT, "sample": ALLOW_SAMPLE, "update": ALLOW_UPDATE}
ALLOW_BIT = {Op.INSERT: ALLOW_INSERT, Op.SAMPLE: ALLOW_SAMPLE, Op.UPDATE: ALLOW_UPDATE,
             Op.UPDATE_BATCH: ALLOW_UPDATE}
# Grants whose requests the switch replicates (SAMPLE n, UPDATE_BATCH): the requester's
# port needs replication groups (docs/protocol.md, "Replication").
ALLOW_REPLICATED = ALLOW_SAMPLE | ALLOW_UPDATE


def mode_name(mode: int) -> str:
    """The name of a table's sampling mode ('uniform', 'prioritized'), or the number."""
    return next((name for name, m in SAMPLING_MODES.items() if m == mode), str(mode))


def acl_op_names(mask: int) -> list[str]:
    """The op names an ACL mask allows, in ACL_OPS order."""
    return [name for name, bit in ACL_OPS.items() if mask & bit]


def acl_mask(names: Iterable[str]) -> int:
    """The ACL mask of op names (KeyError for a name not in ACL_OPS)."""
    mask = 0
    for name in names:
        mask |= ACL_OPS[name]
    return mask


OPS_WITH_PAYLOAD_IN_REQUEST = frozenset({Op.INSERT, Op.WRITE})
OPS_WITH_PAYLOAD_IN_REPLY = frozenset({Op.SAMPLE, Op.READ})
CPU_ONLY_OPS = frozenset({Op.READ, Op.WRITE, Op.RESET, Op.GET_STATE, Op.SET_STATE})


class ProtocolError(ValueError):
    """A replay message that cannot be encoded or decoded."""


@dataclass(frozen=True)
class Entry:
    """One (slot, stamp, priority) entry of an UPDATE_BATCH request (priority in Q16.16)."""

    slot: int
    stamp: int
    priority: int


def priority_to_fixed(value: float) -> int:
    """Convert a non-negative priority to Q16.16, clamped to the 32-bit range."""
    if not np.isfinite(value) or value < 0:
        raise ProtocolError(f"priority must be finite and >= 0, got {value!r}")
    return min(round(float(value) * PRIORITY_ONE), PRIORITY_MAX)


def fixed_to_priority(value: int | np.ndarray) -> float | np.ndarray:
    """Convert Q16.16 (a scalar or an array, e.g. a sum-tree total) to float."""
    return value / PRIORITY_ONE


@dataclass(frozen=True)
class Message:
    """One replay request or reply, as it travels on the wire."""

    op: int
    table: int = 0
    flags: int = 0
    status: int = 0
    count: int = 0
    index: int = 0
    request_id: int = 0
    slot: int = 0
    stamp: int = 0
    priority: int = 0
    size: int = 0
    total: int = 0
    payload: bytes | None = field(default=None, repr=False)
    entries: tuple[Entry, ...] | None = None   # UPDATE_BATCH requests
    version: int = VERSION
    reserved: int = 0

    @property
    def is_reply(self) -> bool:
        return bool(self.flags & Flag.REPLY)

    @property
    def mode(self) -> int:
        return (self.flags & MODE_MASK) >> MODE_SHIFT

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def status_name(self) -> str:
        try:
            return Status(self.status).name
        except ValueError:
            return f"status {self.status}"


def _check_range(name: str, value: int, bits: int) -> None:
    if not 0 <= value < (1 << bits):
        raise ProtocolError(f"{name}={value} does not fit in {bits} bits")


def encode(msg: Message) -> bytes:
    """Encode a message; raises ProtocolError for out-of-range fields."""
    for name in ("version", "op", "flags", "status", "table", "count", "index", "reserved"):
        _check_range(name, getattr(msg, name), 8)
    for name in ("request_id", "slot", "stamp", "priority", "size"):
        _check_range(name, getattr(msg, name), 32)
    _check_range("total", msg.total, 64)
    head = HEADER.pack(*_wire_values(msg))
    if msg.entries is not None:
        for e in msg.entries:
            for name in ("slot", "stamp", "priority"):
                _check_range(f"entry {name}", getattr(e, name), 32)
        return head + b"".join(ENTRY.pack(e.slot, e.stamp, e.priority) for e in msg.entries)
    if msg.payload is None:
        return head
    if len(msg.payload) != PAYLOAD_BYTES:
        raise ProtocolError(f"payload must be {PAYLOAD_BYTES} bytes, got {len(msg.payload)}")
    return head + msg.payload


_new_message = object.__new__
_unpack_header = HEADER.unpack_from
_PAYLOAD_END = HEADER_BYTES + PAYLOAD_BYTES
_REPLY, _OK = int(Flag.REPLY), int(Status.OK)  # plain ints: an enum member is a lookup


_UPDATE_BATCH = int(Op.UPDATE_BATCH)


def _entries(data: bytes, count: int, strict: bool) -> tuple[Entry, ...] | None:
    """An UPDATE_BATCH request's entries: all `count` of them, or None when the
    datagram is too short to hold them (strict: ProtocolError). parse_request keeps
    the first MAX_UPDATE_BATCH, all the switch's parser extracts, and needs only
    those to be there."""
    kept = count if strict else min(count, MAX_UPDATE_BATCH)
    end = HEADER_BYTES + kept * ENTRY_BYTES
    if len(data) < end:
        if strict:
            raise ProtocolError(f"truncated entries: {len(data) - HEADER_BYTES} of "
                                f"{end - HEADER_BYTES} bytes")
        return None
    return tuple(Entry(*ENTRY.unpack_from(data, HEADER_BYTES + i * ENTRY_BYTES))
                 for i in range(kept))


def _unpack(data: bytes, strict: bool) -> Message | None:
    """The one reader of the header. strict (decode): a valid message of this
    VERSION or ProtocolError; otherwise (parse_request) what the switch's parser
    extracts: None if shorter than a header, else the header and, for
    INSERT/WRITE, the payload if it is all there, for UPDATE_BATCH its entries
    if the datagram holds them all (see _entries), nothing validated."""
    if len(data) < HEADER_BYTES:
        if strict:
            raise ProtocolError(f"truncated header: {len(data)} of {HEADER_BYTES} bytes")
        return None
    # The fields go straight into the instance dict, in WIRE_ORDER: the frozen
    # __init__'s setattr per field, or a dict built from a zip, takes twice the time.
    msg = _new_message(Message)
    v = msg.__dict__
    (v["version"], v["op"], v["flags"], v["status"], v["table"], v["count"], v["index"],
     v["reserved"], v["request_id"], v["slot"], v["stamp"], v["priority"], v["size"],
     v["total"]) = _unpack_header(data)
    op, flags = v["op"], v["flags"]
    if strict:
        version, reserved = v["version"], v["reserved"]
        if version != VERSION:
            raise ProtocolError(f"unsupported protocol version {version} (expected {VERSION})")
        if flags & FLAGS_RESERVED or reserved:
            raise ProtocolError(f"reserved bits set (flags=0x{flags:02x}, reserved={reserved})")
        wanted = (v["status"] == _OK and op in OPS_WITH_PAYLOAD_IN_REPLY) if flags & _REPLY \
            else op in OPS_WITH_PAYLOAD_IN_REQUEST
    else:
        wanted = op in OPS_WITH_PAYLOAD_IN_REQUEST
    payload = None
    if wanted:
        if len(data) >= _PAYLOAD_END:
            payload = bytes(data[HEADER_BYTES:_PAYLOAD_END])
        elif strict:
            raise ProtocolError(f"truncated payload: {len(data) - HEADER_BYTES} of "
                                f"{PAYLOAD_BYTES} bytes")
    v["payload"] = payload
    v["entries"] = (_entries(data, v["count"], strict)
                    if op == _UPDATE_BATCH and not (strict and flags & _REPLY) else None)
    return msg


def decode(data: bytes) -> Message:
    """Decode and validate one message; raises ProtocolError naming the problem."""
    msg = _unpack(data, strict=True)
    assert msg is not None
    return msg


def parse_request(data: bytes) -> Message | None:
    """What the switch's parser extracts: the header (None if too short) and, for
    INSERT/WRITE, the payload if it is all there, for UPDATE_BATCH the entries
    (None unless the datagram holds all `count`). Nothing is validated here."""
    return _unpack(data, strict=False)


# --- payload helpers ---------------------------------------------------------

def floats_to_payload(values: np.ndarray | list[float]) -> bytes:
    """Pack up to PAYLOAD_WORDS float32 values (zero padded) into a payload."""
    arr = np.asarray(values, dtype=FLOAT_WORD).ravel()
    if arr.size > PAYLOAD_WORDS:
        raise ProtocolError(f"{arr.size} values do not fit in {PAYLOAD_WORDS} payload words")
    out = np.zeros(PAYLOAD_WORDS, dtype=FLOAT_WORD)
    out[: arr.size] = arr
    return out.tobytes()


def payload_to_floats(payload: bytes) -> np.ndarray:
    """Unpack a payload into PAYLOAD_WORDS native float32 values."""
    return np.frombuffer(payload, dtype=FLOAT_WORD).astype(np.float32)


def to_payloads(rows: np.ndarray) -> list[bytes]:
    """(B, PAYLOAD_WORDS) float32 rows (e.g. transition.encode's) as B wire payloads."""
    raw = np.ascontiguousarray(rows, dtype=FLOAT_WORD).tobytes()
    return [raw[i:i + PAYLOAD_BYTES] for i in range(0, len(raw), PAYLOAD_BYTES)]


def payloads_to_rows(raw: bytes) -> np.ndarray:
    """Concatenated payloads back as (B, PAYLOAD_WORDS) native float32 rows."""
    return np.frombuffer(raw, dtype=FLOAT_WORD).astype(np.float32).reshape(-1, PAYLOAD_WORDS)


def words_to_payload(words: np.ndarray | list[int]) -> bytes:
    """Pack up to PAYLOAD_WORDS unsigned 32-bit words (zero padded)."""
    arr = np.asarray(words, dtype=np.uint64).ravel()
    if arr.size > PAYLOAD_WORDS or (arr.size and int(arr.max()) >= 1 << 32):
        raise ProtocolError("payload words must be at most 16 values below 2**32")
    out = np.zeros(PAYLOAD_WORDS, dtype=">u4")
    out[: arr.size] = arr
    return out.tobytes()


# --- request builders ----------------------------------------------------------

def _mode_flags(mode: int) -> int:
    if mode not in (Mode.DEFAULT, Mode.UNIFORM, Mode.PRIORITIZED):
        raise ProtocolError(f"unknown sampling mode {mode}")
    return int(mode) << MODE_SHIFT


def insert(table: int, payload: bytes, *, priority: float | None = None, ack: bool = False,
           request_id: int = 0) -> Message:
    flags = (Flag.ACK if ack else 0) | (Flag.HAS_PRIORITY if priority is not None else 0)
    fixed = priority_to_fixed(priority) if priority is not None else 0
    return Message(op=Op.INSERT, table=table, flags=flags, priority=fixed, payload=payload,
                   request_id=request_id)


def sample(table: int, count: int, *, mode: int = Mode.DEFAULT, request_id: int = 0) -> Message:
    if not 1 <= count <= MAX_BATCH:
        raise ProtocolError(f"sample count must be 1..{MAX_BATCH}, got {count}")
    return Message(op=Op.SAMPLE, table=table, flags=_mode_flags(mode), count=count,
                   request_id=request_id)


def update(table: int, slot: int, stamp: int, priority: float, *, ack: bool = False,
           request_id: int = 0) -> Message:
    flags = Flag.HAS_PRIORITY | (Flag.ACK if ack else 0)
    return Message(op=Op.UPDATE, table=table, flags=flags, slot=slot, stamp=stamp,
                   priority=priority_to_fixed(priority), request_id=request_id)


def update_batch(table: int, slots: Iterable[int], stamps: Iterable[int],
                 priorities: Iterable[float], *, ack: bool = False,
                 request_id: int = 0) -> Message:
    """One UPDATE_BATCH of 1 .. MAX_UPDATE_BATCH entries, each applied as an UPDATE."""
    entries = tuple(Entry(int(s), int(t), priority_to_fixed(float(p)))
                    for s, t, p in zip(slots, stamps, priorities, strict=True))
    if not 1 <= len(entries) <= MAX_UPDATE_BATCH:
        raise ProtocolError(f"an update batch holds 1..{MAX_UPDATE_BATCH} entries, "
                            f"got {len(entries)}")
    return Message(op=Op.UPDATE_BATCH, table=table, flags=Flag.ACK if ack else 0,
                   count=len(entries), entries=entries, request_id=request_id)


def read(table: int, slot: int, *, request_id: int = 0) -> Message:
    return Message(op=Op.READ, table=table, slot=slot, request_id=request_id)


def write(table: int, slot: int, stamp: int, priority_fixed: int, payload: bytes, *,
          request_id: int = 0) -> Message:
    return Message(op=Op.WRITE, table=table, flags=Flag.HAS_PRIORITY, slot=slot, stamp=stamp,
                   priority=priority_fixed, payload=payload, request_id=request_id)


def reset(table: int, *, request_id: int = 0) -> Message:
    return Message(op=Op.RESET, table=table, request_id=request_id)


def get_state(table: int, *, request_id: int = 0) -> Message:
    return Message(op=Op.GET_STATE, table=table, request_id=request_id)


def set_state(table: int, *, pointer: int, sequence: int, max_priority_fixed: int, size: int,
              request_id: int = 0) -> Message:
    return Message(op=Op.SET_STATE, table=table, slot=pointer, stamp=sequence,
                   priority=max_priority_fixed, size=size, request_id=request_id)


def with_request_id(msg: Message, request_id: int) -> Message:
    return replace(msg, request_id=request_id)


# --- batch decode ----------------------------------------------------------------

@dataclass(frozen=True)
class Inserted:
    """Where an INSERT went: the fields of its ACK."""

    slot: int
    stamp: int
    priority: int
    size: int
    total: int


@dataclass(frozen=True)
class BatchAck:
    """What the ACK of an UPDATE_BATCH of `entries` says: how many were applied and
    how many were STALE; the rest named a slot past the table's capacity."""

    entries: int
    applied: int
    stale: int

    @classmethod
    def of(cls, reply: Message) -> BatchAck:
        """The counts an OK UPDATE_BATCH reply carries (count, slot, index)."""
        return cls(reply.count, reply.slot, reply.index)

    @property
    def bad_slot(self) -> int:
        return self.entries - self.applied - self.stale


@dataclass(frozen=True)
class SampleBatch:
    """The OK replies of one SAMPLE request, as arrays ordered by reply index."""

    index: np.ndarray      # (n,) uint8
    slot: np.ndarray       # (n,) uint32
    stamp: np.ndarray      # (n,) uint32
    priority: np.ndarray   # (n,) float64, decoded from Q16.16
    total: np.ndarray      # (n,) float64, the table's total priority per reply
    size: np.ndarray       # (n,) uint32
    payload: np.ndarray    # (n, PAYLOAD_WORDS) float32

    def __len__(self) -> int:
        return int(self.slot.shape[0])


_by_index = operator.attrgetter("index")
_batch_fields = operator.attrgetter("index", "slot", "stamp", "priority", "total", "size")


def decode_batch(messages: list[Message]) -> SampleBatch:
    """Stack decoded OK SAMPLE replies into numpy arrays (sorted by reply index)."""
    if any(m.payload is None or m.status != _OK for m in messages):
        raise ProtocolError("decode_batch takes only OK replies carrying a payload")
    ordered = sorted(messages, key=_by_index)
    raw = b"".join([m.payload for m in ordered])  # type: ignore[misc]
    payload = payloads_to_rows(raw)
    # one array of the header fields (all below 2**64), then a column per field
    cols = np.fromiter(chain.from_iterable(map(_batch_fields, ordered)), dtype=np.uint64,
                       count=6 * len(ordered)).reshape(-1, 6)
    return SampleBatch(
        index=cols[:, 0].astype(np.uint8),
        slot=cols[:, 1].astype(np.uint32),
        stamp=cols[:, 2].astype(np.uint32),
        priority=cols[:, 3].astype(np.float64) / PRIORITY_ONE,
        total=cols[:, 4].astype(np.float64) / PRIORITY_ONE,
        size=cols[:, 5].astype(np.uint32),
        payload=payload,
    )
