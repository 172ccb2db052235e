"""Per-table statistics from the data plane's request counters and ring state."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.contract import protocol
from agent.contract.protocol import Op, Status
from controller.inband import InbandChannel
from controller.p4runtime_session import P4RuntimeSession
from controller.program import (
    BROADCAST_COUNTER,
    FORGED_COUNTER,
    NOT_READY_COUNTER,
    RATE_LIMITED_COUNTER,
    SAMPLED_COUNTER,
)
from controller.program import REQUESTS_COUNTER as COUNTER

OTHER_TABLE = protocol.NUM_TABLES


def counter_index(table: int, op: int, status: int) -> int:
    """The replay_requests cell of (table, op, status); see docs/protocol.md."""
    return (table << 8) | (op << 4) | status


@dataclass
class TableStats:
    """Accepted and refused requests of one table, and what it holds."""

    table: int
    ok: dict[str, int] = field(default_factory=dict)          # op name -> accepted requests
    refused: dict[str, int] = field(default_factory=dict)     # status name -> refused requests
    size: int | None = None
    total_priority: float | None = None
    max_priority: float | None = None
    inserted: int | None = None                              # insert sequence number
    sampled: int = 0                                         # experiences SAMPLE returned
    not_ready: int = 0                                       # SAMPLE replies NOT_READY

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    def as_dict(self) -> dict:
        return {"table": self.table, "ok": self.ok, "refused": self.refused, "size": self.size,
                "total_priority": self.total_priority, "max_priority": self.max_priority,
                "inserted": self.inserted, "sampled": self.sampled, "not_ready": self.not_ready}


def read_stats(session: P4RuntimeSession, tables: list[int],
               inband: InbandChannel | None = None) -> dict[int, TableStats]:
    """Stats for `tables` (and OTHER_TABLE for requests naming no valid table)."""
    cells = session.read_counter(COUNTER)
    out = {t: TableStats(t) for t in [*tables, OTHER_TABLE]}
    for index, (packets, _bytes) in cells.items():
        table, op, status = index >> 8, (index >> 4) & 0xF, index & 0xF
        if table not in out or packets == 0:
            continue
        op_name = Op(op).name if op in Op._value2member_map_ else "UNKNOWN_OP"
        if status == Status.OK:
            out[table].ok[op_name] = out[table].ok.get(op_name, 0) + packets
        else:
            name = Status(status).name if status in Status._value2member_map_ else str(status)
            out[table].refused[name] = out[table].refused.get(name, 0) + packets
    for table, (packets, _bytes) in session.read_counter(SAMPLED_COUNTER).items():
        if table in out:
            out[table].sampled = packets
    for table, (packets, _bytes) in session.read_counter(NOT_READY_COUNTER).items():
        if table in out:
            out[table].not_ready = packets
    if inband is not None:
        for t in tables:
            (state,) = inband.request(protocol.get_state(t))
            if state.ok:
                out[t].size = state.size
                out[t].total_priority = protocol.fixed_to_priority(state.total)
                out[t].max_priority = protocol.fixed_to_priority(state.priority)
                out[t].inserted = state.stamp
    return out


@dataclass
class GuardDrops:
    """Packets the switch dropped per ingress port: forged sources, refused broadcasts;
    and INSERTs refused RATE_LIMITED per limiter (Config.insert_limiters names them)."""

    forged: dict[int, int] = field(default_factory=dict)
    broadcasts: dict[int, int] = field(default_factory=dict)
    rate_limited: dict[int, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"forged_sources": self.forged, "refused_broadcasts": self.broadcasts,
                "rate_limited": self.rate_limited}


def read_guard_drops(session: P4RuntimeSession) -> GuardDrops:
    """The SourceGuard, broadcast-sender and insert-limit counters (nonzero cells only)."""
    def nonzero(counter: str) -> dict[int, int]:
        return {port: packets for port, (packets, _bytes) in session.read_counter(counter).items()
                if packets}
    return GuardDrops(nonzero(FORGED_COUNTER), nonzero(BROADCAST_COUNTER),
                      nonzero(RATE_LIMITED_COUNTER))
