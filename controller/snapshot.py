"""Snapshot, restore and reset of replay tables, in band through the CPU port,
each verified against the switch afterwards; snapshot files written atomically,
and directories of them rotated (the newest K kept)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.contract import protocol
from agent.contract.protocol import Message
from controller.inband import InbandChannel

FORMAT = "p4replay-snapshot/1"
Progress = Callable[[int, int], None]
FILE_GLOB = "snapshot-*.json"


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
                   progress: Progress | None = None, live: bool = False) -> dict:
    """Every occupied slot's payload, priority and stamp, plus the ring state.

    A table that changes while it is read is refused, unless `live`: then each
    slot is taken as it was when read, the slots the ring grew into meanwhile
    are read once more, and the ring state is the one after the last read (cut
    at the slots read if the ring is still growing), with the total recomputed
    from the slots taken. Restoring such a snapshot gives a consistent table:
    every slot a real experience, no stamp above the sequence; what was
    inserted after a slot was read is not in it."""
    state = read_state(channel, table)
    used = min(capacity, state.size)
    slots = {r.slot: r for r in read_slots(channel, table, range(used), progress) if r.stamp}
    after = read_state(channel, table)
    if after != state and not live:
        raise SnapshotError(f"table {table} changed while it was read: disable it first")
    if min(capacity, after.size) > used:  # the ring grew while it was read: catch up once
        grown = min(capacity, after.size)
        slots.update((r.slot, r) for r in read_slots(channel, table, range(used, grown))
                     if r.stamp)
        used = grown
        after = read_state(channel, table)
    total = sum(r.priority for r in slots.values())
    if after == state and total != state.total:
        raise SnapshotError(f"table {table}: slot priorities sum to {total}, "
                            f"the switch's total is {state.total}")
    pointer, size = after.pointer, after.size
    if min(capacity, size) > used:  # still growing: the ring ends at the slots read
        pointer, size = used % capacity, used
    state = TableState(pointer, after.sequence, after.max_priority, size, total)
    return {
        "table": table,
        "capacity": capacity,
        "state": state.__dict__,
        "slots": [{"slot": r.slot, "stamp": r.stamp, "priority": r.priority,
                   "payload": r.payload.hex()} for _, r in sorted(slots.items())],
    }


def write_file(path: str | Path, tables: list[dict]) -> None:
    """Write a snapshot file atomically: a reader sees the old file or the new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as f:
        f.write(json.dumps({"format": FORMAT, "tables": tables}, indent=1) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_file(path: str | Path) -> list[dict]:
    """The tables of a snapshot file, or of the newest snapshot in a directory."""
    path = Path(path)
    if path.is_dir():
        newest = latest(path)
        if newest is None:
            raise SnapshotError(f"{path}: no {FILE_GLOB} in this directory")
        path = newest
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a readable snapshot: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError(f"{path}: not a {FORMAT} file")
    return doc["tables"]


def snapshots(directory: str | Path) -> list[Path]:
    """The snapshot files in `directory`, oldest first (their names sort by time)."""
    return sorted(Path(directory).glob(FILE_GLOB))


def latest(directory: str | Path) -> Path | None:
    """The newest snapshot file in `directory`, if any."""
    found = snapshots(directory)
    return found[-1] if found else None


def save_rotated(directory: str | Path, tables: list[dict], keep: int) -> Path:
    """Write a new timestamped snapshot into `directory` and delete all but the newest `keep`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now * 1e6) % 10**6:06d}Z"
    path = directory / f"snapshot-{stamp}.json"
    write_file(path, tables)
    for old in snapshots(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return path


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
