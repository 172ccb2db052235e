"""Results on disk: results.json (every figure and the machine), results.md
(the tables) and the plots, all in one output directory."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from pathlib import Path

from matplotlib.figure import Figure

from agent.orchestration.benchmarks import pages
from agent.orchestration.benchmarks.replay_ops import INFLIGHT_DEPTH, MODES
from agent.orchestration.benchmarks.training import RACE_TARGET
from bmv2.artifacts import find_p4c, p4c_version
from bmv2.launch import find_bmv2

BMV2_READY = Path("/opt/p4/BMV2_READY")
BACKEND_NAMES = {"switch": "in-network", "host": "host server", "inprocess": "in-process"}
SWITCH_NAMES = {"python": "Python switch", "bmv2": "bmv2 simple_switch_grpc",
                "none": "no switch (in-process only)"}
LATENCY_PLOT = "latency_by_batch.png"
FORWARDING_PLOT = "forwarding_pps.png"
TRAINING_PLOT = "training_return.png"


def machine_info() -> dict[str, object]:
    """CPU, cores, kernel, Python and the P4 toolchain this ran on."""
    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        cpu = next((ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                    if ln.startswith("model name")), "")
    info: dict[str, object] = {"cpu": cpu or platform.processor(), "cores": os.cpu_count(),
                               "kernel": platform.release(),
                               "python": platform.python_version()}
    if BMV2_READY.exists():
        info["bmv2_ready"] = BMV2_READY.read_text().strip().splitlines()
    try:
        info["p4c"] = p4c_version(find_p4c())
    except (RuntimeError, OSError):
        info["p4c"] = None
    info["bmv2"] = _bmv2_version()
    return info


def _bmv2_version() -> str | None:
    binary = find_bmv2()
    if binary is None:
        return None
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
    return (out.stdout or out.stderr).strip() or None


def _clean(value: object) -> object:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def write_all(results: dict, out_dir: Path) -> list[Path]:
    """Write results.json, results.md and the plots (removing a plot this run has no data
    for); returns the paths written. Into docs/benchmarks, the committed results, also
    re-render the figures README.md and docs/benchmarks.md quote (pages.py)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = [p for p in (plot_latency(results, out_dir / LATENCY_PLOT),
                         plot_forwarding(results, out_dir / FORWARDING_PLOT),
                         plot_training(results, out_dir / TRAINING_PLOT)) if p]
    for name in {LATENCY_PLOT, FORWARDING_PLOT, TRAINING_PLOT} - {p.name for p in plots}:
        (out_dir / name).unlink(missing_ok=True)
    results["files"] = [p.name for p in plots]
    json_path = out_dir / "results.json"
    json_path.write_text(json.dumps(_clean(results), indent=1) + "\n")
    md_path = out_dir / "results.md"
    md_path.write_text(markdown(results))
    written = [json_path, md_path, *plots]
    if out_dir.resolve() == pages.RESULTS_DIR.resolve():
        written += pages.refresh(out_dir)
    return written


# --- markdown ---------------------------------------------------------------------------

def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def _load(machine: dict, key: str) -> str:
    value = machine.get(key)
    return f"{value[0]:.2f}" if value else "–"


# Who spent the CPU of the largest batch (cpu.py), per reply.
CPU_ROWS = (("switch_busiest", "the switch's busiest thread"),
            ("switch", "the switch, all threads"),
            ("server", "the host replay server"),
            ("client", "the client"),
            ("floor", "floor: max(busiest thread, all of them / cores)"))


