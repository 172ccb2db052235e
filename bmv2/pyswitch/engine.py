"""The v1model pipeline of simple_switch (targets/simple_switch/simple_switch.cpp).

One injected packet is run to completion: ingress, the traffic manager (clones,
resubmit, multicast, unicast, drop), egress, deparser, recirculation. Work is
two FIFOs, egress first; every pipeline run is bounded so that a looping program
cannot hang the switch.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from .compiler import Compiled
from .packet import Pkt
from .pre import Pre, Replica
from .program import Program

INSTANCE_NORMAL = 0
INSTANCE_INGRESS_CLONE = 1
INSTANCE_EGRESS_CLONE = 2
INSTANCE_RECIRC = 4
INSTANCE_REPLICATION = 5
INSTANCE_RESUBMIT = 6

_M48 = (1 << 48) - 1


@dataclass
class Stats:
    """Packet counts since the switch (or the pipeline) was created."""

    packets_in: int = 0
    packets_out: int = 0
    dropped: int = 0
    passes: int = 0
    egress_runs: int = 0
    clones: int = 0
    replicas: int = 0
    recirculations: int = 0
    resubmits: int = 0
    loop_limit_drops: int = 0
    errors: int = 0
    parser_errors: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)


class _Copies:
    """Replicas of a packet waiting for egress, made one at a time as their turn comes
    (so that one is alive at a time; see ``Engine.run``): each a copy of ``F`` with its
    egress_rid, the last one ``F`` itself."""

    __slots__ = ("F", "i", "ilen", "orig", "payload", "plen", "port", "replicas")

    def __init__(self, F: list[int], pk: Pkt, replicas: tuple[Replica, ...]) -> None:
        self.F = F
        self.payload, self.port, self.ilen = pk.payload, pk.port, pk.ilen
        self.orig, self.plen = pk.orig, pk.plen
        self.replicas = replicas
        self.i = 0

    def left(self) -> int:
        return len(self.replicas) - self.i


#: Where a frame goes: called with (egress port, frame).
OutputHook = Callable[[int, bytes], None]


class Outputs(Protocol):
    """Where a run puts what leaves the switch: a list, or an _Emitter."""

    def append(self, item: tuple[int, bytes]) -> None: ...

    def __len__(self) -> int: ...


class _Emitter:
    """A run's output list when its frames leave as each egress pass ends, as a
    switch's do (a SAMPLE's first reply goes out before its last copy is made)."""

    __slots__ = ("emit", "sent")

    def __init__(self, emit: OutputHook) -> None:
        self.emit = emit
        self.sent = 0

    def append(self, item: tuple[int, bytes]) -> None:
        self.sent += 1
        self.emit(*item)

    def __len__(self) -> int:
        return self.sent


def _waiting(q: deque[Any]) -> int:
    return sum(x.left() if x.__class__ is _Copies else 1 for x in q)


def _opt(prog: Program, name: str) -> int:
    f = prog.optional_field(name)
    return -1 if f is None else f.slot


class PacketRunner:
    """What every architecture's engine offers the switch: ``run`` one injected packet
    through its ``_run(port, data, outputs)``."""

    def _run(self, port: int, data: bytes, out: Outputs) -> None:
        raise NotImplementedError

    def run(self, port: int, data: bytes,
            emit: OutputHook | None = None) -> list[tuple[int, bytes]]:
        """Everything that leaves the switch because ``data`` arrived on ``port``, in
        order; with ``emit``, each frame is handed to it the moment its egress pass
        ends instead, and the list returned is empty."""
        if emit is None:
            out: list[tuple[int, bytes]] = []
            self._run(port, data, out)
            return out
        self._run(port, data, _Emitter(emit))
        return []


class Engine(PacketRunner):
    """Runs packets through one compiled program (v1model)."""

    def __init__(self, prog: Program, code: Compiled, pre: Pre, stats: Stats, drop_port: int,
                 max_passes: int, max_egress_runs: int) -> None:
        self.code = code
        self.pre = pre
        self.stats = stats
        self.drop_port = drop_port
        self.max_passes = max_passes
        self.max_egress_runs = max_egress_runs
        self.zero = [0] * prog.nslots
        self.nmeta = prog.meta_slots
        self.zero_meta = [0] * prog.meta_slots
        self.field_lists = {k: [f.slot for f in v] for k, v in prog.field_lists.items()}
        f = prog.fields
        self.s_port = f["standard_metadata.ingress_port"].slot
        self.s_len = f["standard_metadata.packet_length"].slot
        self.s_itype = f["standard_metadata.instance_type"].slot
        self.s_espec = f["standard_metadata.egress_spec"].slot
        self.espec_mask = f["standard_metadata.egress_spec"].mask
        self.s_eport = f["standard_metadata.egress_port"].slot
        self.s_mcast = _opt(prog, "intrinsic_metadata.mcast_grp")
        self.s_rid = _opt(prog, "intrinsic_metadata.egress_rid")
        self.s_prio = _opt(prog, "intrinsic_metadata.priority")
        self.s_perr = _opt(prog, "standard_metadata.parser_error")
        self.s_cerr = _opt(prog, "standard_metadata.checksum_error")
        self.s_its = _opt(prog, "intrinsic_metadata.ingress_global_timestamp")
        self.s_ets = _opt(prog, "intrinsic_metadata.egress_global_timestamp")
        queueing = [_opt(prog, f"queueing_metadata.{n}")
                    for n in ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth")]
        self.queueing = queueing if min(queueing) >= 0 else None
        self.s_qid = _opt(prog, "queueing_metadata.qid")
        # clock readings nothing reads are not taken (the program never reads the field)
        reads = code.field_reads

        def unread(slot: int) -> bool:
            return reads is not None and slot not in reads

        if unread(self.s_its):
            self.s_its = -1
        if unread(self.s_ets):
            self.s_ets = -1
        if self.queueing is not None and all(unread(s) for s in (*queueing, self.s_qid)):
            self.queueing = None
        self.start = time.monotonic()
        self.egress_entry = code.egress
        self.espec_reset = (drop_port + 1) & self.espec_mask
        self.timestamps = self.s_ets >= 0 or self.queueing is not None

    def now_us(self) -> int:
        """Microseconds since the switch started (48-bit, like bmv2's timestamps)."""
        return int((time.monotonic() - self.start) * 1e6) & _M48

    # ---- one injected packet ------------------------------------------------

    def _run(self, port: int, data: bytes, out: Outputs) -> None:
        stats = self.stats
        stats.packets_in += 1
        F = self.zero[:]
        F[self.s_port] = port
        F[self.s_len] = len(data)
        if self.s_its >= 0:
            F[self.s_its] = self.now_us()
        ingress_q: deque[Pkt] = deque([Pkt(F, data, port, len(data))])
        egress_q: deque[Pkt] = deque()
        passes = egress_runs = 0
        max_egress = self.max_egress_runs
        egress = self._egress
        s_rid = self.s_rid
        try:
            while True:
                while egress_q:  # egress first
                    pk = egress_q[0]
                    if pk.__class__ is _Copies:  # its replicas, one after another
                        job = pk
                        F0, replicas, last = job.F, job.replicas, len(job.replicas) - 1
                        payload, iport, ilen, orig, plen = (job.payload, job.port, job.ilen,
                                                            job.orig, job.plen)
                        # one Pkt for every replica, reset for each (no packet outlives
                        # its egress pass: clones and recirculated packets are new
                        # ones), cheaper than a Pkt() call per copy
                        rp = Pkt(F0, payload, iport, ilen, orig, plen)
                        for i in range(job.i, last + 1):
                            eport, rid = replicas[i]
                            job.i = i + 1
                            if i == last:
                                egress_q.popleft()
                                F = F0
                            else:
                                F = F0[:]
                            if s_rid >= 0:
                                F[s_rid] = rid
                            if egress_runs >= max_egress:
                                stats.loop_limit_drops += 1 + _waiting(egress_q) + len(ingress_q)
                                return
                            egress_runs += 1
                            rp.reset(F, payload, iport, ilen, orig, plen, eport)
                            try:
                                egress(rp, egress_q, ingress_q, out)
                            except Exception:
                                stats.errors += 1
                                stats.dropped += 1
                        continue
                    egress_q.popleft()
                    if egress_runs >= max_egress:
                        stats.loop_limit_drops += 1 + _waiting(egress_q) + len(ingress_q)
                        return
                    egress_runs += 1
                    try:
                        egress(pk, egress_q, ingress_q, out)
                    except Exception:
                        stats.errors += 1
                        stats.dropped += 1
                if not ingress_q:
                    return
                pk = ingress_q.popleft()
                passes += 1
                if passes > self.max_passes:
                    stats.loop_limit_drops += 1 + len(ingress_q)
                    return
                stats.passes += 1
                try:
                    self._ingress(pk, egress_q, ingress_q)
                except Exception:
                    stats.errors += 1
                    stats.dropped += 1
        finally:
            stats.egress_runs += egress_runs
            stats.packets_out += len(out)

    # ---- ingress and the traffic manager ----------------------------------

    def _parse(self, pk: Pkt, data: bytes) -> int:
        code = self.code
        F = pk.F
        pos, err = code.parse(pk, F, data)
        pk.payload = data[pos:] if pos else data
        pk.cksum_err = False
        code.verify(pk, F)
        return err

    def _ingress(self, pk: Pkt, egress_q: deque[Pkt], ingress_q: deque[Pkt]) -> None:
        F = pk.F
        in_len = pk.plen
        err = self._parse(pk, pk.orig)
        if err:
            self.stats.parser_errors += 1
        if self.s_perr >= 0:
            F[self.s_perr] = err
        if self.s_cerr >= 0:
            F[self.s_cerr] = 1 if pk.cksum_err else 0
        node = self.code.ingress
        while node is not None:
            node = node(pk, F)
            if pk.exit:
                break
        pk.exit = False
        egress_spec = F[self.s_espec]
        if pk.clone:
            self._ingress_clone(pk, in_len, egress_q)
        if pk.resub:
            new = Pkt(self.zero[:], pk.orig, pk.port, pk.ilen)
            self._copy_fields(new.F, F, pk.resub)
            new.F[self.s_itype] = INSTANCE_RESUBMIT
            new.F[self.s_len] = in_len
            new.plen = in_len
            self.stats.resubmits += 1
            ingress_q.append(new)
            return
        mgid = F[self.s_mcast] if self.s_mcast >= 0 else 0
        if mgid:
            F[self.s_itype] = INSTANCE_REPLICATION
            self._replicate(pk, self.pre.replicate(mgid), egress_q, own=True)
            return
        if egress_spec == self.drop_port:
            self.stats.dropped += 1
            return
        F[self.s_itype] = INSTANCE_NORMAL
        self._enqueue(egress_spec, pk, egress_q)

    def _ingress_clone(self, pk: Pkt, in_len: int, egress_q: deque[Pkt]) -> None:
        session, fl = pk.clone & 0x7FFF, pk.clone_fl
        pk.clone = pk.clone_fl = 0
        sess = self.pre.session(session)
        if sess is None:
            return
        F2 = self.zero[:]
        F2[self.s_port] = pk.port
        copy = Pkt(F2, pk.orig, pk.port, pk.ilen)
        copy.plen = in_len
        self._parse(copy, pk.orig)
        F2[:self.nmeta] = self.zero_meta
        self._copy_fields(F2, pk.F, fl)
        F2[self.s_itype] = INSTANCE_INGRESS_CLONE
        self._clone_out(copy, session, egress_q)

    def _clone_out(self, copy: Pkt, session: int, egress_q: deque[Pkt]) -> None:
        sess = self.pre.session(session)
        assert sess is not None
        self.stats.clones += 1
        if sess.mc_group is not None:
            self._replicate(copy, self.pre.replicate(sess.mc_group), egress_q)
        if sess.replicas:
            self._replicate(copy, self.pre.session_copies(session), egress_q)
        if sess.port is not None:
            self._enqueue(sess.port, copy, egress_q)

    def _replicate(self, pk: Pkt, replicas: tuple[Replica, ...], egress_q: deque[Any],
                   own: bool = False) -> None:
        """A copy of ``pk`` per (port, rid), each enqueued as ``_enqueue`` would (the copies
        differ only in egress_rid: the priority check and the enqueue time are shared).
        The copies are made when their egress turn comes, from ``pk``'s PHV as it is now
        (``own``: ``pk`` is not used again, its PHV need not be kept aside)."""
        if not replicas:
            return
        F = pk.F
        stats = self.stats
        stats.replicas += len(replicas)
        s_rid = self.s_rid
        if self.s_prio >= 0 and F[self.s_prio] >= 1:
            if s_rid >= 0:
                F[s_rid] = replicas[-1][1]
            stats.dropped += len(replicas)  # simple_switch: "priority out of range"
            return
        if self.queueing is not None:
            F[self.queueing[0]] = self.now_us() & 0xFFFFFFFF
            F[self.queueing[1]] = 0
        egress_q.append(_Copies(F if own else F[:], pk, replicas))
        if s_rid >= 0:
            F[s_rid] = replicas[-1][1]

    def _enqueue(self, port: int, pk: Pkt, egress_q: deque[Pkt]) -> None:
        F = pk.F
        pk.eport = port
        if self.s_prio >= 0 and F[self.s_prio] >= 1:
            self.stats.dropped += 1  # simple_switch has one queue per port: "priority out of range"
            return
        if self.queueing is not None:
            F[self.queueing[0]] = self.now_us() & 0xFFFFFFFF
            F[self.queueing[1]] = 0
        egress_q.append(pk)

    def _copy_fields(self, dst: list[int], src: list[int], fl: int) -> None:
        for s in self.field_lists.get(fl, ()):
            dst[s] = src[s]

    # ---- egress -----------------------------------------------------------

    def _egress(self, pk: Pkt, egress_q: deque[Pkt], ingress_q: deque[Pkt],
                out: Outputs) -> None:
        F = pk.F
        if self.timestamps:
            now = self.now_us()
            if self.s_ets >= 0:
                F[self.s_ets] = now
            if self.queueing is not None:
                enq, _eq, deq_td, deq_qd = self.queueing
                F[deq_td] = (now - F[enq]) & 0xFFFFFFFF
                F[deq_qd] = 0
                if self.s_qid >= 0:
                    F[self.s_qid] = 0
        F[self.s_eport] = pk.eport
        F[self.s_espec] = self.espec_reset
        F[self.s_len] = pk.plen
        node = self.egress_entry
        while node is not None:
            node = node(pk, F)
            if pk.exit:
                break
        if pk.clone:
            session, fl = pk.clone & 0x7FFF, pk.clone_fl
            pk.clone = pk.clone_fl = 0
            if self.pre.session(session) is not None:
                F2 = F[:]
                F2[:self.nmeta] = self.zero_meta
                self._copy_fields(F2, F, fl)
                F2[self.s_itype] = INSTANCE_EGRESS_CLONE
                copy = Pkt(F2, pk.payload, pk.port, pk.ilen, pk.orig, pk.plen)
                self._clone_out(copy, session, egress_q)
        if F[self.s_espec] == self.drop_port:
            self.stats.dropped += 1
            return
        data = self.code.deparse(pk, F)  # headers and payload
        if pk.recirc:
            new = Pkt(self.zero[:], data, pk.port, len(data))
            self._copy_fields(new.F, F, pk.recirc)
            new.F[self.s_itype] = INSTANCE_RECIRC
            new.F[self.s_len] = len(data)
            self.stats.recirculations += 1
            ingress_q.append(new)
            return
        if pk.trunc < len(data):
            data = data[:pk.trunc]
        out.append((pk.eport, data))
