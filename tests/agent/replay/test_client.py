"""ReplayClient: one API over the inprocess and UDP backends, and UDP loss handling."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.protocol import ALLOW_ALL, HEADER, Mode, Op, Status
from agent.replay import client as replay_client
from agent.replay.client import (
    ReplayClient,
    ReplayRefused,
    ReplayTimeout,
    RetryPolicy,
    RttEstimator,
    make_client,
)
from agent.replay.host_server import HostServer
from agent.replay.memory import ReplayService, TableConfig
from tests.agent.replay.lossy_proxy import LossyProxy

FAST = RetryPolicy(timeout=0.05, retries=6, backoff=1.5, max_timeout=0.3)


def payloads(n: int, start: int = 0) -> list[bytes]:
    return [protocol.floats_to_payload([i]) for i in range(start, start + n)]


@pytest.fixture(params=["inprocess", "host"])
def client(request: pytest.FixtureRequest, server: HostServer) -> Iterator[ReplayClient]:
    """The same client API over both local backends, on table 0 of the `server` config."""
    if request.param == "inprocess":
        c = make_client("inprocess", service=server.service, ack_inserts=True, ack_updates=True)
    else:
        c = make_client("host", address=server.address, ack_inserts=True, ack_updates=True,
                        policy=FAST)
    yield c
    c.close()


def test_insert_sample_update_round_trip(client: ReplayClient) -> None:
    with pytest.raises(ReplayRefused) as refused:
        client.sample(4)
    assert refused.value.status == Status.BELOW_MIN_SIZE
    acks = client.insert_many(payloads(5), priorities=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert [a.slot for a in acks] == [0, 1, 2, 3, 4]
    assert client.insert(payloads(1, 5)[0]).priority == 5 * protocol.PRIORITY_ONE  # running max
    batch = client.sample(16, Mode.PRIORITIZED)
    assert len(batch) == 16 and set(batch.size) == {6} and set(batch.total) == {20.0}
    assert np.array_equal(batch.payload[:, 0], batch.slot.astype(np.float32))
    assert client.update(batch.slot[:3], batch.stamp[:3], [0.5, 0.5, 0.5]) == 0
    assert client.update([0], [99], [1.0]) == 1  # a stale stamp
    stats = client.stats()
    assert (stats["inserts"], stats["samples"], stats["updates"], stats["stale"]) == (6, 16, 3, 1)
    assert stats["refused"] == 1 and stats["timeouts"] == 0


@pytest.mark.parametrize("backend", ["inprocess", "host"])
def test_update_sends_batches_of_sixteen_and_merges_repeats(server: HostServer,
                                                            backend: str) -> None:
    c = make_client(backend, service=server.service, address=server.address, table=1,
                    ack_inserts=True, ack_updates=True, policy=FAST)
    acks = c.insert_many(payloads(40), priorities=[1.0] * 40)
    slots = [a.slot for a in acks] + [acks[0].slot]
    stamps = [a.stamp for a in acks] + [acks[0].stamp]
    stamps[5] += 100  # stale
    prios = [2.0] * 40 + [9.0]  # slot 0 twice: the last priority wins
    assert c.update(slots, stamps, prios) == 1
    stats = c.stats()
    assert stats["update_requests"] == 3  # 40 distinct entries: 16 + 16 + 8
    assert (stats["updates"], stats["stale"]) == (41 - 1, 1)
    got = server.service.tables[1].priorities
    assert got[acks[0].slot] == 9 * protocol.PRIORITY_ONE
    assert got[acks[5].slot] == protocol.PRIORITY_ONE
    assert got[acks[6].slot] == 2 * protocol.PRIORITY_ONE
    assert server.service.count(1, Op.UPDATE_BATCH, Status.OK) == 39
    c.close()


def test_prefetching_sampler_keeps_requests_in_flight(client: ReplayClient) -> None:
    client.insert_many(payloads(8))
    sampler = client.sampler(4, Mode.UNIFORM, depth=3)
    batches = [next(sampler) for _ in range(5)]
    assert all(len(b) == 4 for b in batches)
    assert sampler.in_flight == 3  # sent ahead while the caller works on a batch
    stats = client.stats()
    assert stats["sample_batches"] == 5 and stats["samples"] == 20


def test_fire_and_forget_refusals_are_counted_not_raised(server: HostServer) -> None:
    c = make_client("host", address=server.address, table=3, policy=FAST)
    c.insert(payloads(1)[0])  # table 3 is not configured: an UNKNOWN_TABLE reply comes back
    with pytest.raises(ReplayRefused) as refused:
        c.sample(1)  # drains the insert's error first, then is refused itself
    assert refused.value.status == Status.UNKNOWN_TABLE
    assert c.stats()["refused"] == 2 and c.stats()["inserts"] == 1
    c.close()


def test_acked_inserts_count_once_under_loss_and_duplication(server: HostServer) -> None:
    proxy = LossyProxy(server.address, loss=0.2, duplicate=0.2, seed=1)
    # an attempt succeeds with p = 0.8 * 0.8; 16 attempts all fail with p = 0.36**16 ~ 1e-7
    patient = RetryPolicy(timeout=0.05, retries=15, backoff=1.2, max_timeout=0.2)
    c = make_client("host", address=proxy.address, ack_inserts=True, ack_updates=True,
                    policy=patient)
    try:
        acks = c.insert_many(payloads(150))
        stats = c.stats()
        assert len(acks) == 150 and stats["inserts"] == 150
        assert stats["retries"] > 0 and stats["timeouts"] == 0
        assert server.service.tables[0].sequence >= 150  # at least once (retries may repeat)
        batches = [c.sample(16, Mode.UNIFORM) for _ in range(8)]
        assert sum(len(b) for b in batches) == c.stats()["samples"]
        assert all(len(b) <= 16 for b in batches)
        stale = c.update(batches[0].slot, batches[0].stamp, np.ones(len(batches[0])))
        assert c.stats()["updates"] + stale == len(batches[0])
        assert c.stats()["dropped_replies"] > 0  # duplicates were seen and dropped
    finally:
        c.close()
        proxy.close()


def _reply_index(data: bytes) -> int:
    return HEADER.unpack_from(data)[6]


def test_lost_sample_replies_are_topped_up(server: HostServer) -> None:
    server.service.tables[0].config = TableConfig(capacity=8, min_size=1, max_batch=16)
    fill = make_client("inprocess", service=server.service)
    fill.insert_many(payloads(8))
    first_request = {"seen": False}

    def drop_index_3_once(direction: str, data: bytes) -> bool:
        if direction == "down" and _reply_index(data) == 3 and not first_request["seen"]:
            first_request["seen"] = True
            return True
        return False

    proxy = LossyProxy(server.address, drop=drop_index_3_once)
    c = make_client("host", address=proxy.address, policy=RetryPolicy(timeout=0.2, retries=4))
    try:
        batch = c.sample(10, Mode.UNIFORM)
        assert len(batch) == 10
        assert c.stats()["retries"] >= 1 and c.stats()["partial_batches"] == 0
    finally:
        c.close()
        proxy.close()


def _unwritten_table(service: ReplayService, written: list[int], size: int) -> None:
    """Table 0 as a restore can leave it: `size` slots counted, only `written` written."""
    cpu = "198.18.255.254"
    for slot in written:
        (ok,) = service.handle(protocol.write(0, slot, 9, protocol.PRIORITY_ONE,
                                              payloads(1, slot)[0]), cpu, from_cpu=True)
        assert ok.ok
    (ok,) = service.handle(protocol.set_state(0, pointer=size, sequence=9, size=size,
                                              max_priority_fixed=protocol.PRIORITY_ONE),
                           cpu, from_cpu=True)
    assert ok.ok


def test_not_ready_replies_are_missing_samples_topped_up_at_once(
        client: ReplayClient, server: HostServer) -> None:
    """Slot 1 written, slot 0 not: a reply that found slot 0 on every redraw says
    NOT_READY; the client asks again for it at once (no timeout, no retry counted) and
    the batch holds only slot 1's experience."""
    _unwritten_table(server.service, written=[1], size=2)
    client.policy = RetryPolicy(timeout=5.0, retries=8)
    began = time.monotonic()
    batch = client.sample(16, Mode.UNIFORM)
    assert time.monotonic() - began < 2.0
    assert len(batch) == 16 and set(batch.slot) == {1} and set(batch.stamp) == {9}
    assert np.all(batch.payload[:, 0] == 1.0)
    stats = client.stats()
    assert stats["not_ready"] == server.service.not_ready[0] > 0
    assert (stats["retries"], stats["timeouts"], stats["lost_replies"],
            stats["partial_batches"]) == (0, 0, 0, 0)


