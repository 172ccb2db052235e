"""Passes per op through the Tofino program, counted on the TNA model.

docs/hardware.md ("Passes per op on Tofino") gives by arithmetic how many passes
through LOOP_PORT each op takes on a Tofino. Here each op goes to the TNA program
(p4src/build/tna, deployed by the controller over P4Runtime, in process) and the
model counts what it took: egress passes on LOOP_PORT (the stateful passes, each
ending in the next ingress pass or in a drop) and ingress passes. Part of `make bench` (results.json
`tna_passes`); the document's figures are EXPECTED, and tests check the counts
against them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from agent.contract import protocol
from agent.contract.protocol import Message
from bmv2.pyswitch import Switch
from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.server import P4RuntimeServer
from controller import udp_frame
from controller.config import Config
from controller.deploy import deploy
from controller.inband import InbandChannel
from controller.p4runtime_session import P4RuntimeSession
from controller.target import TNA_MODEL

RESET_ROUNDS, RESET_FANOUT = 64, 64    # a RESET: 64 rounds of 64 copies (4,096 slots)
# docs/hardware.md's loop passes per request (SAMPLE: per reply, without redraws)
EXPECTED = {
    "GET_STATE": 1, "SET_STATE": 1, "refused (DENIED)": 1,
    "INSERT": 3, "UPDATE": 3, "UPDATE_BATCH of 16": 1 + 3 * 16, "WRITE": 3, "READ": 3,
    "SAMPLE uniform, per reply": 4, "SAMPLE prioritized, per reply": 8,
    "RESET": RESET_ROUNDS * RESET_FANOUT * 3,
}
SAMPLE_N = 32          # replies per SAMPLE measured
SAMPLES = 8            # SAMPLEs per mode


@dataclass(frozen=True)
class Count:
    """What one op took, per request (SAMPLE: per reply)."""

    op: str
    requests: int
    loop_passes: float      # egress passes on LOOP_PORT
    ingress_passes: float
    expected: int | None    # docs/hardware.md's loop passes

    def as_dict(self) -> dict[str, object]:
        return {"op": self.op, "requests": self.requests, "loop_passes": self.loop_passes,
                "ingress_passes": self.ingress_passes, "expected": self.expected}


class TnaModel:
    """The TNA program on the Python switch, deployed from `cfg` as on a Tofino; hosts
    send requests as frames on their ports, the controller through the CPU port."""

    def __init__(self, switch: Switch, cfg: Config, inband: InbandChannel) -> None:
        self.switch, self.cfg, self.inband = switch, cfg, inband
        self._ids = itertools.count(1)

    def frames(self, name: str, msg: Message) -> list[tuple[int, bytes]]:
        """Host `name` sends `msg`: the (port, frame)s the switch sends for it."""
        h = self.cfg.host(name)
        data = protocol.encode(protocol.with_request_id(msg, next(self._ids)))
        frame = udp_frame.build(udp_frame.UdpFrame(
            h.mac, self.cfg.vip_mac, h.ip, self.cfg.vip, 40000, protocol.REPLAY_UDP_PORT, data))
        return self.switch.process(h.port, frame)

    def host(self, name: str, msg: Message) -> list[tuple[int, Message]]:
        """Host `name` sends `msg`: the replies, with the port each leaves by."""
        return [(port, decode(f)) for port, f in self.frames(name, msg)]

    def cpu(self, msg: Message) -> list[Message]:
        frame = self.inband._frame(protocol.with_request_id(msg, next(self._ids)))
        out = self.switch.process(TNA_MODEL.cpu_port, bytes(2) + frame)
        return [decode(f[2:]) for _, f in out]   # behind the packet_in header


def decode(frame: bytes) -> Message:
    """The replay message a reply frame carries."""
    parsed = udp_frame.parse(frame)
    if parsed is None:
        raise ValueError(f"not a replay reply: {frame.hex()}")
    return protocol.decode(parsed.payload)


@contextmanager
def tna_model(cfg: Config) -> Iterator[TnaModel]:
    """The committed TNA program in process, deployed from `cfg` by the controller."""
    dataplane = Dataplane(cpu_port=TNA_MODEL.cpu_port)
    server = P4RuntimeServer(dataplane, 0, "127.0.0.1:0")
    port = server.start()
    cfg = replace(cfg, switch=replace(cfg.switch, address=f"127.0.0.1:{port}",
                                      target=TNA_MODEL, cpu_port=TNA_MODEL.cpu_port, tls=None))
    session = P4RuntimeSession(cfg.switch.address, 0, election_id=10, timeout=10).connect()
    try:
        deploy(session, cfg)
        if dataplane.switch is None:
            raise RuntimeError("the TNA program was not deployed")
        yield TnaModel(dataplane.switch, cfg, InbandChannel(session, cfg.vip, cfg.vip_mac))
    finally:
        session.close()
        server.stop(grace=0)


def _roles(cfg: Config, table: int) -> tuple[str, str, str]:
    """A host that may insert into `table`, one that may sample and update it, and one
    that may do neither (for a refusal)."""
    def may(op: str) -> list[str]:
        return [a.host for a in cfg.acl if a.table == table and op in a.ops]
    inserter, sampler = may("insert")[0], may("sample")[0]
    granted = {a.host for a in cfg.acl if a.table == table}
    outsider = next(h.name for h in cfg.hosts if h.name not in granted)
    return inserter, sampler, outsider


class _Meter:
    """The model's egress passes on LOOP_PORT (every egress pass but those of the frames
    that left the switch: a pass that ends a copy in a drop is one too) and its
    ingress passes, between two readings."""

    def __init__(self, switch: Switch) -> None:
        self.stats = switch.stats
        self.last = self._now()

    def _now(self) -> tuple[int, int]:
        return self.stats.egress_runs - self.stats.packets_out, self.stats.passes

    def take(self) -> tuple[int, int]:
        now = self._now()
        out = (now[0] - self.last[0], now[1] - self.last[1])
        self.last = now
        return out


def count_passes(cfg: Config, table: int = 0) -> list[Count]:
    """Each op sent to the TNA program, and the passes the model counted for it."""
    inserter, sampler, outsider = _roles(cfg, table)
    min_size = cfg.table(table).min_size
    counts: list[Count] = []
    with tna_model(cfg) as model:
        meter = _Meter(model.switch)

        def record(op: str, requests: int, per: int | None = None) -> None:
            loop, ingress = meter.take()
            n = per or requests
            counts.append(Count(op, requests, loop / n, ingress / n, EXPECTED.get(op)))

        acks = [model.host(inserter, protocol.insert(table, bytes(64), priority=1.0 + i % 7,
                                                     ack=True))[0][1]
                for i in range(max(min_size, protocol.MAX_UPDATE_BATCH))]
        record("INSERT", len(acks))
        for ack in acks[:SAMPLES]:
            model.host(sampler, protocol.update(table, ack.slot, ack.stamp, 2.0, ack=True))
        record("UPDATE", SAMPLES)
        batch = acks[:protocol.MAX_UPDATE_BATCH]
        for _ in range(SAMPLES):
            model.host(sampler, protocol.update_batch(table, [a.slot for a in batch],
                                                      [a.stamp for a in batch],
                                                      [3.0] * len(batch), ack=True))
        record("UPDATE_BATCH of 16", SAMPLES)
        replies = 0
        for _ in range(SAMPLES):
            replies += len(model.host(sampler, protocol.sample(table, SAMPLE_N,
                                                               mode=protocol.Mode.UNIFORM)))
        record("SAMPLE uniform, per reply", SAMPLES, replies)
        replies = 0
        for _ in range(SAMPLES):
            replies += len(model.host(sampler, protocol.sample(table, SAMPLE_N,
                                                               mode=protocol.Mode.PRIORITIZED)))
        record("SAMPLE prioritized, per reply", SAMPLES, replies)
        for ack in acks[:SAMPLES]:
            model.cpu(protocol.read(table, ack.slot))
        record("READ", SAMPLES)
        for ack in acks[:SAMPLES]:
            model.cpu(protocol.write(table, ack.slot, ack.stamp, ack.priority, bytes(64)))
        record("WRITE", SAMPLES)
        state = [model.cpu(protocol.get_state(table))[0] for _ in range(SAMPLES)][-1]
        record("GET_STATE", SAMPLES)
        for _ in range(SAMPLES):
            model.cpu(protocol.set_state(table, pointer=state.slot, sequence=state.stamp,
                                         max_priority_fixed=state.priority, size=state.size))
        record("SET_STATE", SAMPLES)
        for _ in range(SAMPLES):
            model.host(outsider, protocol.sample(table, 1))
        record("refused (DENIED)", SAMPLES)
        model.cpu(protocol.reset(table))
        record("RESET", 1)
    return counts


def tna_pass_figures(cfg: Config) -> dict[str, object]:
    """results.json's `tna_passes`: the counts, how long counting took."""
    started = time.monotonic()
    counts = count_passes(cfg)
    return {"ops": [c.as_dict() for c in counts],
            "seconds": round(time.monotonic() - started, 1),
            "source": "docs/hardware.md, Passes per op on Tofino"}
