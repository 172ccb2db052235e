"""The Ray driver of one training run: joins the cluster, checks that a node stands for
every host of the run and that each can reach the switch from its host's address,
places the Learner on the Learner's node (it places the Actors), relays their logs
and waits for the summary.

    python -m agent.orchestration.cluster.driver --address 198.19.250.1:6379 \\
        --host learner=198.18.0.1 --host actor1=198.18.1.1 --replay 198.18.0.100:45000 \\
        --run-dir runs/x -- <agent.rl.train options>

The first --host is the Learner's, the others the Actors' in order. The driver runs
on a node of the cluster (`make run CLUSTER=ray` runs it on the head, in the
Learner's namespace). It writes summary.json (with where each role ran) in --run-dir
and prints the SUMMARY line with `nodes=`. Exit code: 0 solved, 1 not solved,
2 the cluster cannot run this (one line on stderr: a host without a node, a node
without a route to the switch, Ray missing), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

from agent.contract.cli_args import EXIT_USAGE, ArgumentParser, doc_parts, host_port
from agent.orchestration.cluster.placement import (
    PlacementError,
    alive_nodes,
    missing_hosts,
    missing_message,
    ray_missing,
    resource,
    route_problem,
)

EXIT_INTERRUPTED = 130
PROBE_TIMEOUT = 60.0
REACH_TIMEOUT = 5.0


def say(text: str) -> None:
    print(f"[cluster] {text}", flush=True)


def host_ip(text: str) -> tuple[str, str]:
    name, sep, ip = text.partition("=")
    if not sep or not name or not ip:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=IP")
    return name, ip


def check_reachable(address: str, timeout: float = REACH_TIMEOUT) -> None:
    """A TCP connection to the GCS at `address` (Ray itself retries for minutes)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or \
            type(exc).__name__
        raise PlacementError(f"cannot reach the Ray cluster at {address}: {why}") from None


def wait_for_hosts(ray, hosts: list[str], address: str, timeout: float) -> None:
    """Wait up to `timeout` s for a node for every host (PlacementError if one has none)."""
    deadline = time.monotonic() + timeout
    while True:
        missing = missing_hosts(hosts, alive_nodes(ray.nodes()))
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise PlacementError(missing_message(missing, address))
        time.sleep(0.5)


def check_routes(ray, hosts: list[tuple[str, str]], replay: tuple[str, int]) -> None:
    """On each host's node: it owns the host's address and reaches the replay from it."""
    probe = ray.remote(route_problem)
    refs = [probe.options(num_cpus=0, resources={resource(name): 0.01}).remote(name, ip, replay)
            for name, ip in hosts]
    for (name, _), problem in zip(hosts, ray.get(refs, timeout=PROBE_TIMEOUT), strict=True):
        if problem:
            raise PlacementError(f"the Ray node for host {name} cannot stand for it: {problem}")


def train(ray, args: argparse.Namespace) -> dict:
    """Place the Learner, run the training on it, return its summary."""
    from agent.orchestration.cluster.roles import PLACE_TIMEOUT, LearnerRole, short

    learner_host = args.host[0][0]
    learner = ray.remote(LearnerRole).options(
        name="learner", num_cpus=0, resources={resource(learner_host): 1}, max_restarts=0).remote()
    try:
        info = ray.get(learner.where.remote(), timeout=PLACE_TIMEOUT)
        say(f"learner (host {learner_host}) on node {short(info)}")
        ref = learner.train.remote(args.train, [h for h, _ in args.host[1:]], args.restarts,
                                   args.restart_wait)
        while not ray.wait([ref], timeout=1.0)[0]:
            pass
        return ray.get(ref)
    except KeyboardInterrupt:
        say("interrupted: stopping the learner and its actors")
        ray.kill(learner, no_restart=True)
        raise


def nodes_field(summary: dict) -> str:
    """`learner@IP,actor1@IP,...`: the node each role ran on last (an Actor restarted
    or lost says so)."""
    cluster = summary["cluster"]
    parts = [f"learner@{cluster['learner']['node_ip']}"]
    for a in cluster["actors"]:
        notes = ([f"restarts={a['restarts']}"] if a["restarts"] else []) + \
            ([] if a["running"] else ["lost"])
        parts.append(f"{a['host']}@{a['nodes'][-1]['node_ip']}"
                     + (f"({','.join(notes)})" if notes else ""))
    return ",".join(parts)


def run(args: argparse.Namespace) -> int:
    why = ray_missing()
    if why:
        raise PlacementError(why)
    os.environ.setdefault("RAY_COLOR_PREFIX", "0")   # plain role prefixes in the relayed logs
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")     # every Actor's line, as it printed it
    check_reachable(args.address)
    import ray

    try:
        ray.init(address=args.address, log_to_driver=True, namespace="p4replay",
                 logging_level="WARNING")
    except (ConnectionError, RuntimeError) as exc:
        raise PlacementError(f"cannot join the Ray cluster at {args.address}: "
                             f"{str(exc).splitlines()[0]}") from None
    try:
        wait_for_hosts(ray, [h for h, _ in args.host], args.address, args.wait_nodes)
        check_routes(ray, args.host, args.replay)
        say(f"every host has a node and reaches the switch at {args.replay[0]} from its own "
            "address")
        summary = train(ray, args)
    finally:
        ray.shutdown()
    args.run_dir.mkdir(parents=True, exist_ok=True)
    (args.run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"SUMMARY solved={summary['solved']} backend={summary['backend']} "
          f"actors={summary['actors']} env={summary['env']} seed={summary['seed']} "
          f"learner_steps={summary['learner_steps']} env_steps={summary['env_steps']} "
          f"wall_s={summary['wall_s']} eval_return={summary['eval_return']:.1f} "
          f"max_stall_s={summary['max_stall_s']} nodes={nodes_field(summary)}", flush=True)
    return 0 if summary["solved"] else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m agent.orchestration.cluster.driver",
                       description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", required=True, help="the Ray cluster's GCS address")
    p.add_argument("--host", type=host_ip, action="append", required=True, metavar="NAME=IP",
                   help="the Learner's host first, then each Actor's")
    p.add_argument("--replay", type=host_port(), required=True, metavar="IP:PORT")
    p.add_argument("--run-dir", type=Path, required=True)
    p.add_argument("--restarts", type=int, default=3,
                   help="times Ray restarts an Actor whose node died (default %(default)s)")
    p.add_argument("--restart-wait", type=float, default=60.0, metavar="SECONDS",
                   help="how long training waits for a lost Actor before going on "
                        "without it (default %(default)s)")
    p.add_argument("--wait-nodes", type=float, default=10.0, metavar="SECONDS",
                   help="how long to wait for a node for every host (default %(default)s)")
    p.add_argument("train", nargs=argparse.REMAINDER,
                   help="after --: the options of agent.rl.train")
    args = p.parse_args(argv)
    if args.train[:1] == ["--"]:
        args.train = args.train[1:]
    if len(args.host) < 2:
        p.error("--host: the Learner's and at least one Actor's")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        code = run(args)
    except PlacementError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        code = EXIT_USAGE
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    sys.exit(code)


if __name__ == "__main__":
    main()