def test_a_batch_of_not_ready_replies_only_is_refused_not_ready(
        client: ReplayClient, server: HostServer) -> None:
    _unwritten_table(server.service, written=[], size=3)
    client.policy = RetryPolicy(timeout=5.0, retries=2)
    began = time.monotonic()
    with pytest.raises(ReplayRefused) as refused:
        client.sample(4, Mode.UNIFORM)
    assert refused.value.status == Status.NOT_READY
    assert time.monotonic() - began < 2.0
    stats = client.stats()
    assert stats["not_ready"] == 4 * 3 and stats["samples"] == 0 and stats["retries"] == 0


def test_rtt_estimator_follows_rfc6298_within_the_policy_bounds() -> None:
    policy = RetryPolicy(timeout=0.25, min_timeout=0.02)
    est = RttEstimator()
    est.observe(0.010)
    assert (est.srtt, est.rttvar) == (0.010, 0.005)
    est.observe(0.018)
    assert est.rttvar == pytest.approx(0.75 * 0.005 + 0.25 * 0.008)
    assert est.srtt == pytest.approx(0.875 * 0.010 + 0.125 * 0.018)
    assert est.timeout(policy) == 0.25  # not warmed up: the configured timeout
    est.observe(0.012)
    assert est.timeout(policy) == pytest.approx(est.srtt + 4 * est.rttvar)
    assert RttEstimator(srtt=0.001, samples=9).timeout(policy) == 0.02  # floor
    assert RttEstimator(srtt=1.0, samples=9).timeout(policy) == 0.25  # never above timeout
    assert RttEstimator(srtt=0.001, samples=9).timeout(RetryPolicy(adaptive=False)) == 0.25
    # only the first wait adapts; retries back off from the configured timeout
    assert [policy.timeout_for(k, 0.03) for k in range(3)] == [0.03, 0.5, 1.0]


