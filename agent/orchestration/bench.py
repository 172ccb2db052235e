"""Benchmarks: in-network replay vs the host replay server vs in-process.

    python -m agent.orchestration.bench --switch auto     # `make bench`: every switch present
    python -m agent.orchestration.bench --switch python --rounds 3 --out /tmp/bench
    python -m agent.orchestration.bench --out docs/benchmarks  # replace the committed results
    python -m agent.orchestration.bench --training --training-actors 1,2,4 --training-seeds 1,2,3
    python -m agent.orchestration.bench --switch none --rounds 1 --training \
        --training-switch python,bmv2   # `make bench-training`: the end-to-end race alone
    python -m agent.orchestration.bench --switch none --make-run   # make run: bmv2 / Python switch

Per switch (the Python switch always, bmv2 when installed) one namespace
testbed: the replay client in the learner namespace talks to the switch's VIP
(in-network) or to the host replay server in the `replay` namespace behind the
same switch (host); the in-process backend needs no network. Before the
rounds, the host server's reply pacing is calibrated on that switch (the
fastest setting under which it loses nothing, agent/orchestration/benchmarks/pacing.py).
Each round runs every backend's short, bounded measurement plus the switch's
forwarding rate, in rotating order; results are medians over rounds, retries
and lost replies are totals. Training runs (optional: --training, and
--make-run's runs of `make run` on each switch, benchmarks/run_ratio.py) go
through `python -m agent.orchestration.launch`. Writes results.json, results.md and plots to --out
(default runs/bench-<UTC time>/, not the committed docs/benchmarks/); see
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from agent.contract.cli_args import (
    REPO,
    RUNS,
    ArgumentParser,
    int_list,
    int_range,
    positive_float,
)
from agent.contract.protocol import MAX_BATCH
from agent.orchestration.benchmarks import bed as bedmod
from agent.orchestration.benchmarks.forwarding import forwarding_figures
from agent.orchestration.benchmarks.harness import (
    Budget,
    Job,
    exit_on_sigterm,
    exit_status,
    loss_totals,
    medians,
    progress,
    ratios,
    run_rounds,
)
from agent.orchestration.benchmarks.pacing import (
    LADDER,
    PROBE_POLICY,
    PROBE_REPS,
    calibrate,
    describe,
    probe,
)
from agent.orchestration.benchmarks.payload_sizes import PayloadBudget, payload_figures
from agent.orchestration.benchmarks.replay_ops import BATCH_SIZES, OpsBudget, measure, warm_up
from agent.orchestration.benchmarks.report import machine_info, write_all
from agent.orchestration.benchmarks.run_ratio import run_ratio, run_ratio_jobs
from agent.orchestration.benchmarks.targets import targets
from agent.orchestration.benchmarks.tna_passes import tna_pass_figures
from agent.orchestration.benchmarks.training import (
    TrainingHook,
    TrainingJob,
    launch_hook,
    run_training,
    summarize,
    wall_ratios,
)
from agent.replay.client import BACKENDS, ReplayClient
from agent.replay.host_server import Pacing
from agent.rl.hparams import MAX_ACTORS
from bmv2.launch import find_bmv2
from bmv2.testbed.netns import have_netns
from controller.config import DEFAULT_CONFIG, Config, ConfigError

NO_SWITCH = "none"
AUTO = "auto"
TRAINING_SWITCHES = ("python", "bmv2")
MANY = 10**7        # bound on the count options: far past any run that fits the budgets


class UsageError(ValueError):
    """Options the config rules out (a batch size above the table's max, too many actors)."""


def _backends(text: str) -> list[str]:
    names = [b for b in text.split(",") if b]
    unknown = set(names) - set(BACKENDS)
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"backends from {','.join(BACKENDS)}: {text!r}")
    return [b for b in BACKENDS if b in names]


def _pacing(text: str) -> Pacing | None:
    """None for 'auto' (calibrate), else the fixed pacing ('off' or RATE[:BURST])."""
    return None if text == AUTO else Pacing.parse(text)


