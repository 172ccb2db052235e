"""Several Actors inserting and updating at full rate while the Learner samples:
bmv2 runs egress on four threads (one per port modulo 4), and the replay state
lives in egress, so this is where the program's atomicity is put to the test.
Afterwards every reply must carry the experience stored under its (slot, stamp),
with a priority written for that stamp (a walk torn by other threads' additions
must not leak into it), and every sum-tree node must equal the sum of its children.

On bmv2 only. The TNA model runs each packet's passes to completion before the
next packet (the Python switch processes one packet at a time), so no request's
pass comes between another's: the races between a TNA request's phases
(docs/hardware.md) cannot happen there, and the tree is read through bmv2's
Thrift runtime (P4Runtime register reads are not served by either switch)."""

from __future__ import annotations

import random
import struct
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from agent.contract import protocol
from agent.contract.protocol import NUM_SLOTS, SLOT_BITS, Message, Mode
from bmv2.launch import bmv2_cli
from bmv2.toolchain import find_tool
from controller import config
from controller.snapshot import read_slots, read_state
from tests import needs
from tests.dataplane.packets import PacketTestbed

pytestmark = [pytest.mark.netns, pytest.mark.bmv2, pytest.mark.slow]

CONFIG = Path(__file__).with_name("stress.yaml")
ACTORS = ("actor1", "actor2", "actor3")
SECONDS = 6.0            # load phase, bounded
MAX_INSERTS = 20_000     # per actor, bounded
BATCH = 32
WINDOW = 16              # INSERTs an actor sends before it reads the ACKs
TREE = "ReplayEgress.replay.tree."


def experience(actor: int, seq: int) -> bytes:
    """A payload that names its actor and sequence number (and checks itself)."""
    words = [actor, seq, (actor * 7919 + seq * 104729) & 0xFFFFFFFF] + [seq ^ k for k in range(13)]
    return protocol.words_to_payload(words)


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory):
    needs.testbed("bmv2")
    if find_tool(("simple_switch_CLI",), "SIMPLE_SWITCH_CLI") is None:
        pytest.skip("simple_switch_CLI is not installed: the tree's inner levels are read "
                    "through bmv2's Thrift runtime")
    testbed = PacketTestbed(config.load(CONFIG), "bmv2", tmp_path_factory.mktemp("stress"))
    testbed.start()
    yield testbed
    testbed.stop()


def frame_maker(bed: PacketTestbed, host: str, length: int):
    """Frames from `host` to the replay service carrying `length` bytes, built by
    scapy once (UDP checksum 0, allowed in IPv4) and then filled in: fast enough
    to load the switch from Python threads."""
    h = bed.cfg.host(host)
    head = bytes(Ether(src=h.mac, dst=bed.cfg.vip_mac) / IP(src=h.ip, dst=bed.cfg.vip)
                 / UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT, chksum=0)
                 / Raw(bytes(length)))[:-length]
    return lambda data: head + data


def actor_load(bed: PacketTestbed, name: str, actor: int, stop: float,
               acked: dict[int, tuple[int, bytes]], written: dict[int, set[int]],
               lock: threading.Lock) -> None:
    """Windows of WINDOW INSERTs with ACK, each with an UPDATE of a recent insert
    of this actor, then the ACKs that came back; until `stop`. `written` collects
    the priorities sent for each acknowledged stamp."""
    rng = random.Random(actor)
    insert_frame = frame_maker(bed, name, protocol.HEADER_BYTES + protocol.PAYLOAD_BYTES)
    update_frame = frame_maker(bed, name, protocol.HEADER_BYTES)
    recent: list[tuple[int, int]] = []
    seq = 0
    while time.monotonic() < stop and seq < MAX_INSERTS:
        for _ in range(WINDOW):
            seq += 1
            msg = protocol.insert(0, experience(actor, seq), priority=rng.uniform(0.1, 20.0),
                                  ack=True, request_id=(actor << 24) | seq)
            bed.send(name, insert_frame(protocol.encode(msg)))
            if recent:
                slot, stamp = rng.choice(recent)
                update = protocol.update(0, slot, stamp, rng.uniform(0.0, 30.0))
                with lock:
                    written[stamp].add(update.priority)
                bed.send(name, update_frame(protocol.encode(update)))
        frame = bed.recv(name, timeout=0.2)
        while frame is not None:
            reply = frame.replay()
            if reply is not None and reply.ok and reply.op == protocol.Op.INSERT:
                a, s = reply.request_id >> 24, reply.request_id & 0xFFFFFF
                with lock:
                    acked[reply.stamp] = (reply.slot, experience(a, s))
                    written[reply.stamp].add(reply.priority)
                recent = [*recent[-31:], (reply.slot, reply.stamp)]
            frame = bed.recv(name, timeout=0.02)


