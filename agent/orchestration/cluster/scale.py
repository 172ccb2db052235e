"""The scaling benchmark (`make bench CLUSTER=ray`): 1 to 32 load Actors placed by Ray over
the nodes of 4 Actor hosts, against the in-network replay and against the host replay
server behind the same switch.

    python -m agent.orchestration.cluster.scale --switch python --out runs/scale
    python -m agent.orchestration.cluster.scale --actors 1,2,4,8,16,32 --seconds 6 \\
        --out docs/benchmarks/cluster

One namespace testbed (learner, replay, actor1..actor4 around the switch; every table's
min size 1), the host replay server in the replay namespace, and a Ray cluster on it: the
head in the learner's namespace, a worker node in each Actor host's. The sweep itself
(agent.orchestration.cluster.load) runs as a Ray driver on the head; each point is a
bounded window (--seconds) per backend, the backends alternating. Writes results.json,
results.md and scale.png to --out (default runs/scale-<UTC time>/, where the logs and
the raw points always go).
Exit code: 0 measured, 1 the sweep failed, 2 bad usage or Ray missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from agent.contract.cli_args import REPO, RUNS, ArgumentParser, doc_parts, int_list
from agent.contract.protocol import REPLAY_UDP_PORT
from agent.orchestration.benchmarks.bed import bench_config
from agent.orchestration.cluster.nodes import RayCluster
from agent.orchestration.cluster.placement import ray_missing
from agent.orchestration.launch import relay
from agent.replay.host_server import allow_spec
from bmv2.launch import SWITCH_KINDS, SwitchStartError, resolve_kind
from bmv2.testbed.netns import have_netns
from bmv2.testbed.netns_bed import Testbed, start_host_server
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG, Config

ACTOR_HOSTS = ("actor1", "actor2", "actor3", "actor4")
HOSTS = ("learner", "replay", *ACTOR_HOSTS)
TABLE = 0
BACKENDS = ("switch", "host")


def say(text: str) -> None:
    print(f"[scale] {text}", flush=True)


def scale_config(base: Config) -> Config:
    """The bench config (min size 1, the learner allowed every op) cut to HOSTS."""
    cfg = bench_config(base)
    hosts = tuple(cfg.host(h) for h in HOSTS)
    return replace(cfg, hosts=hosts, acl=tuple(a for a in cfg.acl if a.host in HOSTS))


def run_sweep(args: argparse.Namespace, work: Path) -> dict:
    """Testbed, host server, Ray cluster (their logs and the raw points in `work`);
    the sweep's points."""
    cfg = scale_config(cfgmod.load(DEFAULT_CONFIG))
    kind = resolve_kind(args.switch)
    logs = work / "logs"
    with Testbed(cfg, kind, log_dir=logs) as bed:
        allow = [allow_spec(bed.config.host(a.host).ip, a.ops) for a in bed.config.acl
                 if a.table == TABLE]
        server = start_host_server(bed, "replay", TABLE, allow, logs / "host-server.log")
        try:
            with RayCluster(bed, ["learner", *ACTOR_HOSTS], logs) as cluster:
                say(f"{kind} switch, host server, Ray cluster at {cluster.address}: head on "
                    f"learner, worker nodes on {', '.join(ACTOR_HOSTS)}")
                points = work / "points.json"
                assert bed.switch is not None and bed.switch.proc is not None
                assert server.proc is not None
                cmd = [sys.executable, "-m", "agent.orchestration.cluster.load",
                       "--address", cluster.address, "--seconds", str(args.seconds),
                       "--actors", ",".join(map(str, args.actors)),
                       "--target", f"switch={bed.config.vip}:{REPLAY_UDP_PORT}",
                       "--target", f"host={server.address[0]}:{server.address[1]}",
                       "--switch-pid", str(bed.switch.proc.pid),
                       "--server-pid", str(server.proc.pid), "--out", str(points)]
                for h in ("learner", *ACTOR_HOSTS):
                    cmd += ["--host", f"{h}={bed.config.host(h).ip}",
                            "--netns", bed.ns_name(h)]
                code = relay([*bed.exec_prefix("learner"), *cmd], "", cluster.auth_env)
                if code != 0:
                    raise RuntimeError(f"the sweep's driver exited with {code}")
                sweep = json.loads(points.read_text())
        finally:
            server.stop()
    return sweep | {"switch": kind}


def flattening(points: list[dict], backend: str, key: str) -> int | None:
    """The smallest Actor count from which no larger count beats the best so far by
    10 % or more (where the curve flattens), None if it keeps growing to the end."""
    series = sorted((p["actors"], p[key]) for p in points if p["backend"] == backend)
    for i, (n, _) in enumerate(series[:-1]):
        best = max(v for _, v in series[:i + 1])
        if all(v < 1.1 * best for _, v in series[i + 1:]):
            return n
    return None


