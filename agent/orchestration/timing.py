"""Time the control plane against a fresh switch: deploy, snapshot and the
in-band PacketOut -> PacketIn round trip (docs/p4runtime-shell.md records the
figures that chose the P4Runtime / protobuf stack).

    python -m agent.orchestration.timing --switch python --rounds 3

Each round starts a switch with no ports and no pipeline, then times
`deploy` of controller/testbed.yaml (pipeline push and every entry), a
restore that fills table 0 (one WRITE per slot, PacketOut / PacketIn, then
verified by READs), a snapshot of it (one READ per slot), and --pings
GET_STATE requests one at a time. Prints medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from agent.contract import protocol
from agent.contract.cli_args import ArgumentParser, doc_parts
from bmv2.launch import PROCESS_KINDS, SwitchProcess, SwitchStartError, resolve_kind
from controller import config as cfgmod
from controller import snapshot
from controller.deploy import deploy
from controller.inband import InbandChannel
from controller.p4runtime_session import P4RuntimeSession


def full_table(table: int, capacity: int) -> dict:
    """A snapshot of a full table (every slot priority 1, distinct payloads)."""
    one = protocol.PRIORITY_ONE
    slots = [{"slot": i, "stamp": i + 1, "priority": one,
              "payload": protocol.words_to_payload([i, ~i & 0xFFFFFFFF]).hex()}
             for i in range(capacity)]
    state = {"pointer": 0, "sequence": capacity, "max_priority": one, "size": capacity,
             "total": one * capacity}
    return {"table": table, "capacity": capacity, "state": state, "slots": slots}


def one_round(kind: str, pings: int, log_dir: Path) -> dict[str, float]:
    """Deploy, restore, snapshot and ping times on a freshly started switch."""
    base = cfgmod.load(cfgmod.DEFAULT_CONFIG)
    with SwitchProcess(kind, {}, log_path=log_dir / f"{kind}.log") as switch:
        cfg = replace(base, switch=replace(base.switch, address=switch.grpc_addr))
        with P4RuntimeSession(switch.grpc_addr, cfg.switch.device_id, election_id=10,
                              timeout=30) as session:
            start = time.perf_counter()
            deploy(session, cfg)
            deployed = time.perf_counter() - start
            inband = InbandChannel(session, cfg.vip, cfg.vip_mac, timeout=10)
            capacity = cfg.table(0).capacity
            start = time.perf_counter()
            snapshot.restore_table(inband, full_table(0, capacity))
            restored = time.perf_counter() - start
            start = time.perf_counter()
            snap = snapshot.snapshot_table(inband, 0, capacity)
            snapped = time.perf_counter() - start
            if len(snap["slots"]) != capacity:
                raise snapshot.SnapshotError(f"snapshot read {len(snap['slots'])} slots")
            rtts = []
            for _ in range(pings):
                start = time.perf_counter()
                inband.request(protocol.get_state(0))
                rtts.append(time.perf_counter() - start)
    rtts.sort()
    return {"deploy_s": deployed, "restore_s": restored, "snapshot_s": snapped,
            "rtt_p50_us": 1e6 * rtts[len(rtts) // 2],
            "rtt_p99_us": 1e6 * rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))]}


def main(argv: list[str] | None = None) -> int:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switch", choices=("auto", *PROCESS_KINDS), default="python")
    p.add_argument("--rounds", type=int, default=3, choices=range(1, 21), metavar="1..20")
    p.add_argument("--pings", type=int, default=300, choices=range(10, 10_001),
                   metavar="10..10000")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args(argv)
    try:
        kind = resolve_kind(args.switch)
    except (SwitchStartError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as logs:
        rounds = [one_round(kind, args.pings, Path(logs)) for _ in range(args.rounds)]
    result = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    import google.protobuf  # after controller chose the runtime
    from google.protobuf.internal import api_implementation

    stack = {"switch": kind, "protobuf": google.protobuf.__version__,
             "protobuf_runtime": api_implementation.Type(), "rounds": args.rounds}
    print(f"{kind} switch, protobuf {stack['protobuf']} ({stack['protobuf_runtime']} runtime), "
          f"median of {args.rounds}: deploy {result['deploy_s']:.3f} s, restore of 4096 slots "
          f"{result['restore_s']:.2f} s, snapshot {result['snapshot_s']:.2f} s, "
          f"PacketOut->PacketIn p50 {result['rtt_p50_us']:.0f} µs "
          f"p99 {result['rtt_p99_us']:.0f} µs")
    if args.json:
        args.json.write_text(json.dumps({**stack, **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