def switch_list(text: str) -> list[str]:
    """--training-switch: `auto`, or a comma list of python,bmv2 (no repeats)."""
    if text == AUTO:
        return [AUTO]
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [n for n in names if n not in TRAINING_SWITCHES]
    if not names or bad or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"'{text}' is not auto or a comma list of "
                                         f"{','.join(TRAINING_SWITCHES)} without repeats")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; a bad one is a one-line usage error (exit 2)."""
    p = ArgumentParser(prog="python -m agent.orchestration.bench",
                       description=__doc__.splitlines()[0])
    p.add_argument("--switch", choices=["auto", "python", "bmv2", NO_SWITCH], default="auto",
                   help="auto: the Python switch and bmv2 if installed; none: in-process only")
    p.add_argument("--backends", type=_backends, default=list(BACKENDS),
                   help="comma list from switch,host,inprocess")
    p.add_argument("--rounds", type=int_range(1, 1000), default=5)
    p.add_argument("--budget-seconds", type=positive_float, default=480.0,
                   help="bound on all replay/forwarding rounds (split between switches)")
    p.add_argument("--op-seconds", type=positive_float, default=4.0,
                   help="bound on each measurement")
    p.add_argument("--inserts", type=int_range(1, MANY), default=1000,
                   help="timed single INSERTs per round")
    p.add_argument("--insert-rate", type=int_range(1, MANY), default=3000,
                   help="INSERTs in the rate loop")
    p.add_argument("--sample-reps", type=int_range(1, MANY), default=100,
                   help="SAMPLEs per batch size and mode")
    p.add_argument("--updates", type=int_range(1, MANY), default=3000,
                   help="UPDATEs in the rate loop")
    p.add_argument("--batch-sizes", type=int_list(1, MAX_BATCH), default=None,
                   help="SAMPLE sizes, each at most the table's max_batch (default "
                        f"{','.join(map(str, BATCH_SIZES))}, those within it); the per-reply "
                        "slope is fitted over them")
    p.add_argument("--host-pacing", type=_pacing, default=None, metavar="auto|off|RATE[:BURST]",
                   help="the host server's reply pacing: auto (default) calibrates it per "
                        "switch, off sends every SAMPLE's replies as one burst")
    p.add_argument("--pacing-tries", type=int_range(1, len(LADDER)), default=len(LADDER),
                   help="auto: at most this many settings tried, fastest first")
    p.add_argument("--pacing-reps", type=int_range(1, MANY), default=PROBE_REPS,
                   help="auto: SAMPLEs per batch size, mode and style in each try")
    p.add_argument("--forward-packets", type=int_range(1, MANY), default=30000)
    p.add_argument("--forward-window", type=int_range(1, 4096), default=64)
    p.add_argument("--forward-seconds", type=positive_float, default=3.0)
    p.add_argument("--forward-pings", type=int_range(1, MANY), default=500,
                   help="packets timed one at a time for forwarding latency")
    p.add_argument("--payload-sizes", action=argparse.BooleanOptionalAction, default=True,
                   help="SAMPLE 32 per payload size (64 B in the slot, 1 KB and an Atari "
                        "transition by reference), in-network and host, once per switch")
    p.add_argument("--tna-passes", action=argparse.BooleanOptionalAction, default=True,
                   help="count each op's passes through the Tofino program on the TNA model "
                        "(a few seconds), next to docs/hardware.md's arithmetic")
    p.add_argument("--training", action=argparse.BooleanOptionalAction, default=False,
                   help="also train CartPole per backend via agent.orchestration.launch (long)")
    p.add_argument("--training-switch", type=switch_list, default=["auto"],
                   help="auto (default): every switch this machine has, one after the other; "
                        "or a comma list of python,bmv2")
    p.add_argument("--training-actors", type=int_list(1, MAX_ACTORS), default=[1, 2, 4],
                   help="actor counts, each at most the config's actor hosts")
    p.add_argument("--training-seeds", type=int_list(0, 2**32 - 1), default=[1, 2, 3])
    p.add_argument("--training-seconds", type=positive_float, default=600.0,
                   help="bound per run")
    p.add_argument("--training-env-steps", type=int_range(1, 10**10), default=300_000,
                   help="bound per run")
    p.add_argument("--training-budget", type=positive_float, default=4 * 3600.0,
                   help="bound on all training runs")
    p.add_argument("--make-run", action=argparse.BooleanOptionalAction, default=False,
                   help="also time make run's training on the Python switch and on bmv2, "
                        "seed by seed (bmv2's wall time over the Python switch's; long; each "
                        "run bounded by --training-seconds and --training-env-steps, all of "
                        "them by --training-budget)")
    p.add_argument("--make-run-seeds", type=int_list(0, 2**32 - 1), default=[1, 2, 3])
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default runs/bench-<UTC time>/; give "
                        "docs/benchmarks to replace the committed results)")
    p.add_argument("--log-dir", type=Path, default=REPO / ".bench")
    return p.parse_args(argv)


def check_batch_sizes(cfg: Config, sizes: list[int]) -> None:
    """UsageError unless every SAMPLE size is within the benchmark table's max_batch."""
    max_batch = cfg.table(bedmod.TABLE).max_batch
    too_big = [n for n in sizes if n > max_batch]
    if too_big:
        raise UsageError(f"--batch-sizes {','.join(map(str, too_big))}: table {bedmod.TABLE} "
                         f"of {cfg.source} allows SAMPLEs of at most {max_batch} (max_batch)")


