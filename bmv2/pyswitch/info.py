"""What a loaded program offers the control plane (for the P4Runtime server).

Names are the JSON names, which are P4Info's fully qualified names (e.g.
``ReplayIngress.replay.replay_table_config``). Optional key fields appear with
match type ``ternary``, as in the JSON; P4Info tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compiler import Compiled
from .program import Program
from .tables import ActionInfo, ActionParam, KeyField


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A match-action table."""

    name: str
    pipeline: str
    match_type: str
    keys: tuple[KeyField, ...]
    actions: tuple[str, ...]
    max_size: int
    default_action: str | None
    const_default_action: bool
    const_default_entry: bool
    const_entries: bool
    needs_priority: bool
    direct_counter: str | None


@dataclass(frozen=True, slots=True)
class CounterInfo:
    """A counter array; direct counters name their table."""

    name: str
    id: int
    size: int
    direct_table: str | None


@dataclass(frozen=True, slots=True)
class RegisterInfo:
    """A register array."""

    name: str
    id: int
    size: int
    bitwidth: int


@dataclass(frozen=True, slots=True)
class HeaderTypeInfo:
    """A header type with its fields (name, bitwidth, signed)."""

    name: str
    fields: tuple[tuple[str, int, bool], ...]


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """Everything the control plane can name in the loaded program."""

    name: str
    tables: dict[str, TableInfo]
    actions: dict[str, ActionInfo]
    counters: dict[str, CounterInfo]
    registers: dict[str, RegisterInfo]
    header_types: dict[str, HeaderTypeInfo]
    headers: dict[str, str]


def program_info(prog: Program, code: Compiled) -> ProgramInfo:
    """Describe ``prog`` (after compilation, for table defaults)."""
    direct = {table: name for name, table in code.direct_counters.items()}
    tables = {}
    for pname in ("ingress", "egress"):
        for t in prog.pipelines[pname].get("tables", []):
            tab = code.tables[t["name"]]
            tables[tab.name] = TableInfo(
                tab.name, pname, tab.match_type, tab.keys, tuple(tab.actions), tab.max_size,
                tab.get_default()[0], tab.const_default_action is not None,
                tab.const_default_entry, tab.immutable, tab.needs_priority,
                direct.get(tab.name))
    actions: dict[str, ActionInfo] = {}
    for a in prog.actions.values():
        actions.setdefault(a.name, ActionInfo(a.name, a.id, tuple(ActionParam(n, w)
                                                                  for n, w in a.params)))
    counters = {c.name: CounterInfo(c.name, c.id, c.size, c.binding if c.is_direct else None)
                for c in prog.counters.values()}
    registers = {r.name: RegisterInfo(r.name, r.id, r.size, r.bitwidth)
                 for r in prog.registers.values()}
    htypes = {n: HeaderTypeInfo(n, tuple(f)) for n, f in prog.header_types.items()}
    headers = {h.name: h.type_name for h in prog.headers.values()}
    return ProgramInfo(str(prog.json.get("program", "")), tables, actions, counters, registers,
                       htypes, headers)
