"""ReplayService: the switch's replay-table semantics, request by request."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import (
    ALLOW_ALL,
    ALLOW_INSERT,
    PRIORITY_ONE,
    RESET_FANOUT,
    Flag,
    Message,
    Mode,
    Op,
    Status,
    parse_request,
)
from agent.replay.memory import (
    ReplayService,
    TableConfig,
)

HOST = "198.18.0.1"
ACTOR = "198.18.0.2"


def payload(i: int) -> bytes:
    return protocol.words_to_payload([i, i + 1, 0xFFFFFFFF - i])


@pytest.fixture
def svc() -> ReplayService:
    s = ReplayService(seed=1)
    s.configure(0, TableConfig(capacity=4, min_size=2, max_batch=8))
    s.configure(1, TableConfig(enabled=False))
    for t in (0, 1):
        s.allow(HOST, t, ALLOW_ALL)
    s.allow(ACTOR, 0, ALLOW_INSERT)
    return s


def one(s: ReplayService, msg: Message | None, src: str = HOST, cpu: bool = False) -> Message:
    replies = s.handle(msg, src, from_cpu=cpu)
    assert len(replies) == 1
    return replies[0]


def insert(s: ReplayService, i: int, priority: float | None = None) -> Message:
    return one(s, protocol.insert(0, payload(i), priority=priority, ack=True, request_id=i + 1))


def test_insert_ack_fields_stamps_and_fifo_ring(svc: ReplayService) -> None:
    acks = [insert(svc, i) for i in range(6)]
    assert [a.slot for a in acks] == [0, 1, 2, 3, 0, 1]
    assert [a.stamp for a in acks] == [1, 2, 3, 4, 5, 6]
    assert [a.size for a in acks] == [1, 2, 3, 4, 4, 4]
    assert all(a.is_reply and a.ok and a.payload is None for a in acks)
    assert acks[0].request_id == 1 and acks[0].flags == Flag.ACK | Flag.REPLY
    read = one(svc, protocol.read(0, 1), cpu=True)
    assert (read.stamp, read.payload) == (6, payload(5))
    state = one(svc, protocol.get_state(0), cpu=True)
    assert (state.slot, state.stamp, state.size) == (2, 6, 4)


def test_insert_without_ack_is_silent_and_counted(svc: ReplayService) -> None:
    assert svc.handle(protocol.insert(0, payload(0)), HOST) == []
    assert svc.count(0, Op.INSERT, Status.OK) == 1


def test_running_max_priority_rule(svc: ReplayService) -> None:
    assert insert(svc, 0).priority == PRIORITY_ONE          # none seen yet: 1.0
    assert insert(svc, 1, priority=0.25).priority == PRIORITY_ONE // 4
    assert insert(svc, 2).priority == PRIORITY_ONE          # the max is still 1.0
    insert(svc, 3, priority=7.0)
    assert insert(svc, 4).priority == 7 * PRIORITY_ONE
    # capacity 4: slots hold 7.0 (insert 4), 7.0 (insert 5), 1.0 (insert 2), 7.0 (insert 3)
    assert insert(svc, 5).total == 22 * PRIORITY_ONE


def test_update_is_stamp_guarded_and_stale_is_counted(svc: ReplayService) -> None:
    first = insert(svc, 0)
    ok = one(svc, protocol.update(0, first.slot, first.stamp, 3.0, ack=True, request_id=9))
    assert ok.ok and ok.priority == 3 * PRIORITY_ONE and ok.total == 3 * PRIORITY_ONE
    assert ok.size == 1
    for i in range(1, 5):  # overwrite slot 0
        insert(svc, i)
    stale = one(svc, protocol.update(0, first.slot, first.stamp, 9.0, ack=True, request_id=10))
    # a STALE reply reports the table as it is (size, total), as the switch does
    assert stale.status == Status.STALE and (stale.size, stale.total) == (4, 12 * PRIORITY_ONE)
    assert svc.handle(protocol.update(0, first.slot, first.stamp, 9.0), HOST) == []
    assert svc.count(0, Op.UPDATE, Status.STALE) == 2
    assert svc.tables[0].tree.get(first.slot)[0] == 3 * PRIORITY_ONE  # inherited max
    assert svc.count(0, Op.UPDATE, Status.OK) == 1


def test_update_of_an_empty_slot_is_stale_even_with_stamp_zero(svc: ReplayService) -> None:
    reply = one(svc, protocol.update(0, 2, 0, 1.0, ack=True))
    assert reply.status == Status.STALE
    assert svc.tables[0].tree.total == 0


def test_update_raises_the_running_max(svc: ReplayService) -> None:
    a = insert(svc, 0)
    one(svc, protocol.update(0, a.slot, a.stamp, 5.0, ack=True))
    assert insert(svc, 1).priority == 5 * PRIORITY_ONE


def test_sample_replies_carry_what_importance_weights_need(svc: ReplayService) -> None:
    insert(svc, 0, priority=1.0)
    insert(svc, 1, priority=3.0)
    replies = svc.handle(protocol.sample(0, 8, mode=Mode.PRIORITIZED, request_id=77), HOST)
    assert [r.index for r in replies] == list(range(8))
    assert all(r.request_id == 77 and r.count == 8 and r.size == 2 for r in replies)
    assert all(r.total == 4 * PRIORITY_ONE for r in replies)
    for r in replies:
        assert r.payload == payload(r.slot) and r.stamp == r.slot + 1
        assert r.priority == (1 + 2 * r.slot) * PRIORITY_ONE
    batch = protocol.decode_batch(replies)
    assert np.all(batch.priority / batch.total > 0)


def test_replies_report_the_slot_records_priority(svc: ReplayService) -> None:
    """Every op keeps a slot's record priority (slot_record_priority on the switch) equal
    to its leaf, and SAMPLE and READ replies report the record's."""
    table = svc.tables[0]
    a = insert(svc, 0, priority=1.0)
    b = insert(svc, 1, priority=2.0)
    one(svc, protocol.update(0, a.slot, a.stamp, 6.0, ack=True))
    one(svc, protocol.update(0, b.slot, b.stamp - 1, 9.0, ack=True))       # stale: no change
    one(svc, protocol.write(0, 3, 7, PRIORITY_ONE // 2, payload(3)), cpu=True)
    want = {a.slot: 6 * PRIORITY_ONE, b.slot: 2 * PRIORITY_ONE, 3: PRIORITY_ONE // 2}
    assert {s: int(table.priorities[s]) for s in want} == want
    assert np.array_equal(table.priorities, table.tree.leaves())
    table.tree.update(a.slot, PRIORITY_ONE)   # a leaf apart from its record: replies say the record
    for mode in (Mode.PRIORITIZED, Mode.UNIFORM):
        for r in svc.handle(protocol.sample(0, 8, mode=mode), HOST):
            assert r.priority == want[r.slot]
    assert one(svc, protocol.read(0, a.slot), cpu=True).priority == want[a.slot]
    one(svc, protocol.reset(0), cpu=True)
    assert not table.priorities.any()


def test_uniform_sample_draws_from_occupied_slots_only(svc: ReplayService) -> None:
    insert(svc, 0, priority=0.0)
    insert(svc, 1, priority=0.0)
    replies = svc.handle(protocol.sample(0, 8, mode=Mode.UNIFORM), HOST)
    assert len(replies) == 8 and {r.slot for r in replies} <= {0, 1}
    empty = one(svc, protocol.sample(0, 8, mode=Mode.PRIORITIZED))
    assert empty.status == Status.EMPTY and empty.size == 2


HEADER_ONLY = protocol.encode(protocol.sample(0, 1))


@pytest.mark.parametrize(("msg", "src", "status"), [
    (None, HOST, Status.TRUNCATED),
    (Message(op=Op.SAMPLE, count=1, version=1, request_id=5), HOST, Status.MALFORMED),
    (Message(op=Op.SAMPLE, count=1, reserved=1), HOST, Status.MALFORMED),
    (Message(op=Op.SAMPLE, count=1, flags=0x08), HOST, Status.MALFORMED),
    (Message(op=Op.SAMPLE, count=1, flags=Flag.REPLY), HOST, Status.MALFORMED),
    (Message(op=Op.SAMPLE, count=1, flags=0x30), HOST, Status.MALFORMED),
    (Message(op=Op.SAMPLE, count=1, status=3), HOST, Status.MALFORMED),
    (Message(op=0, table=9), HOST, Status.UNKNOWN_OP),
    (Message(op=10), HOST, Status.UNKNOWN_OP),
    (Message(op=Op.INSERT), HOST, Status.TRUNCATED),
    (protocol.read(0, 0), HOST, Status.DENIED),
    (protocol.reset(9), HOST, Status.DENIED),
    (protocol.sample(4, 1), HOST, Status.UNKNOWN_TABLE),
    (protocol.sample(3, 1), HOST, Status.UNKNOWN_TABLE),
    (protocol.sample(1, 1), HOST, Status.DISABLED),
    (protocol.sample(1, 1), "10.0.0.1", Status.DISABLED),  # disabled before the ACL
    (protocol.sample(0, 1), ACTOR, Status.DENIED),
    (protocol.update(0, 4, 1, 1.0), ACTOR, Status.DENIED),  # ACL before bad slot
    (protocol.update(0, 4, 1, 1.0), HOST, Status.BAD_SLOT),
    (Message(op=Op.SAMPLE, count=0), HOST, Status.MALFORMED),
    (protocol.sample(0, 9), HOST, Status.BATCH_TOO_LARGE),
    (protocol.sample(0, 8), HOST, Status.BELOW_MIN_SIZE),
    (parse_request(protocol.encode(protocol.update_batch(0, [0, 1], [1, 1], [1, 1]))[:-1]),
     HOST, Status.TRUNCATED),
    (protocol.update_batch(1, [0], [1], [1.0]), HOST, Status.DISABLED),
    (protocol.update_batch(0, [0], [1], [1.0]), ACTOR, Status.DENIED),
    (Message(op=Op.UPDATE_BATCH, entries=()), HOST, Status.MALFORMED),
    (Message(op=Op.UPDATE_BATCH, count=protocol.MAX_UPDATE_BATCH + 1,
             entries=(protocol.Entry(0, 1, 1),) * (protocol.MAX_UPDATE_BATCH + 1)),
     HOST, Status.BATCH_TOO_LARGE),
])
def test_refusals_in_the_switch_precedence(svc: ReplayService, msg: Message | None, src: str,
                                           status: Status) -> None:
    insert(svc, 0)  # one experience: below min size 2
    reply = one(svc, msg, src)
    assert reply.status == status and reply.is_reply and reply.payload is None
    assert reply.version == protocol.VERSION and reply.reserved == 0
    if msg is not None:
        assert reply.op == msg.op and reply.request_id == msg.request_id
    protocol.decode(protocol.encode(reply))  # every reply is a well-formed message


def test_counters_bucket_unknown_tables_and_ops(svc: ReplayService) -> None:
    one(svc, protocol.sample(3, 1))
    one(svc, Message(op=12))
    one(svc, None)
    assert svc.count(None, Op.SAMPLE, Status.UNKNOWN_TABLE) == 1
    assert svc.count(0, 0, Status.UNKNOWN_OP) == 1
    assert svc.count(None, 0, Status.TRUNCATED) == 1


def test_cpu_ops_snapshot_restore_and_reset(svc: ReplayService) -> None:
    for i in range(3):
        insert(svc, i, priority=float(i + 1))
    snap = [one(svc, protocol.read(0, s), cpu=True) for s in range(3)]
    state = one(svc, protocol.get_state(0), cpu=True)
    assert (state.slot, state.stamp, state.priority, state.size, state.total) == (
        3, 3, 3 * PRIORITY_ONE, 3, 6 * PRIORITY_ONE)
    done = one(svc, protocol.reset(0), cpu=True)
    assert (done.index, done.slot, done.size, done.total) == (RESET_FANOUT - 1, 4095, 0, 0)
    assert one(svc, protocol.get_state(0), cpu=True).size == 0
    for r in snap:
        w = one(svc, protocol.write(0, r.slot, r.stamp, r.priority, r.payload), cpu=True)
        assert w.ok and w.payload is None
    one(svc, protocol.set_state(0, pointer=state.slot, sequence=state.stamp,
                                max_priority_fixed=state.priority, size=state.size), cpu=True)
    assert one(svc, protocol.get_state(0), cpu=True) == state
    assert insert(svc, 9).stamp == 4
    disabled = one(svc, protocol.get_state(1), cpu=True)  # CPU ops work on disabled tables
    assert disabled.ok


def test_parse_request_extracts_like_the_parser() -> None:
    assert parse_request(b"\x01" * 35) is None
    ins = protocol.encode(protocol.insert(0, payload(1)))
    assert parse_request(ins).payload == payload(1)
    assert parse_request(ins[:-1]).payload is None
    assert parse_request(ins + b"junk").payload == payload(1)
    sample_with_tail = HEADER_ONLY + payload(1)
    assert parse_request(sample_with_tail).payload is None
    assert parse_request(HEADER_ONLY) == replace(protocol.sample(0, 1))


def test_insert_limit_counts_per_host_and_window() -> None:
    now = [0]
    s = ReplayService(seed=1, clock=lambda: now[0])
    s.configure(0, TableConfig(capacity=64))
    s.allow(HOST, 0, ALLOW_ALL)
    s.allow(ACTOR, 0, ALLOW_INSERT)
    s.limit_inserts(ACTOR, 0, 3)
    statuses = [one(s, protocol.insert(0, payload(i), ack=True), ACTOR).status for i in range(5)]
    assert statuses == [Status.OK] * 3 + [Status.RATE_LIMITED] * 2
    refused = one(s, protocol.insert(0, payload(9)), ACTOR)  # answered without ACK too
    assert (refused.status, refused.size, refused.total) == (Status.RATE_LIMITED, 0, 0)
    assert all(insert(s, i).ok for i in range(10))  # HOST has no limit
    assert s.tables[0].size == 13 and s.rate_limited[(ACTOR, 0)] == 3
    assert s.count(0, Op.INSERT, Status.RATE_LIMITED) == 3
    now[0] = protocol.INSERT_WINDOW_US - 1        # still the first window
    assert one(s, protocol.insert(0, payload(0), ack=True), ACTOR).status == Status.RATE_LIMITED
    now[0] = protocol.INSERT_WINDOW_US            # the next one: a new budget
    assert one(s, protocol.insert(0, payload(0), ack=True), ACTOR).ok
    s.limit_inserts(ACTOR, 0, 0)
    assert one(s, protocol.insert(0, payload(0), ack=True), ACTOR).status == Status.RATE_LIMITED
    assert one(s, protocol.write(0, 0, 5, PRIORITY_ONE, payload(0)), cpu=True).ok  # CPU: no limit
    s.limit_inserts(ACTOR, 0, None)
    assert one(s, protocol.insert(0, payload(0), ack=True), ACTOR).ok
    with pytest.raises(ValueError, match=r"max_inserts must be 0\.\.65535"):
        s.limit_inserts(ACTOR, 0, protocol.MAX_INSERT_LIMIT + 1)


def test_a_sample_of_slots_without_experiences_says_not_ready(svc: ReplayService) -> None:
    """A restored state whose size counts slots nobody wrote (stamp 0): each reply
    draws again EMPTY_SLOT_REDRAWS times, then says NOT_READY without payload; the
    request still counts OK."""
    assert one(svc, protocol.set_state(0, pointer=3, sequence=3, max_priority_fixed=0, size=3),
               cpu=True).ok
    replies = svc.handle(protocol.sample(0, 5, mode=Mode.UNIFORM, request_id=7), HOST)
    assert [r.index for r in replies] == list(range(5))
    assert all(r.status == Status.NOT_READY and r.stamp == 0 and r.payload is None
               and r.slot < 3 and r.size == 3 for r in replies)
    assert svc.not_ready[0] == 5 and svc.sampled[0] == 0
    assert svc.count(0, Op.SAMPLE, Status.OK) == 1


def test_an_unwritten_slot_is_drawn_again_before_not_ready(svc: ReplayService) -> None:
    """Uniform over slot 0 (stamp 0) and slot 1 (written): a reply is NOT_READY only
    if all 1 + EMPTY_SLOT_REDRAWS draws find slot 0 (1/16), not every other time."""
    svc.configure(0, TableConfig(capacity=4, min_size=1, max_batch=255))
    assert one(svc, protocol.write(0, 1, 5, PRIORITY_ONE, payload(1)), cpu=True).ok
    assert one(svc, protocol.set_state(0, pointer=2, sequence=5, max_priority_fixed=PRIORITY_ONE,
                                       size=2), cpu=True).ok
    replies = svc.handle(protocol.sample(0, 255, mode=Mode.UNIFORM), HOST)
    ok = [r for r in replies if r.ok]
    assert all((r.slot, r.stamp, r.payload) == (1, 5, payload(1)) for r in ok)
    assert 0 < svc.not_ready[0] == len(replies) - len(ok) < 40


def test_a_prioritized_draw_of_an_unwritten_slot_says_not_ready(svc: ReplayService) -> None:
    """Only slot 0 has priority, and stamp 0: NOT_READY every time; once the priority
    sits on a written slot every reply is OK data."""
    for slot, stamp, priority in ((0, 0, PRIORITY_ONE), (1, 5, 0)):
        assert one(svc, protocol.write(0, slot, stamp, priority, payload(slot)), cpu=True).ok
    assert one(svc, protocol.set_state(0, pointer=2, sequence=5, max_priority_fixed=PRIORITY_ONE,
                                       size=2), cpu=True).ok
    replies = svc.handle(protocol.sample(0, 4, mode=Mode.PRIORITIZED), HOST)
    assert {(r.status, r.slot, r.priority, r.total) for r in replies} == {
        (Status.NOT_READY, 0, PRIORITY_ONE, PRIORITY_ONE)}
    for slot, stamp, priority in ((0, 0, 0), (1, 5, PRIORITY_ONE)):
        assert one(svc, protocol.write(0, slot, stamp, priority, payload(slot)), cpu=True).ok
    replies = svc.handle(protocol.sample(0, 4, mode=Mode.PRIORITIZED), HOST)
    assert all(r.ok and (r.slot, r.stamp, r.payload) == (1, 5, payload(1)) for r in replies)
    assert (svc.not_ready[0], svc.sampled[0]) == (4, 4)


def batch_ack(s: ReplayService, slots: list[int], stamps: list[int],
              priorities: list[float]) -> protocol.BatchAck:
    reply = one(s, protocol.update_batch(0, slots, stamps, priorities, ack=True, request_id=9))
    assert reply.ok and reply.op == Op.UPDATE_BATCH and reply.request_id == 9
    assert (reply.priority, reply.size, reply.total, reply.entries) == (0, 0, 0, None)
    assert len(protocol.encode(reply)) == protocol.HEADER_BYTES
    return protocol.BatchAck.of(reply)


def test_update_batch_applies_each_entry_as_an_update(svc: ReplayService) -> None:
    acks = [insert(svc, i, priority=1.0) for i in range(6)]  # slots 0, 1 overwritten
    table = svc.tables[0]
    ack = batch_ack(svc, [2, 0, 3, 9, 1], [acks[2].stamp, acks[0].stamp, acks[3].stamp, 1,
                                          acks[5].stamp], [4.0, 8.0, 0.5, 2.0, 3.0])
    assert (ack.entries, ack.applied, ack.stale, ack.bad_slot) == (5, 3, 1, 1)
    fixed = [protocol.priority_to_fixed(p) for p in (3.0, 4.0, 0.5)]
    assert [int(table.priorities[s]) for s in (1, 2, 3)] == fixed  # the stale one stopped nothing
    assert table.priorities[0] == PRIORITY_ONE
    assert table.max_priority == protocol.priority_to_fixed(4.0)
    assert table.tree.total == int(table.priorities.sum())
    assert [svc.count(0, Op.UPDATE_BATCH, st) for st in (Status.OK, Status.STALE,
                                                          Status.BAD_SLOT)] == [3, 1, 1]


def test_update_batch_of_one_slot_twice_applies_both_in_order(svc: ReplayService) -> None:
    a = insert(svc, 0, priority=1.0)
    ack = batch_ack(svc, [a.slot, a.slot], [a.stamp, a.stamp], [6.0, 2.0])
    assert (ack.applied, ack.stale) == (2, 0)
    table = svc.tables[0]
    assert table.priorities[a.slot] == protocol.priority_to_fixed(2.0)
    assert table.max_priority == protocol.priority_to_fixed(6.0)
    assert table.tree.total == protocol.priority_to_fixed(2.0)


def test_update_batch_without_ack_is_silent_and_counted(svc: ReplayService) -> None:
    a = insert(svc, 0)
    msg = protocol.update_batch(0, [a.slot, a.slot], [a.stamp, a.stamp + 1], [5.0, 5.0])
    assert svc.handle(parse_request(protocol.encode(msg)), HOST) == []
    assert svc.count(0, Op.UPDATE_BATCH, Status.OK) == 1
    assert svc.count(0, Op.UPDATE_BATCH, Status.STALE) == 1
