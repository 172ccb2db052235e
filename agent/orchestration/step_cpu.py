"""Where a learner step's CPU goes: `make run`'s training, through each switch and
backend, with the CPU each role spent per learner step and the pace that leaves.

    python -m agent.orchestration.step_cpu [--switch auto|python|bmv2]
        [--backends switch,host] [--seeds 3] [--actors 2] [--env-steps 40000] [--out DIR]

Each run is `python -m agent.orchestration.launch` (the `make run` entry point,
its own testbed), metered from /proc while it trains (benchmarks/step_cpu.py):
the switch, the host replay server, the Learner, the Actors, between the first
and the last learner step count the run logs (start-up and teardown left out).
A run does not stop when it solves: each takes --env-steps, so every run is
measured over about as many learner steps. A run's measured
learner steps per second near its CPU bound says the run is bound by the CPU its
processes need per step on this machine's cores: only cheaper steps make it
faster. Writes results.json and results.md to --out (default
runs/step-cpu-<UTC time>/).

Exit status: 0 measured, 1 a run failed (the results are still written), 2 bad
options, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from agent.contract.cli_args import (
    REPO,
    RUNS,
    ArgumentParser,
    doc_parts,
    int_list,
    int_range,
    positive_float,
)
from agent.orchestration.bench import switch_kinds
from agent.orchestration.benchmarks.harness import exit_on_sigterm, exit_status, progress
from agent.orchestration.benchmarks.report import BACKEND_NAMES, machine_info
from agent.orchestration.benchmarks.step_cpu import ROLES, StepWindow, metered_run, per_step
from agent.orchestration.benchmarks.training import (
    GRACE_SECONDS,
    TrainingJob,
    TrainingResult,
    launch_command,
    parse_summary,
    read_run,
    with_summary,
)

BACKENDS = ("switch", "host")
NEVER_SOLVED = "solve_return=1000000"   # out of CartPole's reach: every run takes its env steps


def backend_list(text: str) -> list[str]:
    """--backends: a comma list from switch,host."""
    names = [b.strip() for b in text.split(",") if b.strip()]
    if not names or set(names) - set(BACKENDS):
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of "
                                         f"{','.join(BACKENDS)}")
    return [b for b in BACKENDS if b in names]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; a bad one is a one-line usage error (exit 2)."""
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m agent.orchestration.step_cpu", description=description,
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switch", choices=("auto", "python", "bmv2"), default="auto",
                   help="auto: the Python switch and bmv2 if installed")
    p.add_argument("--backends", type=backend_list, default=list(BACKENDS))
    p.add_argument("--seeds", type=int_list(0, 2**32 - 1), default=[3])
    p.add_argument("--actors", type=int_range(1, 4), default=2)
    p.add_argument("--env-steps", type=int_range(1, 10**10), default=40_000,
                   help="env steps per run (a run does not stop at solving)")
    p.add_argument("--max-seconds", type=positive_float, default=300.0, help="bound per run")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default runs/step-cpu-<UTC time>/)")
    p.add_argument("--log-dir", type=Path, default=REPO / ".bench" / "step-cpu")
    return p.parse_args(argv)


def measure(job: TrainingJob) -> dict:
    """One metered run: what it reported and its CPU per learner step by role."""
    job.run_dir.mkdir(parents=True, exist_ok=True)
    log = job.run_dir / "launch.log"
    window = StepWindow(job.run_dir / "metrics.csv")
    status, meter = metered_run(launch_command(job), log, job.max_seconds + GRACE_SECONDS, REPO,
                            window.observe)
    result = TrainingResult(job.backend, job.actors, job.seed)
    summary = parse_summary(log.read_text())
    if summary is None:
        result.error = ("no summary in time" if status is None
                        else f"exit {status}, no SUMMARY line (see {log})")
    else:
        read_run(job.run_dir, with_summary(result, summary))
    steps, seconds, spent = window.figures(meter)
    if result.error is None and steps <= 0:
        result.error = "fewer than two learner step counts logged: too short to measure"
    return {"switch": job.switch, "backend": job.backend, "seed": job.seed,
            "actors": job.actors, "solved": result.solved, "learner_steps": result.learner_steps,
            "wall_s": result.wall_s, "error": result.error, "window_steps": steps,
            "window_s": seconds, "steps_per_s": steps / seconds if seconds > 0 else None,
            "cpu_by_role_s": spent} | per_step(spent, steps)


