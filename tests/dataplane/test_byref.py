"""Payloads by reference through the switch: actors in their namespaces insert
references and keep the bytes, the learner samples the references from the switch
and fetches the bytes from the actors across it. Run on every switch present."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.contract import protocol
from agent.contract.protocol import REPLAY_UDP_PORT, Mode
from agent.replay.client import ReplayClient, RetryPolicy, make_client
from agent.replay.payload_store import PayloadServer, PayloadStore
from agent.replay.reference import (
    Reference,
    decode_reference,
    encode_reference,
    rows_to_payloads,
)
from agent.replay.resolver import FetchPolicy, PayloadResolver
from bmv2.testbed.netns import inside
from bmv2.testbed.netns_bed import Testbed
from controller import config
from controller.inband import InbandChannel
from tests import needs

pytestmark = pytest.mark.netns

CONFIG = Path(__file__).with_name("byref.yaml")
ACTORS = ("actor1", "actor2", "actor3")
POLICY = FetchPolicy(timeout=0.5, retries=2, holdoff=60.0)
ATARI_TRANSITION = 2 * 4 * 84 * 84   # two stacked 84x84 frames of 4: 56448 bytes


@dataclass
class Actor:
    """An actor's replay client and payload store, in its namespace."""

    name: str
    index: int
    client: ReplayClient
    server: PayloadServer
    stored: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (epoch, seq)

    def insert(self, payload: bytes) -> Reference:
        ref = self.server.store.reference(payload, self.server.address, self.index, bytes(36))
        self.stored[(ref.epoch, ref.seq)] = payload
        self.client.insert(encode_reference(ref))
        return ref


class ByRefBed:
    """The testbed, the learner's client and resolver, and an Actor per actor host."""

    def __init__(self, kind: str, log_dir: Path) -> None:
        self.bed = Testbed(config.load(CONFIG), kind, log_dir=log_dir)
        self.actors: dict[str, Actor] = {}

    def start(self) -> ByRefBed:
        self.bed.start()
        cfg = self.bed.config
        vip = (cfg.vip, REPLAY_UDP_PORT)
        learner = cfg.host("learner")
        with inside(self.bed.ns_name("learner")):
            self.learner = make_client("switch", address=vip, bind=(learner.ip, 0),
                                       policy=RetryPolicy(timeout=1.0))
            self.resolver = PayloadResolver((learner.ip, 0), POLICY)
        for i, name in enumerate(ACTORS):
            self.actors[name] = self.actor(name, i, capacity=64)
            self.warm_up(self.actors[name])
        assert self.bed.session is not None
        self.inband = InbandChannel(self.bed.session, cfg.vip, cfg.vip_mac, timeout=10)
        return self

    def actor(self, name: str, index: int, capacity: int, port: int = 0,
              epoch: int | None = None) -> Actor:
        host = self.bed.config.host(name)
        with inside(self.bed.ns_name(name)):
            client = make_client("switch", address=(self.bed.config.vip, REPLAY_UDP_PORT),
                                 bind=(host.ip, 0), ack_inserts=True)
            server = PayloadServer(PayloadStore(capacity, epoch), (host.ip, port)).start()
        return Actor(name, index, client, server)

    def warm_up(self, actor: Actor) -> None:
        """One small fetch each way, so that ARP has resolved both hosts before a test's
        first large reply (fragments queued behind an unresolved neighbour may be dropped)."""
        store = actor.server.store
        probe = Reference(*actor.server.address, actor.index, store.epoch, 0, 0, 0)
        assert self.resolver.fetch([probe]) == [None]
        assert self.resolver.stats()["missing"] >= 1

    def replace_store(self, name: str, capacity: int, same_port: bool = True) -> Actor:
        old = self.actors[name]
        port = old.server.address[1] if same_port else 0
        old.server.stop()
        new = self.actor(name, old.index, capacity, port, epoch=old.server.store.epoch ^ 1)
        new.client.close()
        new.client = old.client
        self.actors[name] = new
        self.warm_up(new)
        return new

    def stop(self) -> None:
        for a in self.actors.values():
            a.server.stop()
            a.client.close()
        self.learner.close()
        self.resolver.close()
        self.bed.stop()

    def reset(self) -> None:
        (reply,) = self.inband.request(protocol.reset(0))
        assert reply.ok, reply.status_name()

    def sample(self, n: int) -> tuple[list[Reference], list[bytes | None]]:
        batch = self.learner.sample(n, Mode.UNIFORM)
        refs = [decode_reference(p) for p in rows_to_payloads(batch.payload)]
        return refs, self.resolver.fetch(refs)

    def stored(self, ref: Reference) -> bytes:
        by_index = {a.index: a for a in self.actors.values()}
        return by_index[ref.actor].stored[(ref.epoch, ref.seq)]


