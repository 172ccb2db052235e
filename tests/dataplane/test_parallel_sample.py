"""SAMPLE n as the packet replication engine serves it: n copies, each drawing in
its own egress pass. On every switch present."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scipy.stats import chisquare

from agent.contract import protocol
from agent.contract.protocol import Mode, Op, Status
from controller.replication import sample_bases
from tests.dataplane.packets import PacketTestbed, payload

pytestmark = pytest.mark.netns
LOOP_PORT = 68   # LOOP_PORT in p4src/tna/arch.p4
# also on the TNA program (tests/dataplane/conftest.py): the tests of its PRE copies,
# draws, unwritten slots and length checks (its refusals and counters are test_replay's;
# the uniform tests' SAMPLE 100 checks that egress drops the surplus copies)
ON_TNA = {"test_max_batch_with_several_requests_in_flight_loses_no_reply",
          "test_each_copy_draws_its_own_sample",
          "test_uniform_is_exact_when_draws_overshoot",
          "test_uniform_is_exact_over_a_restored_ring",
          "test_a_reply_that_finds_only_unwritten_slots_says_not_ready",
          "test_an_unwritten_slot_is_drawn_again_before_not_ready",
          "test_the_controller_installed_a_group_per_power_of_two",
          "test_lengths_saying_header_only_make_an_insert_truncated"}


def send_sample(bed: PacketTestbed, table: int, n: int, rid: int,
                mode: int = Mode.DEFAULT) -> None:
    msg = protocol.sample(table, n, mode=mode, request_id=rid)
    bed.send("h1", bed.replay_frame("h1", protocol.encode(msg)))


def test_max_batch_with_several_requests_in_flight_loses_no_reply(clean: PacketTestbed) -> None:
    for i in range(50):
        clean.insert(1, payload(i), priority=1.0)
    n = clean.cfg.table(1).max_batch
    ids = [9001, 9002, 9003, 9004]
    for rid in ids:  # all in flight at once: 4 x 128 replies toward one port
        send_sample(clean, 1, n, rid)
    got: dict[int, set[int]] = {rid: set() for rid in ids}
    while sum(len(v) for v in got.values()) < n * len(ids):
        frame = clean.recv("h1", timeout=5)
        assert frame is not None, {rid: len(v) for rid, v in got.items()}
        msg = frame.replay()
        assert msg is not None and msg.ok, msg
        assert msg.payload == payload(msg.slot) and msg.stamp == msg.slot + 1
        assert msg.index not in got[msg.request_id], "a reply came twice"
        got[msg.request_id].add(msg.index)
    assert all(v == set(range(n)) for v in got.values())
    assert clean.silent("h1")


@pytest.mark.parametrize("n", [1, 3, 5, 100, 127])
def test_a_batch_that_is_no_power_of_two_gets_exactly_n_replies(clean: PacketTestbed,
                                                                 n: int) -> None:
    """The PRE makes 2^k >= n copies; egress must drop exactly the surplus."""
    for i in range(8):
        clean.insert(1, payload(i), priority=1.0)
    replies = clean.request("h1", protocol.sample(1, n, mode=Mode.UNIFORM), replies=n + 1,
                            timeout=1.5)
    assert sorted(r.index for r in replies) == list(range(n))


def test_each_copy_draws_its_own_sample(clean: PacketTestbed) -> None:
    for i in range(64):
        clean.insert(1, payload(i), priority=1.0)
    replies = clean.sample(1, 64, mode=Mode.UNIFORM)
    assert len(replies) == 64
    assert len({r.slot for r in replies}) > 20  # 64 copies of one draw would give 1


def uniform_counts(bed: PacketTestbed, table: int, size: int, batches: int) -> np.ndarray:
    """How often each of `table`'s `size` slots came up in `batches` uniform SAMPLE 100,
    every reply checked (all 100, in order, the payload its slot holds)."""
    counts: Counter[int] = Counter()
    for _ in range(batches):
        replies = bed.sample(table, 100, mode=Mode.UNIFORM)
        assert [r.index for r in replies] == list(range(100))
        assert all(r.ok and r.size == size and r.payload == payload(r.slot) for r in replies)
        counts.update(r.slot for r in replies)
    observed = np.array([counts[s] for s in range(size)])
    assert observed.sum() == 100 * batches
    return observed


def test_uniform_is_exact_when_draws_overshoot(clean: PacketTestbed) -> None:
    """33 slots: a draw masked to [0, 64) overshoots about half the time, so about half
    the copies take the later rounds of draws and about one in 160 all seven and the
    redraw pass (some 25 of these 4,000 replies); the counts must still be flat."""
    for i in range(33):
        clean.insert(1, payload(i), priority=float(i + 1))
    assert chisquare(uniform_counts(clean, 1, 33, batches=40)).pvalue > 1e-3


def test_uniform_is_exact_over_a_restored_ring(clean: PacketTestbed) -> None:
    """SET_STATE sets the uniform draw's mask for the size it restores (5 slots: [0, 8)),
    and INSERTs grow it from there (9 slots: [0, 16)); a mask too small would never
    draw the top slots."""
    restore(clean, 1, [(slot, slot + 1, 1.0) for slot in range(5)], size=5)
    assert chisquare(uniform_counts(clean, 1, 5, batches=20)).pvalue > 1e-3
    for i in range(5, 9):
        clean.insert(1, payload(i), priority=1.0)
    assert chisquare(uniform_counts(clean, 1, 9, batches=20)).pvalue > 1e-3


def test_refused_sample_answers_once(clean: PacketTestbed) -> None:
    before = clean.counter(3, Op.SAMPLE, Status.BELOW_MIN_SIZE)
    replies = clean.request("h1", protocol.sample(3, 4), replies=4, timeout=1.0)
    assert [r.status for r in replies] == [Status.BELOW_MIN_SIZE]
    assert clean.silent("h1")
    assert clean.counter(3, Op.SAMPLE, Status.BELOW_MIN_SIZE) == before + 1


def test_a_sample_is_counted_once_and_its_experiences_each(clean: PacketTestbed) -> None:
    clean.insert(1, payload(0), priority=1.0)
    before = clean.counter(1, Op.SAMPLE, Status.OK)
    sampled = clean.session.read_counter("ReplayEgress.replay.replay_sampled", 1)[1][0]
    assert len(clean.sample(1, 17)) == 17
    assert clean.counter(1, Op.SAMPLE, Status.OK) == before + 1
    assert clean.session.read_counter("ReplayEgress.replay.replay_sampled", 1)[1][0] \
        == sampled + 17


def sample_counters(bed: PacketTestbed, table: int) -> tuple[int, int, int]:
    """(SAMPLE requests counted OK, experiences sampled, replies NOT_READY) of `table`."""
    def cell(name: str) -> int:
        return bed.session.read_counter(f"ReplayEgress.replay.{name}", table)[table][0]
    return (bed.counter(table, Op.SAMPLE, Status.OK), cell("replay_sampled"),
            cell("replay_not_ready"))


def restore(bed: PacketTestbed, table: int, slots: list[tuple[int, int, float]],
            size: int) -> None:
    """Through the controller's restore path (WRITE, SET_STATE): `slots` as (slot, stamp,
    priority), and a ring of `size` slots. A slot with stamp 0 is one a SAMPLE copy
    would otherwise only meet while an INSERT on another egress thread has claimed it
    and not yet written it."""
    for slot, stamp, priority in slots:
        assert bed.cpu(protocol.write(table, slot, stamp, protocol.priority_to_fixed(priority),
                                      payload(slot))).ok
    assert bed.cpu(protocol.set_state(table, pointer=size, sequence=max(s[1] for s in slots),
                                      max_priority_fixed=protocol.PRIORITY_ONE, size=size)).ok


def test_a_reply_that_finds_only_unwritten_slots_says_not_ready(clean: PacketTestbed) -> None:
    """Prioritized, all the priority on slot 0 whose stamp is 0: every copy draws it, draws
    again EMPTY_SLOT_REDRAWS times and answers NOT_READY: index, slot, stamp 0, its
    priority, size, total, no payload. The request counts OK, no experience as sampled."""
    restore(clean, 0, [(0, 0, 1.0), (1, 7, 0.0)], size=2)
    before = sample_counters(clean, 0)
    replies = clean.request("h1", protocol.sample(0, 8, mode=Mode.PRIORITIZED), replies=9,
                            timeout=2.0)
    assert [r.index for r in replies] == list(range(8))
    assert {(r.status, r.slot, r.stamp, r.priority, r.size, r.total, r.payload)
            for r in replies} == {(Status.NOT_READY, 0, 0, protocol.PRIORITY_ONE, 2,
                                   protocol.PRIORITY_ONE, None)}
    assert sample_counters(clean, 0) == (before[0] + 1, before[1], before[2] + 8)
    restore(clean, 0, [(0, 0, 0.0), (1, 7, 1.0)], size=2)
    replies = clean.sample(0, 8, mode=Mode.PRIORITIZED)
    assert [(r.status, r.slot, r.stamp, r.payload) for r in replies] == [
        (Status.OK, 1, 7, payload(1))] * 8
    assert sample_counters(clean, 0) == (before[0] + 2, before[1] + 8, before[2] + 8)


def test_an_unwritten_slot_is_drawn_again_before_not_ready(clean: PacketTestbed) -> None:
    """Uniform over slot 0 (stamp 0) and slot 1 (written): a reply is NOT_READY only if
    all 1 + EMPTY_SLOT_REDRAWS draws find slot 0 (1 in 16), not one time in two."""
    restore(clean, 1, [(0, 0, 1.0), (1, 7, 1.0)], size=2)
    before = sample_counters(clean, 1)
    replies = clean.request("h1", protocol.sample(1, 128, mode=Mode.UNIFORM), replies=128)
    assert [r.index for r in replies] == list(range(128))
    ok = [r for r in replies if r.ok]
    assert all((r.slot, r.stamp, r.payload) == (1, 7, payload(1)) for r in ok)
    assert all((r.status, r.slot, r.stamp, r.payload) == (Status.NOT_READY, 0, 0, None)
               for r in replies if not r.ok)
    not_ready = len(replies) - len(ok)
    assert not_ready < 40  # 64 expected without the redraws
    assert sample_counters(clean, 1) == (before[0] + 1, before[1] + len(ok),
                                         before[2] + not_ready)


def test_the_controller_installed_a_group_per_power_of_two(dp: PacketTestbed) -> None:
    groups = dp.session.read_multicast_groups()
    learner = dp.cfg.host("h1").port
    base = sample_bases(dp.cfg)[learner]
    # the TNA program takes every copy through the loop port, where the replay state
    # is, and answers from there (docs/protocol.md); v1model replicates to the answer's port
    loop = LOOP_PORT if dp.kind == "tna" else None
    for copies in (1, 2, 32, 256):
        assert groups[base + copies] == [(loop or learner, rid) for rid in range(copies)]
    assert base + 3 not in groups
    assert groups[protocol.RESET_GROUP] == [(loop or dp.cfg.switch.cpu_port, rid)
                                            for rid in range(protocol.RESET_FANOUT)]


def test_stale_update_reply_carries_size_and_total(clean: PacketTestbed) -> None:
    capacity = clean.cfg.table(0).capacity
    first = clean.insert(0, payload(0), priority=1.0)
    for i in range(1, capacity + 1):
        clean.insert(0, payload(i), priority=1.0)
    reply = clean.one("h1", protocol.update(0, first.slot, first.stamp, 9.0, ack=True))
    assert reply.status == Status.STALE
    assert (reply.size, reply.total) == (capacity, capacity * protocol.PRIORITY_ONE)


def test_a_first_fragment_is_not_replay_traffic(clean: PacketTestbed) -> None:
    h1 = clean.cfg.host("h1")
    data = protocol.encode(protocol.insert(1, payload(1), ack=True))
    frame = (Ether(src=h1.mac, dst=clean.cfg.vip_mac)
             / IP(src=h1.ip, dst=clean.cfg.vip, flags="MF")
             / UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT) / Raw(data))
    clean.send("h1", frame)
    assert clean.silent("h1")
    assert clean.state(1).size == 0


@pytest.mark.parametrize("cut", ["udp", "ip"])
def test_lengths_saying_header_only_make_an_insert_truncated(clean: PacketTestbed,
                                                             cut: str) -> None:
    """The packet's own length fields count, not the bytes that trail it."""
    h1 = clean.cfg.host("h1")
    data = protocol.encode(protocol.insert(1, payload(1), ack=True, request_id=77))
    short = 8 + protocol.HEADER_BYTES
    ip = IP(src=h1.ip, dst=clean.cfg.vip)
    udp = UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT)
    if cut == "udp":
        udp.len = short
    else:
        ip.len = 20 + short
        udp.len = short
    clean.send("h1", Ether(src=h1.mac, dst=clean.cfg.vip_mac) / ip / udp / Raw(data))
    frame = clean.recv("h1", timeout=3)
    assert frame is not None
    reply = frame.replay()
    assert reply is not None and reply.status == Status.TRUNCATED
    assert clean.state(1).size == 0
