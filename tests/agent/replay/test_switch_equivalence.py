"""ReplayService against the compiled P4 program (p4src/build/replay.json) run by
the Python switch: the same request sequence, the same replies and the same
register contents afterwards. SAMPLE draws are random on both sides, so a sampled
reply is checked against the (identical) table state instead of field by field."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import (
    ALLOW_ALL,
    ALLOW_INSERT,
    NUM_SLOTS,
    NUM_TABLES,
    PAYLOAD_WORDS,
    RESET_FANOUT,
    RESET_GROUP,
    SLOT_BITS,
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
from controller.program import DEFAULT
from controller.replication import sample_groups

pyswitch = pytest.importorskip("bmv2.pyswitch")
scapy_inet = pytest.importorskip("scapy.layers.inet")
scapy_l2 = pytest.importorskip("scapy.layers.l2")

PROGRAM = DEFAULT.bmv2_json
VIP, HOST, ACTOR, OUTSIDER = "198.18.0.100", "198.18.0.1", "198.18.0.2", "198.18.0.9"
CPU_PORT, HOST_PORT = 255, 1
MAC = 0x020000000001  # every request's source MAC
P = "ReplayIngress."
E = "ReplayEgress.replay."
CONFIGS = {
    0: TableConfig(capacity=8, min_size=2, max_batch=16, default_mode=Mode.PRIORITIZED),
    1: TableConfig(capacity=64, min_size=1, max_batch=32, default_mode=Mode.UNIFORM),
    2: TableConfig(enabled=False, capacity=16),
}
ACL = [(HOST, 0, ALLOW_ALL), (HOST, 1, ALLOW_ALL), (HOST, 2, ALLOW_ALL), (ACTOR, 0, ALLOW_INSERT)]
# INSERT limits (source, table, limiter, budget): windows pass during the test, so
# only budgets whose answer does not depend on the window: none, and never reached
LIMITS = [(ACTOR, 0, 1, 0), (HOST, 1, 2, protocol.MAX_INSERT_LIMIT)]


def ip(text: str) -> int:
    return int(ipaddress.ip_address(text))


class SwitchUnderTest:
    """The compiled replay program in the Python switch, configured like the service."""

    def __init__(self) -> None:
        self.sw = pyswitch.Switch.from_json_file(PROGRAM, cpu_port=CPU_PORT, seed=3)
        self.sw.table_add(P + "replay_vip", [ip(VIP)], P + "replay_vip_hit")
        for src in (HOST, ACTOR, OUTSIDER):  # all three send from HOST_PORT here
            self.sw.table_add(P + "source.source_guard", [HOST_PORT, MAC, ip(src)],
                              P + "source.bound")
        for table, c in CONFIGS.items():
            self.sw.table_add(P + "replay.replay_table_config", [table], P + "replay.configure",
                              (int(c.enabled), c.capacity, c.min_size, c.max_batch,
                               c.default_mode))
        for src, table, ops in ACL:
            self.sw.table_add(P + "replay.replay_acl", [ip(src), table], P + "replay.allow",
                              (ops,))
        for src, table, limiter, budget in LIMITS:
            self.sw.table_add(P + "replay.limiter.insert_limit", [table, ip(src)],
                              P + "replay.limiter.limit", (limiter, budget))
        for port, base in ((HOST_PORT, 512), (CPU_PORT, 1024)):
            self.sw.table_add(P + "replay.sample_replication", [port], P + "replay.replicate",
                              (base,))
            for gid, replicas in sample_groups(port, base).items():
                self.sw.mc_group_set(gid, replicas)
        self.sw.mc_group_set(RESET_GROUP, [(CPU_PORT, rid) for rid in range(RESET_FANOUT)])

    def request(self, data: bytes, src: str, cpu: bool) -> list[Message]:
        frame = bytes(scapy_l2.Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:64")
                      / scapy_inet.IP(src=src, dst=VIP)
                      / scapy_inet.UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT) / data)
        if cpu:
            frame = b"\x00\x00" + frame  # packet_out, egress_port 0: through the pipeline
        replies = []
        for port, out in self.sw.process(CPU_PORT if cpu else HOST_PORT, frame):
            assert port == (CPU_PORT if cpu else HOST_PORT)
            pkt = scapy_l2.Ether(out[2:] if cpu else out)
            data = bytes(pkt[scapy_inet.UDP].payload)
            reply = protocol.decode(data)
            assert len(data) == len(protocol.encode(reply)), reply  # exactly what it carries
            replies.append(reply)
        return sorted(replies, key=lambda m: m.index)  # a redrawn reply comes later

    def register(self, name: str, dtype: type = np.int64) -> np.ndarray:
        return np.asarray(self.sw.register_read_all(E + name), dtype=dtype)

    def pair(self, name: str) -> np.ndarray:
        """A sum-tree level kept as (hi, lo) register pairs, as 64-bit sums."""
        return (self.register(name + "_hi") << 32) | self.register(name + "_lo")


def service() -> ReplayService:
    svc = ReplayService(seed=3)
    for table, c in CONFIGS.items():
        svc.configure(table, c)
    for src, table, ops in ACL:
        svc.allow(src, table, ops)
    for src, table, _, budget in LIMITS:
        svc.limit_inserts(src, table, budget)
    return svc


def random_requests(rng: np.random.Generator, count: int, svc: ReplayService):
    """(datagram, source, from_cpu) covering every op and refusal; half the updates
    name a slot and stamp that `svc` (the reference state) currently holds."""
    zero = protocol.words_to_payload([0])
    for msg, cpu in (
            (protocol.sample(1, 4), False), (Message(op=0), False),  # below min size
            (Message(op=200), False),                                # unknown op
            # a ring of 2 slots nobody wrote: every reply NOT_READY; then empty again
            (protocol.set_state(1, pointer=2, sequence=0, max_priority_fixed=0, size=2), True),
            (protocol.sample(1, 3), False),
            (protocol.set_state(1, pointer=0, sequence=0, max_priority_fixed=0, size=0), True),
            (protocol.insert(0, zero, priority=0.0), False),
            (protocol.insert(0, zero, priority=0.0), False),
            (protocol.sample(0, 3), False)):  # a prioritized sample of total 0: EMPTY
        yield protocol.encode(msg), HOST, cpu
    stamps = [0, 1, 2]
    for _ in range(count):
        kind = rng.choice(["insert", "insert", "insert", "sample", "sample", "update", "update",
                           "batch", "cpu", "host_cpu", "junk"])
        table = int(rng.choice([0, 0, 0, 1, 1, 2, 3, 4]))
        rid = int(rng.integers(1, 2**32))
        src = str(rng.choice([HOST, HOST, HOST, ACTOR, OUTSIDER]))
        words = rng.integers(0, 2**32, size=PAYLOAD_WORDS, dtype=np.uint64)
        payload = protocol.words_to_payload(words)
        if kind == "insert":
            prio = None if rng.random() < 0.5 else float(rng.choice([0.0, 0.5, 1.0, 3.25, 9.0]))
            msg = protocol.insert(table, payload, priority=prio, ack=bool(rng.random() < 0.7),
                                  request_id=rid)
            stamps.append(stamps[-1] + 1)
        elif kind == "sample":
            msg = Message(op=Op.SAMPLE, table=table, count=int(rng.integers(0, 20)),
                          flags=int(rng.choice([0, 1, 2])) << 4, request_id=rid)
        elif kind == "update":
            slot = int(rng.integers(0, 10))
            stamp = int(rng.choice(stamps[-12:])) + int(rng.integers(0, 2))
            held = np.flatnonzero(svc.tables[table].stamps) if table < NUM_TABLES else []
            if len(held) and rng.random() < 0.5:
                slot = int(rng.choice(held))
                stamp = int(svc.tables[table].stamps[slot])
            msg = protocol.update(table, slot, stamp,
                                  float(rng.choice([0.0, 0.75, 2.0, 12.5, 40.0])),
                                  ack=bool(rng.random() < 0.7), request_id=rid)
        elif kind == "batch":
            msg = batch_request(rng, table, rid, svc, stamps)
        elif kind in ("cpu", "host_cpu"):
            op = rng.choice(["read", "write", "get", "set"])
            slot = int(rng.integers(0, 10))
            msg = {"read": protocol.read(table, slot, request_id=rid),
                   "write": protocol.write(table, slot, int(rng.integers(0, 50)),
                                           int(rng.integers(0, 2**20)), payload, request_id=rid),
                   "get": protocol.get_state(table, request_id=rid),
                   "set": protocol.set_state(table, pointer=int(rng.integers(0, 10)),
                                             sequence=int(rng.integers(0, 100)),
                                             max_priority_fixed=int(rng.integers(0, 2**20)),
                                             size=int(rng.integers(0, 9)), request_id=rid)}[op]
            yield protocol.encode(msg), HOST, kind == "cpu"
            continue
        else:
            data = bytearray(protocol.encode(protocol.insert(table, payload, request_id=rid)))
            cut = int(rng.integers(0, len(data)))
            data[int(rng.integers(0, 36))] ^= 1 << int(rng.integers(0, 8))
            yield bytes(data[:cut] if rng.random() < 0.5 else data), src, False
            continue
        yield protocol.encode(msg), src, False


def batch_request(rng: np.random.Generator, table: int, rid: int, svc: ReplayService,
                  stamps: list[int]) -> Message:
    """An UPDATE_BATCH of 0 .. MAX_UPDATE_BATCH + 2 entries (0 and past the maximum:
    refused), each a held slot and stamp half the time, else any slot below 10 (some
    past table 0's capacity of 8) and a recent stamp; slots may repeat."""
    n = int(rng.integers(0, protocol.MAX_UPDATE_BATCH + 3))
    held = np.flatnonzero(svc.tables[table].stamps) if table < NUM_TABLES else []
    entries = []
    for _ in range(n):
        slot = int(rng.integers(0, 10))
        stamp = int(rng.choice(stamps[-12:])) + int(rng.integers(0, 2))
        if len(held) and rng.random() < 0.5:
            slot = int(rng.choice(held))
            stamp = int(svc.tables[table].stamps[slot])
        entries.append(protocol.Entry(slot, stamp, protocol.priority_to_fixed(
            float(rng.choice([0.0, 0.75, 2.0, 12.5, 40.0])))))
    flags = protocol.Flag.ACK if rng.random() < 0.7 else 0
    return Message(op=Op.UPDATE_BATCH, table=table, flags=flags, count=n, entries=tuple(entries),
                   request_id=rid)


def check_sampled(reply: Message, svc: ReplayService) -> None:
    """A SAMPLE reply against the table it drew from: OK carries the slot's record
    (stamp, priority, payload); NOT_READY a slot with stamp 0, its priority, no payload."""
    table = svc.tables[reply.table]
    assert reply.stamp == table.stamps[reply.slot]
    assert reply.priority == table.priorities[reply.slot]
    if reply.status == Status.NOT_READY:
        assert reply.stamp == 0 and reply.payload is None
    else:
        assert reply.payload == table.payloads[reply.slot].tobytes()


def test_service_answers_like_the_compiled_program() -> None:
    switch, svc = SwitchUnderTest(), service()
    statuses: set[int] = set()
    updated = batches = 0
    for data, src, cpu in random_requests(np.random.default_rng(11), 600, svc):
        want = switch.request(data, src, cpu)
        got = svc.handle(parse_request(data), src, from_cpu=cpu)
        assert len(got) == len(want), (data.hex(), got, want)
        for g, w in zip(got, want, strict=True):
            statuses.add(w.status)
            updated += w.op == Op.UPDATE and w.ok
            batches += w.op == Op.UPDATE_BATCH and w.ok and w.slot > 0
            if w.op == Op.SAMPLE and w.status in (Status.OK, Status.NOT_READY):
                # draws differ: whether a reply found an unwritten slot may too
                fields = ("op", "flags", "count", "index", "request_id", "size", "total")
                assert [getattr(g, f) for f in fields] == [getattr(w, f) for f in fields]
                check_sampled(w, svc)
                check_sampled(g, svc)
            else:
                assert g == w, data.hex()
    assert {s.value for s in Status} - statuses == set()
    assert updated > 10 and batches > 5
    for status in (Status.OK, Status.STALE, Status.BAD_SLOT, Status.BATCH_TOO_LARGE):
        assert svc.count(0, Op.UPDATE_BATCH, status) > 0, status.name
    for t in range(NUM_TABLES):
        table = svc.tables[t]
        for name, value in (("ring.ring_ptr", table.pointer), ("ring.ring_count", table.size),
                            ("ring.insert_seq", table.sequence),
                            ("max_priority.max_priority", table.max_priority)):
            assert switch.register(name)[t] == value, (t, name)
        part = slice(t * NUM_SLOTS, (t + 1) * NUM_SLOTS)
        leaves = table.tree.leaves()
        assert np.array_equal(switch.register("tree.tree_leaf")[part], leaves)
        assert np.array_equal(switch.register("tree.slot_priority")[part], leaves)
        assert switch.pair("tree.tree_root")[t] == table.tree.total
        for level in range(1, SLOT_BITS):  # every inner node: the sum of its leaves
            nodes = slice(t << level, (t + 1) << level)
            sums = np.asarray(leaves, dtype=np.int64).reshape(1 << level, -1).sum(axis=1)
            assert np.array_equal(switch.pair(f"tree.tree_l{level}")[nodes], sums), (t, level)
        assert np.array_equal(switch.register("guard.slot_stamp")[part], table.stamps)
        assert np.array_equal(switch.register("store.slot_record_stamp")[part], table.stamps)
        assert np.array_equal(switch.register("store.slot_record_priority")[part],
                              table.priorities)
        assert np.array_equal(table.priorities, leaves)
        pairs = table.payloads.view(">u8")
        for i in range(PAYLOAD_WORDS // 2):
            stored = switch.register(f"store.payload_p{i}", np.uint64)[part]
            assert np.array_equal(stored, pairs[:, i])


def test_reset_answers_like_the_compiled_program() -> None:
    switch, svc = SwitchUnderTest(), service()
    for i in range(5):
        data = protocol.encode(protocol.insert(0, protocol.words_to_payload([i]), ack=True))
        assert switch.request(data, HOST, False) == svc.handle(parse_request(data), HOST)
    data = protocol.encode(protocol.reset(0, request_id=42))
    assert switch.request(data, HOST, True) == svc.handle(parse_request(data), HOST, from_cpu=True)
    assert not switch.register("guard.slot_stamp").any()
    assert not switch.register("store.slot_record_stamp").any()
    assert not switch.register("store.slot_record_priority").any()
    assert not switch.pair("tree.tree_root").any()



def test_prioritized_sample_reports_the_records_priority_mid_update() -> None:
    """A walk that read the levels before an UPDATE's additions and the leaf after
    (bmv2's egress threads interleave so) still reports the slot's stored priority.
    The interleaving is staged by writing the leaf alone, as the UPDATE's first
    stages would have, before a prioritized SAMPLE walks the tree."""
    switch = SwitchUnderTest()
    acks = [switch.request(protocol.encode(protocol.insert(0, protocol.words_to_payload([i]),
                                                           priority=p, ack=True)), HOST, False)[0]
            for i, p in enumerate((4.0, 4.0))]
    stored = {a.slot: (a.stamp, a.priority) for a in acks}
    switch.sw.register_write(E + "tree.tree_leaf", acks[0].slot, protocol.priority_to_fixed(0.5))
    replies = switch.request(protocol.encode(protocol.sample(0, 16, mode=Mode.PRIORITIZED)),
                             HOST, False)
    assert len(replies) == 16 and {r.slot for r in replies} >= {acks[1].slot}
    for r in replies:
        assert r.status == Status.OK and (r.stamp, r.priority) == stored[r.slot]


def test_an_update_whose_slot_was_taken_after_its_stamp_check_changes_nothing() -> None:
    """bmv2's egress threads can run an INSERT on a slot between an UPDATE's stamp
    check and its writes. Staged: the slot is written anew (stamp 8), then its guard
    stamp is set back to the one the UPDATE checks (7), as the UPDATE saw it. The
    UPDATE must leave the new experience's leaf and record alone, so the records
    still sum to the tree's total (a snapshot checks that)."""
    switch = SwitchUnderTest()
    slot, new = 5, protocol.priority_to_fixed(2.0)
    switch.request(protocol.encode(protocol.write(0, slot, 7, protocol.priority_to_fixed(1.0),
                                                  protocol.words_to_payload([1]))), HOST, True)
    switch.request(protocol.encode(protocol.write(0, slot, 8, new,
                                                  protocol.words_to_payload([2]))), HOST, True)
    cell = slot  # table 0
    switch.sw.register_write(E + "guard.slot_stamp", cell, 7)
    switch.request(protocol.encode(protocol.update(0, slot, 7, 6.0)), HOST, False)
    assert switch.register("tree.slot_priority")[cell] == new
    assert switch.register("tree.tree_leaf")[cell] == new
    assert switch.register("store.slot_record_stamp")[cell] == 8
    assert switch.register("store.slot_record_priority")[cell] == new
    assert int(switch.pair("tree.tree_root")[0]) == int(switch.register("tree.slot_priority").sum())


def test_a_copy_goes_round_again_only_when_seven_draws_overshoot() -> None:
    """A total just past a power of two (8 slots of priority 1, one raised by 2^-16:
    2^19 + 1) makes half of all draws overshoot. A copy draws up to seven times in its
    pass (v1model/draw.p4) and recirculates only when all miss: about 1 in 128 of
    3,200 copies (25), where four attempts would send 1 in 16 (200). Every reply is
    still answered, with its stored record."""
    switch = SwitchUnderTest()
    acks = [switch.request(protocol.encode(protocol.insert(0, protocol.words_to_payload([i]),
                                                           priority=1.0, ack=True)), HOST, False)[0]
            for i in range(8)]
    (up,) = switch.request(protocol.encode(protocol.update(0, acks[0].slot, acks[0].stamp,
                                                           1.0 + 2.0**-16, ack=True)), HOST, False)
    assert up.ok and up.total == (1 << 19) + 1
    stored = {a.slot: a.stamp for a in acks}
    before = switch.sw.stats.recirculations
    for _ in range(200):
        replies = switch.request(protocol.encode(protocol.sample(0, 16, mode=Mode.PRIORITIZED)),
                                 HOST, False)
        assert [r.index for r in replies] == list(range(16))
        assert all(r.ok and r.stamp == stored[r.slot] for r in replies)
    assert switch.sw.stats.recirculations - before < 80
