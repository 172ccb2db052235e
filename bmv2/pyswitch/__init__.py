"""Pure-Python v1model switch executing p4c's bmv2 JSON (simple_switch semantics)."""

from .engine import Stats
from .errors import (
    ConstEntryError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    ProgramError,
    PySwitchError,
    SwitchKeyError,
    TableFullError,
    UnknownNameError,
    UnsupportedConstruct,
)
from .info import CounterInfo, HeaderTypeInfo, ProgramInfo, RegisterInfo, TableInfo
from .pre import CloneSession
from .switch import Switch
from .tables import (
    ActionInfo,
    ActionParam,
    Exact,
    KeyField,
    Lpm,
    Match,
    Optional_,
    Range,
    TableEntry,
    Ternary,
)

__all__ = [
    "ActionInfo", "ActionParam", "CloneSession", "ConstEntryError", "CounterInfo",
    "DuplicateEntryError", "EntryNotFoundError", "Exact", "HeaderTypeInfo", "InvalidEntryError",
    "KeyField", "Lpm", "Match", "Optional_", "ProgramError", "ProgramInfo", "PySwitchError",
    "Range", "RegisterInfo", "Stats", "Switch", "SwitchKeyError", "TableEntry", "TableFullError",
    "TableInfo", "Ternary", "UnknownNameError", "UnsupportedConstruct",
]
