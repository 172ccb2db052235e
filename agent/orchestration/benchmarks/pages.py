"""The figures the documentation quotes, rendered from the committed results.

docs/benchmarks.md's results section and README.md's status table are written
from docs/benchmarks/results.json (`make bench BENCH_ARGS="--out docs/benchmarks"`)
and docs/benchmarks/floor/results.json (the replication floor), between marker
comments, so the pages cannot drift from the data. `report.write_all` refreshes
them whenever a run writes to docs/benchmarks; after committing other results:

    python -m agent.orchestration.benchmarks.pages           # rewrite both sections
    python -m agent.orchestration.benchmarks.pages --check   # exit 1 if one is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RESULTS_DIR = REPO / "docs" / "benchmarks"
FLOOR_DIR = RESULTS_DIR / "floor"
BENCHMARKS_PAGE = REPO / "docs" / "benchmarks.md"
README = REPO / "README.md"
COMMAND = "python -m agent.orchestration.benchmarks.pages"

SWITCHES = {"python": "Python switch", "bmv2": "bmv2"}
MODES = ("uniform", "prioritized")


# --- numbers ------------------------------------------------------------------------------

def num(value: float | None) -> str:
    """A measured figure: whole and thousands separated from 100 on, else one decimal."""
    if value is None:
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def ratio(value: float | None, passed: bool | None = None) -> str:
    """A ratio to two decimals, bold when it met its target."""
    if value is None:
        return "–"
    text = f"{value:.2f}"
    return f"**{text}**" if passed else text


def when(iso: str) -> str:
    """2026-12-06T02:53:41+00:00 -> 2026-12-06 02:53 UTC."""
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M UTC")


# --- reading the results ------------------------------------------------------------------

def measured(results: dict) -> dict[str, dict]:
    """The switch testbeds that were measured, Python switch first."""
    beds = results.get("testbeds", {})
    return {k: beds[k] for k in SWITCHES if k in beds and not beds[k].get("error")}


def target(tb: dict, name: str) -> dict | None:
    """The row of tb's target table named `name` (e.g. 'SAMPLE 32 uniform p50')."""
    return next((r for r in tb.get("targets", {}).get("rows", []) if r["target"] == name), None)


def target_cell(tb: dict, name: str) -> str:
    row = target(tb, name)
    return "–" if row is None else ratio(row["ratio"], row["pass"])


def figure(tb: dict, backend: str, key: str) -> float | None:
    return tb["median"].get(backend, {}).get(key)


def lost_and_retried(tb: dict) -> tuple[int, int]:
    """Retries and lost replies over every operation, backend and round."""
    totals = tb.get("loss_totals", {}).values()

    def total(kind: str) -> int:
        return round(sum(v or 0 for t in totals for k, v in t.items()
                         if k.endswith(f".{kind}")))
    return total("retries"), total("lost")


def largest_batch(results: dict) -> int:
    return max(results["settings"]["batch_sizes"])


def floor_rows(floor: dict | None, kind: str) -> list[dict]:
    if not floor:
        return []
    return floor.get("switches", {}).get(kind, {}).get("rows", [])


def floor_ratio(floor: dict | None, kind: str, n: int, mode: str) -> float | None:
    row = next((r for r in floor_rows(floor, kind)
                if r["n"] == n and r["host_mode"] == mode), None)
    return None if row is None else row["ratio"]


# --- tables -------------------------------------------------------------------------------