def check_against_config(args: argparse.Namespace) -> Config:
    """The benchmark config from --config, once the options are checked against it
    (ConfigError if it is bad, UsageError if the options ask what it rules out); the
    default batch sizes are those the table allows."""
    cfg = bedmod.load_config(args.config)
    if args.batch_sizes is None:
        max_batch = cfg.table(bedmod.TABLE).max_batch
        args.batch_sizes = [n for n in BATCH_SIZES if n <= max_batch]
    check_batch_sizes(cfg, args.batch_sizes)
    actor_hosts = sum(1 for h in cfg.hosts if h.role == "actor")
    too_many = [n for n in args.training_actors if n > actor_hosts]
    if args.training and too_many:
        raise UsageError(f"--training-actors {','.join(map(str, too_many))}: {cfg.source} "
                         f"has {actor_hosts} actor hosts")
    return cfg


def switch_kinds(choice: str) -> tuple[list[str], dict[str, str]]:
    """Switches to benchmark, and the ones that cannot run here with the reason."""
    wanted = {"auto": ["python", "bmv2"], NO_SWITCH: []}.get(choice, [choice])
    skipped: dict[str, str] = {}
    ok, why = have_netns()
    if choice == "auto" and find_bmv2() is None:
        wanted.remove("bmv2")
        skipped["bmv2"] = "simple_switch_grpc is not installed"
    if wanted and not ok:
        skipped |= dict.fromkeys(wanted, why)
        wanted = []
    return wanted or [NO_SWITCH], skipped


def _ops_budget(args: argparse.Namespace) -> OpsBudget:
    return OpsBudget(inserts=args.inserts, insert_rate=args.insert_rate,
                     sample_reps=args.sample_reps, updates=args.updates,
                     seconds=args.op_seconds, batch_sizes=tuple(args.batch_sizes))


def _section(kind: str, backends: list[str], rounds: list[dict],
             pacing: dict | None) -> dict:
    med = medians(rounds)
    loss = loss_totals(rounds)
    out = {"switch": kind, "backends": backends, "rounds": rounds, "median": med,
           "loss_totals": loss}
    if pacing is not None:
        out["host_pacing"] = pacing
    if "switch" in med and "host" in med:
        out["ratio_in_network_over_host"] = ratios(med["switch"], med["host"])
        out["targets"] = targets(med, loss)
    return out


def host_pacing(bed: bedmod.NetworkBed, args: argparse.Namespace) -> dict:
    """Leave the host server on the fixed --host-pacing, or calibrate it on `bed` and
    restart it with the setting chosen; what results.json records about it."""
    if args.host_pacing is not None:
        return {"source": "fixed (--host-pacing)", "chosen": describe(bed.pacing),
                "clean": None, "tries": []}
    progress(f"{bed.kind}: calibrating the host server's pacing")

    def try_one(pacing: Pacing) -> dict:
        bed.set_pacing(pacing)
        client = bed.client("host", PROBE_POLICY)
        try:
            warm_up(client)
            return probe(client, args.batch_sizes, args.pacing_reps, args.op_seconds)
        finally:
            client.close()

    chosen, record = calibrate(try_one, tries=args.pacing_tries)
    bed.set_pacing(chosen)
    progress(f"{bed.kind}: host server pacing {chosen}"
             + ("" if record["clean"] else " (no setting tried was free of loss)"))
    return {"source": "calibrated"} | record


