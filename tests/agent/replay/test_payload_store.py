"""Payloads by reference on loopback: an Actor's store and its server, the Learner's
resolver. A payload comes back only as stored; every other case is a counted miss."""

from __future__ import annotations

import os
import time
import zlib

import pytest

from agent.replay.payload_store import PayloadServer, PayloadStore
from agent.replay.reference import Reference
from agent.replay.resolver import FetchPolicy, PayloadResolver

LOOPBACK = "127.0.0.1"
FAST = FetchPolicy(timeout=0.1, retries=1, holdoff=30.0)


@pytest.fixture
def servers():
    made: list[PayloadServer] = []

    def make(capacity: int = 8, epoch: int | None = None) -> PayloadServer:
        made.append(PayloadServer(PayloadStore(capacity, epoch), (LOOPBACK, 0)).start())
        return made[-1]

    yield make
    for s in made:
        s.stop()


@pytest.fixture
def resolver():
    r = PayloadResolver((LOOPBACK, 0), FAST)
    yield r
    r.close()


def store(server: PayloadServer, payload: bytes, actor: int = 0) -> Reference:
    return server.store.reference(payload, server.address, actor, bytes(36))


def test_the_store_keeps_the_last_capacity_payloads() -> None:
    s = PayloadStore(3, epoch=5)
    seqs = [s.put(bytes([i])) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert [s.get(q) for q in seqs] == [None, None, b"\x02", b"\x03", b"\x04"]
    assert s.get(99) is None


def test_a_batch_spread_over_every_actor_comes_back_byte_identical(servers, resolver) -> None:
    owners = [servers(capacity=64) for _ in range(4)]
    refs, payloads = [], []
    for i in range(40):  # sizes from a few bytes to an Atari transition
        data = os.urandom(7 + (i * 1499) % 60000)
        refs.append(store(owners[i % 4], data, actor=i % 4))
        payloads.append(data)
    got = resolver.fetch(refs)
    assert got == payloads
    stats = resolver.stats()
    assert stats["fetched"] == 40 and stats["requests"] == 4  # one request per owner
    assert [s.counts["requests"] for s in owners] == [1, 1, 1, 1]


def test_an_evicted_payload_is_a_counted_missing_sample(servers, resolver) -> None:
    owner = servers(capacity=4)
    refs = [store(owner, bytes([i]) * 10) for i in range(6)]  # the first two evicted
    got = resolver.fetch(refs)
    assert got[:2] == [None, None]
    assert got[2:] == [bytes([i]) * 10 for i in range(2, 6)]
    assert resolver.stats()["missing"] == 2
    assert owner.counts["missing"] == 2


def test_a_restarted_actor_answers_stale_not_another_payload(servers, resolver) -> None:
    """Same address, same sequence numbers, a new store: the old references are stale."""
    old = servers(epoch=1)
    ref = store(old, b"old payload")
    port = old.address[1]
    old.stop()
    new = PayloadServer(PayloadStore(8, epoch=2), (LOOPBACK, port)).start()
    try:
        assert store(new, b"new payload").seq == ref.seq
        assert resolver.fetch([ref]) == [None]
        assert resolver.stats()["stale"] == 1
    finally:
        new.stop()


def test_bytes_that_do_not_match_the_reference_are_never_returned(servers, resolver) -> None:
    owner = servers()
    ref = store(owner, b"what was stored")
    owner.store._ring[ref.seq % owner.store.capacity] = (ref.seq, b"something else!")
    assert resolver.fetch([ref]) == [None]
    assert resolver.stats()["corrupt"] == 1
    assert zlib.crc32(b"what was stored") == ref.crc


def test_a_dead_owner_is_missing_within_the_retry_bound_then_held_off(servers,
                                                                      resolver) -> None:
    alive, dead = servers(), servers()
    refs = [store(alive, b"a"), store(dead, b"b"), store(alive, b"c")]
    dead.stop()
    started = time.monotonic()
    assert resolver.fetch(refs) == [b"a", None, b"c"]
    bound = FAST.timeout * (1 + FAST.backoff) + 0.5
    assert time.monotonic() - started < bound
    assert resolver.stats()["unanswered"] == 1
    started = time.monotonic()  # held off: no wait for it on the next batch
    assert resolver.fetch(refs) == [b"a", None, b"c"]
    assert time.monotonic() - started < FAST.timeout
    assert resolver.stats()["held_off"] == 1


def test_a_lost_reply_is_asked_for_again(servers, resolver) -> None:
    owner = servers()
    refs = [store(owner, b"x" * 100), store(owner, b"y" * 100)]
    dropped = []
    real = owner.handle

    def lose_first(data: bytes, peer: tuple[str, int]) -> None:
        if not dropped:
            dropped.append(data)
            return
        real(data, peer)

    owner.handle = lose_first  # type: ignore[method-assign]
    assert resolver.fetch(refs) == [b"x" * 100, b"y" * 100]
    assert resolver.stats()["retries"] == 1 and len(dropped) == 1


def test_a_payload_too_large_for_a_datagram_is_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        PayloadStore(2).put(bytes(70000))