def _rows(batch_sizes: list[int]) -> list[tuple[str, str]]:
    rows = [("insert.p50_us", "INSERT+ACK latency p50 (µs)"),
            ("insert.p99_us", "INSERT+ACK latency p99 (µs)"),
            ("insert_rate.per_s", "INSERT+ACK rate (/s, 32 in flight)")]
    for mode in MODES:
        for n in batch_sizes:
            rows += [(f"sample.{mode}.{n}.p50_us", f"SAMPLE {n} {mode} latency p50 (µs)"),
                     (f"sample.{mode}.{n}.p99_us", f"SAMPLE {n} {mode} latency p99 (µs)"),
                     (f"sample.{mode}.{n}.exp_per_s",
                      f"SAMPLE {n} {mode} (experiences/s, one request at a time)"),
                     (f"sample.{mode}.{n}.inflight_exp_per_s",
                      f"SAMPLE {n} {mode} (experiences/s, {INFLIGHT_DEPTH} sent ahead)")]
        rows.append((f"sample.{mode}.us_per_reply",
                     f"SAMPLE {mode}: µs per extra reply (slope of p50 over n)"))
        if batch_sizes:
            n = max(batch_sizes)
            rows += [(f"sample.{mode}.{n}.cpu.{who}",
                      f"SAMPLE {n} {mode}: CPU µs per reply, {what}") for who, what in CPU_ROWS]
    rows += [("update_rate.per_s", "UPDATE+ACK rate (/s, 32 in flight)"),
             ("client.retries", "client retries per round"),
             ("client.lost_replies", "client lost replies per round"),
             ("client.timeouts", "client timeouts per round")]
    return rows


def _loss_ops(batch_sizes: list[int]) -> list[tuple[str, str]]:
    """(figure prefix, label) of every measured operation, for the loss table."""
    ops = [("insert", "INSERT+ACK, one at a time"), ("insert_rate", "INSERT+ACK, 32 in flight")]
    for mode in MODES:
        for n in batch_sizes:
            ops += [(f"sample.{mode}.{n}", f"SAMPLE {n} {mode}, one at a time"),
                    (f"sample.{mode}.{n}.inflight",
                     f"SAMPLE {n} {mode}, {INFLIGHT_DEPTH} sent ahead")]
    return [*ops, ("update_rate", "UPDATE+ACK, 32 in flight")]


