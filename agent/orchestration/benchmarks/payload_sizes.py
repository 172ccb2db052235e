"""SAMPLE 32 per payload size: what a batch costs the Learner when experiences are
64 B in the slot, 1 KB by reference and an Atari transition (56 448 B) by reference,
in-network and through the host replay server.

    in-network   SAMPLE from the switch; payloads by reference fetched from the
                 Actors' payload stores (actor1, actor2: one FETCH per store)
    host         SAMPLE from the host replay server; payloads by reference fetched
                 from a payload store on the replay host itself, the server's host
                 keeping the bytes (one FETCH)

For each (backend, size) the benchmark table is filled with a full ring of
experiences of that size (so every draw is one of them), then SAMPLE 32 with every
payload resolved is timed one batch at a time: p50 and p99 latency, experiences/s,
and the samples that came back missing (none expected).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from agent.contract.protocol import NUM_SLOTS, Mode
from agent.orchestration.benchmarks.bed import CLIENT_HOST, SERVER_HOST, NetworkBed
from agent.orchestration.benchmarks.harness import Figures, progress
from agent.replay.client import ReplayClient
from agent.replay.payload_store import PayloadServer, PayloadStore
from agent.replay.reference import decode_reference, encode_reference, rows_to_payloads
from agent.replay.resolver import PayloadResolver
from bmv2.testbed.netns import inside

BATCH = 32
SIZES = {"64B_slot": 0, "1KB_ref": 1024, "atari_ref": 2 * 4 * 84 * 84}  # 0: in the slot
ACTOR_HOSTS = ("actor1", "actor2")
INSERT_CHUNK = 256


@dataclass(frozen=True)
class PayloadBudget:
    reps: int = 30
    seconds: float = 4.0
    fill: int = NUM_SLOTS  # experiences inserted per (backend, size): a full ring


@contextmanager
def stores(bed: NetworkBed, hosts: tuple[str, ...], capacity: int) -> Iterator[
        list[PayloadServer]]:
    """A payload store serving from each of `hosts`' namespaces."""
    made: list[PayloadServer] = []
    try:
        for host in hosts:
            with inside(bed.testbed.ns_name(host)):
                made.append(PayloadServer(PayloadStore(capacity),
                                          (bed.cfg.host(host).ip, 0)).start())
        yield made
    finally:
        for s in made:
            s.stop()


def fill(client: ReplayClient, servers: list[PayloadServer], size: int, count: int) -> None:
    """`count` experiences of `size` bytes: in the slot (0), else by reference to the
    stores, round robin; the same bytes each time (what is timed is moving them)."""
    data = os.urandom(size or 64)
    payloads = []
    for i in range(count):
        if size == 0:
            payloads.append(data)
            continue
        server = servers[i % len(servers)]
        ref = server.store.reference(data, server.address, i % len(servers), bytes(36))
        payloads.append(encode_reference(ref))
    for i in range(0, count, INSERT_CHUNK):
        client.insert_many(payloads[i:i + INSERT_CHUNK], [1.0] * len(payloads[i:i + INSERT_CHUNK]))


def time_batches(client: ReplayClient, resolver: PayloadResolver | None,
                 budget: PayloadBudget) -> tuple[list[float], int]:
    """Seconds per SAMPLE 32 with its payloads resolved, and the samples missing."""
    times, missing = [], 0
    deadline = time.monotonic() + budget.seconds
    while len(times) < budget.reps and time.monotonic() < deadline:
        start = time.perf_counter()
        batch = client.sample(BATCH, Mode.UNIFORM)
        if resolver is not None:
            refs = [decode_reference(p) for p in rows_to_payloads(batch.payload)]
            missing += sum(d is None for d in resolver.fetch(refs))
        missing += BATCH - len(batch)
        times.append(time.perf_counter() - start)
    return times, missing


def payload_figures(bed: NetworkBed, budget: PayloadBudget = PayloadBudget(),
                    backends: tuple[str, ...] = ("switch", "host")) -> Figures:
    """payload.<backend>.<size>.{p50_ms, p99_ms, experiences_per_s, missing}."""
    out: Figures = {}
    learner_ip = bed.cfg.host(CLIENT_HOST).ip
    for backend in backends:
        hosts = ACTOR_HOSTS if backend == "switch" else (SERVER_HOST,)
        client = bed.client(backend)
        with inside(bed.testbed.ns_name(CLIENT_HOST)):
            resolver = PayloadResolver((learner_ip, 0))
        try:
            with stores(bed, hosts, budget.fill) as servers:
                for name, size in SIZES.items():
                    progress(f"{bed.kind}: SAMPLE {BATCH} of {name} payloads, {backend}")
                    fill(client, servers, size, budget.fill)
                    times, missing = time_batches(client, resolver if size else None, budget)
                    key = f"payload.{backend}.{name}"
                    ms = np.array(times) * 1e3
                    out[f"{key}.p50_ms"] = float(np.percentile(ms, 50))
                    out[f"{key}.p99_ms"] = float(np.percentile(ms, 99))
                    out[f"{key}.experiences_per_s"] = BATCH * len(times) / float(np.sum(times))
                    out[f"{key}.missing"] = float(missing)
        finally:
            client.close()
            resolver.close()
    return out
