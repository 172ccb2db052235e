"""The main job (`make run`): train a DQN through the in-network replay on the
namespace testbed, in one command.

    python -m agent.orchestration.launch --backend switch --switch auto --actors 2 --seed 1

What it does, in order:
  1. takes the hosts it needs from the config (controller/testbed.yaml): the
     learner, N actors and, for --backend host, the replay server host; the
     training table gets the run's capacity, min size (learning_starts) and
     sampling mode;
  2. starts the testbed (bmv2.testbed.netns_bed): a namespace and veth per host, the
     switch (bmv2 when installed or asked for, else the Python switch), and
     the controller's deploy of the config;
  3. for --backend host, starts the host replay server in its namespace
     (its replies paced as --host-pacing says; unpaced by default);
  4. runs `agent.rl.train` in the learner's namespace; it spawns the actors, each
     moving into its own namespace, and the learner's weights reach them
     through the switch's broadcast group. Its output is relayed here;
  5. reads the switch's per-table stats (switch_stats.json in the run dir),
     tears everything down, also on error, Ctrl-C or SIGTERM, and prints the
     training's SUMMARY line with the switch kind added.
--backend inprocess skips the network and runs agent.rl.train with in-process
replay (no root needed). Every option, the environment and the config are
checked before anything starts. Exit code: 0 solved, 1 not solved within the
budget, 2 bad usage or environment (one line on stderr), 130 interrupted.
Through make, any of these but 0 becomes make's own 2; make's last line
(`make: *** [Makefile:NN: run] Error 1`) names the code.

--cluster ray places the Learner and the Actors as Ray actors on the Ray nodes that
stand for the config's hosts (agent/orchestration/cluster; docs/cluster.md): on a
Ray cluster made on the testbed for the run (a head in the learner's namespace, a
worker node in each actor's), or with --ray-address on an existing cluster whose
switch the operator has deployed (replayctl deploy). Ray must be installed
(pip install -e '.[cluster]').

Fault options (--loss, --snapshot-every, --restart-switch-at, --kill-learner-at,
--kill-actor-at; agent/orchestration/faults.py) test that training rides through packet
loss, a switch crash recovered from the periodic snapshots, a Learner killed
and resumed from its checkpoint and an Actor that dies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent.contract.cli_args import REPO, RUNS, ArgumentParser, doc_parts
from agent.contract.protocol import REPLAY_UDP_PORT
from agent.orchestration.cluster import run as cluster_run
from agent.orchestration.cluster.nodes import RayStartError
from agent.orchestration.cluster.placement import ray_missing
from agent.orchestration.faults import FaultInjector, FaultPlan
from agent.replay.host_server import Pacing, allow_spec
from agent.replay.server_process import ServerProcess
from agent.rl.hparams import MAX_ACTORS, Hyperparams, add_run_options, check_env, for_env
from agent.rl.weights import WEIGHTS_UDP_PORT
from bmv2.launch import SWITCH_KINDS, SwitchStartError, resolve_kind
from bmv2.testbed.netns import LossError, have_netns
from bmv2.testbed.netns_bed import Bed, Testbed, start_host_server
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG, Config, ConfigError
from controller.inband import InbandChannel
from controller.stats import read_stats

STOP_GRACE = 15.0        # seconds the trainer gets to stop its actors after Ctrl-C
EXIT_USAGE, EXIT_INTERRUPTED = 2, 130


BedFactory = Callable[[Config, str, Path], Bed]  # (config, switch kind, log dir) -> a bed


class LaunchError(RuntimeError):
    """The run cannot start here (config, permissions, switch)."""


def say(text: str) -> None:
    print(f"[run] {text}", flush=True)


# --- the testbed for this run ------------------------------------------------------

def training_config(base: Config, hp: Hyperparams, table: int, actors: int,
                    backend: str) -> Config:
    """`base` cut to the hosts this run uses, with the training table set from `hp`."""
    roles = {r: [h for h in base.hosts if h.role == r] for r in ("learner", "actor",
                                                                   "replay_server")}
    if not roles["learner"]:
        raise LaunchError(f"{base.source}: no host with role learner")
    n = len(roles["actor"])
    if not n:
        raise LaunchError(f"{base.source}: no host with role actor")
    if not 1 <= actors <= n:
        raise LaunchError(f"--actors {actors}: must be 1..{n} ({base.source} has {n} actor "
                          f"host{'s' if n > 1 else ''})")
    if backend == "host" and not roles["replay_server"]:
        raise LaunchError(f"{base.source}: --backend host needs a host with role replay_server")
    hosts = [roles["learner"][0], *roles["actor"][:actors]]
    if backend == "host":
        hosts.append(roles["replay_server"][0])
    names = {h.name for h in hosts}
    train = replace(base.table(table), capacity=hp.capacity, min_size=hp.learning_starts,
                    mode=hp.sample_mode, enabled=True, storage=hp.storage)
    cfgmod.validate_table(train, f"{base.source}: table {table} for this run")
    tables = tuple(train if t.id == table else t for t in base.tables)
    acl = tuple(a for a in base.acl if a.host in names)
    if base.broadcast is None:
        raise LaunchError(f"{base.source}: a broadcast group is needed for the weights")
    members = tuple(m for m in base.broadcast.members if m in names)
    return replace(base, hosts=tuple(hosts), tables=tables, acl=acl,
                   broadcast=replace(base.broadcast, members=members))


def host_server(bed: Bed, table: int, run_dir: Path, seed: int,
                pacing: Pacing | None = None) -> ServerProcess:
    """The baseline server in the replay_server namespace, with the switch's ACL."""
    cfg = bed.config
    host = next(h for h in cfg.hosts if h.role == "replay_server")
    allow = [allow_spec(cfg.host(a.host).ip, a.ops) for a in cfg.acl if a.table == table]
    return start_host_server(bed, host.name, table, allow, run_dir / "logs" / "host-server.log",
                             seed=seed, pacing=pacing)