def _loss_markdown(tb: dict, batch_sizes: list[int]) -> list[str]:
    """Retries / lost / late replies per operation and backend, totals over the rounds."""
    totals = tb.get("loss_totals", {})
    backends = [b for b in tb["backends"] if b in totals]
    if not backends:
        return []
    lines = [f"Retries / lost / late replies per operation, totals over {len(tb['rounds'])} "
             "rounds (target 0 / 0; lost: still missing at a deadline; late: of those, "
             "replies that came after all, so lost minus late never came):", "",
             "| operation | " + " | ".join(BACKEND_NAMES[b] for b in backends) + " |",
             "|---" + "|---:" * len(backends) + "|"]
    for op, label in _loss_ops(batch_sizes):
        cells = []
        for b in backends:
            r, lost, late = (totals[b].get(f"{op}.{k}") for k in ("retries", "lost", "late"))
            cells.append("–" if r is None else f"{r:.0f} / {lost:.0f} / {late:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _pacing_markdown(pacing: dict | None) -> list[str]:
    """The host server's pacing and, when calibrated, every setting tried."""
    if not pacing:
        return []
    chosen = pacing["chosen"]["label"]
    if not pacing["tries"]:
        return [f"Host server pacing: **{chosen}** ({pacing['source']}).", ""]
    verdict = ("the first with no retry and no lost reply" if pacing["clean"] else
               "none was free of loss: the one that lost the fewest replies")
    lines = [f"Host server pacing: **{chosen}**, {pacing['source']}: {len(pacing['tries'])} "
             f"settings tried, fastest first; chosen: {verdict}.", "",
             "| setting tried | requests | retries | lost replies | seconds | stopped at |",
             "|---|---:|---:|---:|---:|---|"]
    for t in pacing["tries"]:
        lines.append(f"| {t['label']} | {t['requests']} | {t['retries']} | {t['lost']} "
                     f"| {t['seconds']:.1f} | {t['stopped_at'] or '–'} |")
    return [*lines, ""]


def _targets_markdown(tgt: dict | None) -> list[str]:
    """The target table: in-network / host server p50 against each threshold."""
    if not tgt:
        return []
    lines = [f"Targets, {tgt['ratio']}: {tgt['passed']} passed, {tgt['failed']} failed, "
             f"{tgt['not_measured']} not measured.", "",
             "| target | in-network (µs) | host server (µs) | ratio | CPU bound † | threshold "
             "| result |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in tgt["rows"]:
        result = {True: "**pass**", False: "fail", None: "not measured"}[r["pass"]]
        if not r["clean"]:
            result += " (‡ lost replies)"
        lines.append(f"| {r['target']} | {_fmt(r['in_network_us'])} | {_fmt(r['host_us'])} "
                     f"| {_fmt(r['ratio'])} | {_fmt(r.get('cpu_bound'))} | ≤ {r['threshold']} "
                     f"| {result} |")
    lines += ["", "† n × the in-network CPU floor per reply (max of the busiest thread's CPU "
              "and all CPU / cores) over the host server's p50: about the lowest ratio the "
              "in-network replies' CPU cost allows on this machine (measured for the "
              "largest batch only)."]
    if not all(r["clean"] for r in tgt["rows"]):
        lines += ["", "‡ a backend retried or lost replies in this measurement: its latency "
                  "partly measures the client's timeout, not the service."]
    return [*lines, ""]


def markdown(results: dict) -> str:
    """The tables of results.md."""
    m = results["machine"]
    lines = ["# Benchmark results", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}, Python "
             f"{m['python']}, p4c {m.get('p4c') or '–'}, bmv2 {m.get('bmv2') or '–'}. "
             f"Run {results['started_utc']}, {results['duration_s']:.0f} s; load average "
             f"{_load(m, 'loadavg_start')} at the start, {_load(m, 'loadavg_end')} at the end.",
             "",
             "Medians over rounds. Latencies: lower is better, so in-network / host "
             "below 1 means in-network wins; rates: above 1 means in-network wins.", ""]
    settings = results["settings"]
    for kind, tb in results["testbeds"].items():
        lines += [f"## {SWITCH_NAMES.get(kind, kind)}", ""]
        if tb.get("error"):
            lines += [f"Not measured: {tb['error']}", ""]
            continue
        lines += [f"{len(tb['rounds'])} rounds, backends interleaved in each.", ""]
        lines += _pacing_markdown(tb.get("host_pacing"))
        lines += _targets_markdown(tb.get("targets"))
        backends = tb["backends"]
        ratio = tb.get("ratio_in_network_over_host", {})
        head = ["measurement", *(BACKEND_NAMES[b] for b in backends)]
        if ratio:
            head.append("in-network / host")
        lines += ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for key, label in _rows(settings["batch_sizes"]):
            cells = [_fmt(tb["median"].get(b, {}).get(key)) for b in backends]
            if ratio:
                cells.append(_fmt(ratio.get(key)) if not key.startswith("client.") else "")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        fwd = tb["median"].get("forwarding")
        if fwd:
            lines += ["", f"Plain IPv4 forwarding through the switch (UDP, 64-byte payload, "
                      f"{settings['forward_window']} in flight): **{_fmt(fwd['forward.pps'])} "
                      f"packets/s**, loss {100 * fwd['forward.loss']:.2f} %; one packet in "
                      f"flight, host to host: p50 {_fmt(fwd.get('forward.latency.p50_us'))} µs,"
                      f" p99 {_fmt(fwd.get('forward.latency.p99_us'))} µs."]
        lines.append("")
        lines += _loss_markdown(tb, settings["batch_sizes"])
        lines += _payloads_markdown(tb.get("payloads"))
    lines += _switch_comparison(results)
    lines += _tna_passes_markdown(results.get("tna_passes"))
    lines += _training_markdown(results["training"])
    lines += _make_run_markdown(results.get("make_run"))
    return "\n".join(lines) + "\n"


PAYLOAD_SIZES = (("64B_slot", "64 B in the slot"), ("1KB_ref", "1 KB by reference"),
                 ("atari_ref", "Atari transition (56 448 B) by reference"))


def _payloads_markdown(figures: dict | None) -> list[str]:
    """SAMPLE 32 with its payloads resolved, per payload size (payload_sizes.py)."""
    if not figures:
        return []
    lines = ["SAMPLE 32 with every payload in hand, per payload size (by reference: "
             "in-network fetches from the two Actors' stores, the host server's host "
             "keeps the bytes itself; one batch at a time):", "",
             "| payload | in-network p50 (ms) | host p50 (ms) | in-network p99 (ms) | "
             "host p99 (ms) | in-network (experiences/s) | host (experiences/s) | missing |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, label in PAYLOAD_SIZES:
        def cell(backend: str, figure: str, key: str = key) -> str:
            return _fmt(figures.get(f"payload.{backend}.{key}.{figure}"))
        missing = sum(figures.get(f"payload.{b}.{key}.missing", 0.0) for b in ("switch", "host"))
        lines.append(f"| {label} | {cell('switch', 'p50_ms')} | {cell('host', 'p50_ms')} | "
                     f"{cell('switch', 'p99_ms')} | {cell('host', 'p99_ms')} | "
                     f"{cell('switch', 'experiences_per_s')} | "
                     f"{cell('host', 'experiences_per_s')} | {missing:.0f} |")
    return [*lines, ""]


SWITCH_ROWS = (("forwarding", "forward.pps", "forwarding (packets/s)"),
               ("forwarding", "forward.latency.p50_us", "forwarding latency p50 (µs)"),
               ("forwarding", "forward.latency.p99_us", "forwarding latency p99 (µs)"),
               ("switch", "insert.p50_us", "INSERT+ACK latency p50 (µs)"),
               ("switch", "insert_rate.per_s", "INSERT+ACK rate (/s)"),
               ("switch", "sample.uniform.32.p50_us", "SAMPLE 32 uniform latency p50 (µs)"),
               ("switch", "sample.prioritized.32.p50_us", "SAMPLE 32 prioritized latency p50 (µs)"),
               ("switch", "sample.uniform.32.exp_per_s", "SAMPLE 32 uniform (experiences/s)"),
               ("switch", "sample.uniform.128.exp_per_s", "SAMPLE 128 uniform (experiences/s)"),
               ("switch", "sample.uniform.us_per_reply", "SAMPLE uniform: µs per extra reply"),
               ("switch", "update_rate.per_s", "UPDATE+ACK rate (/s)"))


def _switch_comparison(results: dict) -> list[str]:
    """The switches side by side: forwarding and the in-network operations."""
    beds = {k: tb["median"] for k, tb in _measured(results).items() if k != "none"}
    if len(beds) < 2:
        return []
    lines = ["## The switches side by side", "",
             "The same testbed and client on each switch; in-network figures only.", "",
             "| measurement | " + " | ".join(SWITCH_NAMES.get(k, k) for k in beds) + " |",
             "|---" + "|---:" * len(beds) + "|"]
    for section, key, label in SWITCH_ROWS:
        cells = [_fmt(med.get(section, {}).get(key)) for med in beds.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _tna_passes_markdown(figures: dict | None) -> list[str]:
    """Each op's passes through the Tofino program, counted on the TNA model."""
    if not figures or figures.get("status") != "counted":
        return []
    lines = ["## Passes per op through the Tofino program", "",
             "Counted on the TNA model (the committed TNA program, deployed by the "
             "controller), per request (SAMPLE: per reply), next to the arithmetic of "
             f"{figures['source']}.", "",
             "| op | requests | egress passes on LOOP_PORT | ingress passes | docs/hardware.md |",
             "|---|---:|---:|---:|---:|"]
    for row in figures["ops"]:
        expected = "–" if row["expected"] is None else f"{row['expected']:,}"
        lines.append(f"| {row['op']} | {row['requests']} | {_fmt(row['loop_passes'])} | "
                     f"{_fmt(row['ingress_passes'])} | {expected} |")
    return [*lines, ""]


def _training_markdown(training: dict) -> list[str]:
    lines = ["## Training: CartPole-v1 to solved", ""]
    if not training.get("summary"):
        return [*lines, f"Not run: {training['status']}.", ""]
    switches = training.get("switches") or []
    lines += [f"Status: {training['status']}"
              + (", through the " + " and then ".join(SWITCH_NAMES.get(k, k) for k in switches)
                 if switches else "")
              + f". Per run at most {training['max_seconds']:.0f} s "
              f"and {training['max_env_steps']:,} env steps; env steps and wall time: medians "
              "over solved runs; the rates: medians over all runs.", "",
              "| switch | backend | actors | solved / runs | env steps to solve "
              "| wall s to solve | env steps/s | learner steps/s | sampled/s "
              "| UPDATE requests/step |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in training["summary"]:
        switch = row.get("switch") or "–"
        lines.append(f"| {SWITCH_NAMES.get(switch, switch)} "
                     f"| {BACKEND_NAMES.get(row['backend'], row['backend'])} | {row['actors']} "
                     f"| {row['solved']} / {row['runs']} | {_fmt(row['median_env_steps'])} "
                     f"| {_fmt(row['median_wall_s'])} "
                     f"| {_fmt(row.get('median_env_steps_per_s'))} "
                     f"| {_fmt(row.get('median_learner_steps_per_s'))} "
                     f"| {_fmt(row.get('median_samples_per_s'))} "
                     f"| {_fmt(row.get('median_update_requests_per_step'))} |")
    ratios = training.get("wall_ratios") or []
    if ratios:
        verdict = {True: "**pass**", False: "fail"}
        lines += ["", f"In-network wall time to solve over the host server's through the same "
                  f"switch (medians; target ≤ {RACE_TARGET}):", "",
                  "| switch | actors | in-network / host | result | per env step |",
                  "|---|---:|---:|---|---:|"]
        lines += [f"| {SWITCH_NAMES.get(r['switch'], r['switch'])} | {r['actors']} "
                  f"| {r['in_network_over_host']:.2f} | {verdict[r['pass']]} "
                  f"| {_fmt(r.get('per_env_step'))} |" for r in ratios]
        lines += ["", "Per env step: the host server's median env steps per second over "
                  "in-network's, the same race without the env steps each run happened to "
                  "need to solve."]
    return [*lines, ""]


def _make_run_markdown(make_run: dict | None) -> list[str]:
    lines = ["## make run: bmv2 against the Python switch", ""]
    if make_run is None or "rows" not in make_run:
        status = make_run["status"] if make_run else "not part of this run"
        return [*lines, f"Not run: {status}.", ""]
    verdict = {True: "**pass**", False: "fail", None: "not measured"}[make_run["pass"]]
    lines += [f"Status: {make_run['status']}. `make run`'s training (in-network replay, 2 "
              f"actors) through each switch, one after the other, each run at most "
              f"{make_run['max_seconds']:.0f} s and {make_run['max_env_steps']:,} env steps. "
              f"Median over seeds of bmv2's wall time to solved over the Python switch's: "
              f"{_fmt(make_run['median_wall_ratio'])} (target ≤ {make_run['threshold']}: "
              f"{verdict}); per learner step: {_fmt(make_run['median_step_ratio'])}.", "",
              "| seed | Python switch: s to solved (learner steps) | bmv2 | bmv2 / Python "
              "| per learner step |",
              "|---:|---:|---:|---:|---:|"]
    for row in make_run["rows"]:
        cells = [_run_cell(row, k) for k in ("python", "bmv2")]
        lines.append(f"| {row['seed']} | {cells[0]} | {cells[1]} | {_fmt(row['wall_ratio'])} "
                     f"| {_fmt(row['step_ratio'])} |")
    return [*lines, ""]


def _run_cell(row: dict, switch: str) -> str:
    if row[f"{switch}_error"]:   # a launcher's last lines, joined by " | "
        return "error: " + row[f"{switch}_error"].replace("|", "\\|")
    if row[f"{switch}_solved"] is None:
        return "not run"
    solved = "" if row[f"{switch}_solved"] else ", not solved"
    return f"{_fmt(row[f'{switch}_wall_s'])} ({_fmt(row[f'{switch}_learner_steps'])}{solved})"


# --- plots --------------------------------------------------------------------------------

def _measured(results: dict) -> dict[str, dict]:
    return {k: tb for k, tb in results["testbeds"].items() if not tb.get("error")}


def plot_latency(results: dict, path: Path) -> Path | None:
    """SAMPLE latency (p50, band to p99) against batch size, one panel per switch."""
    beds = _measured(results)
    if not beds:
        return None
    sizes = results["settings"]["batch_sizes"]
    fig = Figure(figsize=(5.5 * len(beds), 4.2))
    axes = fig.subplots(1, len(beds), squeeze=False, sharey=True)
    for ax, (kind, tb) in zip(axes[0], beds.items(), strict=True):
        for i, backend in enumerate(tb["backends"]):
            med = tb["median"].get(backend, {})
            for mode, style in zip(MODES, ("-", "--"), strict=True):
                p50 = [med.get(f"sample.{mode}.{n}.p50_us", math.nan) for n in sizes]
                p99 = [med.get(f"sample.{mode}.{n}.p99_us", math.nan) for n in sizes]
                ax.plot(sizes, p50, style, marker="o", color=f"C{i}",
                        label=f"{BACKEND_NAMES[backend]}, {mode}")
                ax.fill_between(sizes, p50, p99, color=f"C{i}", alpha=0.08)
        ax.set(title=SWITCH_NAMES.get(kind, kind), xlabel="batch size n (SAMPLE n)",
               xscale="log", yscale="log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("latency p50 (µs); band to p99")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_forwarding(results: dict, path: Path) -> Path | None:
    """Plain forwarding packets/s per switch."""
    beds = {k: tb["median"]["forwarding"] for k, tb in _measured(results).items()
            if "forwarding" in tb["median"]}
    if not beds:
        return None
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    names = [SWITCH_NAMES.get(k, k) for k in beds]
    values = [f["forward.pps"] for f in beds.values()]
    ax.bar(names, values, color=[f"C{i}" for i in range(len(values))])
    for i, v in enumerate(values):
        ax.annotate(f"{v:,.0f}", (i, v), ha="center", va="bottom")
    ax.set(ylabel="packets/s (median over rounds)", title="Plain IPv4 forwarding, UDP")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_training(results: dict, path: Path) -> Path | None:
    """Training return against wall time, one panel per switch, one colour per backend,
    one line per run."""
    runs = [r for r in results["training"].get("runs", []) if r.get("curve")]
    if not runs:
        return None
    switches = list(dict.fromkeys(r.get("switch") or "–" for r in runs))
    fig = Figure(figsize=(7 * len(switches), 4.2))
    axes = fig.subplots(1, len(switches), squeeze=False)[0]
    colours = {b: f"C{i}" for i, b in enumerate(BACKEND_NAMES)}
    styles = {1: ":", 2: "--", 4: "-"}
    for ax, switch in zip(axes, switches, strict=True):
        labelled: set[tuple[str, int]] = set()
        for r in (r for r in runs if (r.get("switch") or "–") == switch):
            wall, ret = zip(*r["curve"], strict=True)
            key = (r["backend"], r["actors"])
            ax.plot(wall, ret, styles.get(r["actors"], "-"),
                    color=colours.get(r["backend"], "k"), alpha=0.8,
                    label=None if key in labelled else
                    f"{BACKEND_NAMES.get(r['backend'], r['backend'])}, {r['actors']} actors")
            labelled.add(key)
        ax.set(xlabel="wall time (s)", ylabel="training return (mean of last 20 episodes)",
               title=f"CartPole-v1 through the {SWITCH_NAMES.get(switch, switch)}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
