"""The switch targets the controller deploys the replay program to, and what
each one's compiled program fixes (p4src/<arch>/arch.p4): its CPU port and, on
Tofino, the loop port every replay packet takes its stateful pass through, so
that all replay state is in one pipe's egress (p4src/replay_tna.p4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """One switch target of the replay program."""

    name: str                     # the config's `switch.target`
    arch: str                     # p4src/<arch>/, and the P4Info's pkg_info.arch
    cpu_port: int                 # CPU_PORT in p4src/<arch>/arch.p4
    loop_port: int | None = None  # LOOP_PORT there; None: replay copies go toward the requester

    def replica_port(self, requester_port: int) -> int:
        """The port a SAMPLE request's copies are replicated to."""
        return requester_port if self.loop_port is None else self.loop_port

    def reset_port(self, cpu_port: int) -> int:
        """The port RESET's copies are replicated to (they answer the CPU port)."""
        return cpu_port if self.loop_port is None else self.loop_port


BMV2 = Target("bmv2", "v1model", cpu_port=255)
TOFINO = Target("tofino", "tna", cpu_port=64, loop_port=68)
# The TNA program on the Python switch's TNA execution model (bmv2/pyswitch/tna):
# Tofino's ports and loop, P4Runtime as bmv2 serves it.
TNA_MODEL = Target("tna", "tna", cpu_port=64, loop_port=68)
TARGETS = {t.name: t for t in (BMV2, TOFINO, TNA_MODEL)}