def bench_switch(kind: str, args: argparse.Namespace, cfg: Config, budget: Budget) -> dict:
    """Every round of every backend (and forwarding) on one switch's testbed; a testbed
    that fails is recorded with `failed` set."""
    backends = args.backends if kind != NO_SWITCH else ["inprocess"]
    ops = _ops_budget(args)
    bed = (bedmod.NetworkBed(cfg, kind, args.log_dir, args.host_pacing)
           if kind != NO_SWITCH else None)
    clients: dict[str, ReplayClient] = {}
    pacing = None
    try:
        if bed is not None:
            progress(f"{kind}: starting the testbed and the host replay server")
            bed.start()
            if "host" in backends:
                pacing = host_pacing(bed, args)
        for b in backends:
            clients[b] = (bed.client(b) if bed is not None and b != "inprocess"
                          else bedmod.inprocess_client(cfg))
            warm_up(clients[b])
        meters = bed.cpu_meters() if bed is not None else {}
        jobs: dict[str, Job] = {b: partial(measure, clients[b], ops, meter=meters.get(b))
                                for b in backends}
        if bed is not None:
            jobs["forwarding"] = lambda: forwarding_figures(
                bed.testbed, args.forward_packets, args.forward_seconds, args.forward_window,
                args.forward_pings)
        section = _section(kind, backends, run_rounds(args.rounds, jobs, budget, label=kind),
                           pacing)
        if bed is not None and args.payload_sizes and {"switch", "host"} <= set(backends):
            section["payloads"] = payload_figures(
                bed, PayloadBudget(reps=args.sample_reps, seconds=args.op_seconds))
        return section
    except Exception as exc:
        progress(f"{kind}: failed: {type(exc).__name__}: {exc}")
        return {"switch": kind, "backends": backends, "error": f"{type(exc).__name__}: {exc}",
                "failed": True}
    finally:
        for c in clients.values():
            c.close()
        if bed is not None:
            bed.stop()
            progress(f"{kind}: testbed stopped")


def bench_tna_passes(args: argparse.Namespace, cfg: Config) -> dict:
    """Passes per op on the TNA model, or why they were not counted."""
    if not args.tna_passes:
        return {"status": "skipped (run with --tna-passes)"}
    progress("tna: counting each op's passes through the Tofino program on the TNA model")
    return {"status": "counted"} | tna_pass_figures(cfg)


def training_pacing(switch: str, args: argparse.Namespace, testbeds: dict) -> Pacing:
    """The host server's pacing for training through `switch`: the one calibrated on it
    in this run, else --host-pacing, else unpaced."""
    chosen = testbeds.get(switch, {}).get("host_pacing", {}).get("chosen")
    if chosen is not None:
        return Pacing(chosen["rate"], chosen["burst"])
    return args.host_pacing or Pacing()


def training_switches(choice: list[str]) -> list[str]:
    """The switches the race runs through: `auto` is the Python switch and, where it is
    installed, bmv2."""
    if choice != ["auto"]:
        return choice
    return ["python"] + (["bmv2"] if find_bmv2() is not None else [])


def bench_training(args: argparse.Namespace, hook: TrainingHook, testbeds: dict) -> dict:
    """The training comparison through each switch in turn, or why it did not run."""
    base = {"max_seconds": args.training_seconds, "max_env_steps": args.training_env_steps,
            "runs": [], "summary": []}
    if not args.training:
        return base | {"status": "skipped (run with --training)"}
    switches = training_switches(args.training_switch)
    pacing = {switch: training_pacing(switch, args, testbeds) for switch in switches}
    stamp = int(time.time())
    jobs = [TrainingJob(b, switch, n, seed, args.training_seconds, args.training_env_steps,
                        args.log_dir / "training" / f"{switch}-{b}-a{n}-s{seed}-{stamp}",
                        pacing[switch])
            for switch in switches for seed in args.training_seeds
            for n in args.training_actors for b in args.backends]
    runs = run_training(jobs, hook, Budget(args.training_budget))
    summary = summarize(runs)
    return base | {"status": f"ran {len(runs)} of {len(jobs)} runs", "switches": switches,
                   "host_pacing": {k: describe(v) for k, v in pacing.items()},
                   "runs": runs, "summary": summary, "wall_ratios": wall_ratios(summary)}


