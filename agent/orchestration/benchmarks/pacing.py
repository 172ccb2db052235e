"""The host server's pacing for a fair baseline: the fastest setting that loses nothing.

Unpaced, the host server answers SAMPLE n with a burst of n datagrams, and a
switch with shallow egress queues (bmv2: 64 packets) drops part of it; the
measured latency is then the client's timeout, not the server. So before the
measured rounds the bench tries the settings of LADDER in order, fastest
first (unpaced, then token buckets of falling rate and burst, see
agent.replay.host_server.Pacing), at most `tries` of them. Each try restarts the host
server with the setting and probes it with every SAMPLE size the rounds
measure, largest first, in both modes: `reps` requests with one more sent
ahead than the rounds and the learner use (the burstiest, with headroom),
then `reps` one at a time, through a client with a fixed timeout (so a retry
means a reply did not come, not that the adaptive timeout was tight). The
probe stops at the first retry or missing reply. The first clean setting is
chosen; if none is, the one that lost the fewest replies, and the record says
it was not clean. The loss it looks for is intermittent and grows with the
machine's load, so a clean probe makes loss in the rounds unlikely, not
impossible; the rounds report their own retries and lost replies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial

from agent.orchestration.benchmarks.harness import progress
from agent.orchestration.benchmarks.replay_ops import INFLIGHT_DEPTH, MODES, inflight_rate
from agent.replay.client import ReplayClient, ReplayError, RetryPolicy
from agent.replay.host_server import Pacing

LADDER = (Pacing(), Pacing(40_000.0, 48), Pacing(20_000.0, 32), Pacing(10_000.0, 32),
          Pacing(5_000.0, 16), Pacing(2_500.0, 8))
PROBE_POLICY = RetryPolicy(timeout=0.5, retries=2, adaptive=False)
PROBE_REPS = 20
PROBE_DEPTH = INFLIGHT_DEPTH + 1  # one more sent ahead than the rounds and the learner

ProbeResult = dict[str, object]  # requests, retries, lost, failed, seconds, stopped_at
Probe = Callable[[Pacing], ProbeResult]


def describe(pacing: Pacing) -> dict[str, object]:
    """A pacing as results.json records it."""
    return {"rate": pacing.rate, "burst": pacing.burst, "label": str(pacing),
            "server_args": pacing.args()}


def calibrate(probe: Probe, ladder: tuple[Pacing, ...] = LADDER,
              tries: int = len(LADDER)) -> tuple[Pacing, dict]:
    """Probe the first `tries` settings of `ladder` in order until one is clean.

    Returns the chosen setting and the record of every try."""
    record: list[dict] = []
    for pacing in ladder[: max(tries, 1)]:
        figs = probe(pacing)
        record.append(describe(pacing) | figs)
        progress(f"host server pacing {pacing}: {figs['requests']} requests, "
                 f"{figs['retries']} retries, {figs['lost']} lost replies"
                 + (f", stopped at {figs['stopped_at']}" if figs["stopped_at"] else ""))
        if figs["retries"] == 0 and figs["lost"] == 0 and not figs["failed"]:
            return pacing, {"chosen": describe(pacing), "clean": True, "tries": record}
    best = min(range(len(record)), key=lambda i: (record[i]["failed"], record[i]["lost"],
                                                  record[i]["retries"], i))
    chosen = ladder[best]
    return chosen, {"chosen": describe(chosen), "clean": False, "tries": record}


def _steps(client: ReplayClient, sizes: list[int], reps: int,
           seconds: float) -> Iterator[tuple[str, int, Callable[[], object]]]:
    """The probe's calls in order, as (what, requests, call)."""
    for n in sorted(sizes, reverse=True):
        for name, mode in MODES.items():
            yield (f"SAMPLE {n} {name}, {PROBE_DEPTH} sent ahead", reps,
                   partial(inflight_rate, client, n, mode, reps, seconds, PROBE_DEPTH))
            for _ in range(reps):
                yield f"SAMPLE {n} {name}, one at a time", 1, partial(client.sample, n, mode)


def probe(client: ReplayClient, sizes: list[int], reps: int = PROBE_REPS,
          seconds: float = 4.0) -> ProbeResult:
    """SAMPLE n through `client` for every n in `sizes` (largest first) and mode: `reps`
    with PROBE_DEPTH sent ahead, then `reps` one at a time; stops at the first retry,
    missing reply or failed request."""
    start = client.stats()
    t0 = time.monotonic()
    requests = 0
    stopped: str | None = None
    failed = False
    for what, count, call in _steps(client, sizes, reps, seconds):
        try:
            call()
        except ReplayError as exc:
            stopped, failed = f"{what}: {type(exc).__name__}: {exc}", True
            break
        requests += count
        now = client.stats()
        if now["retries"] > start["retries"] or now["lost_replies"] > start["lost_replies"]:
            stopped = what
            break
    end = client.stats()
    return {"requests": requests, "retries": end["retries"] - start["retries"],
            "lost": end["lost_replies"] - start["lost_replies"], "failed": failed,
            "seconds": round(time.monotonic() - t0, 3), "stopped_at": stopped}
