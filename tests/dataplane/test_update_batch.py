"""UPDATE and UPDATE_BATCH packet by packet, and replies that are the header alone,
on every switch present."""

from __future__ import annotations

import pytest

from agent.contract import protocol
from agent.contract.protocol import BatchAck, Entry, Message, Op, Status
from controller import udp_frame
from controller.inband import CONTROLLER_IP, CONTROLLER_MAC, CONTROLLER_PORT
from tests.dataplane.packets import HEADER_FRAME, PacketTestbed, payload

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)


def fixed(p: float) -> int:
    return protocol.priority_to_fixed(p)


def batch(clean: PacketTestbed, table: int, entries: list[tuple[int, int, float]],
          host: str = "h1") -> Message:
    """Send an UPDATE_BATCH with ACK; its one reply, checked to be the header alone."""
    slots, stamps, prios = zip(*entries, strict=True)
    msg = protocol.update_batch(table, slots, stamps, prios, ack=True)
    rid = 1_000_000 + len(entries) * 1000 + sum(slots) % 997
    data = protocol.encode(protocol.with_request_id(msg, rid))
    clean.send(host, clean.replay_frame(host, data))
    frame = clean.recv(host, timeout=5)
    assert frame is not None, "no ACK"
    assert len(frame.data) == HEADER_FRAME
    reply = frame.replay()
    assert reply is not None and reply.request_id == rid and reply.op == Op.UPDATE_BATCH
    assert clean.silent(host, 0.3), "a batch answers once"
    return reply


def test_single_update_still_checks_its_stamp(clean: PacketTestbed) -> None:
    ack = clean.insert(0, payload(0), priority=1.0)
    ok = clean.one("h1", protocol.update(0, ack.slot, ack.stamp, 3.0, ack=True))
    stale = clean.one("h1", protocol.update(0, ack.slot, ack.stamp + 1, 9.0, ack=True))
    assert (ok.status, stale.status) == (Status.OK, Status.STALE)
    assert clean.read_slot(0, ack.slot).priority == fixed(3.0)


def test_a_batch_applies_each_entry_and_a_stale_one_stops_none(clean: PacketTestbed) -> None:
    acks = [clean.insert(0, payload(i), priority=1.0) for i in range(6)]
    before = {s: clean.counter(0, Op.UPDATE_BATCH, s)
              for s in (Status.OK, Status.STALE, Status.BAD_SLOT)}
    entries = [(acks[0].slot, acks[0].stamp, 4.0),
               (acks[1].slot, acks[1].stamp + 7, 9.0),       # stale
               (acks[2].slot, acks[2].stamp, 0.5),
               (200, 1, 2.0),                                  # past the capacity of 64
               (acks[5].slot, acks[5].stamp, 6.0)]
    reply = batch(clean, 0, entries)
    assert reply.ok and reply.count == 5
    ack = BatchAck.of(reply)
    assert (ack.applied, ack.stale, ack.bad_slot) == (3, 1, 1)
    assert (reply.priority, reply.size, reply.total) == (0, 0, 0)
    want = {0: fixed(4.0), 1: fixed(1.0), 2: fixed(0.5), 3: fixed(1.0), 4: fixed(1.0),
            5: fixed(6.0)}
    assert {s: clean.read_slot(0, s).priority for s in want} == want
    state = clean.state(0)
    assert state.total == sum(want.values()) and state.priority == fixed(6.0)  # running max
    assert {s: clean.counter(0, Op.UPDATE_BATCH, s) - n for s, n in before.items()} == {
        Status.OK: 3, Status.STALE: 1, Status.BAD_SLOT: 1}


def test_a_full_batch_of_sixteen_updates_every_slot(clean: PacketTestbed) -> None:
    acks = [clean.insert(0, payload(i), priority=1.0) for i in range(protocol.MAX_UPDATE_BATCH)]
    prios = [0.25 * (i + 1) for i in range(len(acks))]
    reply = batch(clean, 0, [(a.slot, a.stamp, p) for a, p in zip(acks, prios, strict=True)])
    assert BatchAck.of(reply) == BatchAck(16, 16, 0)
    assert [clean.read_slot(0, a.slot).priority for a in acks] == [fixed(p) for p in prios]
    assert clean.state(0).total == sum(fixed(p) for p in prios)


def test_one_slot_twice_in_a_batch_applies_both(clean: PacketTestbed) -> None:
    a = clean.insert(0, payload(0), priority=1.0)
    b = clean.insert(0, payload(1), priority=1.0)
    reply = batch(clean, 0, [(a.slot, a.stamp, 3.0), (b.slot, b.stamp, 2.0),
                             (a.slot, a.stamp, 5.0)])
    assert BatchAck.of(reply) == BatchAck(3, 3, 0)
    got = clean.read_slot(0, a.slot).priority
    assert got in (fixed(3.0), fixed(5.0))  # the entry applied last: either on the switch
    state = clean.state(0)
    assert state.total == got + fixed(2.0)  # the tree is still the sum of its leaves
    assert state.priority == fixed(5.0)


