"""The replay program for Tofino (p4src/replay_tna.p4, the committed IR in
p4src/build/tna) on the TNA model, deployed by the controller over P4Runtime as
a Tofino would be: the names bf-p4c's P4Info gives, the loop port, the CPU port."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import pytest
from scapy.all import IP, UDP, Ether, Raw

from agent.contract import protocol
from agent.contract.protocol import Message
from bmv2.pyswitch import Switch
from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.server import P4RuntimeServer
from controller import config, udp_frame
from controller.deploy import deploy
from controller.inband import InbandChannel
from controller.p4runtime_session import P4RuntimeSession
from controller.target import TNA_MODEL
from tests.dataplane.packets import CONFIG, payload


@dataclasses.dataclass
class Bed:
    """The TNA model in process, deployed from tests/dataplane/testbed.yaml."""

    switch: Switch
    cfg: config.Config
    inband: InbandChannel
    ids: Iterator[int] = dataclasses.field(default_factory=lambda: itertools.count(1))

    def host(self, name: str, msg: Message) -> list[tuple[int, Message]]:
        h = self.cfg.host(name)
        data = protocol.encode(protocol.with_request_id(msg, next(self.ids)))
        frame = (Ether(src=h.mac, dst=self.cfg.vip_mac) / IP(src=h.ip, dst=self.cfg.vip)
                 / UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT) / Raw(data))
        return [(port, _decode(f)) for port, f in self.switch.process(h.port, bytes(frame))]

    def cpu(self, msg: Message) -> list[Message]:
        frame = self.inband._frame(protocol.with_request_id(msg, next(self.ids)))
        out = self.switch.process(TNA_MODEL.cpu_port, bytes(2) + frame)
        assert all(port == TNA_MODEL.cpu_port for port, _ in out)
        return [_decode(f[2:]) for _, f in out]   # behind the packet_in header


def _decode(frame: bytes) -> Message:
    parsed = udp_frame.parse(frame)
    assert parsed is not None, frame.hex()
    return protocol.decode(parsed.payload)


@pytest.fixture
def bed() -> Iterator[Bed]:
    dataplane = Dataplane(cpu_port=TNA_MODEL.cpu_port)
    server = P4RuntimeServer(dataplane, 0, "127.0.0.1:0")
    port = server.start()
    cfg = config.load(CONFIG)
    cfg = dataclasses.replace(cfg, switch=dataclasses.replace(
        cfg.switch, address=f"127.0.0.1:{port}", target=TNA_MODEL,
        cpu_port=TNA_MODEL.cpu_port))
    session = P4RuntimeSession(cfg.switch.address, 0, election_id=10, timeout=10).connect()
    try:
        deploy(session, cfg)
        switch = dataplane.switch
        assert switch is not None and switch.arch == "tna"
        yield Bed(switch, cfg, InbandChannel(session, cfg.vip, cfg.vip_mac))
    finally:
        session.close()
        server.stop(grace=0)


def test_an_insert_is_acked_with_its_slot_stamp_and_total(bed: Bed) -> None:
    [(port, ack)] = bed.host("h1", protocol.insert(0, payload(1), priority=2.5, ack=True))
    assert port == bed.cfg.host("h1").port
    assert ack.ok and (ack.slot, ack.stamp, ack.size) == (0, 1, 1)
    assert ack.priority == ack.total == protocol.priority_to_fixed(2.5)
    [(_, ack)] = bed.host("h1", protocol.insert(0, payload(2), priority=1.5, ack=True))
    assert (ack.slot, ack.stamp, ack.size) == (1, 2, 2)
    assert ack.total == protocol.priority_to_fixed(4.0)


def test_state_and_reset_go_round_the_loop_port(bed: Bed) -> None:
    for i in range(3):
        bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))
    [state] = bed.cpu(protocol.get_state(0))
    assert state.ok and (state.size, state.total) == (3, protocol.priority_to_fixed(3.0))
    replies = bed.cpu(protocol.reset(0))
    assert replies and all(r.ok for r in replies)
    [state] = bed.cpu(protocol.get_state(0))
    assert (state.size, state.total) == (0, 0)
    assert bed.switch.stats.recirculations > 0


def test_a_host_without_the_grant_is_denied(bed: Bed) -> None:
    [(_, reply)] = bed.host("h2", protocol.sample(0, 1))
    assert reply.status == protocol.Status.DENIED


def test_no_pass_touches_a_register_array_twice(bed: Bed) -> None:
    for i in range(8):
        bed.host("h1", protocol.insert(0, payload(i), priority=1.0 + i, ack=True))
    bed.cpu(protocol.get_state(0))
    bed.cpu(protocol.reset(0))
    assert bed.switch.stats.errors == 0
    assert bed.switch._code.register_conflicts == {}


def test_a_second_deploy_finds_the_tna_program_running(bed: Bed) -> None:
    """bf-p4c's P4Info holds an `Any` of a type this process lacks
    (`barefoot.PortMetadata`): the deploy compares it with the running one as bytes."""
    session = bed.inband.session
    report = deploy(session, bed.cfg)
    assert not report.pipeline_pushed
    assert not (report.inserted or report.modified or report.deleted)


def test_each_host_has_its_own_insert_budget(bed: Bed) -> None:
    """The limiter's cell is the one its table entry names (p4test's
    GlobalCopyPropagation made it cell 0 for every host: bmv2.tna_artifacts)."""
    limited = dataclasses.replace(bed.cfg, tables=tuple(
        dataclasses.replace(t, insert_limit=3) if t.id == 0 else t for t in bed.cfg.tables))
    deploy(bed.inband.session, limited)
    statuses = [reply.status for _ in range(5)
                for _, reply in bed.host("h2", protocol.insert(0, payload(0), ack=True))]
    assert statuses == [protocol.Status.OK] * 3 + [protocol.Status.RATE_LIMITED] * 2
    [(_, reply)] = bed.host("h1", protocol.insert(0, payload(1), ack=True))
    assert reply.ok