def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table, the first column left-aligned, the others right."""
    return ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def pair(tb: dict, names: tuple[str, str]) -> str:
    return " / ".join(target_cell(tb, n) for n in names)


def both_modes(tb: dict, backend: str, key: str) -> str:
    """key with {mode} filled in for uniform, then prioritized: 'u / p'."""
    return " / ".join(num(figure(tb, backend, key.format(mode=m))) for m in MODES)


# The target table's rows, shown in pairs (uniform / prioritized).
TARGET_PAIRS = (("SAMPLE 32 uniform / prioritized",
                 ("SAMPLE 32 uniform p50", "SAMPLE 32 prioritized p50")),
                ("SAMPLE 128 uniform / prioritized",
                 ("SAMPLE 128 uniform p50", "SAMPLE 128 prioritized p50")),
                ("INSERT+ACK", ("INSERT+ACK p50",)),
                ("SAMPLE 1 uniform / prioritized",
                 ("SAMPLE 1 uniform p50", "SAMPLE 1 prioritized p50")))


def target_rows(beds: dict[str, dict]) -> list[list[str]]:
    """One row per pair of TARGET_PAIRS that some switch measured, with its threshold."""
    rows = []
    for label, names in TARGET_PAIRS:
        found = [r for tb in beds.values() if (r := target(tb, names[0]))]
        if found:
            rows.append([f"{label} (target ≤ {found[0]['threshold']})",
                         *(pair(tb, names) for tb in beds.values())])
    return rows


def targets_met(tb: dict) -> str:
    tgt = tb.get("targets")
    if not tgt:
        return "–"
    return f"{tgt['passed']} of {tgt['passed'] + tgt['failed']}"


def make_run_table(make_run: dict | None) -> list[str]:
    """Per seed: seconds to solved (learner steps) on each switch and the ratios."""
    if not make_run or "rows" not in make_run:
        status = make_run["status"] if make_run else "not part of this run"
        return [f"`--make-run`: {status}."]

    def cell(row: dict, sw: str) -> str:
        if row[f"{sw}_error"]:
            return "error"
        if row[f"{sw}_solved"] is None:
            return "not run"
        solved = "" if row[f"{sw}_solved"] else ", not solved"
        return f"{num(row[f'{sw}_wall_s'])} s ({num(row[f'{sw}_learner_steps'])}{solved})"

    lines = [f"`make run` to solved (in-network replay, 2 actors), each switch in turn "
             f"({make_run['status']}): bmv2's wall time over the Python switch's, median over "
             f"seeds {ratio(make_run['median_wall_ratio'])} (target ≤ "
             f"{make_run['threshold']}), per learner step "
             f"{ratio(make_run['median_step_ratio'])}.", ""]
    rows = [[str(r["seed"]), cell(r, "python"), cell(r, "bmv2"), ratio(r["wall_ratio"]),
             ratio(r["step_ratio"])] for r in make_run["rows"]]
    return lines + table(["seed", "Python switch (learner steps)", "bmv2", "bmv2 / Python",
                          "per learner step"], rows)


def training_table(training: dict) -> list[str]:
    """The end-to-end race per switch, backend and actor count, and its ratios."""
    if not training.get("summary"):
        return [f"Training comparison (`--training`): {training.get('status', 'not run')}."]
    names = {"switch": "in-network", "host": "host server", "inprocess": "in-process"}
    rows = [[SWITCHES.get(r.get("switch"), r.get("switch") or "–"),
             names.get(r["backend"], r["backend"]), str(r["actors"]),
             f"{r['solved']} / {r['runs']}", num(r["median_env_steps"]),
             num(r["median_wall_s"]), num(r.get("median_learner_steps_per_s")),
             num(r.get("median_samples_per_s"))]
            for r in training["summary"]]
    lines = [f"Training comparison, CartPole-v1 to solved ({training['status']}; env steps "
             "and wall time: medians over solved runs; rates: medians over all runs):", "",
             *table(["switch", "backend", "actors", "solved / runs", "env steps", "wall s",
                     "learner steps/s", "sampled/s"], rows)]
    ratios = training.get("wall_ratios") or []
    if ratios:
        lines += ["", "In-network wall time to solve over the host server's through the same "
                  "switch (target ≤ 0.7): " + race_ratios(ratios) + "."]
    return lines


def race_ratios(ratios: list[dict], switch: str | None = None) -> str:
    """'Python switch, 2 actors **0.53** (0.70 per env step); ...': the wall-time ratio
    in bold where it meets its target, and the ratio per env step."""
    def cell(r: dict) -> str:
        text = f"{r['in_network_over_host']:.2f}"
        per = r.get("per_env_step")
        return (f"**{text}**" if r.get("pass") else text) + (
            f" ({per:.2f} per env step)" if per is not None else "")
    def actors(r: dict) -> str:
        return f"{r['actors']} actor{'' if r['actors'] == 1 else 's'}"
    if switch is not None:
        return ", ".join(f"{actors(r)} {cell(r)}" for r in ratios if r.get("switch") == switch)
    return "; ".join(f"{SWITCHES.get(r.get('switch'), r.get('switch'))}, {actors(r)} {cell(r)}"
                     for r in ratios)


def floor_table(floor: dict | None) -> list[str]:
    """The replication floor per switch and batch size, and what it leaves a copy."""
    if not floor:
        return ["The replication floor has no committed run."]
    lines = [f"The replication floor, run of {when(floor['started_utc'])} "
             f"(`{' '.join(floor['command'])}`; "
             "[floor/results.md](benchmarks/floor/results.md)): the host server's p50 "
             "through the same switch, uniform / prioritized; the budget is what a "
             "0.5 target leaves each copy for its own work, 0.5 × host p50 minus the "
             "floor's p50, over n (prioritized).", ""]
    rows = []
    for kind, name in SWITCHES.items():
        for r in (r for r in floor_rows(floor, kind) if r["host_mode"] == "prioritized"):
            host = {m: next(x for x in floor_rows(floor, kind)
                            if x["n"] == r["n"] and x["host_mode"] == m) for m in MODES}
            budget = (0.5 * r["host_p50_us"] - r["floor_p50_us"]) / r["n"]
            rows.append([name, str(r["n"]), num(r["floor_p50_us"]),
                         " / ".join(num(host[m]["host_p50_us"]) for m in MODES),
                         " / ".join(ratio(host[m]["ratio"]) for m in MODES),
                         f"{num(r['floor_switch'])} ({num(r['floor_switch_busiest'])})",
                         num(budget)])
    return lines + table(["switch", "SAMPLE n", "floor p50 (µs)", "host p50 (µs)",
                          "floor / host", "switch CPU µs per copy (busiest thread)",
                          "budget per copy (µs)"], rows)


# --- the two sections ---------------------------------------------------------------------

def run_line(results: dict) -> str:
    """When, how and on what machine the run was made."""
    m = results["machine"]
    load = (f"; load average {m['loadavg_start'][0]:.2f} at the start, "
            f"{m['loadavg_end'][0]:.2f} at the end" if m.get("loadavg_start") else "")
    return (f"Run of {when(results['started_utc'])}, {results['duration_s']:.0f} s: "
            f"`{' '.join(results['command'])}` on {m['cpu']}, {m['cores']} cores, "
            f"Linux {m['kernel']}, Python {m['python']}, p4c {m.get('p4c') or '–'}, "
            f"bmv2 {m.get('bmv2') or '–'}{load}. Medians of {results['settings']['rounds']} "
            "rounds. Every table is in [results.md](benchmarks/results.md), every figure and "
            "round in [results.json](benchmarks/results.json).")


def targets_block(beds: dict[str, dict], n: int) -> list[str]:
    rows = [*target_rows(beds),
            [f"CPU bound, SAMPLE {n} uniform / prioritized", *(
                " / ".join(ratio((target(tb, f"SAMPLE {n} {mode} p50") or {}).get("cpu_bound"))
                           for mode in MODES) for tb in beds.values())],
            ["targets met", *(targets_met(tb) for tb in beds.values())]]
    return ["In-network p50 / host server p50 through the same switch (lower is better; "
            "**bold**: target met):", "", *table(["", *(SWITCHES[k] for k in beds)], rows)]


def cpu_cells(tb: dict, backend: str, mode: str, n: int, others: tuple[str, ...]) -> str:
    """The switch's CPU per reply (its busiest thread's), then the others' ('client', ...)."""
    key = f"sample.{mode}.{n}.cpu."
    switch = (f"{num(figure(tb, backend, key + 'switch'))} "
              f"({num(figure(tb, backend, key + 'switch_busiest'))})")
    return " / ".join([switch, *(num(figure(tb, backend, key + o)) for o in others)])