@pytest.mark.parametrize("adaptive", [True, False])
def test_first_timeout_adapts_per_request_kind(server: HostServer, adaptive: bool) -> None:
    make_client("inprocess", service=server.service).insert_many(payloads(8))
    lossy = {"on": False}
    proxy = LossyProxy(server.address, drop=lambda d, data: lossy["on"] and d == "down"
                       and _reply_index(data) == 2)
    policy = RetryPolicy(timeout=0.25, retries=1, adaptive=adaptive, min_timeout=0.02)
    c = make_client("host", address=proxy.address, policy=policy)
    try:
        for _ in range(RttEstimator.WARMUP):
            assert len(c.sample(4, Mode.UNIFORM)) == 4
        fast = c.first_timeout(Op.SAMPLE, 4)
        assert c.first_timeout(Op.SAMPLE, 8) == 0.25  # another batch size: not timed yet
        lossy["on"] = True  # reply 2 of each request is lost from now on
        pending = c.sample_async(4, Mode.UNIFORM)
        assert pending.first_timeout == fast
        batch = c.wait(pending)  # the top-up asks for 1 more: its reply is index 0
        assert len(batch) == 4 and c.stats()["retries"] == 1
        assert c.stats()["lost_replies"] == 1  # reply 2, missing at the first deadline
        if adaptive:
            assert 0.02 <= fast < 0.25
        else:
            assert fast == 0.25
    finally:
        c.close()
        proxy.close()


