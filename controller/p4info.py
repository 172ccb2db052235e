"""Names from P4Info, never magic ids: look up tables, actions, counters and
controller packet metadata by name, and encode values the P4Runtime way."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from controller.p4runtime_proto import p4info_pb2


class P4InfoError(KeyError):
    """A name that the loaded P4Info does not define, or a value that does not fit."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "P4Info lookup failed"


def encode_value(value: int | str | bytes, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytes (big-endian, no leading zero bytes) of a value.

    Accepts ints, IPv4 strings ("198.18.0.1"), MAC strings ("02:00:00:00:00:01")
    and raw bytes.
    """
    number = to_int(value)
    if number < 0 or number >= 1 << bitwidth:
        raise P4InfoError(f"value {value!r} does not fit in {bitwidth} bits")
    length = max(1, (number.bit_length() + 7) // 8)
    return number.to_bytes(length, "big")


def to_int(value: int | str | bytes) -> int:
    """Interpret an int, bytes, IPv4 address or MAC address string as an integer."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
        return int.from_bytes(value, "big")
    if ":" in value and len(value.split(":")) == 6:
        return int(value.replace(":", ""), 16)
    try:
        return int(ipaddress.IPv4Address(value))
    except ValueError:
        return int(value, 0)


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


@dataclass(frozen=True)
class MatchField:
    id: int
    name: str
    bitwidth: int
    match_type: int


PIPELINE_ARCHS = ("tna", "t2na")   # bf-p4c: names start with the Pipeline instance's name


def pipeline_prefix(p4info: p4info_pb2.P4Info) -> str:
    """'<pipeline>.' when bf-p4c named every table after the program's one Pipeline
    instance (replay_tna.p4's `pipe`), else ''. Lookups and name_of leave it out, so
    the controller addresses the TNA and the v1model program by the same names."""
    if p4info.pkg_info.arch not in PIPELINE_ARCHS:
        return ""
    heads = {t.preamble.name.split(".", 1)[0] for t in p4info.tables if "." in t.preamble.name}
    return f"{heads.pop()}." if len(heads) == 1 else ""


class P4InfoIndex:
    """Lookups into one P4Info by fully qualified name (without a TNA program's
    pipeline prefix) or alias."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.prefix = pipeline_prefix(p4info)
        self._tables = self._by_name(p4info.tables)
        self._actions = self._by_name(p4info.actions)
        self._counters = self._by_name(p4info.counters)
        self._direct_counters = self._by_name(p4info.direct_counters)
        self._registers = self._by_name(p4info.registers)
        self._packet_metadata = self._by_name(p4info.controller_packet_metadata)
        self._ids = {}
        for group in (p4info.tables, p4info.actions, p4info.counters, p4info.registers,
                      p4info.direct_counters, p4info.controller_packet_metadata):
            for item in group:
                self._ids[item.preamble.id] = item

    @classmethod
    def from_file(cls, path: str | Path) -> P4InfoIndex:
        p4info = p4info_pb2.P4Info()
        text_format.Parse(Path(path).read_text(), p4info)
        return cls(p4info)

    def _name(self, item) -> str:
        name = item.preamble.name
        return name[len(self.prefix):] if self.prefix and name.startswith(self.prefix) else name

    def _by_name(self, items) -> dict:
        index = {}
        for item in items:
            index[self._name(item)] = item
            index.setdefault(item.preamble.name, item)
            if item.preamble.alias:
                index.setdefault(item.preamble.alias, item)
        return index

    def _get(self, kind: str, index: dict, name: str):
        try:
            return index[name]
        except KeyError:
            known = sorted(n for n in index if "." in n) or sorted(index)
            raise P4InfoError(f"unknown {kind} '{name}' (P4Info has: {', '.join(known)})") from None

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("table", self._tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("action", self._actions, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counter", self._counters, name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._get("register", self._registers, name)

    def packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        return self._get("controller packet metadata", self._packet_metadata, name)

    def name_of(self, entity_id: int) -> str:
        try:
            return self._name(self._ids[entity_id])
        except KeyError:
            raise P4InfoError(f"no P4Info entity with id {entity_id}") from None

    def match_fields(self, table: str) -> list[MatchField]:
        return [MatchField(f.id, f.name, f.bitwidth, f.match_type)
                for f in self.table(table).match_fields]

    def match_field(self, table: str, field: str) -> MatchField:
        for mf in self.match_fields(table):
            if mf.name == field:
                return mf
        known = ", ".join(mf.name for mf in self.match_fields(table))
        raise P4InfoError(f"table '{table}' has no key field '{field}' (keys: {known})")

    def action_param(self, action: str, param: str) -> p4info_pb2.Action.Param:
        for p in self.action(action).params:
            if p.name == param:
                return p
        known = ", ".join(p.name for p in self.action(action).params)
        raise P4InfoError(f"action '{action}' has no parameter '{param}' (params: {known})")

    def table_actions(self, table: str) -> list[str]:
        return [self.name_of(ref.id) for ref in self.table(table).action_refs]
