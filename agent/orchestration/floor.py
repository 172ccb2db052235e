"""The replication floor: SAMPLE n answered by a switch whose copies do nothing but
carry their index, against the host replay server's SAMPLE n through that switch.

    python -m agent.orchestration.floor [--switch auto|python|bmv2] [--batch-sizes 32,128]
                                        [--rounds 5] [--requests 60] [--out DIR]

Each switch runs p4src/experiments/replication_floor.p4 (compiled here, so p4c is
needed) on the benchmark testbed: the PRE makes the n replies, each copy's egress
pass writes one field (agent/orchestration/benchmarks/replication_floor.py). floor p50 / host
p50 is about the lowest in-network / host ratio of SAMPLE n that any program
sending one packet per reply can reach with that switch on this machine; the
replay program's copies do their draw, tree walk and record read on top of it
(docs/benchmarks.md, "The replication floor"). Rounds alternate the two in
rotating order; figures are medians over rounds, with the CPU each process spent
per reply. Writes results.json and results.md to --out (default
runs/floor-<UTC time>/).

Exit status: 0 measured, 1 a testbed failed (the results are still written),
2 bad options or no p4c, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
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
from agent.contract.protocol import MAX_BATCH
from agent.orchestration.bench import UsageError, check_batch_sizes, switch_kinds
from agent.orchestration.benchmarks.bed import load_config
from agent.orchestration.benchmarks.harness import (
    Budget,
    exit_on_sigterm,
    exit_status,
    loss_totals,
    progress,
)
from agent.orchestration.benchmarks.replication_floor import compile_floor, measure_switch
from agent.orchestration.benchmarks.report import machine_info
from bmv2.artifacts import ToolchainMissing
from controller.config import DEFAULT_CONFIG, ConfigError

SWITCHES = ("auto", "python", "bmv2")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; a bad one is a one-line usage error (exit 2)."""
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m agent.orchestration.floor", description=description,
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switch", choices=SWITCHES, default="auto",
                   help="auto: the Python switch and bmv2 if installed")
    p.add_argument("--batch-sizes", type=int_list(1, MAX_BATCH), default=[32, 128],
                   help="SAMPLE sizes, each at most the table's max_batch")
    p.add_argument("--rounds", type=int_range(1, 1000), default=5)
    p.add_argument("--requests", type=int_range(1, 10**6), default=60,
                   help="SAMPLEs per batch size, backend and round")
    p.add_argument("--op-seconds", type=positive_float, default=4.0,
                   help="bound on each measurement")
    p.add_argument("--budget-seconds", type=positive_float, default=300.0,
                   help="bound on all rounds (split between switches)")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default runs/floor-<UTC time>/)")
    p.add_argument("--log-dir", type=Path, default=REPO / ".bench",
                   help="the switches' and host server's logs, and the compiled program")
    return p.parse_args(argv)


def rows_markdown(kind: str, section: dict) -> list[str]:
    """One switch's table: per batch size and host mode, p50s, ratio and CPU per reply."""
    if "error" in section:
        return [f"## {kind}", "", f"not measured: {section['error']}", ""]

    def num(value: float | None, fmt: str = "{:,.0f}") -> str:
        return "–" if value is None else fmt.format(value)

    lines = [f"## {kind}", "",
             "| SAMPLE n | host server mode | floor p50 (µs) | host p50 (µs) | floor / host "
             "| floor CPU µs/reply: switch (busiest thread), client "
             "| host CPU µs/reply: switch (busiest), server, client |",
             "|---:|---|---:|---:|---:|---|---|"]
    for r in section["rows"]:
        lines.append(
            f"| {r['n']} | {r['host_mode']} | {num(r['floor_p50_us'])} | {num(r['host_p50_us'])} "
            f"| {num(r['ratio'], '{:.2f}')} "
            f"| {num(r['floor_switch'], '{:.1f}')} ({num(r['floor_switch_busiest'], '{:.1f}')}), "
            f"{num(r['floor_client'], '{:.1f}')} "
            f"| {num(r['host_switch'], '{:.1f}')} ({num(r['host_switch_busiest'], '{:.1f}')}), "
            f"{num(r['host_server'], '{:.1f}')}, {num(r['host_client'], '{:.1f}')} |")
    losses = {k: v for k, v in section["totals"].items() if v}
    lines += ["", "Retries, lost and late replies, totals over rounds: "
              + (", ".join(f"{k} {v:.0f}" for k, v in sorted(losses.items())) or "none"), ""]
    return lines


def main(argv: list[str] | None = None) -> dict:
    """Measure and write the results; returns what results.json holds. Raises
    ConfigError, UsageError (a batch above the table's), or ToolchainMissing
    (no p4c) before anything starts."""
    args = parse_args(argv)
    cfg = load_config(args.config)
    check_batch_sizes(cfg, args.batch_sizes)
    started = datetime.now(UTC)
    out = args.out or RUNS / f"floor-{started:%Y%m%d-%H%M%S}"
    artifacts = compile_floor(args.log_dir / "floor-build")
    kinds, skipped = switch_kinds(args.switch)
    sections: dict[str, dict] = {k: {"error": why} for k, why in skipped.items()}
    budget = Budget(args.budget_seconds)
    batch_sizes = tuple(args.batch_sizes)
    for i, kind in enumerate(k for k in kinds if k in ("python", "bmv2")):
        progress(f"floor {kind}: {args.rounds} rounds, SAMPLE {','.join(map(str, batch_sizes))}")
        try:
            sections[kind] = measure_switch(
                kind, cfg, artifacts, args.log_dir, batch_sizes, args.rounds, args.requests,
                args.op_seconds, budget.share(len(kinds) - i))
        except Exception as exc:  # one switch's failure must not lose the other's figures
            sections[kind] = {"error": f"{type(exc).__name__}: {exc}", "failed": True}
            continue
        sections[kind]["totals"] = {k: v for figs in loss_totals(sections[kind]["rounds"]).values()
                                    for k, v in figs.items()}
    results = {"started_utc": started.isoformat(timespec="seconds"),
               "command": ["python", "-m", "agent.orchestration.floor",
                           *(sys.argv[1:] if argv is None else argv)],
               "machine": machine_info() | {"loadavg_end": os.getloadavg()},
               "settings": {k: v for k, v in vars(args).items() if not isinstance(v, Path)},
               "switches": sections}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    md = ["# The replication floor", "",
          f"Run {results['started_utc']}: {' '.join(results['command'])}. Medians over "
          "rounds; floor / host below 0.5 leaves room for the replay program's own work.", ""]
    for kind, section in sections.items():
        md += rows_markdown(kind, section)
    (out / "results.md").write_text("\n".join(md))
    progress(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    print("\n".join(md))
    return results


def failures(results: dict) -> list[str]:
    """The switches whose testbed broke off (one not installed is no failure)."""
    return [f"{k}: {s['error']}" for k, s in results["switches"].items() if s.get("failed")]


def cli(argv: list[str] | None = None) -> int:
    """0 measured, 1 a testbed failed, 2 bad usage, config or no p4c, 130 interrupted."""
    return exit_status(lambda: failures(main(argv)), (ConfigError, UsageError, ToolchainMissing))


if __name__ == "__main__":
    exit_on_sigterm()
    sys.exit(cli())
