"""INSERT / SAMPLE / UPDATE figures through one ReplayClient (any backend).

One call of `measure` is one backend's share of a round:

    insert             latency of single INSERTs with ACK (p50 / p99) ...
    insert_rate        ... and ACKed INSERTs/s with the client's window of requests in flight
    sample.MODE.N      latency of one SAMPLE N (all N replies in) and experiences/s of
                       those requests back to back (one at a time), then experiences/s
                       with the learner's prefetch (INFLIGHT_DEPTH requests sent ahead of
                       the one awaited)
    sample.MODE.us_per_reply  least-squares slope of SAMPLE N p50 over N (µs per extra reply)
    sample.MODE.N.cpu.*  for the largest N, with a CpuMeter: µs of CPU per reply of
                       each watched process, its busiest thread and the client, and the
                       floor those costs put on the time per reply (cpu.py)
    update_rate        ACKed priority updates/s of slots just inserted, as the client sends
                       them (UPDATE_BATCHes of up to 16), with the window in flight

Every operation also gets `.retries`, `.lost` and `.late` (the client's retries,
replies missing at a deadline, and replies that came after all and were dropped
as surplus, while it ran), and the round the client's totals under `client.*`,
so loss is visible per operation: lost minus late is about what never came.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from agent.contract import protocol
from agent.contract.protocol import SAMPLING_MODES, Inserted
from agent.orchestration.benchmarks.cpu import CpuMeter, per_reply
from agent.orchestration.benchmarks.harness import Figures, latency_figures, timed_calls
from agent.replay.client import PendingRequest, ReplayClient
from agent.rl.hparams import Hyperparams

MODES = SAMPLING_MODES  # measured in this order
BATCH_SIZES = (1, 8, 32, 128)
CHUNK = 64  # insert_many / update calls per rate loop step
INFLIGHT_DEPTH = Hyperparams().prefetch_depth  # SAMPLEs sent ahead, as the learner does
LOSS_KEYS = {"retries": "retries", "lost": "lost_replies",  # figure suffix -> client stat
             "late": "dropped_replies"}
CLIENT_KEYS = ("retries", "timeouts", "lost_replies", "partial_batches", "stale")


@dataclass(frozen=True)
class OpsBudget:
    """Counts per measurement; each measurement also stops after `seconds`."""

    inserts: int = 300
    insert_rate: int = 1000
    sample_reps: int = 30
    updates: int = 1000
    seconds: float = 2.0
    batch_sizes: tuple[int, ...] = BATCH_SIZES


def _payload(rng: np.random.Generator) -> bytes:
    return protocol.floats_to_payload(rng.standard_normal(protocol.PAYLOAD_WORDS))


@contextmanager
def loss_counted(client: ReplayClient, figs: Figures, key: str) -> Iterator[None]:
    """Record the client's retries, lost and late replies within the block as
    `key`.retries, `key`.lost and `key`.late."""
    before = client.stats()
    yield
    after = client.stats()
    for suffix, stat in LOSS_KEYS.items():
        figs[f"{key}.{suffix}"] = float(after[stat] - before[stat])


def measure(client: ReplayClient, budget: OpsBudget, seed: int = 0,
            meter: CpuMeter | None = None) -> Figures:
    """One round of every replay op through `client` (CPU per reply of the largest
    batch with `meter`)."""
    rng = np.random.default_rng(seed)
    before = client.stats()
    payload = _payload(rng)
    figs: Figures = {}
    with loss_counted(client, figs, "insert"):
        lat = timed_calls(lambda: client.insert(payload), budget.inserts, budget.seconds)
    figs |= latency_figures("insert", lat)
    with loss_counted(client, figs, "insert_rate"):
        acks, figs["insert_rate.per_s"] = _insert_rate(client, budget, rng)
    for name, mode in MODES.items():
        for n in budget.batch_sizes:
            key = f"sample.{name}.{n}"
            metered = meter if n == max(budget.batch_sizes) else None
            cpu_before = metered.snapshot() if metered is not None else None
            with loss_counted(client, figs, key):
                lat = timed_calls(lambda n=n, mode=mode: client.sample(n, mode),
                                  budget.sample_reps, budget.seconds)
            if metered is not None and cpu_before is not None:
                cpu = per_reply(cpu_before, metered.snapshot(), n * len(lat), metered.cores)
                figs |= {f"{key}.{k}": v for k, v in cpu.items()}
            figs |= latency_figures(key, lat)
            figs[f"{key}.exp_per_s"] = n * len(lat) / sum(lat)
            with loss_counted(client, figs, f"{key}.inflight"):
                figs[f"{key}.inflight_exp_per_s"] = inflight_rate(
                    client, n, mode, budget.sample_reps, budget.seconds)
        slope = us_per_reply({n: figs.get(f"sample.{name}.{n}.p50_us")
                              for n in budget.batch_sizes})
        if slope is not None:
            figs[f"sample.{name}.us_per_reply"] = slope
    with loss_counted(client, figs, "update_rate"):
        figs["update_rate.per_s"] = _update_rate(client, acks, budget, rng)
    after = client.stats()
    for key in CLIENT_KEYS:
        figs[f"client.{key}"] = float(after[key] - before[key])
    return figs


def inflight_rate(client: ReplayClient, n: int, mode: int, reps: int, seconds: float,
                  depth: int = INFLIGHT_DEPTH) -> float:
    """Experiences/s of up to `reps` SAMPLE n with `depth` requests sent ahead of the one
    awaited (PrefetchingSampler's pattern); no new request after `seconds`, and every
    request sent is collected before the clock stops."""
    pending: deque[PendingRequest] = deque()
    sent = received = 0
    start = time.perf_counter()
    deadline = start + seconds
    while pending or (sent < reps and time.perf_counter() < deadline):
        while sent < reps and len(pending) <= depth and time.perf_counter() < deadline:
            pending.append(client.sample_async(n, mode))
            sent += 1
        if pending:
            received += len(client.wait(pending.popleft()))
    return received / (time.perf_counter() - start)


def us_per_reply(p50_us: dict[int, float | None]) -> float | None:
    """Least-squares slope of p50 latency (µs) over batch size: the cost of one more
    reply. None with fewer than two batch sizes measured."""
    points = [(n, v) for n, v in p50_us.items() if v is not None]
    if len({n for n, _ in points}) < 2:
        return None
    sizes, lat = np.array(points, dtype=float).T
    return float(np.polyfit(sizes, lat, 1)[0])


def _insert_rate(client: ReplayClient, budget: OpsBudget,
                 rng: np.random.Generator) -> tuple[list[Inserted], float]:
    """ACKed inserts per second (chunks of CHUNK, bounded by count and time)."""
    payloads = [_payload(rng) for _ in range(CHUNK)]
    acks: list[Inserted] = []
    start = time.perf_counter()
    deadline = start + budget.seconds
    while len(acks) < budget.insert_rate and time.perf_counter() < deadline:
        acks += client.insert_many(payloads[: budget.insert_rate - len(acks)])
    return acks, len(acks) / (time.perf_counter() - start)


def _update_rate(client: ReplayClient, acks: list[Inserted], budget: OpsBudget,
                 rng: np.random.Generator) -> float:
    """ACKed priority updates per second over the slots `acks` name (each call's slots
    distinct, so every update counted is one the client sends)."""
    if not acks:
        return 0.0
    slots = np.array([a.slot for a in acks])
    stamps = np.array([a.stamp for a in acks])
    done = 0
    start = time.perf_counter()
    deadline = start + budget.seconds
    while done < budget.updates and time.perf_counter() < deadline:
        size = min(CHUNK, budget.updates - done, len(acks))
        pick = rng.choice(len(acks), size=size, replace=False)
        client.update(slots[pick], stamps[pick], rng.uniform(0.1, 4.0, size=len(pick)))
        done += len(pick)
    return done / (time.perf_counter() - start)


def warm_up(client: ReplayClient, inserts: int = CHUNK) -> None:
    """Untimed: fill the table a little and resolve ARP before the first round."""
    rng = np.random.default_rng(1)
    client.insert_many([_payload(rng) for _ in range(inserts)])
    for mode in MODES.values():
        client.sample(1, mode)