def figures_block(beds: dict[str, dict], n: int) -> list[str]:
    """Latency, cost per reply, rates and forwarding, one column per switch."""
    def row(label: str, cell) -> list[str]:
        return [label, *(cell(tb) for tb in beds.values())]

    rows = [row(f"SAMPLE {n} p50, {label}, uniform / prioritized (µs)",
                lambda tb, b=backend: both_modes(tb, b, f"sample.{{mode}}.{n}.p50_us"))
            for label, backend in (("in-network", "switch"), ("host server", "host"),
                                   ("in-process", "inprocess"))]
    rows += [row(f"µs per extra reply, {label}, uniform / prioritized",
                 lambda tb, b=backend: both_modes(tb, b, "sample.{mode}.us_per_reply"))
             for label, backend in (("in-network", "switch"), ("host server", "host"))]
    for mode in MODES:
        rows += [row(f"CPU µs per reply of SAMPLE {n} {mode}, in-network: switch, all "
                     "threads (busiest) / client",
                     lambda tb, m=mode: cpu_cells(tb, "switch", m, n, ("client",))),
                 row("the same through the host server: switch (busiest) / server / client",
                     lambda tb, m=mode: cpu_cells(tb, "host", m, n, ("server", "client")))]
    rows += [row(f"{label} per second, 32 in flight: in-network / host server",
                 lambda tb, k=key: f"{num(figure(tb, 'switch', k))} / "
                                   f"{num(figure(tb, 'host', k))}")
             for label, key in (("INSERT+ACK", "insert_rate.per_s"),
                                ("UPDATE+ACK", "update_rate.per_s"))]
    rows += [row("plain IPv4 forwarding, packets/s (64 in flight)",
                 lambda tb: num(figure(tb, "forwarding", "forward.pps"))),
             row("forwarding latency p50 / p99, one packet in flight (µs)",
                 lambda tb: f"{num(figure(tb, 'forwarding', 'forward.latency.p50_us'))} / "
                            f"{num(figure(tb, 'forwarding', 'forward.latency.p99_us'))}"),
             row("host server pacing", pacing),
             row("retries / lost replies, every operation and backend",
                 lambda tb: " / ".join(str(x) for x in lost_and_retried(tb)))]
    return table(["", *(SWITCHES[k] for k in beds)], rows)


