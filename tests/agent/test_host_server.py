"""The host replay server over loopback UDP: the switch's answers, from a host."""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import sys

import numpy as np
import pytest

from agent import protocol
from agent.host_server import HostServer, parse_allow
from agent.protocol import PRIORITY_ONE, Message, Mode, Op, Status
from agent.replay_memory import ALLOW_INSERT, ALLOW_SAMPLE
from tests.agent.conftest import OUTSIDER, RawPeer


def payload(i: int) -> bytes:
    return protocol.floats_to_payload([i, -i, 0.5 * i])


def test_insert_ack_and_sample_replies_go_back_to_the_sender(peer: RawPeer) -> None:
    assert peer.request(protocol.insert(0, payload(1), ack=True, request_id=1))[0].slot == 0
    peer.send(protocol.insert(0, payload(2), priority=3.0))  # no ACK: no reply
    assert peer.none_within()
    replies = peer.request(protocol.sample(0, 16, mode=Mode.PRIORITIZED, request_id=2), 16)
    assert sorted(r.index for r in replies) == list(range(16))
    batch = protocol.decode_batch(replies)
    assert set(batch.size) == {2} and set(batch.total) == {4.0}
    for slot, row in zip(batch.slot, batch.payload, strict=True):
        assert row[0] == slot + 1
    assert peer.none_within()  # exactly n replies


def test_ring_wraps_fifo_over_udp(peer: RawPeer) -> None:
    acks = [peer.request(protocol.insert(0, payload(i), ack=True, request_id=i + 1))[0]
            for i in range(11)]
    assert [a.slot for a in acks] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2]
    assert [a.stamp for a in acks] == list(range(1, 12))
    assert acks[-1].size == 8
    replies = peer.request(protocol.sample(0, 16, mode=Mode.UNIFORM), 16)
    assert {int(r.stamp) for r in replies} <= set(range(4, 12))  # stamps 1-3 were evicted


def test_stale_updates_are_refused_and_counted(server: HostServer, peer: RawPeer) -> None:
    first = peer.request(protocol.insert(0, payload(0), ack=True))[0]
    for i in range(1, 9):
        peer.send(protocol.insert(0, payload(i)))
    stale = peer.request(protocol.update(0, first.slot, first.stamp, 5.0, ack=True))[0]
    assert stale.status == Status.STALE
    peer.send(protocol.update(0, first.slot, first.stamp, 5.0))  # without ACK: silent
    assert peer.none_within()
    assert server.service.count(0, Op.UPDATE, Status.STALE) == 2
    current = peer.request(protocol.sample(0, 1, mode=Mode.UNIFORM))[0]
    ok = peer.request(protocol.update(0, current.slot, current.stamp, 5.0, ack=True))[0]
    assert ok.ok and ok.priority == 5 * PRIORITY_ONE


@pytest.mark.parametrize(("msg", "status"), [
    (protocol.sample(0, 4), Status.BELOW_MIN_SIZE),
    (protocol.sample(0, 17), Status.BATCH_TOO_LARGE),
    (protocol.sample(2, 1), Status.DISABLED),
    (protocol.sample(3, 1), Status.UNKNOWN_TABLE),
    (protocol.update(0, 8, 1, 1.0), Status.BAD_SLOT),
    (protocol.read(0, 0), Status.DENIED),
    (Message(op=Op.INSERT, request_id=5), Status.TRUNCATED),
])
def test_every_refusal_gets_its_status(peer: RawPeer, msg: Message, status: Status) -> None:
    reply = peer.request(msg)[0]
    assert (reply.status, reply.request_id, reply.op) == (status, msg.request_id, msg.op)


def test_acl_denies_unlisted_hosts(server: HostServer) -> None:
    outsider = RawPeer(server.address, bind_ip=OUTSIDER)
    try:
        for msg in (protocol.insert(0, payload(1)), protocol.sample(0, 1),
                    protocol.update(0, 0, 1, 1.0)):
            assert outsider.request(msg)[0].status == Status.DENIED
        server.service.allow(OUTSIDER, 0, ALLOW_INSERT)
        assert outsider.request(protocol.insert(0, payload(1), ack=True))[0].ok
        assert outsider.request(protocol.sample(0, 1))[0].status == Status.DENIED
    finally:
        outsider.close()
    assert server.service.tables[0].size == 1


def test_admin_hosts_get_the_cpu_ops(server: HostServer) -> None:
    admin = HostServer(server.service, ("127.0.0.1", 0), admins=["127.0.0.1"]).start()
    peer = RawPeer(admin.address)
    try:
        peer.request(protocol.insert(0, payload(4), ack=True))
        got = peer.request(protocol.read(0, 0))[0]
        assert got.ok and got.payload == payload(4)
        assert peer.request(protocol.reset(0))[0].ok
        assert server.service.tables[0].size == 0
    finally:
        peer.close()
        admin.stop()


def test_random_datagrams_never_crash_or_change_storage(server: HostServer) -> None:
    owner = RawPeer(server.address)
    for i in range(8):
        owner.request(protocol.insert(0, payload(i), ack=True))
    table = server.service.tables[0]
    before = (table.stamps.copy(), table.payloads.copy(), table.tree.leaves())
    rng = random.Random(5)
    outsider = RawPeer(server.address, bind_ip=OUTSIDER)
    valid = protocol.encode(protocol.insert(0, payload(99)))
    try:
        for k in range(1500):
            if k % 2:
                data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 140)))
            else:  # near misses: a valid insert with a byte changed, cut or extended
                buf = bytearray(valid)
                buf[rng.randrange(len(buf))] = rng.getrandbits(8)
                data = bytes(buf[: rng.randrange(len(buf) + 1)]) + b"x" * rng.randrange(3)
            (outsider if k % 3 else owner).send(data if k % 3 else data[:60])
        probe = RawPeer(server.address)  # a fresh socket: the others' buffers may be full
        assert probe.request(protocol.sample(0, 2, request_id=1234), 2)[0].request_id == 1234
        probe.close()
    finally:
        owner.close()
        outsider.close()
    assert server.internal_errors == 0
    after = (table.stamps, table.payloads, table.tree.leaves())
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_parse_allow() -> None:
    assert parse_allow("198.18.0.2") == ("198.18.0.2", 7)
    assert parse_allow("198.18.0.2:is") == ("198.18.0.2", ALLOW_INSERT | ALLOW_SAMPLE)
    for bad in ("198.18.0.2:x", ":i", "notanip"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_allow(bad)


def test_entry_point_serves_and_stops_on_sigterm() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "agent.host_server", "--bind", "127.0.0.1",
                             "--port", str(port), "--capacity", "16", "--allow", "127.0.0.1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("host replay server on 127.0.0.1:")
        peer = RawPeer(("127.0.0.1", port))
        assert peer.request(protocol.insert(0, payload(1), ack=True))[0].ok
        peer.close()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "table 0 INSERT OK: 1" in out