def markdown(results: dict) -> list[str]:
    """The runs as a table: ms of CPU per learner step per role, the bound, the pace."""
    lines = ["# CPU per learner step", "",
             f"Run {results['started_utc']}: {' '.join(results['command'])}. ms of CPU per "
             "learner step, all of a role's threads (its busiest thread in brackets); the bound: "
             "learner steps/s those costs allow on the machine's cores.", "",
             "| switch | backend | seed | learner steps measured | steps/s | "
             + " | ".join(ROLES[:4]) + " | all | bound steps/s | steps/s / bound |",
             "|---|---|---:|---:|---:|" + "---:|" * 4 + "---:|---:|---:|"]
    for r in results["runs"]:
        if r["error"]:
            lines.append(f"| {r['switch']} | {BACKEND_NAMES[r['backend']]} | {r['seed']} | "
                         f"failed: {r['error']} |")
            continue
        cells = [f"{r['roles'][k]['ms']:.2f} ({r['roles'][k]['busiest_ms']:.2f})"
                 if k in r["roles"] else "–" for k in ROLES[:4]]
        bound, pace = r["bound_steps_per_s"], r["steps_per_s"]
        lines.append(f"| {r['switch']} | {BACKEND_NAMES[r['backend']]} | {r['seed']} "
                     f"| {r['window_steps']:,} | {pace:.0f} | " + " | ".join(cells)
                     + f" | {r['total_ms']:.2f} | {bound:.0f} | {pace / bound:.2f} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> dict:
    """Run and write the results; returns what results.json holds."""
    args = parse_args(argv)
    started = datetime.now(UTC)
    out = args.out or RUNS / f"step-cpu-{started:%Y%m%d-%H%M%S}"
    kinds, skipped = switch_kinds(args.switch)
    for kind, why in skipped.items():
        progress(f"{kind}: not measured: {why}")
    stamp = int(started.timestamp())
    runs = []
    for switch in (k for k in kinds if k in ("python", "bmv2")):
        for seed in args.seeds:
            for backend in args.backends:
                job = TrainingJob(backend, switch, args.actors, seed, args.max_seconds,
                                  args.env_steps,
                                  args.log_dir / f"{switch}-{backend}-s{seed}-{stamp}",
                                  settings=(NEVER_SOLVED,))
                progress(f"step cpu: {backend} on {switch}, seed {seed}")
                runs.append(measure(job))
                progress(f"step cpu: {runs[-1]['learner_steps']} learner steps, "
                         f"{runs[-1]['total_ms'] or 0:.2f} ms of CPU each")
    results = {"started_utc": started.isoformat(timespec="seconds"),
               "command": ["python", "-m", "agent.orchestration.step_cpu",
                           *(sys.argv[1:] if argv is None else argv)],
               "machine": machine_info(),
               "skipped": skipped, "runs": runs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(markdown(results)))
    progress(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    return results


def failures(results: dict) -> list[str]:
    """The runs that could not be measured: no summary, or too short for two counts."""
    return [f"{r['backend']} on {r['switch']} seed {r['seed']}: {r['error']}"
            for r in results["runs"] if r["error"]]


def cli(argv: list[str] | None = None) -> int:
    """0 measured, 1 a run failed, 2 bad usage, 130 interrupted."""
    return exit_status(lambda: failures(main(argv)), ())


if __name__ == "__main__":
    exit_on_sigterm()
    sys.exit(cli())