def trainer_command(args: argparse.Namespace, cfg: Config | None, bed: Bed | None,
                    replay: tuple[str, int] | None) -> list[str]:
    """`python -m agent.rl.train ...` for this run (inside the learner's namespace)."""
    cmd = [sys.executable, "-m", "agent.rl.train", "--backend", args.backend,
           "--actors", str(args.actors), "--env", args.env, "--seed", str(args.seed),
           "--max-env-steps", str(args.max_env_steps), "--max-seconds", str(args.max_seconds),
           "--run-dir", str(args.run_dir), "--table", str(args.table)]
    cmd += [a for item in args.set for a in ("--set", item)]
    if args.storage:
        cmd += ["--storage", args.storage]
    if cfg is None or bed is None or replay is None:
        return cmd
    learner = next(h for h in cfg.hosts if h.role == "learner")
    cmd += ["--replay", f"{replay[0]}:{replay[1]}", "--bind", learner.ip,
            "--actor-mode", "process", "--actor-bind", "0.0.0.0",
            "--weights-dest", f"{cfg.broadcast.address}:{WEIGHTS_UDP_PORT}"]
    for h in (h for h in cfg.hosts if h.role == "actor"):
        cmd += ["--actor-netns", bed.ns_name(h.name), "--actor-ip", h.ip]
    return [*bed.exec_prefix(learner.name), *cmd]


# --- running the trainer -------------------------------------------------------------

