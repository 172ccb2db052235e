"""What a loaded TNA program offers the control plane (``ProgramInfo``, as for a
v1model program): names are P4Info's, from the program's @name annotations."""

from __future__ import annotations

from ..info import CounterInfo, ProgramInfo, RegisterInfo, TableInfo
from .program import TnaCompiled


def tna_program_info(code: TnaCompiled) -> ProgramInfo:
    """Describe a compiled TNA program."""
    tables = {}
    for name, t in code.tables.items():
        default = t.get_default()[0]
        gress = "ingress" if name.split(".")[0] in code.ingress_controls else "egress"
        tables[name] = TableInfo(name, gress, t.match_type, t.keys, tuple(t.actions),
                                 t.max_size, default, t.const_default_action is not None,
                                 t.const_default_entry, t.immutable, t.needs_priority, None)
    counters = {name: CounterInfo(name, i, len(c[0]), None)
                for i, (name, c) in enumerate(code.counters.items())}
    registers = {name: RegisterInfo(name, i, r.size, r.width)
                 for i, (name, r) in enumerate(code.registers.items())}
    return ProgramInfo(code.name, tables, dict(code.actions), counters, registers, {}, {})