@pytest.fixture(scope="module", params=["python", "bmv2", "tna"])
def bed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    needs.testbed(request.param)
    b = ByRefBed(request.param, tmp_path_factory.mktemp(f"byref-{request.param}"))
    try:
        yield b.start()
    finally:
        b.stop()


@pytest.fixture
def clean(bed: ByRefBed) -> ByRefBed:
    bed.reset()
    bed.resolver.counts.clear()
    return bed


def test_a_batch_spread_over_every_actor_comes_back_as_stored(clean: ByRefBed) -> None:
    sizes = (48, 1024, ATARI_TRANSITION)  # Acrobot, 1 KB, an Atari transition (fragmented)
    for k in range(6):
        for actor in clean.actors.values():
            actor.insert(os.urandom(sizes[k % 3]))
    refs, got = clean.sample(48)
    assert len(refs) == 48
    assert {r.actor for r in refs} == {0, 1, 2}          # drawn from every actor's inserts
    assert got == [clean.stored(r) for r in refs]         # each one as its actor stored it
    stats = clean.resolver.stats()
    assert stats["fetched"] == 48 and stats["requests"] == 3  # one request per owner


def test_a_payload_its_actor_evicted_is_a_missing_sample(clean: ByRefBed) -> None:
    """A store smaller than the table: the table still holds references to payloads
    the actor no longer has."""
    small = clean.replace_store("actor1", capacity=4, same_port=False)
    before = clean.resolver.stats()["missing"]  # the new store's warm-up probe
    refs = [small.insert(bytes([i]) * 100) for i in range(12)]
    kept = {r.seq for r in refs[-4:]}
    sampled, got = clean.sample(64)
    for ref, data in zip(sampled, got, strict=True):
        assert data == (clean.stored(ref) if ref.seq in kept else None)
    evicted = sum(r.seq not in kept for r in sampled)
    assert evicted > 0 and clean.resolver.stats()["missing"] - before == evicted
    clean.replace_store("actor1", capacity=64, same_port=False)


def test_a_restarted_actor_gives_no_payload_for_an_old_reference(clean: ByRefBed) -> None:
    """The same address and sequence numbers, a new store: every old reference is stale."""
    old = clean.actors["actor2"]
    refs = [old.insert(b"old" * 50) for _ in range(5)]
    new = clean.replace_store("actor2", capacity=64, same_port=True)
    assert new.server.address == old.server.address
    while new.server.store.last_seq < refs[-1].seq:  # the old numbers, other payloads
        new.server.store.put(b"new" * 50)
    assert all(new.server.store.get(r.seq) == b"new" * 50 for r in refs)
    _, got = clean.sample(16)
    assert got == [None] * 16
    assert clean.resolver.stats()["stale"] == 16


def test_a_dead_actor_costs_missing_samples_not_the_batch(clean: ByRefBed) -> None:
    for actor in clean.actors.values():
        for _ in range(4):
            actor.insert(os.urandom(200))
    dead = clean.actors["actor3"]
    dead.server.stop()
    started = time.monotonic()
    sampled, got = clean.sample(32)
    took = time.monotonic() - started
    for ref, data in zip(sampled, got, strict=True):
        assert data == (None if ref.actor == dead.index else clean.stored(ref))
    lost = sum(r.actor == dead.index for r in sampled)
    assert lost > 0 and clean.resolver.stats()["unanswered"] == lost
    assert took < POLICY.timeout * (1 + POLICY.backoff + POLICY.backoff ** 2) + 5.0
    clean.replace_store("actor3", capacity=64, same_port=False)