def bench_make_run(args: argparse.Namespace, hook: TrainingHook) -> dict:
    """`make run` through the Python switch and through bmv2, seed by seed, and the
    ratio of their wall times (run_ratio.py), or why it did not run."""
    if not args.make_run:
        return {"status": "skipped (run with --make-run)"}
    if find_bmv2() is None:
        return {"status": "skipped: simple_switch_grpc is not installed"}
    ok, why = have_netns()
    if not ok:
        return {"status": f"skipped: {why}"}
    jobs = run_ratio_jobs(args.make_run_seeds, args.training_seconds, args.training_env_steps,
                          args.log_dir / "make-run", int(time.time()))
    runs = run_training(jobs, hook, Budget(args.training_budget))
    return {"status": f"ran {len(runs)} of {len(jobs)} runs",
            "max_seconds": args.training_seconds, "max_env_steps": args.training_env_steps,
            } | run_ratio(jobs, runs)


def main(argv: list[str] | None = None, training_hook: TrainingHook = launch_hook) -> dict:
    """Run the benchmarks and write the results; returns what results.json holds.
    Raises ConfigError or UsageError before anything starts."""
    args = parse_args(argv)
    cfg = check_against_config(args)
    started = datetime.now(UTC)
    out = args.out or default_out(started)
    t0 = time.monotonic()
    load_start = os.getloadavg()
    kinds, skipped = switch_kinds(args.switch)
    for kind, why in skipped.items():
        progress(f"{kind}: not benchmarked: {why}")
    budget = Budget(args.budget_seconds)
    testbeds: dict[str, dict] = {k: {"switch": k, "error": why} for k, why in skipped.items()}
    for i, kind in enumerate(kinds):
        testbeds[kind] = bench_switch(kind, args, cfg, budget.share(len(kinds) - i))
    results = {
        "schema": 1,
        "started_utc": started.isoformat(timespec="seconds"),
        "command": ["python", "-m", "agent.orchestration.bench",
                    *(sys.argv[1:] if argv is None else argv)],
        "machine": machine_info(),
        "settings": _settings(args),
        "testbeds": testbeds,
        "tna_passes": bench_tna_passes(args, cfg),
        "training": bench_training(args, training_hook, testbeds),
        "make_run": bench_make_run(args, training_hook),
    }
    results["machine"] |= {"loadavg_start": load_start, "loadavg_end": os.getloadavg()}
    results["duration_s"] = time.monotonic() - t0
    for path in write_all(results, out):
        progress(f"wrote {path}")
    return results


def failures(results: dict) -> list[str]:
    """What failed in a run: testbeds that broke off, training runs that reported an
    error (a switch this machine lacks, or a run that did not solve, is no failure)."""
    failed = [f"{k}: {tb['error']}" for k, tb in results["testbeds"].items() if tb.get("failed")]
    failed += [f"training {r['backend']} actors={r['actors']} seed={r['seed']}: {r['error']}"
               for r in results["training"]["runs"] if r.get("error")]
    failed += [f"make run on {r['switch']} seed={r['seed']}: {r['error']}"
               for r in results.get("make_run", {}).get("runs", []) if r.get("error")]
    return failed


def cli(argv: list[str] | None = None) -> int:
    """`python -m agent.orchestration.bench`: 0 measured, 1 a testbed or training run
    failed (the results are still written), 2 bad usage or config, 130 interrupted."""
    return exit_status(lambda: failures(main(argv)), (ConfigError, UsageError))


def default_out(started: datetime) -> Path:
    """Where a run writes without --out: runs/bench-<UTC time>/, not the committed docs."""
    return RUNS / f"bench-{started:%Y%m%d-%H%M%S}"


def _settings(args: argparse.Namespace) -> dict:
    """The options as results.json records them (paths left out, pacing as its spec)."""
    out = {k: v for k, v in vars(args).items()
           if not isinstance(v, Path) and k not in ("out", "host_pacing")}
    out["host_pacing"] = AUTO if args.host_pacing is None else args.host_pacing.spec()
    return out


if __name__ == "__main__":
    exit_on_sigterm()
    sys.exit(cli())
