"""What one gress pass of one packet holds outside its PHV, and how a pass ends early."""

from __future__ import annotations


class TooShort(Exception):
    """extract/advance past the end of the packet."""


class NoMatch(Exception):
    """A select with no matching case."""


class Reject(Exception):
    """transition reject."""


class Exit(Exception):
    """exit: the rest of the control is skipped."""


class PassState:
    """One gress pass of one packet: the bytes being parsed or deparsed, and the
    register arrays its RegisterActions touched (each at most once)."""

    __slots__ = ("data", "end", "ilen", "out", "pos", "touched")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.ilen = len(data)
        self.out = bytearray()
        self.touched: set[str] = set()