def learner_load(bed: PacketTestbed, stop: float, replies: list[Message]) -> None:
    while time.monotonic() < stop:
        replies += bed.request("learner", protocol.sample(0, BATCH, mode=Mode.PRIORITIZED),
                               replies=BATCH, timeout=2.0)


def tree_levels(bed: PacketTestbed) -> list[np.ndarray]:
    """Table 0's sum tree, root first, leaves last, read through bmv2's Thrift runtime."""
    assert bed.bed.switch is not None and bed.bed.switch.thrift_port is not None
    port = bed.bed.switch.thrift_port

    def array(name: str) -> np.ndarray:
        out = bmv2_cli(port, f"register_read {TREE}{name}\n")
        values = out.split("=", 1)[1].split("RuntimeCmd")[0]
        return np.array([int(v) for v in values.replace("\n", "").split(",")], dtype=object)

    levels = []
    for level in range(SLOT_BITS):
        name = "tree_root" if level == 0 else f"tree_l{level}"
        pairs = (array(name + "_hi") << 32) | array(name + "_lo")
        levels.append(pairs[:1 << level])  # table 0's nodes
    levels.append(array("tree_leaf")[:NUM_SLOTS])
    return levels


def test_concurrent_inserts_updates_and_samples_stay_consistent(bed: PacketTestbed) -> None:
    acked: dict[int, tuple[int, bytes]] = {}
    written: defaultdict[int, set[int]] = defaultdict(set)
    lock = threading.Lock()
    sampled: list[Message] = []
    stop = time.monotonic() + SECONDS
    threads = [threading.Thread(target=actor_load,
                                args=(bed, name, i + 1, stop, acked, written, lock))
               for i, name in enumerate(ACTORS)]
    threads.append(threading.Thread(target=learner_load, args=(bed, stop, sampled)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 30)
    bed.drain()

    assert len(acked) > 1000, f"only {len(acked)} inserts acknowledged"
    ok = [r for r in sampled if r.ok]
    assert len(ok) > 20 * BATCH, f"only {len(ok)} sampled replies"
    unknown = 0
    for r in ok:
        if r.stamp not in acked:
            unknown += 1  # its ACK was not seen; the payload must still be one we sent
            actor, seq = struct.unpack("!2I", r.payload[:8])
            assert r.payload == experience(actor, seq)
            continue
        slot, data = acked[r.stamp]
        assert (r.slot, r.payload) == (slot, data), "a reply's payload is not its (slot, stamp)'s"
        assert r.priority in written[r.stamp], "a reply's priority was not written for its stamp"
    assert unknown <= len(ok) // 100

    capacity = bed.cfg.table(0).capacity
    state = read_state(bed.inband, 0)
    slots = read_slots(bed.inband, 0, range(capacity))
    leaves = [s.priority for s in slots]
    for s in slots:
        if s.stamp in acked:
            assert (s.slot, s.payload) == acked[s.stamp]
    levels = tree_levels(bed)
    assert list(levels[-1][:capacity]) == leaves       # tree_leaf == the records' (READ)
    assert not any(levels[-1][capacity:])
    for level in range(SLOT_BITS):
        children = levels[level + 1]
        sums = children[0::2] + children[1::2]
        assert list(levels[level]) == list(sums), f"level {level} != sum of level {level + 1}"
    assert levels[0][0] == state.total == sum(leaves)