def test_replies_that_arrived_while_the_caller_worked_are_not_retried(
        server: HostServer) -> None:
    make_client("inprocess", service=server.service).insert_many(payloads(8))
    c = make_client("host", address=server.address, policy=RetryPolicy(timeout=0.05))
    try:
        pending = c.sample_async(4, Mode.UNIFORM)
        time.sleep(0.2)  # the caller works past the deadline; the replies are waiting
        assert len(c.wait(pending)) == 4
        assert c.stats()["retries"] == 0 and c.stats()["dropped_replies"] == 0
        assert c.stats()["lost_replies"] == 0
    finally:
        c.close()


def test_partial_batch_is_returned_when_retries_run_out(server: HostServer) -> None:
    fill = make_client("inprocess", service=server.service)
    fill.insert_many(payloads(8))
    proxy = LossyProxy(server.address,
                       drop=lambda d, data: d == "down" and _reply_index(data) == 2)
    c = make_client("host", address=proxy.address, policy=RetryPolicy(timeout=0.3, retries=0))
    try:
        batch = c.sample(6, Mode.UNIFORM)
        assert len(batch) == 5 and 2 not in batch.index
        stats = c.stats()
        assert stats["partial_batches"] == 1 and stats["timeouts"] == 1
        assert stats["lost_replies"] == 1 and stats["retries"] == 0
    finally:
        c.close()
        proxy.close()


def test_a_nearly_complete_batch_is_taken_without_a_top_up(server: HostServer) -> None:
    """partial_ok: a batch with enough of its replies is done once they stop coming,
    before its timeout, with no top-up."""
    fill = make_client("inprocess", service=server.service)
    fill.insert_many(payloads(8))
    proxy = LossyProxy(server.address,
                       drop=lambda d, data: d == "down" and _reply_index(data) == 2)
    c = make_client("host", address=proxy.address,
                    policy=RetryPolicy(timeout=0.6, retries=3, partial_ok=0.8))
    try:
        began = time.monotonic()
        batch = c.sample(10, Mode.UNIFORM)  # 9/10 >= 0.8
        assert len(batch) == 9 and 2 not in batch.index
        assert time.monotonic() - began < 0.4  # partial_gap after the last reply, not 0.6 s
        stats = c.stats()
        assert stats["partial_batches"] == 1 and stats["retries"] == 0
    finally:
        c.close()
        proxy.close()


def test_no_answer_raises_replay_timeout_instead_of_hanging(server: HostServer) -> None:
    proxy = LossyProxy(server.address, loss=1.0)
    policy = RetryPolicy(timeout=0.02, retries=2, max_timeout=0.05)
    c = make_client("host", address=proxy.address, ack_inserts=True, policy=policy)
    try:
        with pytest.raises(ReplayTimeout):
            c.sample(4)
        with pytest.raises(ReplayTimeout):
            c.insert(payloads(1)[0])
        stats = c.stats()
        assert stats["timeouts"] == 2 and stats["retries"] == 4 and stats["inserts"] == 0
        assert stats["lost_replies"] == 3 * 4 + 3 * 1  # 3 deadlines each: 4 replies, 1 ACK
    finally:
        c.close()
        proxy.close()


def test_nothing_listening_is_a_timeout_too() -> None:
    service = ReplayService()
    service.configure(0, TableConfig())
    service.allow("127.0.0.1", 0, ALLOW_ALL)
    srv = HostServer(service, ("127.0.0.1", 0))
    address = srv.address
    srv.stop()  # the port is closed: ICMP unreachable comes back instead of replies
    c = make_client("host", address=address, policy=RetryPolicy(timeout=0.02, retries=1))
    with pytest.raises(ReplayTimeout):
        c.sample(1)
    c.close()


def test_make_client_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match=re.escape("backend 'switch' needs address=(ip, port)")):
        make_client("switch")
    with pytest.raises(ValueError, match=re.escape("backend 'inprocess' needs service=")):
        make_client("inprocess")
    with pytest.raises(ValueError, match="unknown backend 'carrier-pigeon'; choose from"):
        make_client("carrier-pigeon")


