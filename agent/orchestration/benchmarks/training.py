"""Training comparison: env steps and wall time to solve CartPole-v1 per backend,
actor count and seed, each run bounded in env steps and seconds, with the pace the
replay path allowed the Learner: learner steps and sampled experiences per second,
UPDATE requests per learner step.

A run is one call of a hook, `TrainingJob -> TrainingResult`. The default hook
runs `python -m agent.orchestration.launch` (the `make run` entry point, which builds its own
testbed) and reads its SUMMARY line, summary.json and metrics.csv (`read_run`); tests
pass a fake hook.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.contract.cli_args import REPO
from agent.orchestration.benchmarks.harness import Budget, progress
from agent.replay.host_server import Pacing

LAUNCH_MODULE = "agent.orchestration.launch"
GRACE_SECONDS = 120.0  # beyond max_seconds, for start-up, evaluation and teardown
STOP_SECONDS = 60.0  # for a stopped launcher to tear its testbed down
RACE_TARGET = 0.7  # in-network wall time to solve over the host server's, same switch
BACKEND_ORDER = {"switch": 0, "host": 1, "inprocess": 2}   # the tables' row order


@dataclass(frozen=True)
class TrainingJob:
    """One bounded training run (`host_pacing`: the host server's, for backend host;
    `settings`: passed on as --set)."""

    backend: str
    switch: str
    actors: int
    seed: int
    max_seconds: float
    max_env_steps: int
    run_dir: Path
    host_pacing: Pacing = field(default_factory=Pacing)
    settings: tuple[str, ...] = ()   # hyperparameter overrides, NAME=VALUE


@dataclass
class TrainingResult:
    """What a run reported; `curve` holds (wall_s, return) points."""

    backend: str
    actors: int
    seed: int
    solved: bool = False
    env_steps: int = 0
    learner_steps: int = 0
    wall_s: float = math.nan
    eval_return: float = math.nan
    samples: int = 0            # experiences SAMPLE replies fed the Learner
    update_requests: int = 0    # UPDATE / UPDATE_BATCH requests the Learner sent
    curve: list[tuple[float, float]] = field(default_factory=list)
    error: str | None = None


TrainingHook = Callable[[TrainingJob], TrainingResult]


def launch_command(job: TrainingJob) -> list[str]:
    """`python -m agent.orchestration.launch ...` for `job`."""
    cmd = [sys.executable, "-m", LAUNCH_MODULE, "--backend", job.backend, "--switch", job.switch,
           "--actors", str(job.actors), "--seed", str(job.seed),
           "--max-seconds", str(job.max_seconds), "--max-env-steps", str(job.max_env_steps),
           "--run-dir", str(job.run_dir)]
    if job.backend == "host":
        cmd += ["--host-pacing", job.host_pacing.spec()]
    return cmd + [a for item in job.settings for a in ("--set", item)]


def launch_hook(job: TrainingJob) -> TrainingResult:
    """Run `python -m agent.orchestration.launch` for `job` and parse its SUMMARY line."""
    result = TrainingResult(job.backend, job.actors, job.seed)
    proc = subprocess.Popen(launch_command(job), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        stdout, stderr = proc.communicate(timeout=job.max_seconds + GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        stop_launch(proc)
        result.error = f"no summary within {job.max_seconds + GRACE_SECONDS:.0f} s"
        return result
    except BaseException:  # Ctrl-C, SIGTERM: the launcher must still tear its testbed down
        stop_launch(proc)
        raise
    summary = parse_summary(stdout)
    if summary is None:
        tail = (stderr or stdout).strip().splitlines()[-3:]
        result.error = f"exit {proc.returncode}, no SUMMARY line: {' | '.join(tail)}"
        return result
    return read_run(job.run_dir, with_summary(result, summary))


def with_summary(result: TrainingResult, summary: dict[str, str]) -> TrainingResult:
    """`result` with what a SUMMARY line reported."""
    result.solved = summary.get("solved") == "True"
    result.env_steps = int(summary.get("env_steps", 0))
    result.learner_steps = int(summary.get("learner_steps", 0))
    result.wall_s = float(summary.get("wall_s", math.nan))
    result.eval_return = float(summary.get("eval_return", math.nan))
    return result


def read_run(run_dir: Path, result: TrainingResult) -> TrainingResult:
    """The Learner's replay traffic from the run's summary.json (its client's counters:
    a client that sends single UPDATEs counts one request per update) and the return
    curve from its metrics.csv."""
    path = run_dir / "summary.json"
    if path.exists():
        client = json.loads(path.read_text()).get("client", {})
        result.samples = int(client.get("samples", 0))
        result.update_requests = int(client.get("update_requests", client.get("updates", 0)))
    result.curve = read_curve(run_dir / "metrics.csv")
    return result


def stop_launch(proc: subprocess.Popen) -> None:
    """SIGTERM the launcher (it tears its testbed down, like Ctrl-C) and wait for it;
    SIGKILL only if it does not finish. Never subprocess.run's SIGKILL first, which
    would leave the launcher's namespaces and switch behind."""
    proc.terminate()
    try:
        proc.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def parse_summary(stdout: str) -> dict[str, str] | None:
    """The key=value fields of the last 'SUMMARY ...' line, if any."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("SUMMARY ")]
    if not lines:
        return None
    return dict(tok.split("=", 1) for tok in lines[-1].split()[1:] if "=" in tok)


def read_curve(path: Path) -> list[tuple[float, float]]:
    """(wall_s, train_return) rows of a metrics.csv (empty if missing)."""
    if not path.exists():
        return []
    with path.open() as f:
        return [(float(r["wall_s"]), float(r["train_return"])) for r in csv.DictReader(f)
                if r.get("wall_s") and r.get("train_return")]


def run_training(jobs: list[TrainingJob], hook: TrainingHook, budget: Budget) -> list[dict]:
    """Run the jobs in order (seed-major, so backends alternate) until the budget is spent."""
    out: list[dict] = []
    for i, job in enumerate(jobs):
        if budget.remaining() < job.max_seconds:
            progress(f"training: budget spent, {len(jobs) - i} runs not started")
            break
        progress(f"training {i + 1}/{len(jobs)}: {job.backend} on {job.switch} "
                 f"actors={job.actors} seed={job.seed}")
        res = hook(job)
        progress(f"training {job.backend} on {job.switch} actors={job.actors} seed={job.seed}: "
                 f"solved={res.solved} env_steps={res.env_steps} wall_s={res.wall_s:.1f}"
                 + (f" error={res.error}" if res.error else ""))
        out.append(asdict(res) | {"switch": job.switch})
    return out


def summarize(runs: list[dict]) -> list[dict]:
    """Per (switch, backend, actors): runs, solved, medians of env steps and wall time of
    solved runs, and medians over all runs of the pace the replay path allowed: env steps,
    learner steps and sampled experiences per second, UPDATE requests per learner step."""
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for r in runs:
        groups.setdefault((r.get("switch", ""), r["backend"], r["actors"]), []).append(r)
    switches = list(dict.fromkeys(switch for switch, _, _ in groups))   # in the runs' order
    rows = []
    for (switch, backend, actors), rs in sorted(groups.items(), key=lambda kv: (
            switches.index(kv[0][0]), BACKEND_ORDER.get(kv[0][1], len(BACKEND_ORDER)),
            kv[0][2])):
        solved = [r for r in rs if r["solved"]]
        timed = [r for r in rs if r["wall_s"] > 0]
        stepped = [r for r in rs if r.get("learner_steps", 0) > 0]
        rows.append({"switch": switch, "backend": backend, "actors": actors, "runs": len(rs),
                     "solved": len(solved),
                     "median_env_steps": _median([r["env_steps"] for r in solved]),
                     "median_wall_s": _median([r["wall_s"] for r in solved]),
                     "median_env_steps_per_s": _median([r["env_steps"] / r["wall_s"]
                                                        for r in timed]),
                     "median_learner_steps_per_s": _median([r.get("learner_steps", 0) / r["wall_s"]
                                                            for r in timed]),
                     "median_samples_per_s": _median([r.get("samples", 0) / r["wall_s"]
                                                      for r in timed]),
                     "median_update_requests_per_step": _median(
                         [r.get("update_requests", 0) / r["learner_steps"] for r in stepped])})
    return rows


def wall_ratios(summary: list[dict]) -> list[dict]:
    """Per switch and actor count: the in-network median wall time to solve over the host
    server's through the same switch (the end-to-end race), where both solved, with the
    verdict against RACE_TARGET; and the same ratio per env step (the host server's
    median env steps per second over in-network's), which the env steps a seed happens
    to need to solve do not sway."""
    rows = {(r["switch"], r["backend"], r["actors"]): r for r in summary}
    out = []
    for switch, actors in dict.fromkeys((s, a) for s, _, a in rows):   # the summary's order
        net, host = rows.get((switch, "switch", actors)), rows.get((switch, "host", actors))
        if net is None or host is None or not _positive(net["median_wall_s"]) \
                or not _positive(host["median_wall_s"]):
            continue
        ratio = net["median_wall_s"] / host["median_wall_s"]
        pace = host.get("median_env_steps_per_s"), net.get("median_env_steps_per_s")
        out.append({"switch": switch, "actors": actors, "in_network_over_host": ratio,
                    "per_env_step": pace[0] / pace[1] if all(map(_positive, pace)) else None,
                    "threshold": RACE_TARGET, "pass": ratio <= RACE_TARGET})
    return out


def _positive(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and value > 0


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else math.nan
