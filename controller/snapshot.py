"""Snapshot, restore and reset of replay tables, in band through the CPU port,
each verified against the switch afterwards."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent import protocol
from agent.protocol import Message
from controller.inband import InbandChannel

FORMAT = "p4replay-snapshot/1"
Progress = Callable[[int, int], None]


class SnapshotError(RuntimeError):
    """A snapshot that cannot be taken, read, restored or verified."""


@dataclass(frozen=True)
class TableState:
    """A table's ring state as GET_STATE reports it."""

    pointer: int
    sequence: int
    max_priority: int
    size: int
    total: int

    @classmethod
    def of(cls, reply: Message) -> TableState:
        return cls(reply.slot, reply.stamp, reply.priority, reply.size, reply.total)


def _check(reply: Message, what: str) -> Message:
    if not reply.ok:
        raise SnapshotError(f"{what}: switch answered {reply.status_name()}")
    return reply


def read_state(channel: InbandChannel, table: int) -> TableState:
    (reply,) = channel.request(protocol.get_state(table))
    return TableState.of(_check(reply, f"GET_STATE of table {table}"))


def read_slots(channel: InbandChannel, table: int, slots: Sequence[int],
               progress: Progress | None = None, chunk: int = 256) -> list[Message]:
    """READ every slot in `slots`, in chunks so progress can be shown."""
    out: list[Message] = []
    for start in range(0, len(slots), chunk):
        part = slots[start:start + chunk]
        replies = channel.pipeline([protocol.read(table, s) for s in part])
        out.extend(_check(r, f"READ of table {table} slot {s}") for r, s in zip(replies, part,
                                                                                strict=True))
        if progress:
            progress(len(out), len(slots))
    return out


def snapshot_table(channel: InbandChannel, table: int, capacity: int,
                   progress: Progress | None = None) -> dict:
    """Every occupied slot's payload, priority and stamp, plus the ring state."""
    state = read_state(channel, table)
    used = range(capacity if state.size >= capacity else state.size)
    slots = [r for r in read_slots(channel, table, used, progress) if r.stamp != 0]
    after = read_state(channel, table)
    if after != state:
        raise SnapshotError(f"table {table} changed while it was read: disable it first")
    total = sum(r.priority for r in slots)
    if total != state.total:
        raise SnapshotError(f"table {table}: slot priorities sum to {total}, "
                            f"the switch's total is {state.total}")
    return {
        "table": table,
        "capacity": capacity,
        "state": state.__dict__,
        "slots": [{"slot": r.slot, "stamp": r.stamp, "priority": r.priority,
                   "payload": r.payload.hex()} for r in slots],
    }


def write_file(path: str | Path, tables: list[dict]) -> None:
    Path(path).write_text(json.dumps({"format": FORMAT, "tables": tables}, indent=1) + "\n")


def read_file(path: str | Path) -> list[dict]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a readable snapshot: {exc}") from None
    if doc.get("format") != FORMAT:
        raise SnapshotError(f"{path}: not a {FORMAT} file")
    return doc["tables"]


def reset_table(channel: InbandChannel, table: int) -> None:
    """RESET the table and check it is empty."""
    (reply,) = channel.request(protocol.reset(table))
    _check(reply, f"RESET of table {table}")
    state = read_state(channel, table)
    if state != TableState(0, 0, 0, 0, 0):
        raise SnapshotError(f"table {table} is not empty after RESET: {state}")


def restore_table(channel: InbandChannel, snap: dict, progress: Progress | None = None) -> None:
    """Reset the table, WRITE every slot, SET_STATE, then verify slot by slot."""
    table = snap["table"]
    reset_table(channel, table)
    slots = snap["slots"]
    writes = [protocol.write(table, s["slot"], s["stamp"], s["priority"],
                             bytes.fromhex(s["payload"])) for s in slots]
    for start in range(0, len(writes), 256):
        for reply in channel.pipeline(writes[start:start + 256]):
            _check(reply, f"WRITE of table {table} slot {reply.slot}")
        if progress:
            progress(min(start + 256, len(writes)), len(writes))
    st = snap["state"]
    (reply,) = channel.request(protocol.set_state(
        table, pointer=st["pointer"], sequence=st["sequence"],
        max_priority_fixed=st["max_priority"], size=st["size"]))
    _check(reply, f"SET_STATE of table {table}")
    verify_table(channel, snap)


def verify_table(channel: InbandChannel, snap: dict) -> None:
    """The switch holds exactly what the snapshot says."""
    table = snap["table"]
    state = read_state(channel, table)
    if state.__dict__ != snap["state"]:
        raise SnapshotError(f"table {table}: state {state.__dict__} != snapshot {snap['state']}")
    wanted = {s["slot"]: s for s in snap["slots"]}
    for reply in read_slots(channel, table, sorted(wanted)):
        s = wanted.get(reply.slot)
        if s is None or (reply.stamp, reply.priority, reply.payload.hex()) != (
                s["stamp"], s["priority"], s["payload"]):
            raise SnapshotError(f"table {table} slot {reply.slot} differs from the snapshot")
