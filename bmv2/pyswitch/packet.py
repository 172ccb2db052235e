"""Per-packet state that is not in the PHV (bmv2's Packet object and its registers)."""

from __future__ import annotations

NO_TRUNCATE = 1 << 62


class Pkt:
    """One packet instance moving through the v1model pipeline.

    ``F`` is the PHV, ``payload`` the unparsed bytes, ``orig`` the bytes as
    the packet began ingress (for I2E clones and resubmit). The rest mirrors
    bmv2's packet registers: ``plen`` (packet length register, moved by
    add/remove_header), clone session/field list, resubmit and recirculate
    field lists, truncation length, exit flag and checksum error.
    """

    __slots__ = ("F", "cksum_err", "clone", "clone_fl", "eport", "exit", "ilen", "orig",
                 "payload", "plen", "port", "recirc", "resub", "trunc")

    def __init__(self, F: list[int], payload: bytes, port: int, ilen: int,
                 orig: bytes | None = None, plen: int | None = None, eport: int = 0) -> None:
        self.reset(F, payload, port, ilen, orig, plen, eport)

    def reset(self, F: list[int], payload: bytes, port: int, ilen: int,
              orig: bytes | None = None, plen: int | None = None, eport: int = 0) -> None:
        """Become a new packet (the engine reuses one Pkt for a multicast's copies)."""
        self.F = F
        self.payload = payload
        self.orig = payload if orig is None else orig
        self.port = port
        self.ilen = ilen
        self.plen = ilen if plen is None else plen
        self.eport = eport
        self.clone = 0
        self.clone_fl = 0
        self.resub = 0
        self.recirc = 0
        self.trunc = NO_TRUNCATE
        self.exit = False
        self.cksum_err = False

    def clear_registers(self) -> None:
        """bmv2's RegisterAccess::clear_all: everything but the packet length."""
        self.clone = 0
        self.clone_fl = 0
        self.resub = 0
        self.recirc = 0
