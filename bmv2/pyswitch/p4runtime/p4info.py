"""An index of a P4Info by id and name, and P4Runtime bytestring conversions.

The conversions follow p4lang/PI (``proto/frontend/src/common.cpp``): a value
sent by a client may be shorter than the field (left-padded with zeros) or
longer with leading zero bytes, but its significant bits must fit the field;
values sent back are canonical (leading zero bytes stripped, at least one byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bmv2.pyswitch.p4runtime.proto import p4info_pb2
from bmv2.pyswitch.p4runtime.status import invalid_argument, invalid_p4_id

MatchType = p4info_pb2.MatchField.MatchType
Scope = p4info_pb2.ActionRef.Scope
Prefix = p4info_pb2.P4Ids.Prefix
CounterUnit = p4info_pb2.CounterSpec.Unit

# The P4Info lists whose objects have a preamble (an id and a name).
_KINDS = (
    "tables",
    "actions",
    "action_profiles",
    "counters",
    "direct_counters",
    "meters",
    "direct_meters",
    "controller_packet_metadata",
    "value_sets",
    "registers",
    "digests",
)
PRIORITY_MATCH_TYPES = frozenset({MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL})


def nbytes(bitwidth: int) -> int:
    """Bytes needed for a field of ``bitwidth`` bits."""
    return (bitwidth + 7) // 8


def to_target(value: bytes, bitwidth: int) -> bytes:
    """A client bytestring as exactly ``nbytes(bitwidth)`` bytes (PI's p4rt_to_pi)."""
    size = nbytes(bitwidth)
    if len(value) < size:
        return bytes(size - len(value)) + value
    if int.from_bytes(value, "big").bit_length() > bitwidth:
        raise invalid_argument(f"Bytestring provided does not fit within {bitwidth} bits")
    return value[len(value) - size :]


def to_canonical(value: bytes) -> bytes:
    """A target bytestring in canonical form (PI's pi_to_p4rt)."""
    stripped = value.lstrip(b"\x00")
    return stripped if stripped else b"\x00"


def int_to_canonical(value: int) -> bytes:
    """An unsigned integer as a canonical bytestring."""
    return to_canonical(value.to_bytes(max(1, nbytes(value.bit_length())), "big"))


def id_prefix(p4_id: int) -> int:
    """The resource type of a P4Info id (its most significant byte)."""
    return p4_id >> 24


@dataclass(frozen=True)
class MatchFieldInfo:
    """One key field of a table."""

    id: int
    name: str
    bitwidth: int
    match_type: int


@dataclass(frozen=True)
class ParamInfo:
    """One action parameter."""

    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True)
class ActionInfo:
    """An action and its parameters in declaration order."""

    id: int
    name: str
    params: tuple[ParamInfo, ...]

    def param(self, param_id: int) -> ParamInfo | None:
        """The parameter with this id, if any."""
        return next((p for p in self.params if p.id == param_id), None)


@dataclass(frozen=True)
class TableInfo:
    """A match-action table."""

    id: int
    name: str
    match_fields: tuple[MatchFieldInfo, ...]
    action_scopes: dict[int, int]
    const_default_action_id: int
    implementation_id: int
    direct_resource_ids: tuple[int, ...]
    size: int
    is_const: bool

    @property
    def needs_priority(self) -> bool:
        """Whether entries carry a priority (ternary, range or optional fields)."""
        return any(mf.match_type in PRIORITY_MATCH_TYPES for mf in self.match_fields)


@dataclass(frozen=True)
class CounterInfo:
    """An indirect counter array, or a direct counter (``direct_table_id`` set)."""

    id: int
    name: str
    unit: int
    size: int
    direct_table_id: int = 0


@dataclass(frozen=True)
class PacketMetadataInfo:
    """One field of a controller header."""

    id: int
    name: str
    bitwidth: int


