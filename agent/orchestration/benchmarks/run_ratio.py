"""`make run` on bmv2 against the Python switch: issue #10's target that bmv2
solves in at most 1.5 times the Python switch's wall time on the same machine.

Per seed, `make run`'s own run (in-network replay, its default 2 actors) goes
through the Python switch and then through bmv2, one after the other. A seed's
ratio is bmv2's wall time to solved over the Python switch's, counted only where
both solved; the verdict is on the median over seeds. Steps to solve differ
between runs of one seed (the switches interleave actors and learner
differently), so each seed also gets the ratio per learner step, which says
what a step costs through each switch.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from agent.orchestration.benchmarks.training import TrainingJob

RUN_RATIO_TARGET = 1.5
RUN_ACTORS = 2           # make run's default
SWITCHES = ("python", "bmv2")


def run_ratio_jobs(seeds: list[int], max_seconds: float, max_env_steps: int,
                   log_dir: Path, stamp: int) -> list[TrainingJob]:
    """Seed by seed, the Python switch's run and then bmv2's."""
    return [TrainingJob("switch", switch, RUN_ACTORS, seed, max_seconds, max_env_steps,
                        log_dir / f"make-run-{switch}-s{seed}-{stamp}")
            for seed in seeds for switch in SWITCHES]


def _per_step(run: dict) -> float | None:
    return run["wall_s"] / run["learner_steps"] if run["learner_steps"] else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(statistics.median(kept)) if kept else None


def run_ratio(jobs: list[TrainingJob], runs: list[dict]) -> dict:
    """The runs of `jobs` in order, each with its switch, rows per seed, their medians
    and the verdict (fewer runs than jobs: the budget ran out, the missing ones are
    not counted)."""
    tagged = [run | {"switch": job.switch} for job, run in zip(jobs, runs, strict=False)]
    by_seed: dict[int, dict[str, dict]] = {}
    for run, job in zip(tagged, jobs, strict=False):
        by_seed.setdefault(job.seed, {})[job.switch] = run
    rows = []
    for seed, pair in by_seed.items():
        py, bm = pair.get("python"), pair.get("bmv2")
        both = py is not None and bm is not None and py["solved"] and bm["solved"]
        rows.append({
            "seed": seed,
            **{f"{k}_{f}": (r[f] if r is not None else None)
               for k, r in (("python", py), ("bmv2", bm))
               for f in ("solved", "wall_s", "learner_steps", "error")},
            "wall_ratio": _ratio(bm["wall_s"], py["wall_s"]) if both else None,
            "step_ratio": _ratio(_per_step(bm), _per_step(py)) if both else None,
        })
    median = _median([r["wall_ratio"] for r in rows])
    return {"runs": tagged, "rows": rows, "median_wall_ratio": median,
            "median_step_ratio": _median([r["step_ratio"] for r in rows]),
            "threshold": RUN_RATIO_TARGET,
            "pass": None if median is None else median <= RUN_RATIO_TARGET}