def pacing(tb: dict) -> str:
    """The host server's pacing and how it was chosen ('unpaced (calibrated)')."""
    p = tb.get("host_pacing")
    return f"{p['chosen']['label']} ({p['source']})" if p else "–"


PLOTS = {"latency_by_batch.png": "SAMPLE latency by batch size, per backend and switch",
         "forwarding_pps.png": "Plain forwarding packets/s per switch",
         "training_return.png": "Training return against wall time per backend"}


def results_section(results: dict, floor: dict | None) -> str:
    """docs/benchmarks.md's current results."""
    beds = measured(results)
    n = largest_batch(results)
    blocks = [[run_line(results)]]
    blocks += [[f"{SWITCHES.get(kind, kind)}: not measured ({tb['error']})."]
               for kind, tb in results.get("testbeds", {}).items() if tb.get("error")]
    if beds:
        blocks += [targets_block(beds, n), figures_block(beds, n)]
    blocks += [make_run_table(results.get("make_run")),
               training_table(results.get("training", {})),
               floor_table(floor),
               [f"![{PLOTS.get(f, f)}](benchmarks/{f})" for f in results.get("files", [])]]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def status_section(results: dict, floor: dict | None) -> str:
    """README.md's status table."""
    beds = measured(results)
    n = largest_batch(results)
    lines = [f"From the committed run of {when(results['started_utc'])} on a "
             f"{results['machine']['cores']}-core machine ([docs/benchmarks.md]"
             "(docs/benchmarks.md)). Ratio: in-network p50 / host replay server p50 "
             "through the same switch, lower is better; **bold** meets its target.", ""]
    if not beds:
        return "\n".join([*lines, "No switch was measured in that run."]) + "\n"
    rows = target_rows(beds)
    rows.append(["targets met", *(targets_met(tb) for tb in beds.values())])
    for label, backend in (("in-network", "switch"), ("host server", "host")):
        rows.append([f"µs per extra reply, uniform / prioritized: {label}", *(
            both_modes(tb, backend, "sample.{mode}.us_per_reply") for tb in beds.values())])
    rows.append([f"replication floor, SAMPLE {n}: copies that do nothing / host p50", *(
        ratio(floor_ratio(floor, kind, n, "prioritized")) for kind in beds)])
    make_run = results.get("make_run") or {}
    if make_run.get("rows"):
        seeds = [r["seed"] for r in make_run["rows"]]
        rows.append([f"`make run` to solved, seeds {seeds[0]}-{seeds[-1]} (s)", *(
            ", ".join(num(r[f"{kind}_wall_s"]) if r[f"{kind}_solved"] else "not solved"
                      for r in make_run["rows"]) for kind in beds)])
    race = (results.get("training") or {}).get("wall_ratios") or []
    if race:
        rows.append(["CartPole to solved, in-network / host server wall time "
                     "(target ≤ 0.7)", *(race_ratios(race, kind) or "–" for kind in beds)])
    lines += table(["", *(SWITCHES[k] for k in beds)], rows)
    if make_run.get("rows"):
        lines += ["", f"`make run` through bmv2 takes {ratio(make_run['median_wall_ratio'])} "
                  f"times as long to solve as through the Python switch (median over seeds; "
                  f"{ratio(make_run['median_step_ratio'])} per learner step)."]
    return "\n".join(lines) + "\n"