def test_a_batch_without_ack_is_silent_and_counted(clean: PacketTestbed) -> None:
    a = clean.insert(0, payload(0), priority=1.0)
    before = clean.counter(0, Op.UPDATE_BATCH, Status.OK), clean.counter(0, Op.UPDATE_BATCH,
                                                                         Status.STALE)
    msg = protocol.update_batch(0, [a.slot, a.slot], [a.stamp, a.stamp + 1], [7.0, 1.0])
    clean.send("h1", clean.replay_frame("h1", protocol.encode(msg)))
    assert clean.silent("h1")
    assert clean.read_slot(0, a.slot).priority == fixed(7.0)
    assert (clean.counter(0, Op.UPDATE_BATCH, Status.OK) - before[0],
            clean.counter(0, Op.UPDATE_BATCH, Status.STALE) - before[1]) == (1, 1)


def many(n: int) -> Message:
    return Message(op=Op.UPDATE_BATCH, table=0, flags=protocol.Flag.ACK, count=n,
                   entries=tuple(Entry(0, 1, fixed(2.0)) for _ in range(n)))


REFUSED = {
    "past 16 entries": (lambda: protocol.encode(many(protocol.MAX_UPDATE_BATCH + 1)),
                        Status.BATCH_TOO_LARGE),
    "100 entries": (lambda: protocol.encode(many(100)), Status.BATCH_TOO_LARGE),
    "no entries": (lambda: protocol.encode(many(0)), Status.MALFORMED),
    "entries cut short": (lambda: protocol.encode(many(3))[:-5], Status.TRUNCATED),
    "fewer entries than count": (lambda: protocol.encode(many(3))[:-12], Status.TRUNCATED),
    "disabled table": (lambda: protocol.encode(protocol.update_batch(2, [0], [1], [1.0])),
                       Status.DISABLED),
}


def unread_entries(request: bytes) -> bytes:
    """The bytes of an UPDATE_BATCH request past the whole entries the parser reads:
    at most MAX_UPDATE_BATCH, and none of an entry cut short."""
    whole = min((len(request) - protocol.HEADER_BYTES) // protocol.ENTRY_BYTES,
                protocol.MAX_UPDATE_BATCH)
    return request[protocol.HEADER_BYTES + whole * protocol.ENTRY_BYTES:]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_batch_answers_once_with_the_header_alone(clean: PacketTestbed,
                                                            case: str) -> None:
    build, status = REFUSED[case]
    a = clean.insert(0, payload(0), priority=1.0)
    assert a.slot == 0 and a.stamp == 1  # what many() names: changed if it were applied
    request = build()
    clean.send("h1", clean.replay_frame("h1", request))
    frame = clean.recv("h1", timeout=3)
    assert frame is not None, f"no reply for {case}"
    # the TNA program cannot truncate: its reply carries what its parser did not
    # read (docs/protocol.md): the entries past the 16th, or of a batch cut short
    # the entry it could not read whole
    tail = unread_entries(request) if clean.kind == "tna" else b""
    assert frame.data[HEADER_FRAME:] == tail and len(frame.data) == HEADER_FRAME + len(tail)
    reply = frame.replay()
    assert reply is not None and reply.status == status, reply
    assert clean.silent("h1", 0.3)
    assert clean.read_slot(0, 0).priority == fixed(1.0)
    assert clean.counter(0 if status != Status.DISABLED else 2, Op.UPDATE_BATCH, status) >= 1


def test_a_host_without_update_rights_is_denied_a_batch(clean: PacketTestbed) -> None:
    a = clean.insert(0, payload(0), priority=1.0)
    reply = clean.one("h2", protocol.update_batch(0, [a.slot], [a.stamp], [8.0], ack=True))
    assert reply.status == Status.DENIED
    assert clean.read_slot(0, a.slot).priority == fixed(1.0)


def test_insert_acks_and_refusals_are_the_header_alone(clean: PacketTestbed) -> None:
    for msg in (protocol.insert(0, payload(1), ack=True),       # ACK
                protocol.insert(2, payload(1), ack=True)):      # DISABLED
        clean.send("h1", clean.replay_frame("h1", protocol.encode(msg)))
        frame = clean.recv("h1", timeout=3)
        assert frame is not None and len(frame.data) == HEADER_FRAME
        reply = frame.replay()
        assert reply is not None and reply.payload is None
    assert reply.status == Status.DISABLED


def test_write_replies_are_the_header_alone(clean: PacketTestbed) -> None:
    clean.session.drain_packet_ins()
    for table in (0, 9):  # OK, UNKNOWN_TABLE
        msg = protocol.write(table, 3, 5, fixed(2.0), payload(4), request_id=77 + table)
        clean.session.packet_out(udp_frame.build(udp_frame.UdpFrame(
            CONTROLLER_MAC, clean.cfg.vip_mac, CONTROLLER_IP, clean.cfg.vip, CONTROLLER_PORT,
            protocol.REPLAY_UDP_PORT, protocol.encode(msg))))
        packet = clean.session.packet_in(timeout=5)
        assert packet is not None
        assert len(packet.payload) == HEADER_FRAME
        frame = udp_frame.parse(packet.payload)
        assert frame is not None
        reply = protocol.decode(frame.payload)
        assert reply.request_id == 77 + table
        assert reply.status == (Status.OK if table == 0 else Status.UNKNOWN_TABLE)
    assert clean.read_slot(0, 3).payload == payload(4)
