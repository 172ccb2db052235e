"""The project's latency targets (issue #10): in-network / host server p50 ratios per
switch, each against its threshold, with pass or fail.

A row whose in-network or host-server measurement lost replies or retried in any
round is marked not clean: its ratio then partly measures the client's timeouts.

Where the in-network batch's CPU was metered (the largest batch, cpu.py), a row
also gets `cpu_bound`: n times the in-network floor per reply over the host
server's p50, about the lowest ratio the in-network path's CPU cost per reply
allows on this machine however the rest of the batch is scheduled (the floor
leaves out the request's own pass, which only adds).
"""

from __future__ import annotations

from agent.orchestration.benchmarks.harness import Figures

SAMPLE_TARGET = 0.5
SINGLE_TARGET = 0.65
TARGETS = (
    ("SAMPLE 32 uniform p50", "sample.uniform.32", SAMPLE_TARGET),
    ("SAMPLE 32 prioritized p50", "sample.prioritized.32", SAMPLE_TARGET),
    ("SAMPLE 128 uniform p50", "sample.uniform.128", SAMPLE_TARGET),
    ("SAMPLE 128 prioritized p50", "sample.prioritized.128", SAMPLE_TARGET),
    ("INSERT+ACK p50", "insert", SINGLE_TARGET),
    ("SAMPLE 1 uniform p50", "sample.uniform.1", SINGLE_TARGET),
    ("SAMPLE 1 prioritized p50", "sample.prioritized.1", SINGLE_TARGET),
)


def _lossy(loss: Figures, op: str) -> bool:
    return bool(loss.get(f"{op}.retries") or loss.get(f"{op}.lost"))


def _batch_size(op: str) -> int | None:
    """N of a "sample.MODE.N" operation, else None."""
    parts = op.split(".")
    return int(parts[2]) if len(parts) == 3 and parts[0] == "sample" else None


def _cpu_bound(net: Figures, op: str, host_us: float | None) -> float | None:
    n, floor = _batch_size(op), net.get(f"{op}.cpu.floor")
    return n * floor / host_us if n and floor is not None and host_us else None


def targets(median: dict[str, Figures], loss: dict[str, Figures]) -> dict:
    """The target table of one switch from its medians and loss totals per backend."""
    net, host = median.get("switch", {}), median.get("host", {})
    rows = []
    for name, op, threshold in TARGETS:
        key = f"{op}.p50_us"
        a, b = net.get(key), host.get(key)
        ratio = a / b if a is not None and b else None
        rows.append({"target": name, "key": key, "in_network_us": a, "host_us": b,
                     "ratio": ratio, "cpu_bound": _cpu_bound(net, op, b),
                     "threshold": threshold,
                     "pass": None if ratio is None else ratio <= threshold,
                     "clean": not (_lossy(loss.get("switch", {}), op)
                                   or _lossy(loss.get("host", {}), op))})
    verdicts = [r["pass"] for r in rows]
    return {"ratio": "in-network p50 / host server p50 (lower is better)",
            "rows": rows, "passed": verdicts.count(True), "failed": verdicts.count(False),
            "not_measured": verdicts.count(None)}
