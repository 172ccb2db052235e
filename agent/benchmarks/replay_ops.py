"""INSERT / SAMPLE / UPDATE figures through one ReplayClient (any backend).

One call of `measure` is one backend's share of a round:

    insert        latency of single INSERTs with ACK (p50 / p99) ...
    insert_rate   ... and ACKed INSERTs/s with the client's window of requests in flight
    sample.MODE.N latency of one SAMPLE N (all N replies in) and experiences/s, sequentially
    update_rate   ACKed UPDATEs/s of slots just inserted, with the window in flight

plus the client's retry / timeout counters for the round, so loss is visible.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from agent import protocol
from agent.benchmarks.harness import Figures, latency_figures, timed_calls
from agent.protocol import Mode
from agent.replay_client import ReplayClient
from agent.replay_memory import Inserted

MODES = {"uniform": Mode.UNIFORM, "prioritized": Mode.PRIORITIZED}
BATCH_SIZES = (1, 32, 128)
CHUNK = 64  # insert_many / update calls per rate loop step


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


def measure(client: ReplayClient, budget: OpsBudget, seed: int = 0) -> Figures:
    """One round of every replay op through `client`."""
    rng = np.random.default_rng(seed)
    before = client.stats()
    payload = _payload(rng)
    figs = latency_figures("insert", timed_calls(lambda: client.insert(payload),
                                                 budget.inserts, budget.seconds))
    acks, rate = _insert_rate(client, budget, rng)
    figs["insert_rate.per_s"] = rate
    for name, mode in MODES.items():
        for n in budget.batch_sizes:
            lat = timed_calls(lambda n=n, mode=mode: client.sample(n, mode),
                              budget.sample_reps, budget.seconds)
            figs |= latency_figures(f"sample.{name}.{n}", lat)
            figs[f"sample.{name}.{n}.exp_per_s"] = n * len(lat) / sum(lat)
    figs["update_rate.per_s"] = _update_rate(client, acks, budget, rng)
    after = client.stats()
    for key in ("retries", "timeouts", "partial_batches", "stale"):
        figs[f"client.{key}"] = float(after[key] - before[key])
    return figs


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
    """ACKed priority updates per second over the slots `acks` name."""
    if not acks:
        return 0.0
    slots = np.array([a.slot for a in acks])
    stamps = np.array([a.stamp for a in acks])
    done = 0
    start = time.perf_counter()
    deadline = start + budget.seconds
    while done < budget.updates and time.perf_counter() < deadline:
        pick = rng.integers(0, len(acks), size=min(CHUNK, budget.updates - done))
        client.update(slots[pick], stamps[pick], rng.uniform(0.1, 4.0, size=len(pick)))
        done += len(pick)
    return done / (time.perf_counter() - start)


def warm_up(client: ReplayClient, inserts: int = CHUNK) -> None:
    """Untimed: fill the table a little and resolve ARP before the first round."""
    rng = np.random.default_rng(1)
    client.insert_many([_payload(rng) for _ in range(inserts)])
    for mode in MODES.values():
        client.sample(1, mode)
