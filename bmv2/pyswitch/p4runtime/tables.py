"""Table entries between P4Runtime messages and the switch, checked as p4lang/PI does.

A match key is kept in target form: per key field, in P4Info order, a tuple
of ints (exact ``(value,)``, lpm ``(value, prefix_len)``, ternary
``(value, mask)``, range ``(low, high)``, optional ``(value, is_set)``), with
omitted fields at their don't-care value, plus the priority. Two entries are
the same entry exactly when these are equal, as in PI's table info store.
Messages, checks and their order follow PI's device_mgr.cpp; prefix lengths
are counted within the field's bit width, as the P4Runtime spec says (PI
counts them within the field padded to bytes, which only differs for LPM
fields whose width is not a multiple of 8).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bmv2.pyswitch.p4runtime.p4info import (
    ActionInfo,
    MatchFieldInfo,
    MatchType,
    P4InfoIndex,
    Scope,
    TableInfo,
    int_to_canonical,
    to_target,
)
from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import P4RuntimeError, invalid_argument

FieldValue = tuple[int, ...]


@dataclass(frozen=True)
class MatchKey:
    """A table entry's identity: field values in target form and priority."""

    fields: tuple[FieldValue, ...]
    priority: int = 0
    is_default: bool = False


DEFAULT_KEY = MatchKey((), 0, True)


@dataclass(frozen=True)
class ActionCall:
    """An action and its arguments (ints, in the action's parameter order)."""

    action_id: int
    args: tuple[int, ...]


@dataclass
class StoredEntry:
    """What the server keeps of an entry besides the switch's own state."""

    handle: int | None
    controller_metadata: int = 0
    metadata: bytes = b""


def _value(raw: bytes, bitwidth: int) -> int:
    return int.from_bytes(to_target(raw, bitwidth), "big")


def _full(bitwidth: int) -> int:
    return (1 << bitwidth) - 1


def dont_care(mf: MatchFieldInfo) -> FieldValue:
    """The value of an omitted field (EXACT fields cannot be omitted)."""
    if mf.match_type == MatchType.RANGE:
        return (0, _full(mf.bitwidth))
    return (0, 0)


def _field_value(mf: MatchFieldInfo, fm: p4runtime_pb2.FieldMatch) -> FieldValue:
    kind = fm.WhichOneof("field_match_type")
    bw = mf.bitwidth
    if mf.match_type == MatchType.EXACT:
        if kind != "exact":
            raise invalid_argument("Invalid match type")
        return (_value(fm.exact.value, bw),)
    if mf.match_type == MatchType.LPM:
        if kind != "lpm":
            raise invalid_argument("Invalid match type")
        value = _value(fm.lpm.value, bw)
        plen = fm.lpm.prefix_len
        if plen < 0:
            raise invalid_argument("Prefix length cannot be < 0")
        if plen > bw:
            raise invalid_argument("Prefix length cannot be > bitwidth")
        if plen == 0:
            raise invalid_argument(
                "Invalid reprsentation of 'don't care' LPM match, "
                "omit match field instead of using a prefix length of 0"
            )
        if value & (_full(bw - plen)):
            raise invalid_argument("Invalid LPM value, incorrect number of trailing zeros")
        return (value, plen)
    if mf.match_type == MatchType.TERNARY:
        if kind != "ternary":
            raise invalid_argument("Invalid match type")
        value, mask = _value(fm.ternary.value, bw), _value(fm.ternary.mask, bw)
        if mask == 0:
            raise invalid_argument(
                "Invalid representation of 'don't care' ternary match, "
                "omit match field instead of using 0 mask"
            )
        if value & mask != value:
            raise invalid_argument("Invalid ternary value, make sure value & mask == value")
        return (value, mask)
    if mf.match_type == MatchType.RANGE:
        if kind != "range":
            raise invalid_argument("Invalid match type")
        low, high = _value(fm.range.low, bw), _value(fm.range.high, bw)
        if (low, high) == (0, _full(bw)):
            raise invalid_argument(
                "Invalid representation of 'don't care' range match, "
                "omit match field instead of using low=0 and high=2**bitwidth-1"
            )
        if low > high:
            raise invalid_argument("Invalid range value, make sure low <= high")
        return (low, high)
    if mf.match_type == MatchType.OPTIONAL:
        if kind != "optional":
            raise invalid_argument("Invalid match type")
        return (_value(fm.optional.value, bw), 1)
    raise P4RuntimeError(code_pb2.UNIMPLEMENTED, f"Match type of field {mf.name} not supported")


