"""Exceptions raised by the Python switch."""

from __future__ import annotations


class PySwitchError(Exception):
    """Base class of every error the Python switch raises."""


class ProgramError(PySwitchError):
    """The bmv2 JSON is malformed or inconsistent."""


class UnsupportedConstruct(ProgramError):
    """The bmv2 JSON uses a construct this switch does not implement.

    Raised at load time, naming the construct and where it appears, e.g.
    ``UnsupportedConstruct: primitive 'xyz' in action 'foo'``.
    """


class SwitchKeyError(PySwitchError, KeyError):
    """A control-plane request named something wrong (a KeyError with a message)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownNameError(SwitchKeyError):
    """No table, action, counter, register or session of that name or id."""


class InvalidEntryError(SwitchKeyError):
    """A table entry, action call or value does not fit the program."""


class DuplicateEntryError(SwitchKeyError):
    """An entry with the same match key (and priority) already exists."""


class EntryNotFoundError(SwitchKeyError):
    """No entry with that handle or key."""


class TableFullError(SwitchKeyError):
    """The table already holds max_size entries."""


class ConstEntryError(SwitchKeyError):
    """The entries or the default entry of the table are const in the program."""


class PacketError(PySwitchError):
    """A packet hit a run-time error (e.g. a failed assert): it is dropped and counted."""


class ParserError(PacketError):
    """Raised inside the parser; ``code`` is the P4 error number."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