@dataclass
class P4InfoIndex:
    """Everything the P4Runtime server looks up in a P4Info."""

    p4info: p4info_pb2.P4Info
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, ActionInfo] = field(default_factory=dict)
    counters: dict[int, CounterInfo] = field(default_factory=dict)
    direct_counters: dict[int, CounterInfo] = field(default_factory=dict)
    controller_headers: dict[str, tuple[PacketMetadataInfo, ...]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    table_ids: dict[str, int] = field(default_factory=dict)
    action_ids: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, p4info: p4info_pb2.P4Info) -> P4InfoIndex:
        """Index a P4Info message."""
        index = cls(p4info)
        for action in p4info.actions:
            params = tuple(ParamInfo(p.id, p.name, p.bitwidth) for p in action.params)
            index.actions[action.preamble.id] = ActionInfo(
                action.preamble.id, action.preamble.name, params
            )
        for table in p4info.tables:
            index.tables[table.preamble.id] = TableInfo(
                id=table.preamble.id,
                name=table.preamble.name,
                match_fields=tuple(
                    MatchFieldInfo(mf.id, mf.name, mf.bitwidth, mf.match_type)
                    for mf in table.match_fields
                ),
                action_scopes={ref.id: ref.scope for ref in table.action_refs},
                const_default_action_id=table.const_default_action_id,
                implementation_id=table.implementation_id,
                direct_resource_ids=tuple(table.direct_resource_ids),
                size=table.size,
                is_const=table.is_const_table,
            )
        for counter in p4info.counters:
            index.counters[counter.preamble.id] = CounterInfo(
                counter.preamble.id, counter.preamble.name, counter.spec.unit, counter.size
            )
        for counter in p4info.direct_counters:
            index.direct_counters[counter.preamble.id] = CounterInfo(
                counter.preamble.id,
                counter.preamble.name,
                counter.spec.unit,
                0,
                counter.direct_table_id,
            )
        for header in p4info.controller_packet_metadata:
            index.controller_headers[header.preamble.name] = tuple(
                PacketMetadataInfo(m.id, m.name, m.bitwidth) for m in header.metadata
            )
        for kind in _KINDS:
            for obj in getattr(p4info, kind):
                index.names[obj.preamble.id] = obj.preamble.name
        index._check()
        index.table_ids = {t.name: t.id for t in index.tables.values()}
        index.action_ids = {a.name: a.id for a in index.actions.values()}
        return index

    def _check(self) -> None:
        """Refuse a P4Info whose references do not resolve (ValueError)."""
        count = sum(len(getattr(self.p4info, kind)) for kind in _KINDS)
        if count != len(self.names):
            raise ValueError("two P4Info objects share an id")
        for table in self.tables.values():
            for action_id in table.action_scopes:
                if action_id not in self.actions:
                    raise ValueError(f"table {table.name} refers to unknown action {action_id}")
            for resource_id in table.direct_resource_ids:
                if resource_id not in self.names:
                    raise ValueError(f"table {table.name} refers to unknown {resource_id}")

    def is_valid(self, p4_id: int, prefix: int) -> bool:
        """PI's check_p4_id: the id has the right type and is in the P4Info."""
        return id_prefix(p4_id) == prefix and p4_id in self.names

    def table(self, table_id: int) -> TableInfo:
        """The table with this id, or INVALID_ARGUMENT "Invalid P4 id"."""
        if not self.is_valid(table_id, Prefix.TABLE) or table_id not in self.tables:
            raise invalid_p4_id()
        return self.tables[table_id]

    def action(self, action_id: int) -> ActionInfo:
        """The action with this id, or INVALID_ARGUMENT "Invalid P4 id"."""
        if not self.is_valid(action_id, Prefix.ACTION) or action_id not in self.actions:
            raise invalid_p4_id()
        return self.actions[action_id]

    def counter(self, counter_id: int) -> CounterInfo:
        """The indirect counter with this id, or INVALID_ARGUMENT."""
        if not self.is_valid(counter_id, Prefix.COUNTER) or counter_id not in self.counters:
            raise invalid_p4_id()
        return self.counters[counter_id]

    def direct_counter_of(self, table: TableInfo) -> CounterInfo | None:
        """The direct counter attached to a table, if it has one."""
        ids = [i for i in table.direct_resource_ids if i in self.direct_counters]
        return self.direct_counters[ids[0]] if ids else None

    def has_direct_meter(self, table: TableInfo) -> bool:
        """Whether a direct meter is attached to the table."""
        return any(id_prefix(i) == Prefix.DIRECT_METER for i in table.direct_resource_ids)

    def action_by_name(self, name: str) -> ActionInfo:
        """The action with this P4Info name (KeyError when there is none)."""
        return self.actions[self.action_ids[name]]
