"""The host replay server over loopback UDP: the switch's answers, from a host."""

from __future__ import annotations

import argparse
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import (
    ALLOW_INSERT,
    ALLOW_SAMPLE,
    PRIORITY_ONE,
    Message,
    Mode,
    Op,
    Status,
)
from agent.orchestration import launch
from agent.replay.host_server import (
    DEFAULT_BURST,
    HostServer,
    Pacer,
    Pacing,
    build_service,
    parse_allow,
)
from agent.replay.memory import TableConfig
from agent.replay.server_process import ServerProcess
from tests.agent.replay.raw_peer import LOOPBACK, OUTSIDER, RawPeer


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


def test_insert_limit_refuses_inserts_as_the_switch_does() -> None:
    service = build_service([0], TableConfig(capacity=8), [(LOOPBACK, ALLOW_INSERT)],
                            insert_limit=0)
    server = HostServer(service, (LOOPBACK, 0)).start()
    peer = RawPeer(server.address)
    try:
        for ack in (True, False):  # a refusal is answered with or without ACK
            reply = peer.request(protocol.insert(0, payload(1), ack=ack, request_id=3))[0]
            assert (reply.status, reply.size) == (Status.RATE_LIMITED, 0)
        assert service.tables[0].size == 0
        assert service.count(0, Op.INSERT, Status.RATE_LIMITED) == 2
    finally:
        peer.close()
        server.stop()


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
    for bad, why in (("198.18.0.2:x", "--allow wants IP or IP:OPS (OPS from 'isu'): "),
                     (":i", "--allow: '' is not an IPv4 address"),
                     ("notanip", "--allow: 'notanip' is not an IPv4 address")):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(why)):
            parse_allow(bad)


def test_entry_point_serves_and_stops_on_sigterm() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "agent.replay.host_server",
                             "--bind", "127.0.0.1",
                             "--port", str(port), "--capacity", "16", "--allow", "127.0.0.1",
                             "--rate", "100000", "--burst", "8"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.startswith("host replay server on 127.0.0.1:")
        assert ready.rstrip().endswith("pacing: 100000 replies/s, bursts of 8")
        peer = RawPeer(("127.0.0.1", port))
        assert peer.request(protocol.insert(0, payload(1), ack=True))[0].ok
        replies = peer.request(protocol.sample(0, 64, request_id=3), 64)
        assert [r.index for r in replies] == list(range(64))
        peer.close()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "table 0 INSERT OK: 1" in out
    assert "pacing: 100000 replies/s, bursts of 8," in out


# --- pacing ------------------------------------------------------------------------------

class FakeClock:
    """A clock that only moves when slept on (or advanced by the test)."""

    def __init__(self, oversleep: float = 0.0) -> None:
        self.now = 0.0
        self.oversleep = oversleep
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds + self.oversleep


def send_times(pacer: Pacer, clock: FakeClock, count: int, spacing: float = 0.0) -> list[float]:
    """When each of `count` replies would leave, `spacing` seconds of work after each."""
    times = []
    for _ in range(count):
        pacer.wait()
        times.append(clock.now)
        clock.now += spacing
    return times


def conforms(times: list[float], pacing: Pacing) -> bool:
    """Token-bucket conformance: any k consecutive replies span >= (k - burst) / rate."""
    return all(j - i + 1 <= pacing.burst + pacing.rate * (times[j] - times[i]) + 1e-9
               for i in range(len(times)) for j in range(i, len(times)))


def test_pacer_sends_a_burst_then_one_reply_per_token() -> None:
    clock = FakeClock()
    pacing = Pacing(rate=1000.0, burst=4)
    pacer = Pacer(pacing, clock=clock, sleep=clock.sleep)
    times = send_times(pacer, clock, 10)
    assert times == pytest.approx([0, 0, 0, 0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006])
    assert pacer.pauses == 6 and conforms(times, pacing)
    clock.now += 1.0  # idle: the bucket fills up to `burst`, not beyond
    times = send_times(pacer, clock, 6)
    assert times == pytest.approx([1.006] * 4 + [1.007, 1.008])


@pytest.mark.parametrize(("rate", "burst", "spacing", "oversleep"), [
    (20_000.0, 32, 0.0, 0.0),
    (20_000.0, 32, 20e-6, 0.0),
    (5_000.0, 8, 30e-6, 150e-6),  # time.sleep overshoots: the bucket absorbs it
    (50_000.0, 1, 0.0, 60e-6),
])
def test_pacer_never_exceeds_rate_and_burst(rate: float, burst: int, spacing: float,
                                            oversleep: float) -> None:
    clock = FakeClock(oversleep)
    pacing = Pacing(rate, burst)
    times = send_times(Pacer(pacing, clock=clock, sleep=clock.sleep), clock, 300, spacing)
    assert conforms(times, pacing)
    assert times[-1] >= (300 - burst) / rate - 1e-9


def test_pacer_lets_sparse_replies_through_and_unpaced_never_waits() -> None:
    clock = FakeClock()
    pacer = Pacer(Pacing(rate=1000.0, burst=2), clock=clock, sleep=clock.sleep)
    send_times(pacer, clock, 50, spacing=0.002)  # one reply per 2 ms, under 1000/s
    assert pacer.pauses == 0 and clock.sleeps == []
    unpaced = Pacer(Pacing(), clock=clock, sleep=clock.sleep)
    send_times(unpaced, clock, 300)
    assert unpaced.pauses == 0 and clock.sleeps == []


def test_pacing_parse_and_server_options() -> None:
    assert Pacing.parse("off") == Pacing() and not Pacing().paced
    assert Pacing.parse("20000:16") == Pacing(20000.0, 16)
    assert Pacing.parse("5000") == Pacing(5000.0, DEFAULT_BURST)
    assert Pacing(20000.0, 16).args() == ["--rate", "20000", "--burst", "16"]
    assert Pacing().args() == []
    for p in (Pacing(), Pacing(20000.0, 16), Pacing(2500.5, 1)):
        assert Pacing.parse(p.spec()) == p
    for bad in ("0", "-5:4", "100:0", "fast", "inf"):
        why = "RATE must be > 0 (or 'off')" if bad == "0" else "pacing wants 'off' or RATE"
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(why)):
            Pacing.parse(bad)
    proc = ServerProcess("198.18.0.2", [0], TableConfig(), ["198.18.0.1"], Path("x.log"),
                         pacing=Pacing(8000.0, 24))
    assert proc.command()[-4:] == ["--rate", "8000", "--burst", "24"]
    args = launch.parse_args(["--backend", "host", "--host-pacing", "8000:24"])
    assert args.host_pacing == Pacing(8000.0, 24)
    assert launch.parse_args([]).host_pacing == Pacing()


def test_paced_server_sends_every_reply_in_index_order(server: HostServer,
                                                       peer: RawPeer) -> None:
    clock = FakeClock()  # time stands still: after the burst, every reply waits a token
    server.pacer = Pacer(Pacing(rate=1e6, burst=4), clock=clock, sleep=clock.sleep)
    server.service.tables[1].config = TableConfig(capacity=64, max_batch=64,
                                                  default_mode=Mode.UNIFORM)
    for i in range(8):
        peer.request(protocol.insert(1, payload(i), ack=True))
    assert server.pacer.pauses == 8 - 4
    replies = peer.request(protocol.sample(1, 40, request_id=9), 40)
    assert [r.index for r in replies] == list(range(40))
    assert all(r.ok and r.request_id == 9 for r in replies)
    assert server.pacer.pauses == 4 + 40  # the bucket stays empty across requests
    assert peer.none_within()
