"""Budgets, bounded timing loops, interleaved rounds and medians.

Every loop here stops at a count or a deadline, whichever comes first; every
result is a flat dict of metric name -> number so medians and ratios are uniform.
"""

from __future__ import annotations

import signal
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.contract.cli_args import EXIT_USAGE

Figures = dict[str, float]
EXIT_FAILED, EXIT_INTERRUPTED = 1, 130  # a measuring tool's exit status (with cli_args' 2)


@dataclass
class Budget:
    """A wall-clock allowance that starts when it is made."""

    seconds: float
    start: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def remaining(self) -> float:
        return max(0.0, self.seconds - self.elapsed())

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def share(self, parts: int) -> Budget:
        """A new budget of an equal share of what remains among `parts` jobs."""
        return Budget(self.remaining() / max(parts, 1))


_RUN_CLOCK = Budget(float("inf"))  # progress lines count from when the benchmarks load


def progress(message: str) -> None:
    """One progress line on stderr, stamped with seconds since the run began."""
    print(f"[bench {_RUN_CLOCK.elapsed():7.1f}s] {message}", file=sys.stderr, flush=True)


def exit_status(run: Callable[[], list[str]], usage_errors: tuple[type[Exception], ...]) -> int:
    """A measuring tool's exit status: run() measures, writes its results and returns
    what failed; 0 when nothing did, 1 when something did (a `failed:` line each),
    2 when it raised one of `usage_errors` (an `error:` line: bad options or config,
    a missing tool, before anything started), 130 when interrupted (every testbed
    is stopped by then: each is torn down on its way out)."""
    try:
        failed = run()
    except usage_errors as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        progress("interrupted; every testbed was stopped")
        return EXIT_INTERRUPTED
    for what in failed:
        print(f"failed: {what}", file=sys.stderr, flush=True)
    return EXIT_FAILED if failed else 0


def exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit(143), which unwinds through every `finally`, so
    testbeds and servers are stopped as on Ctrl-C."""
    def terminate(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, terminate)


def timed_calls(fn: Callable[[], object], count: int, seconds: float) -> list[float]:
    """Latencies (s) of up to `count` calls of fn, stopping once `seconds` have passed."""
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(out) < count:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        out.append(t1 - t0)
        if t1 >= deadline:
            break
    return out


def latency_figures(prefix: str, latencies: list[float]) -> Figures:
    """p50, p99 (µs) and call count of a latency sample."""
    if not latencies:
        return {f"{prefix}.n": 0.0}
    ordered = sorted(latencies)
    return {f"{prefix}.p50_us": _quantile(ordered, 0.50) * 1e6,
            f"{prefix}.p99_us": _quantile(ordered, 0.99) * 1e6,
            f"{prefix}.n": float(len(ordered))}


def _quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted data."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


Job = Callable[[], Figures]


def run_rounds(rounds: int, jobs: Mapping[str, Job], budget: Budget,
               label: str = "") -> list[dict[str, Figures | str]]:
    """Run every job once per round, rotating their order each round so drift and
    position effects hit all alike. Stops early when the budget is spent. A job that
    raises is recorded as its error string for that round."""
    names = list(jobs)
    out: list[dict[str, Figures | str]] = []
    for r in range(rounds):
        if budget.expired():
            progress(f"{label} budget spent after {r} of {rounds} rounds")
            break
        shift = r % len(names)
        result: dict[str, Figures | str] = {}
        for name in names[shift:] + names[:shift]:
            t0 = time.monotonic()
            try:
                result[name] = jobs[name]()
                note = f"{time.monotonic() - t0:.1f} s"
            except Exception as exc:  # one failed measurement must not end the run
                result[name] = note = f"{type(exc).__name__}: {exc}"
            progress(f"{label} round {r + 1}/{rounds} {name}: {note}")
        out.append(result)
    return out


def medians(rounds: list[dict[str, Figures | str]]) -> dict[str, Figures]:
    """Per job, the median of each metric over the rounds where the job succeeded."""
    out: dict[str, Figures] = {}
    for name in {n for r in rounds for n in r}:
        ok = [r[name] for r in rounds if isinstance(r.get(name), dict)]
        keys = sorted({k for figs in ok for k in figs})
        out[name] = {k: statistics.median(f[k] for f in ok if k in f) for k in keys}
    return out


LOSS_SUFFIXES = (".retries", ".lost", ".late")
COUNT_SUFFIXES = (".n", *LOSS_SUFFIXES)  # counts, not measurements: no ratios


def _is_count(key: str) -> bool:
    return key.endswith(COUNT_SUFFIXES) or key.startswith("client.")


def ratios(numerator: Figures, denominator: Figures) -> Figures:
    """numerator / denominator for every measurement both have (denominator not zero)."""
    return {k: numerator[k] / denominator[k] for k in sorted(numerator)
            if k in denominator and denominator[k] and not _is_count(k)}


def loss_totals(rounds: list[dict[str, Figures | str]]) -> dict[str, Figures]:
    """Per job, the sum over rounds of every `.retries`, `.lost` and `.late` figure: a
    median would hide a round that lost replies."""
    out: dict[str, Figures] = {}
    for r in rounds:
        for name, figs in r.items():
            if not isinstance(figs, dict):
                continue
            totals = out.setdefault(name, {})
            for k, v in figs.items():
                if k.endswith(LOSS_SUFFIXES) and not k.startswith("client."):
                    totals[k] = totals.get(k, 0.0) + v
    return out
