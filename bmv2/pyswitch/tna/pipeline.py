"""The TNA pipeline and traffic manager, as the TNA document defines them for
Tofino 1, running one compiled program (``program.TnaCompiled``).

A packet arriving on a port enters the ingress parser behind its intrinsic
metadata (``ingress_intrinsic_metadata_t``: port and timestamp) and 8 bytes of
port metadata; the ingress deparser's bytes, followed by what the parser did
not read, go to the traffic manager. There:

- ``ig_intr_md_for_dprsr.drop_ctl`` bit 0 drops the packet;
- ``ucast_egress_port``, when ingress wrote it, sends one copy (rid 0), except
  to port 511, which is no port of the device: that copy is dropped (P4Testgen's
  Tofino target drops it the same, ``DROP_CONSTANT``);
- ``mcast_grp_a`` and ``mcast_grp_b``, when not 0, send one copy per replica of
  the PRE's group (port, rid); ``copy_to_cpu`` one more to the CPU port;
- a packet with no destination is dropped.

Each copy enters the egress parser behind its ``egress_intrinsic_metadata_t``
(port, rid, first-replica flag, length); the egress deparser's bytes leave by
the port, or, on a loop (recirculation) port, enter ingress again with that
port as their ingress port. Parser errors: an ingress packet cut short is
dropped unless the ingress control reads ``parser_err``, a select with no match
is dropped; the egress parser never drops (P4Testgen's Tofino target models the
same, ``targets/tofino/tofino/cmd_stepper.cpp``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from ..engine import Outputs, PacketRunner, Stats
from ..pre import Pre
from .externs import PARSER_ERROR_NO_MATCH, PARSER_ERROR_PARTIAL_HDR
from .layout import Header, header_packer
from .passes import NoMatch, PassState, Reject, TooShort
from .program import GressCode, TnaCompiled

IG_MD = "ingress_intrinsic_metadata_t"
IG_PRSR = "ingress_intrinsic_metadata_from_parser_t"
IG_DPRSR = "ingress_intrinsic_metadata_for_deparser_t"
IG_TM = "ingress_intrinsic_metadata_for_tm_t"
EG_MD = "egress_intrinsic_metadata_t"
EG_PRSR = "egress_intrinsic_metadata_from_parser_t"
EG_DPRSR = "egress_intrinsic_metadata_for_deparser_t"
PORT_METADATA = bytes(8)        # Tofino 1: PORT_METADATA_SIZE is 64 bits
LOOP_PORTS = (68,)              # pipe 0's recirculation port (Tofino 1)
NULL_PORT = 511                 # a unicast to it is dropped
_M48 = (1 << 48) - 1


class TnaEngine(PacketRunner):
    """Runs packets through one compiled TNA program."""

    def __init__(self, code: TnaCompiled, pre: Pre, stats: Stats, *, cpu_port: int | None,
                 loop_ports: tuple[int, ...] = LOOP_PORTS,
                 max_passes: int = 10_000, max_egress_runs: int = 100_000,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.code = code
        self.pre = pre
        self.stats = stats
        self.cpu_port = cpu_port
        self.loop_ports = frozenset(loop_ports)
        self.keep_short = code.keeps_short_packets
        self.max_passes = max_passes
        self.max_egress_runs = max_egress_runs
        self.clock = clock
        ig, eg = code.ingress, code.egress
        ig_md, eg_md = ig.roots[IG_MD], eg.roots[EG_MD]
        assert isinstance(ig_md, Header) and isinstance(eg_md, Header)
        self.ig_md = header_packer(ig_md, ("ingress_port", "ingress_mac_tstamp"))
        self.eg_md = header_packer(eg_md, ("egress_port", "egress_rid", "egress_rid_first",
                                           "pkt_length"))
        self.s_perr = ig.slot(IG_PRSR, "parser_err")
        self.s_drop = ig.slot(IG_DPRSR, "drop_ctl")
        self.s_ucast = ig.slot(IG_TM, "ucast_egress_port")
        self.s_grp_a = ig.slot(IG_TM, "mcast_grp_a")
        self.s_grp_b = ig.slot(IG_TM, "mcast_grp_b")
        self.s_cpu = ig.slot(IG_TM, "copy_to_cpu")
        self.s_bypass = ig.slot(IG_TM, "bypass_egress")
        self.s_eperr = eg.slot(EG_PRSR, "parser_err")
        self.s_edrop = eg.slot(EG_DPRSR, "drop_ctl")

    def _run(self, port: int, data: bytes, out: Outputs) -> None:
        stats = self.stats
        stats.packets_in += 1
        ingress_q: deque[tuple[int, bytes]] = deque([(port, data)])
        egress_q: deque[tuple[int, int, bool, bytes]] = deque()
        passes = runs = 0
        while ingress_q or egress_q:
            if egress_q:
                eport, rid, first, pkt = egress_q.popleft()
                runs += 1
                if runs > self.max_egress_runs:
                    stats.loop_limit_drops += 1 + len(egress_q) + len(ingress_q)
                    return
                stats.egress_runs += 1
                try:
                    frame = self._egress(eport, rid, first, pkt)
                except Exception:       # a bug of the model or the program: count, drop
                    stats.errors += 1
                    continue
                if frame is None:
                    stats.dropped += 1
                elif eport in self.loop_ports:
                    stats.recirculations += 1
                    ingress_q.append((eport, frame))
                else:
                    stats.packets_out += 1
                    out.append((eport, frame))
                continue
            iport, frame = ingress_q.popleft()
            passes += 1
            if passes > self.max_passes:
                stats.loop_limit_drops += 1 + len(ingress_q)
                return
            stats.passes += 1
            try:
                self._ingress(iport, frame, egress_q)
            except Exception:           # a bug of the model or the program: count, drop
                stats.errors += 1

    # ---- ingress and the traffic manager ------------------------------------

    def _ingress(self, port: int, data: bytes,
                 egress_q: deque[tuple[int, int, bool, bytes]]) -> None:
        ig = self.code.ingress
        F = [0] * ig.phv.size
        md = self.ig_md(port, self.clock() & _M48)
        pk = PassState(md + PORT_METADATA + data)
        pk.ilen = len(data)
        if not self._parse(ig, pk, F, ingress=True):
            self.stats.dropped += 1
            return
        payload = pk.data[pk.pos:]
        ig.control(pk, F)
        pk.out = bytearray()
        ig.deparse(pk, F)
        packet = bytes(pk.out) + payload
        if F[self.s_drop] & 1:
            self.stats.dropped += 1
            return
        dests: list[tuple[int, int]] = []
        if F[ig.ucast_written] and F[self.s_ucast] != NULL_PORT:
            dests.append((F[self.s_ucast], 0))
        for s in (self.s_grp_a, self.s_grp_b):
            if s >= 0 and F[s]:
                replicas = self.pre.replicate(F[s])
                self.stats.replicas += len(replicas)
                dests += replicas
        if self.s_cpu >= 0 and F[self.s_cpu] and self.cpu_port is not None:
            dests.append((self.cpu_port, 0))
        if not dests:
            self.stats.dropped += 1
            return
        bypass = self.s_bypass >= 0 and F[self.s_bypass]
        for i, (eport, rid) in enumerate(dests):
            if bypass:
                egress_q.append((eport, -1, i == 0, packet))
            else:
                egress_q.append((eport, rid, i == 0, packet))

    def _parse(self, g: GressCode, pk: PassState, F: list[int], *, ingress: bool) -> bool:
        """Run a parser; False when Tofino drops the packet for its parser error."""
        perr = self.s_perr if ingress else self.s_eperr
        try:
            g.parse(pk, F)
        except TooShort:
            self.stats.parser_errors += 1
            if perr >= 0:
                F[perr] |= PARSER_ERROR_PARTIAL_HDR
            if ingress and not self.keep_short:
                return False
        except NoMatch:
            self.stats.parser_errors += 1
            if perr >= 0:
                F[perr] |= PARSER_ERROR_NO_MATCH
            if ingress:
                return False
        except Reject:
            pass
        return True

    # ---- egress ---------------------------------------------------------------

    def _egress(self, port: int, rid: int, first: bool, packet: bytes) -> bytes | None:
        if rid < 0:                     # bypass_egress: straight out
            return packet
        eg = self.code.egress
        F = [0] * eg.phv.size
        md = self.eg_md(port, rid, int(first), len(packet))
        pk = PassState(md + packet)
        pk.ilen = len(packet)
        self._parse(eg, pk, F, ingress=False)
        payload = pk.data[pk.pos:]
        eg.control(pk, F)
        pk.out = bytearray()
        eg.deparse(pk, F)
        if F[self.s_edrop] & 1:
            return None
        return bytes(pk.out) + payload