def relay(cmd: list[str], suffix: str, env: dict[str, str] | None = None) -> int:
    """Run `cmd` in its own process group (with `env` added to the environment),
    relaying its output (SUMMARY lines get `suffix`, `error: ` lines go to stderr); on
    Ctrl-C or SIGTERM, stop the whole group and wait for it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=REPO, start_new_session=True, bufsize=1,
                            env=os.environ | env if env else None)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("error: "):   # the command's usage error, on our stderr
                print(line, file=sys.stderr, flush=True)
                continue
            print(f"{line} {suffix}" if line.startswith("SUMMARY ") else line, flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        say("interrupted: stopping the learner and actors")
        _stop_group(proc)
        raise
    finally:
        if proc.poll() is None:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGINT the trainer's process group, then SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGINT, STOP_GRACE), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def record_switch_stats(bed: Bed, table: int, run_dir: Path) -> None:
    """Per-table counters and occupancy after training, printed and saved."""
    assert bed.session is not None
    cfg = bed.config
    inband = InbandChannel(bed.session, cfg.vip, cfg.vip_mac)
    stats = read_stats(bed.session, [table], inband)[table]
    (run_dir / "switch_stats.json").write_text(json.dumps(stats.as_dict(), indent=1))
    ok = " ".join(f"{op.lower()}={n}" for op, n in sorted(stats.ok.items())) or "no requests"
    refused = ", ".join(f"{k}={v}" for k, v in sorted(stats.refused.items())) or "none"
    say(f"switch table {table}: {ok}; refused: {refused}; occupancy {stats.size}/"
        f"{cfg.table(table).capacity}")


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM tears down like Ctrl-C


def namespace_testbed(cfg: Config, kind: str, log_dir: Path) -> Testbed:
    """The default bed: named namespaces and veths made by bmv2.testbed.netns_bed."""
    return Testbed(cfg, kind, log_dir=log_dir)


def check_training(args: argparse.Namespace, table_storage: str = "auto") -> Hyperparams:
    """The options every backend shares: hyperparameters, the environment and the storage
    mode (--storage, else the config table's), resolved into args.storage for the trainer."""
    hp, _ = check_env(for_env(args.env, args.set, args.storage or table_storage))
    args.storage = hp.storage
    return hp


def name_run_dir(args: argparse.Namespace, kind: str | None) -> Path:
    """args.run_dir, by default runs/<backend>[-<switch>]-s<seed>-<time> (the switch resolved)."""
    if args.run_dir is None:
        parts = [args.backend, *([kind] if kind else []), f"s{args.seed}", str(int(time.time()))]
        args.run_dir = RUNS / "-".join(parts)
    return args.run_dir


def run_config(args: argparse.Namespace) -> tuple[Config, str]:
    """The config of this run and the switch kind, after checking every option and
    that the machine can host it; names the run dir (it is not created yet)."""
    base = cfgmod.load(args.config)
    hp = check_training(args, next((t.storage for t in base.tables if t.id == args.table),
                                   "auto"))
    ok, why = have_netns()
    if not ok:
        raise LaunchError(f"the testbed cannot run here: {why} "
                          "(BACKEND=inprocess trains without it)")
    kind = resolve_kind(args.switch)
    cfg = training_config(base, hp, args.table, args.actors, args.backend)
    name_run_dir(args, kind)
    return cfg, kind


def fault_plan(args: argparse.Namespace) -> FaultPlan:
    """The faults asked for on the command line (LaunchError for bad values)."""
    plan = FaultPlan(args.loss, args.snapshot_every, args.keep_snapshots,
                     args.restart_switch_at, args.switch_down, args.kill_learner_at,
                     args.kill_actor_at)
    problems = plan.problems()
    if problems:
        raise LaunchError("; ".join(problems))
    if (plan.loss or plan.timed) and args.backend != "switch":
        raise LaunchError("the fault options need --backend switch")
    if args.cluster == "ray" and plan.timed:
        raise LaunchError("--cluster ray takes --loss and --kill-actor-node-at, not the "
                          "other fault options")
    if args.kill_actor_node_at is not None and args.cluster != "ray":
        raise LaunchError("--kill-actor-node-at needs --cluster ray")
    return plan


def check_cluster(args: argparse.Namespace) -> None:
    """--cluster ray's own checks, before anything starts."""
    if args.ray_address:
        args.cluster = "ray"
    if args.cluster != "ray":
        return
    why = ray_missing()
    if why:
        raise LaunchError(f"--cluster ray: {why}")
    if args.backend == "inprocess":
        raise LaunchError("--cluster ray needs --backend switch or host")
    if args.ray_address and args.backend != "switch":
        raise LaunchError("--ray-address needs --backend switch (the switch the operator "
                          "deployed)")
    if args.ray_address and args.kill_actor_node_at is not None:
        raise LaunchError("--kill-actor-node-at kills a node of the testbed's own Ray "
                          "cluster, not of one given with --ray-address")


def train_through_faults(args: argparse.Namespace, bed: Bed, replay: tuple[str, int],
                         kind: str, plan: FaultPlan) -> int:
    """Run the trainer with the plan's faults; resume it once if they killed it."""
    if plan.loss:
        if not isinstance(bed, Testbed):
            raise LaunchError("--loss needs the namespace testbed")
        try:
            tool = bed.link_loss(plan.loss)
        except LossError as exc:
            raise LaunchError(str(exc)) from None
        say(f"{plan.loss:g} % of the frames dropped each way on every link ({tool})")
    if args.cluster == "ray":
        if not isinstance(bed, Testbed):
            raise LaunchError("--cluster ray needs the namespace testbed")
        weights = f"{bed.config.broadcast.address}:{WEIGHTS_UDP_PORT}"
        return cluster_run.train_on_testbed(args, bed, replay, weights, kind, relay)
    if not plan.timed:
        return relay(trainer_command(args, bed.config, bed, replay), f"switch={kind}")
    if not isinstance(bed, Testbed):
        raise LaunchError("the timed fault options need the namespace testbed")
    (args.run_dir / "pids.json").unlink(missing_ok=True)  # the injector waits for the new one
    injector = FaultInjector(plan, bed, args.table, args.run_dir)
    injector.start()
    try:
        cmd = trainer_command(args, bed.config, bed, replay)
        code = relay(cmd, f"switch={kind}")
        if injector.learner_killed.is_set() and code < 0:
            checkpoint = args.run_dir / "checkpoint.pt"
            say(f"the learner was killed (exit {code}): resuming it from {checkpoint}")
            code = relay([*cmd, "--resume", str(checkpoint)], f"switch={kind}")
    finally:
        report = injector.finish()
    summary = args.run_dir / "summary.json"
    stall = json.loads(summary.read_text()).get("max_stall_s") if summary.exists() else None
    restart = report.get("switch_restart")
    say(f"faults: {report['snapshots']} snapshots"
        + (f"; switch restart: {restart['experiences_lost']} experiences lost (inserted "
           f"after the last snapshot), table back after {restart['outage_s']} s"
           if restart else "")
        + (f"; longest learner stall {stall} s" if stall is not None else "")
        + "".join(f"; error: {e}" for e in report.get("errors", [])))
    return code


def run_on_cluster(args: argparse.Namespace) -> int:
    """--ray-address: the driver here, the roles on the existing cluster's nodes, the
    replay on the config's switch as the operator deployed it."""
    hp = check_training(args)
    cfg = training_config(cfgmod.load(args.config), hp, args.table, args.actors, args.backend)
    name_run_dir(args, "cluster").mkdir(parents=True, exist_ok=True)
    replay = (cfg.vip, REPLAY_UDP_PORT)
    weights = f"{cfg.broadcast.address}:{WEIGHTS_UDP_PORT}"
    say(f"Ray cluster at {args.ray_address}; switch as deployed from {args.config}, replay at "
        f"{replay[0]}:{replay[1]}; run dir {args.run_dir}")
    cmd = cluster_run.driver_command(args, cfg, args.ray_address, replay,
                                     cluster_run.train_options(args, cfg, replay, weights))
    return relay(cmd, "switch=config cluster=ray")


def run(args: argparse.Namespace, make_bed: BedFactory = namespace_testbed) -> int:
    """Check, set up, train, tear down; the trainer's exit code."""
    check_cluster(args)
    plan = fault_plan(args)
    if args.ray_address:
        return run_on_cluster(args)
    if args.backend == "inprocess":
        check_training(args)
        if not 1 <= args.actors <= MAX_ACTORS:
            raise LaunchError(f"--actors {args.actors}: must be 1..{MAX_ACTORS}")
        name_run_dir(args, None).mkdir(parents=True, exist_ok=True)
        say(f"in-process replay, {args.actors} actors, no network; run dir {args.run_dir}")
        return relay(trainer_command(args, None, None, None), "switch=none")
    cfg, kind = run_config(args)
    args.run_dir.mkdir(parents=True, exist_ok=True)
    say(f"testbed: {len(cfg.hosts)} hosts, {kind} switch, config {args.config}")
    started = time.monotonic()
    with make_bed(cfg, kind, args.run_dir / "logs") as bed:
        report = bed.deploy_report
        say(f"switch up, pipeline deployed ({report.summary() if report else 'done'}) "
            f"in {time.monotonic() - started:.1f} s; logs in {args.run_dir / 'logs'}")
        server = None
        try:
            if args.backend == "host":
                server = host_server(bed, args.table, args.run_dir, args.seed, args.host_pacing)
                replay = server.address
                say(f"host replay server on {replay[0]}:{replay[1]}, {args.host_pacing}")
            else:
                replay = (bed.config.vip, REPLAY_UDP_PORT)
            say(f"training {args.env} with {args.actors} actors, replay at "
                f"{replay[0]}:{replay[1]} ({args.backend}); Ctrl-C stops")
            code = train_through_faults(args, bed, replay, kind, plan)
            record_switch_stats(bed, args.table, args.run_dir)
        finally:
            if server is not None:
                server.stop()
            say("tearing down the testbed")
    say("torn down: no namespaces or processes left")
    return code


def build_parser(doc: str | None = __doc__,
                 prog: str = "python -m agent.orchestration.launch") -> argparse.ArgumentParser:
    """The launcher's options (mininet_topo adds its own, its `doc` and `prog`)."""
    description, epilog = doc_parts(doc)
    p = ArgumentParser(prog=prog, description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(
        p, backend="switch",
        backend_help="switch: in-network replay; host: the host replay server behind the "
                     "switch; inprocess: no network",
        actors_help=f"1 to the config's actor hosts (inprocess: 1..{MAX_ACTORS})",
        run_dir_help="default runs/<backend>-<switch>-s<seed>-<time>")
    p.add_argument("--switch", choices=("auto", *SWITCH_KINDS), default="auto",
                   help="auto: bmv2 when installed, else the Python switch")
    p.add_argument("--host-pacing", type=Pacing.parse, default=Pacing(), metavar="RATE[:BURST]",
                   help="--backend host: pace the server's replies to RATE/s in bursts of at "
                        "most BURST (agent.replay.host_server --rate/--burst); default off")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    c = p.add_argument_group("cluster (agent/orchestration/cluster; docs/cluster.md)")
    c.add_argument("--cluster", choices=("none", "ray"), default="none",
                   help="ray: the Learner and the Actors are Ray actors on the nodes that "
                        "stand for their hosts (a Ray cluster on the testbed, unless "
                        "--ray-address)")
    c.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                   help="join this Ray cluster (implies --cluster ray); its nodes carry the "
                        "resources host:NAME of the config's hosts")
    c.add_argument("--actor-restarts", type=int, default=3, metavar="N",
                   help="times Ray restarts an Actor whose node died (default %(default)s)")
    c.add_argument("--restart-wait", type=float, default=60.0, metavar="SECONDS",
                   help="how long training waits for a lost Actor's node before going on "
                        "without it (default %(default)s)")
    c.add_argument("--kill-actor-node-at", type=float, metavar="SECONDS",
                   help="fault: kill actor 0's Ray node (every process of its host), bring "
                        "it back --node-down seconds later")
    c.add_argument("--node-down", type=float, default=3.0, metavar="SECONDS",
                   help="how long the killed node stays down (default %(default)s)")
    f = p.add_argument_group("faults (agent/orchestration/faults.py; times in seconds after "
                             "training starts)")
    f.add_argument("--loss", type=float, default=0.0, metavar="PERCENT",
                   help="drop this %% of the frames at random, each way on every link")
    f.add_argument("--snapshot-every", type=float, default=0.0, metavar="SECONDS",
                   help="live snapshot of the training table into RUN_DIR/snapshots "
                        "(default with --restart-switch-at: 5)")
    f.add_argument("--keep-snapshots", type=int, default=5, metavar="K")
    f.add_argument("--restart-switch-at", type=float, metavar="SECONDS",
                   help="kill the switch, restart it, redeploy and restore the newest snapshot")
    f.add_argument("--switch-down", type=float, default=2.0, metavar="SECONDS",
                   help="how long the killed switch stays down (default %(default)s)")
    f.add_argument("--kill-learner-at", type=float, metavar="SECONDS",
                   help="kill the learner (once it has a checkpoint) and resume it from there")
    f.add_argument("--kill-actor-at", type=float, metavar="SECONDS", help="kill actor 0")
    return p


def parse_args(argv: list[str] | None = None,
               parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    return (parser or build_parser()).parse_args(argv)


def guarded(runner: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """`runner(args)` with SIGTERM treated as Ctrl-C and errors turned into exit codes."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return runner(args)
    except KeyboardInterrupt:
        say("interrupted; everything was torn down")
        return EXIT_INTERRUPTED
    except (LaunchError, ConfigError, SwitchStartError, RayStartError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded(run, parse_args(argv)))


if __name__ == "__main__":
    main()