class SimClock:
    """Simulated time for the client (its module's `time`) and SerialService."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class SerialService:
    """A transport to a ReplayService that works on one request at a time, `service_s`
    simulated seconds each, and sends each request's replies when it is done; requests
    whose number (1, 2, ...) is in `drop` get no replies."""

    def __init__(self, clock: SimClock, service_s: float, drop: frozenset[int] = frozenset()):
        self.malformed = 0
        self.clock = clock
        self.service_s = service_s
        self.drop = drop
        self.received = 0
        self.busy_until = 0.0
        self.outbox: list[tuple[float, protocol.Message]] = []
        self.service = ReplayService(seed=1)
        self.service.configure(0, TableConfig(min_size=1))
        self.service.allow("127.0.0.1", 0, ALLOW_ALL)
        make_client("inprocess", service=self.service).insert_many(payloads(8))

    def send(self, msg: protocol.Message) -> None:
        self.received += 1
        self.busy_until = max(self.clock.now, self.busy_until) + self.service_s
        if self.received not in self.drop:
            self.outbox += [(self.busy_until, r) for r in self.service.handle(msg, "127.0.0.1")]

    def recv(self, timeout: float) -> protocol.Message | None:
        if self.outbox and self.outbox[0][0] <= self.clock.now + timeout:
            due, msg = self.outbox.pop(0)
            self.clock.now = max(self.clock.now, due)
            return msg
        self.clock.now += timeout
        return None

    def close(self) -> None:
        self.outbox.clear()


def test_requests_queued_behind_others_are_not_retried_early(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimClock()
    service = SerialService(clock, service_s=0.06)  # the third answer comes at 0.18 s
    monkeypatch.setattr(replay_client, "time", clock)
    c = ReplayClient(service, policy=RetryPolicy(timeout=0.1, retries=3, adaptive=False))
    pendings = [c.sample_async(4, Mode.UNIFORM) for _ in range(3)]
    assert [len(c.wait(p)) for p in pendings] == [4, 4, 4]
    assert clock.now == pytest.approx(0.18)
    assert c.stats()["retries"] == 0 and c.stats()["lost_replies"] == 0
    assert service.received == 3


def test_a_lost_answer_behind_others_is_still_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimClock()
    service = SerialService(clock, service_s=0.06, drop=frozenset({2}))
    monkeypatch.setattr(replay_client, "time", clock)
    c = ReplayClient(service, policy=RetryPolicy(timeout=0.1, retries=3, adaptive=False))
    pendings = [c.sample_async(4, Mode.UNIFORM) for _ in range(3)]
    assert [len(c.wait(p)) for p in pendings] == [4, 4, 4]
    # request 2's timer restarted when request 1 was answered (0.06 s), so it expired at
    # 0.16 s, which restarted request 3's (answered at 0.18 s, before 0.26 s); the top-up
    # queued behind request 3 and was answered at 0.24 s
    assert clock.now == pytest.approx(0.24)
    assert c.stats()["retries"] == 1 and c.stats()["lost_replies"] == 4
    assert service.received == 4


def test_a_dead_service_costs_one_extra_first_wait_not_one_per_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimClock()
    service = SerialService(clock, service_s=0.01, drop=frozenset(range(1, 10)))
    monkeypatch.setattr(replay_client, "time", clock)
    c = ReplayClient(service, policy=RetryPolicy(timeout=0.1, retries=1, adaptive=False))
    pendings = [c.sample_async(4, Mode.UNIFORM) for _ in range(4)]
    for p in pendings:
        with pytest.raises(ReplayTimeout):
            c.wait(p)
    # request 1 times out at 0.1 s and restarts the others' first wait once: they time
    # out together at 0.2 s, and all give up 0.2 s after their retry
    assert clock.now == pytest.approx(0.4)
    assert c.stats()["retries"] == 4 and c.stats()["timeouts"] == 4