def match_key(table: TableInfo, entry: p4runtime_pb2.TableEntry) -> MatchKey:
    """PI's construct_match_key."""
    if entry.is_default_action:
        if len(entry.match) > 0:
            raise invalid_argument("Non-empty key for default entry")
        if entry.priority != 0:
            raise invalid_argument("Non-zero priority for default entry")
        return DEFAULT_KEY
    if len(entry.match) > len(table.match_fields):
        raise invalid_argument("Too many fields in match key")
    given: dict[int, p4runtime_pb2.FieldMatch] = {}
    for fm in entry.match:
        given.setdefault(fm.field_id, fm)
    values = []
    matched = 0
    for mf in table.match_fields:
        fm = given.get(mf.id)
        if fm is not None:
            matched += 1
            values.append(_field_value(mf, fm))
        elif mf.match_type == MatchType.EXACT:
            raise invalid_argument("Missing non-ternary field in match key")
        else:
            values.append(dont_care(mf))
    if matched != len(entry.match):
        raise invalid_argument("Unknown field in match key")
    if not table.needs_priority and entry.priority > 0:
        raise invalid_argument("Non-zero priority for non-ternary match")
    if table.needs_priority and entry.priority == 0:
        raise invalid_argument("Zero priority for ternary match")
    return MatchKey(tuple(values), entry.priority if table.needs_priority else 0)


def match_fields_of(table: TableInfo, key: MatchKey) -> list[p4runtime_pb2.FieldMatch]:
    """PI's parse_match_key: canonical values, don't-care fields omitted."""
    out = []
    for mf, value in zip(table.match_fields, key.fields, strict=True):
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        if mf.match_type == MatchType.EXACT:
            fm.exact.value = int_to_canonical(value[0])
        elif value == dont_care(mf):
            continue
        elif mf.match_type == MatchType.LPM:
            fm.lpm.value, fm.lpm.prefix_len = int_to_canonical(value[0]), value[1]
        elif mf.match_type == MatchType.TERNARY:
            fm.ternary.value, fm.ternary.mask = map(int_to_canonical, value)
        elif mf.match_type == MatchType.RANGE:
            fm.range.low, fm.range.high = map(int_to_canonical, value)
        else:
            fm.optional.value = int_to_canonical(value[0])
        out.append(fm)
    return out


def validate_action(index: P4InfoIndex, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> None:
    """PI's validate_action, for INSERT and MODIFY."""
    indirect = table.implementation_id != 0
    if indirect and entry.is_default_action:
        raise invalid_argument(f"Cannot set / reset default action for indirect table {table.id}")
    if entry.is_default_action and table.const_default_action_id != 0:
        raise P4RuntimeError(
            code_pb2.PERMISSION_DENIED,
            f"Cannot set / reset default action for table {table.id} which has a const "
            "default action",
        )
    if not entry.HasField("action"):
        return
    kind = entry.action.WhichOneof("type")
    if indirect and kind == "action":
        raise invalid_argument(f"Cannot provide direct action for indirect table {table.id}")
    if not indirect and kind != "action":
        raise invalid_argument(f"Cannot provide indirect action for direct table {table.id}")
    if indirect:
        return
    action_id = entry.action.action.action_id
    index.action(action_id)
    scope = table.action_scopes.get(action_id)
    if scope is None:
        raise invalid_argument("Invalid action for table")
    if scope == Scope.TABLE_ONLY and entry.is_default_action:
        raise P4RuntimeError(
            code_pb2.PERMISSION_DENIED, "Cannot use TABLE_ONLY action as default action"
        )
    if scope == Scope.DEFAULT_ONLY and not entry.is_default_action:
        raise P4RuntimeError(
            code_pb2.PERMISSION_DENIED, "Cannot use DEFAULT_ONLY action in table entry"
        )


def action_call(action: ActionInfo, message: p4runtime_pb2.Action) -> ActionCall:
    """PI's construct_action_data: every parameter once, each within its width."""
    if len(message.params) != len(action.params):
        raise invalid_argument("Unexpected number of action parameters")
    args: dict[int, int] = {}
    for param in message.params:
        info = action.param(param.param_id)
        if info is None:
            raise invalid_argument("Unknown action parameter")
        if info.id in args:
            raise invalid_argument("Duplicate action parameter")
        args[info.id] = _value(param.value, info.bitwidth)
    return ActionCall(action.id, tuple(args[p.id] for p in action.params))


def action_message(action: ActionInfo, call: ActionCall) -> p4runtime_pb2.Action:
    """An action call as PI reads it back: every parameter, canonical values."""
    return p4runtime_pb2.Action(
        action_id=call.action_id,
        params=[
            p4runtime_pb2.Action.Param(param_id=p.id, value=int_to_canonical(v))
            for p, v in zip(action.params, call.args, strict=True)
        ],
    )


@dataclass
class TableStore:
    """The entries of every table, by match key, including each default entry."""

    entries: dict[int, dict[MatchKey, StoredEntry]] = field(default_factory=dict)

    def table(self, table_id: int) -> dict[MatchKey, StoredEntry]:
        """The entries of one table (the default entry under DEFAULT_KEY)."""
        return self.entries.setdefault(table_id, {})

    def get(self, table_id: int, key: MatchKey) -> StoredEntry | None:
        """One entry, if present."""
        return self.table(table_id).get(key)

