"""Training runs on environments beyond CartPole, kept as results: each run's
metrics.csv and summary.json copied under a name, its return against env steps
plotted, and README.md (the table of every kept run) rendered from the summaries
(docs/benchmarks/environments/ holds the committed ones).

    python -m agent.orchestration.benchmarks.env_runs --out docs/benchmarks/environments \\
        acrobot-python-reference=runs/<run dir> ...
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

from matplotlib.figure import Figure

from agent.contract.cli_args import REPO, ArgumentParser

REPO_RESULTS = REPO / "docs" / "benchmarks" / "environments"
SUMMARY_KEYS = ("env", "backend", "actors", "seed", "solved", "eval_return", "env_steps",
                "learner_steps", "wall_s", "storage", "payloads")


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def read_metrics(path: Path) -> list[dict[str, float]]:
    with path.open() as f:
        return [{k: _float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def plot(rows: list[dict[str, float]], title: str, path: Path) -> None:
    """Training and greedy evaluation return against env steps, and samples/s."""
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    steps = [r["env_steps"] for r in rows]
    ax.plot(steps, [r.get("train_return", math.nan) for r in rows], label="training return "
            "(last 20 episodes)")
    evals = [(r["env_steps"], r["eval_return"]) for r in rows
             if not math.isnan(r.get("eval_return", math.nan))]
    if evals:
        ax.plot(*zip(*evals, strict=True), "o-", label="greedy evaluation")
    ax.set_xlabel("env steps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def keep(name: str, run_dir: Path, out: Path) -> dict[str, object]:
    """Copy a run's metrics and summary to `out` as <name>.*, plot it; its summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    kept = {k: summary.get(k) for k in SUMMARY_KEYS}
    rows = read_metrics(run_dir / "metrics.csv")
    samples = [r["samples_per_s"] for r in rows if not math.isnan(r.get("samples_per_s",
                                                                         math.nan))]
    kept["samples_per_s_median"] = sorted(samples)[len(samples) // 2] if samples else None
    shutil.copy(run_dir / "metrics.csv", out / f"{name}.metrics.csv")
    (out / f"{name}.summary.json").write_text(json.dumps(kept, indent=1) + "\n")
    plot(rows, f"{summary.get('env')}: {name}", out / f"{name}.png")
    return kept


def render_index(out: Path) -> Path:
    """README.md of `out`: one row per kept run, from its summary, and its plot."""
    rows = ["# Training runs beyond CartPole", "",
            f"Rendered by `python -m {__spec__.name}` from the *.summary.json beside it.", "",
            "| run | env | backend | storage | seed | solved | greedy return | env steps | "
            "learner steps | wall (s) | samples/s (median) | payloads fetched | missing |",
            "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for path in sorted(out.glob("*.summary.json")):
        name = path.name.removesuffix(".summary.json")
        k = json.loads(path.read_text())
        pay = k.get("payloads") or {}
        missing = sum(pay.get(c, 0) for c in ("missing", "stale", "corrupt", "unanswered"))
        rate = k.get("samples_per_s_median")
        rows.append(
            f"| [{name}]({name}.png) | {k['env']} | {k['backend']} | {k.get('storage')} | "
            f"{k['seed']} | {'yes' if k['solved'] else 'no'} | {k['eval_return']:.1f} | "
            f"{k['env_steps']} | {k['learner_steps']} | {k['wall_s']:.0f} | "
            f"{'–' if rate is None else f'{rate:.0f}'} | {pay.get('fetched', '–')} | "
            f"{missing if pay else '–'} |")
    index = out / "README.md"
    index.write_text("\n".join(rows) + "\n")
    return index


def main(argv: list[str] | None = None) -> None:
    p = ArgumentParser(prog="python -m agent.orchestration.benchmarks.env_runs",
                       description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR")
    args = p.parse_args(argv)
    for item in args.runs:
        name, sep, run_dir = item.partition("=")
        if not sep or not (Path(run_dir) / "summary.json").exists():
            p.error(f"{item}: expected NAME=RUN_DIR with a summary.json in RUN_DIR")
        print(json.dumps({name: keep(name, Path(run_dir), args.out)}))
    print(f"wrote {render_index(args.out)}")


if __name__ == "__main__":
    main()