def table_md(results: dict) -> str:
    """The sweep as a Markdown table, one row per point."""
    rows = ["| Actors | backend | INSERT/s arriving | INSERT loss | INSERT retries | "
            "sampled/s | env steps/s | CPU left to the Actors | Actors | idle | switch | "
            "host server | Learner | Ray | other load |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted(results["points"], key=lambda p: (p["actors"], p["backend"])):
        name = "in-network" if p["backend"] == "switch" else "host server"
        cells = [str(p["actors"]), name, f"{p['inserts_per_s']:,.0f}", f"{p['insert_loss']:.2%}",
                 f"{p['insert_retries']:,}", f"{p['sampled_per_s']:,.0f}",
                 f"{p['env_steps_per_s']:,.0f}", f"{p['cpu_left_to_actors']:.2f}",
                 *(f"{p.get(k, 0.0):.2f}" for k in ("actors_cpu", "idle_cpu", "switch_cpu",
                                                     "server_cpu", "learner_cpu", "ray_cpu",
                                                     "other_cpu"))]
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def write_results(results: dict, out: Path) -> list[Path]:
    """results.json, results.md and scale.png in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    flat = {b: {k: flattening(results["points"], b, k) for k in ("inserts_per_s",
                                                                    "sampled_per_s")}
            for b in BACKENDS}
    md = [f"# Actors scaling over Ray nodes, {results['started_utc']}", "",
          f"`{' '.join(results['command'])}`: {results['switch']} switch, "
          f"{results['machine']['cores']} cores, load average "
          f"{results['machine']['loadavg_start'][0]:.1f} at the start, "
          f"{results['seconds']} s per point. CPU in cores, averaged over each point's "
          "window: left to the Actors = what they used + idle.", "", table_md(results), "",
          "Where INSERT/s arriving flattens (no more Actors beat the best so far by 10 %): "
          + "; ".join(f"{'in-network' if b == 'switch' else 'host server'} "
                      + (f"from {flat[b]['inserts_per_s']} Actors" if flat[b]["inserts_per_s"]
                         else "nowhere in the sweep") for b in BACKENDS) + ".", ""]
    (out / "results.md").write_text("\n".join(md))
    plot(results, out / "scale.png")
    return [out / "results.json", out / "results.md", out / "scale.png"]


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for backend, style in (("switch", "o-"), ("host", "s--")):
        pts = sorted((p for p in results["points"] if p["backend"] == backend),
                     key=lambda p: p["actors"])
        n = [p["actors"] for p in pts]
        label = "in-network" if backend == "switch" else "host server"
        axes[0].plot(n, [p["inserts_per_s"] for p in pts], style, label=label)
        axes[1].plot(n, [p["sampled_per_s"] for p in pts], style, label=label)
        axes[2].plot(n, [p["actors_cpu"] for p in pts], style, label=f"{label}: Actors' CPU")
        axes[2].plot(n, [p["ray_cpu"] for p in pts], style, alpha=0.5, linewidth=0.8,
                     label=f"{label}: Ray's processes")
        axes[2].plot(n, [p["other_cpu"] for p in pts], style, alpha=0.5, linewidth=0.8,
                     color="grey", label=f"{label}: other load on the machine")
    titles = ("INSERTs/s arriving", "Learner: sampled experiences/s",
              "CPU (cores; the Actors' is what was left to them)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("Actors (over 4 Ray nodes)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{results['switch']} switch, {results['machine']['cores']} cores")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m agent.orchestration.cluster.scale",
                       description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switch", choices=("auto", *SWITCH_KINDS), default="auto")
    p.add_argument("--actors", type=int_list(1, 64), default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--seconds", type=float, default=6.0, help="per point and backend")
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for why in (ray_missing(), None if have_netns()[0] else have_netns()[1]):
        if why:
            print(f"error: {why}", file=sys.stderr, flush=True)
            return 2
    started = datetime.now(UTC)
    work = RUNS / f"scale-{started:%Y%m%d-%H%M%S}"
    out = args.out or work
    load = os.getloadavg()
    t0 = time.monotonic()
    try:
        sweep = run_sweep(args, work)
    except (RuntimeError, SwitchStartError) as exc:   # RayStartError among them
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    results = sweep | {
        "started_utc": started.isoformat(timespec="seconds"),
        "command": ["python", "-m", "agent.orchestration.cluster.scale",
                    *(sys.argv[1:] if argv is None else argv)],
        "seconds": args.seconds, "duration_s": round(time.monotonic() - t0, 1),
        "machine": {"cores": os.cpu_count(), "loadavg_start": load,
                    "loadavg_end": os.getloadavg()}}
    for path in write_results(results, out):
        say(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
