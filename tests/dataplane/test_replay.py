"""The replay program, packet by packet, on every switch present."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw
from scipy.stats import chisquare

from agent.contract import protocol
from agent.contract.protocol import Message, Mode, Op, Status
from tests.dataplane.packets import PacketTestbed, fields, payload

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)


def test_insert_then_read_returns_the_exact_payload(clean: PacketTestbed) -> None:
    ack = clean.insert(0, payload(1), priority=2.5)
    assert (ack.slot, ack.stamp, ack.size) == (0, 1, 1)
    assert ack.priority == protocol.priority_to_fixed(2.5)
    assert ack.total == protocol.priority_to_fixed(2.5)
    got = clean.read_slot(0, 0)
    assert got.payload == payload(1)
    assert (got.stamp, got.priority) == (1, protocol.priority_to_fixed(2.5))


def test_insert_without_priority_takes_the_running_max(clean: PacketTestbed) -> None:
    first = clean.insert(0, payload(1))
    assert first.priority == protocol.PRIORITY_ONE
    clean.insert(0, payload(2), priority=7.0)
    third = clean.insert(0, payload(3))
    assert third.priority == protocol.priority_to_fixed(7.0)


def test_ring_wraps_and_evicts_fifo(clean: PacketTestbed) -> None:
    capacity = clean.cfg.table(0).capacity
    acks = [clean.insert(0, payload(i), priority=1.0) for i in range(capacity + 5)]
    assert [a.slot for a in acks] == list(range(capacity)) + list(range(5))
    assert [a.stamp for a in acks] == list(range(1, capacity + 6))
    assert acks[-1].size == capacity
    for slot in range(5):
        got = clean.read_slot(0, slot)
        assert got.payload == payload(capacity + slot)
        assert got.stamp == capacity + slot + 1
    assert clean.read_slot(0, 5).payload == payload(5)
    state = clean.state(0)
    assert (state.slot, state.stamp, state.size) == (5, capacity + 5, capacity)


def test_sample_returns_n_replies_for_one_request(clean: PacketTestbed) -> None:
    for i in range(10):
        clean.insert(1, payload(i), priority=1.0)
    replies = clean.sample(1, 32)
    assert [r.index for r in replies] == list(range(32))
    for r in replies:
        assert r.ok and r.size == 10 and r.count == 32
        assert r.payload == payload(r.slot)
        assert r.stamp == r.slot + 1
        assert r.total == 10 * protocol.PRIORITY_ONE


def test_uniform_sampling_covers_slots_evenly(clean: PacketTestbed) -> None:
    slots = 32
    for i in range(slots):
        clean.insert(1, payload(i), priority=float(i + 1))  # priorities must not matter
    counts: Counter[int] = Counter()
    for _ in range(40):
        replies = clean.sample(1, 100, mode=Mode.UNIFORM)
        assert len(replies) == 100
        counts.update(r.slot for r in replies)
    observed = np.array([counts[s] for s in range(slots)])
    assert observed.sum() == 4000
    assert chisquare(observed).pvalue > 1e-3


def test_prioritized_sampling_frequencies_match_priorities(clean: PacketTestbed) -> None:
    priorities = [float(i % 8 + 1) * 0.5 for i in range(16)]
    for i, p in enumerate(priorities):
        clean.insert(0, payload(i), priority=p)
    counts: Counter[int] = Counter()
    draws = 0
    while draws < 20_000:
        replies = clean.sample(0, 128, mode=Mode.PRIORITIZED)
        assert len(replies) == 128
        for r in replies:
            assert r.priority == protocol.priority_to_fixed(priorities[r.slot])
        counts.update(r.slot for r in replies)
        draws += len(replies)
    observed = np.array([counts[s] for s in range(16)])
    expected = np.array(priorities) / sum(priorities) * draws
    assert chisquare(observed, expected).pvalue > 1e-3


def test_sum_tree_total_equals_the_sum_of_leaf_priorities(clean: PacketTestbed) -> None:
    rng = random.Random(7)
    capacity = clean.cfg.table(0).capacity
    model: dict[int, tuple[int, int]] = {}  # slot -> (stamp, fixed priority)
    for i in range(capacity + 40):  # wraps: overwrites
        p = rng.choice([None, rng.uniform(0.01, 50.0)])
        ack = clean.insert(0, payload(i), priority=p)
        model[ack.slot] = (ack.stamp, ack.priority)
    for _ in range(60):
        slot = rng.randrange(capacity)
        stamp, _ = model[slot]
        p = rng.uniform(0.0, 20.0)
        reply = clean.one("h1", protocol.update(0, slot, stamp, p, ack=True))
        assert reply.ok
        model[slot] = (stamp, protocol.priority_to_fixed(p))
    leaves = [clean.read_slot(0, s).priority for s in range(capacity)]
    assert leaves == [model[s][1] for s in range(capacity)]
    assert clean.state(0).total == sum(leaves)


def test_stale_update_is_ignored_and_counted(clean: PacketTestbed) -> None:
    capacity = clean.cfg.table(0).capacity
    first = clean.insert(0, payload(0), priority=1.0)
    for i in range(1, capacity + 1):  # overwrite slot 0 once
        clean.insert(0, payload(i), priority=1.0)
    before = clean.counter(0, Op.UPDATE, Status.STALE)
    reply = clean.one("h1", protocol.update(0, first.slot, first.stamp, 9.0, ack=True))
    assert reply.status == Status.STALE
    assert clean.read_slot(0, 0).priority == protocol.PRIORITY_ONE
    assert clean.state(0).total == capacity * protocol.PRIORITY_ONE
    assert clean.counter(0, Op.UPDATE, Status.STALE) == before + 1
    # without ACK a stale update is silent, and still counted
    clean.send("h1", clean.replay_frame("h1", protocol.encode(
        protocol.update(0, first.slot, first.stamp, 9.0))))
    assert clean.silent("h1")
    assert clean.counter(0, Op.UPDATE, Status.STALE) == before + 2


def test_update_with_matching_stamp_changes_priority(clean: PacketTestbed) -> None:
    ack = clean.insert(0, payload(0), priority=1.0)
    reply = clean.one("h1", protocol.update(0, ack.slot, ack.stamp, 3.0, ack=True))
    assert reply.ok and reply.priority == protocol.priority_to_fixed(3.0)
    assert clean.read_slot(0, ack.slot).priority == protocol.priority_to_fixed(3.0)
    assert clean.state(0).priority == protocol.priority_to_fixed(3.0)  # running max


def test_sampled_priority_is_the_one_stored_with_its_slot_and_stamp(clean: PacketTestbed) -> None:
    """A SAMPLE reply's priority is read with its stamp and payload (the slot's record),
    so after an UPDATE it is the new one, in both modes."""
    acks = [clean.insert(0, payload(i), priority=2.0) for i in range(4)]
    stored = {a.slot: (a.stamp, a.priority, payload(i)) for i, a in enumerate(acks)}
    for a, p in ((acks[0], 5.0), (acks[2], 0.25)):
        assert clean.one("h1", protocol.update(0, a.slot, a.stamp, p, ack=True)).ok
        stored[a.slot] = (a.stamp, protocol.priority_to_fixed(p), stored[a.slot][2])
    for mode in (Mode.PRIORITIZED, Mode.UNIFORM):
        replies = clean.sample(0, 64, mode=mode)
        assert {r.slot for r in replies} >= {acks[0].slot, acks[1].slot}
        for r in replies:
            assert (r.stamp, r.priority, r.payload) == stored[r.slot]


def raw_header(**fields: int) -> bytes:
    msg = Message(op=fields.pop("op", Op.SAMPLE), table=fields.pop("table", 0), count=1, **fields)
    return protocol.encode(msg)


ERROR_CASES = {
    "unknown table": (lambda: protocol.encode(protocol.sample(9, 1)), Status.UNKNOWN_TABLE),
    "disabled table": (lambda: protocol.encode(protocol.sample(2, 1)), Status.DISABLED),
    "below min size": (lambda: protocol.encode(protocol.sample(3, 1)), Status.BELOW_MIN_SIZE),
    "batch over max": (lambda: protocol.encode(protocol.sample(3, 5)), Status.BATCH_TOO_LARGE),
    "bad version": (lambda: raw_header(version=2), Status.MALFORMED),
    "reserved bits": (lambda: raw_header(reserved=1), Status.MALFORMED),
    "reply flag in a request": (lambda: raw_header(flags=protocol.Flag.REPLY), Status.MALFORMED),
    "mode 3": (lambda: raw_header(flags=0x30), Status.MALFORMED),
    "sample of zero": (lambda: protocol.encode(Message(op=Op.SAMPLE, table=1)), Status.MALFORMED),
    "truncated header": (lambda: protocol.encode(protocol.sample(1, 1))[:20], Status.TRUNCATED),
    "truncated payload": (lambda: protocol.encode(protocol.insert(1, payload(0)))[:50],
                          Status.TRUNCATED),
    "unknown op": (lambda: raw_header(op=9), Status.UNKNOWN_OP),
    "op zero": (lambda: raw_header(op=0), Status.UNKNOWN_OP),
    "slot out of range": (lambda: protocol.encode(protocol.update(0, 64, 1, 1.0)), Status.BAD_SLOT),
    "cpu-only op from a host": (lambda: protocol.encode(protocol.read(0, 0)), Status.DENIED),
    "reset from a host": (lambda: protocol.encode(protocol.reset(0)), Status.DENIED),
}


def unread_by_the_parser(request: bytes) -> bytes:
    """What of a request's UDP payload the parser leaves unread: all of a header cut
    short, the part of an INSERT's or WRITE's payload that is there when it is cut
    short, nothing of a request whose headers are whole."""
    if len(request) < protocol.HEADER_BYTES:
        return request
    whole = protocol.HEADER_BYTES + protocol.PAYLOAD_BYTES
    if request[1] in (Op.INSERT, Op.WRITE) and len(request) < whole:
        return request[protocol.HEADER_BYTES:]
    return b""


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_each_refusal_is_answered_with_its_status(clean: PacketTestbed, case: str) -> None:
    build, status = ERROR_CASES[case]
    clean.insert(1, payload(0))
    state_before = [fields(clean.state(t)) for t in range(4)]
    request = build()
    clean.send("h1", clean.replay_frame("h1", request))
    frame = clean.recv("h1", timeout=3)
    assert frame is not None, f"no reply for {case}"
    reply = frame.replay()
    assert reply is not None and reply.is_reply
    assert reply.status == status, f"{case}: got {reply.status_name()}"
    assert reply.payload is None
    # v1model truncates a reply to its own length; the TNA program cannot, and a reply
    # there carries what of the request its parser did not read (docs/protocol.md)
    tail = unread_by_the_parser(request) if clean.kind == "tna" else b""
    assert frame.data[14 + 20 + 8 + protocol.HEADER_BYTES:] == tail
    assert [fields(clean.state(t)) for t in range(4)] == state_before


def test_prioritized_sample_of_zero_total_is_empty(clean: PacketTestbed) -> None:
    clean.insert(0, payload(0), priority=0.0)
    (reply,) = clean.sample(0, 4, mode=Mode.PRIORITIZED)
    assert reply.status == Status.EMPTY


def test_refusals_are_counted(clean: PacketTestbed) -> None:
    before = clean.counter(2, Op.SAMPLE, Status.DISABLED)
    clean.request("h1", protocol.sample(2, 1))
    assert clean.counter(2, Op.SAMPLE, Status.DISABLED) == before + 1
    ok_before = clean.counter(1, Op.INSERT, Status.OK)
    clean.insert(1, payload(1))
    assert clean.counter(1, Op.INSERT, Status.OK) == ok_before + 1


def test_unlisted_host_is_denied(clean: PacketTestbed) -> None:
    reply = clean.one("h3", protocol.insert(0, payload(0), ack=True))
    assert reply.status == Status.DENIED
    reply = clean.one("h2", protocol.sample(0, 1))
    assert reply.status == Status.DENIED
    assert clean.state(0).size == 0
    ok = clean.one("h2", protocol.insert(0, payload(0), ack=True))  # h2 may insert
    assert ok.ok


def test_malformed_and_random_packets_change_nothing(clean: PacketTestbed) -> None:
    for i in range(8):
        clean.insert(1, payload(i), priority=float(i + 1))
    before = [fields(clean.read_slot(1, s)) for s in range(8)], fields(clean.state(1))
    rng = random.Random(3)
    good = protocol.encode(protocol.insert(1, payload(99), ack=True))
    for _ in range(150):
        kind = rng.randrange(3)
        if kind == 0:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
        elif kind == 1:
            body = good[: rng.randrange(len(good))]
        else:
            body = bytearray(good)
            body[0] = rng.choice([0, 2, 255])  # bad version: refused before any write
            body = bytes(body)
        clean.send("h1", clean.replay_frame("h1", body))
    clean.drain()
    after = [fields(clean.read_slot(1, s)) for s in range(8)], fields(clean.state(1))
    assert after == before


def test_non_replay_traffic_is_forwarded_untouched(clean: PacketTestbed) -> None:
    h1, h2 = clean.cfg.host("h1"), clean.cfg.host("h2")
    frames = [
        Ether(src=h1.mac, dst=h2.mac) / IP(src=h1.ip, dst=h2.ip) / UDP(sport=1234, dport=5678)
        / Raw(b"hello"),
        # replay port, but not to the VIP: ordinary traffic
        Ether(src=h1.mac, dst=h2.mac) / IP(src=h1.ip, dst=h2.ip, ttl=3)
        / UDP(sport=1, dport=protocol.REPLAY_UDP_PORT) / Raw(b"\x01\x02 not replay"),
        Ether(src=h1.mac, dst=h2.mac) / IP(src=h1.ip, dst=h2.ip, proto=6) / Raw(b"x" * 40),
    ]
    for frame in frames:
        clean.send("h1", frame)
        got = clean.recv("h2")
        assert got is not None and got.data == bytes(frame)


def test_arp_for_the_vip_and_hosts_is_answered(clean: PacketTestbed) -> None:
    h1 = clean.cfg.host("h1")
    for target, mac in ((clean.cfg.vip, clean.cfg.vip_mac), (clean.cfg.host("h3").ip,
                                                             clean.cfg.host("h3").mac)):
        clean.send("h1", Ether(src=h1.mac, dst="ff:ff:ff:ff:ff:ff")
                   / ARP(op=1, hwsrc=h1.mac, psrc=h1.ip, pdst=target))
        got = clean.recv("h1")
        assert got is not None
        arp = got.scapy[ARP]
        assert (arp.op, arp.hwsrc, arp.psrc, arp.pdst) == (2, mac, target, h1.ip)


def test_broadcast_reaches_every_member_readdressed(clean: PacketTestbed) -> None:
    h1 = clean.cfg.host("h1")
    bcast = clean.cfg.broadcast
    assert bcast is not None
    clean.send("h1", Ether(src=h1.mac, dst="ff:ff:ff:ff:ff:ff") / IP(src=h1.ip, dst=bcast.address)
               / UDP(sport=7000, dport=7001) / Raw(b"weights v1"))
    for name in bcast.members:
        got = clean.recv(name)
        assert got is not None, f"{name} got no copy"
        pkt = got.scapy
        host = clean.cfg.host(name)
        assert (pkt[Ether].dst, pkt[IP].dst, bytes(pkt[UDP].payload)) == (host.mac, host.ip,
                                                                           b"weights v1")
        assert pkt[UDP].chksum == 0
        fixed = pkt[IP].copy()  # the IPv4 checksum was recomputed after the rewrite
        del fixed.chksum
        assert IP(bytes(fixed)).chksum == pkt[IP].chksum


def test_reset_clears_every_slot(clean: PacketTestbed) -> None:
    for i in range(5):
        clean.insert(0, payload(i), priority=2.0)
    clean.reset(0)
    state = clean.state(0)
    assert (state.size, state.total, state.slot, state.stamp) == (0, 0, 0, 0)
    got = clean.read_slot(0, 3)
    assert (got.stamp, got.priority, got.payload) == (0, 0, bytes(protocol.PAYLOAD_BYTES))