# --- the pages ----------------------------------------------------------------------------

def begin(name: str) -> str:
    return (f"<!-- BEGIN {name}: rendered by `{COMMAND}` from docs/benchmarks/; "
            "edit the code, not this text -->")


def end(name: str) -> str:
    return f"<!-- END {name} -->"


def splice(text: str, name: str, body: str) -> str:
    """text with what lies between the `name` markers replaced by body."""
    b, e = begin(name), end(name)
    if text.count(b) != 1 or text.count(e) != 1 or text.index(b) > text.index(e):
        raise ValueError(f"needs one '{b}' line and one '{e}' line after it")
    head, rest = text.split(b, 1)
    _, tail = rest.split(e, 1)
    return f"{head}{b}\n{body}{e}{tail}"


def load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def rendered(results_dir: Path | None = None, readme: Path | None = None,
             page: Path | None = None) -> dict[Path, str]:
    """Each page's text with its section rendered from the results in results_dir
    (by default the committed ones, README.md and docs/benchmarks.md)."""
    results_dir = results_dir or RESULTS_DIR
    results = load(results_dir / "results.json")
    if results is None:
        raise FileNotFoundError(f"{results_dir / 'results.json'}: no results to render")
    floor = load(results_dir / "floor" / "results.json")
    out = {}
    for path, name, body in ((page or BENCHMARKS_PAGE, "results",
                              results_section(results, floor)),
                             (readme or README, "status", status_section(results, floor))):
        try:
            out[path] = splice(path.read_text(), name, body)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    return out


def stale(pages: dict[Path, str]) -> list[Path]:
    """The pages whose text on disk is not the rendered one."""
    return [path for path, text in pages.items() if path.read_text() != text]


def refresh(results_dir: Path | None = None, readme: Path | None = None,
            page: Path | None = None) -> list[Path]:
    """Rewrite the pages whose rendered sections changed; returns those paths."""
    pages = rendered(results_dir, readme, page)
    changed = stale(pages)
    for path in changed:
        path.write_text(pages[path])
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=COMMAND, description="Render README.md's status table and docs/benchmarks.md's "
        "results section from docs/benchmarks/results.json and floor/results.json.")
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 if a page differs from what the results say")
    args = p.parse_args(argv)
    try:
        pages = rendered()
    except (OSError, ValueError, KeyError) as e:
        print(f"pages: {e}", file=sys.stderr)
        return 1
    differ = stale(pages)
    for path in differ:
        if args.check:
            print(f"pages: {path} differs from what the committed results say "
                  f"(run {COMMAND})", file=sys.stderr)
        else:
            path.write_text(pages[path])
            print(f"rewrote {path}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
