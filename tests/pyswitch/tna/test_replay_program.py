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


def fixed(p: float) -> int:
    return protocol.priority_to_fixed(p)


def frames(bed: Bed, name: str, msg: Message) -> list[bytes]:
    """The frames a host's request makes the switch send."""
    h = bed.cfg.host(name)
    data = protocol.encode(protocol.with_request_id(msg, next(bed.ids)))
    frame = (Ether(src=h.mac, dst=bed.cfg.vip_mac) / IP(src=h.ip, dst=bed.cfg.vip)
             / UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT) / Raw(data))
    return [f for _, f in bed.switch.process(h.port, bytes(frame))]


HEADER_FRAME = 14 + 20 + 8 + protocol.HEADER_BYTES


def test_insert_acks_and_refusals_are_the_header_alone(bed: Bed) -> None:
    for msg in (protocol.insert(0, payload(1), ack=True), protocol.insert(2, payload(1), ack=True)):
        [frame] = frames(bed, "h1", msg)
        assert len(frame) == HEADER_FRAME and _decode(frame).payload is None


def test_single_and_batched_updates(bed: Bed) -> None:
    acks = [bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))[0][1]
            for i in range(4)]
    [(_, one)] = bed.host("h1", protocol.update(0, acks[3].slot, acks[3].stamp, 2.0, ack=True))
    [(_, stale)] = bed.host("h1", protocol.update(0, acks[3].slot, 99, 2.0, ack=True))
    assert (one.status, stale.status) == (protocol.Status.OK, protocol.Status.STALE)
    batch = protocol.update_batch(
        0, [acks[0].slot, acks[1].slot, acks[2].slot, 200, acks[0].slot],
        [acks[0].stamp, acks[1].stamp + 5, acks[2].stamp, 1, acks[0].stamp],
        [3.0, 9.0, 0.5, 1.0, 4.0], ack=True)
    [frame] = frames(bed, "h1", batch)
    assert len(frame) == HEADER_FRAME
    ack = protocol.BatchAck.of(_decode(frame))
    assert (ack.entries, ack.applied, ack.stale, ack.bad_slot) == (5, 3, 1, 1)
    [state] = bed.cpu(protocol.get_state(0))
    slot0 = state.total - fixed(1.0) - fixed(0.5) - fixed(2.0)  # slot 0: one of its two
    assert slot0 in (fixed(3.0), fixed(4.0))
    assert state.priority == fixed(4.0)  # the running max
    assert frames(bed, "h1", dataclasses.replace(batch, flags=0)) == []  # no ACK: silent
    assert bed.switch.stats.errors == 0
    assert bed.switch._code.register_conflicts == {}


def test_a_batch_past_sixteen_entries_is_refused_and_changes_nothing(bed: Bed) -> None:
    """TNA cannot truncate a reply: the entries past the 16 its parser reads come back
    behind the header (docs/protocol.md)."""
    bed.host("h1", protocol.insert(0, payload(0), priority=1.0, ack=True))
    n = protocol.MAX_UPDATE_BATCH + 2
    msg = Message(op=protocol.Op.UPDATE_BATCH, table=0, flags=protocol.Flag.ACK, count=n,
                  entries=tuple(protocol.Entry(0, 1, fixed(7.0)) for _ in range(n)))
    [frame] = frames(bed, "h1", msg)
    assert len(frame) == HEADER_FRAME + 2 * protocol.ENTRY_BYTES
    assert _decode(frame).status == protocol.Status.BATCH_TOO_LARGE
    [state] = bed.cpu(protocol.get_state(0))
    assert state.total == fixed(1.0)
