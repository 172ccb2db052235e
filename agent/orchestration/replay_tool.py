"""replay-tool: talk to a replay table by hand, from a host on the testbed.

    ip netns exec p4r-actor1 .venv/bin/python -m agent.orchestration.replay_tool insert --count 100
    ip netns exec p4r-learner .venv/bin/python -m agent.orchestration.replay_tool sample --batch 8

`insert` stores random CartPole-shaped transitions (acknowledged, so the
slots are printed and a lost packet is resent); `sample` draws a batch and
prints slot, stamp and priority of each reply. The replay address defaults to
the config's VIP (in-network); give the host replay server's address to talk to
it instead. Exit codes: 0 done, 1 refused or no answer, 2 bad usage or
config (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agent.contract import protocol
from agent.contract.cli_args import ArgumentParser, doc_parts, host_port, int_range, positive_float
from agent.contract.protocol import (
    MAX_BATCH,
    NUM_SLOTS,
    NUM_TABLES,
    REPLAY_UDP_PORT,
    SAMPLING_MODES,
    Mode,
)
from agent.replay.client import ReplayError, RetryPolicy, make_client
from agent.rl import transition
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG, ConfigError

CARTPOLE_OBS = 4
MODES = {"default": Mode.DEFAULT, **SAMPLING_MODES}


def random_payloads(count: int, seed: int) -> list[bytes]:
    """`count` random one-step transitions, encoded as the actors encode theirs."""
    rng = np.random.default_rng(seed)
    t = transition.Transitions(
        obs=rng.normal(size=(count, CARTPOLE_OBS)).astype(np.float32),
        action=rng.integers(0, 2, size=count),
        ret=np.ones(count, dtype=np.float32),
        next_obs=rng.normal(size=(count, CARTPOLE_OBS)).astype(np.float32),
        done=(rng.random(count) < 0.05).astype(np.float32),
        discount=np.full(count, 0.99, dtype=np.float32),
        actor=np.zeros(count, dtype=np.int64))
    return protocol.to_payloads(transition.encode(t))


def cmd_insert(args: argparse.Namespace) -> int:
    client = make_client("switch", address=args.replay, table=args.table, ack_inserts=True,
                         policy=RetryPolicy(timeout=args.timeout))
    try:
        acks = client.insert_many(random_payloads(args.count, args.seed))
    finally:
        client.close()
    slots = sorted(a.slot for a in acks)
    print(f"table {args.table}: {len(acks)} inserted into slots {slots[0]}..{slots[-1]}; "
          f"the table now holds {max(a.size for a in acks)}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    client = make_client("switch", address=args.replay, table=args.table,
                         policy=RetryPolicy(timeout=args.timeout))
    try:
        batch = client.sample(args.batch, MODES[args.mode])
    finally:
        client.close()
    print(f"table {args.table}: {len(batch)} of {args.batch} sampled ({args.mode}), "
          f"table size {int(batch.size[-1])}")
    print(f"{'slot':>6} {'stamp':>8} {'priority':>10}")
    for slot, stamp, prio in zip(batch.slot, batch.stamp, batch.priority, strict=True):
        print(f"{int(slot):>6} {int(stamp):>8} {float(prio):>10.4f}")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="replay-tool", description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", type=Path, default=DEFAULT_CONFIG,
                   help="config whose replay VIP is the default address")
    p.add_argument("--replay", type=host_port(REPLAY_UDP_PORT), metavar="HOST[:PORT]",
                   help="the replay's address (default: the config's VIP)")
    p.add_argument("--table", type=int_range(0, NUM_TABLES - 1), default=0)
    p.add_argument("--timeout", type=positive_float, default=0.5,
                   help="seconds before a resend")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("insert", help="insert random transitions, acknowledged")
    i.add_argument("--count", type=int_range(1, 16 * NUM_SLOTS), default=100)
    i.add_argument("--seed", type=int, default=0)
    i.set_defaults(func=cmd_insert)
    s = sub.add_parser("sample", help="sample a batch and print it")
    s.add_argument("--batch", type=int_range(1, MAX_BATCH), default=8,
                   help=f"1..{MAX_BATCH}; the table's max_batch may be lower")
    s.add_argument("--mode", choices=list(MODES), default="default")
    s.set_defaults(func=cmd_sample)
    args = p.parse_args(argv)
    if args.replay is None:
        args.replay = (cfgmod.load(args.config).vip, REPLAY_UDP_PORT)
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        return args.func(args)
    except ConfigError as exc:
        print(f"replay-tool: config error: {exc}", file=sys.stderr)
        return 2
    except ReplayError as exc:
        print(f"replay-tool: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
