"""Bring the testbed up and keep it up: the switch (bmv2 or the Python switch)
with the config's hosts in network namespaces around it, for operating it by
hand with replayctl (README, "Operating the switch").

    sudo .venv/bin/python -m bmv2.testbed.standalone --switch python     # Ctrl-C tears it down

The switch serves P4Runtime on the config's switch address (127.0.0.1:9559 in
controller/testbed.yaml) and starts without a pipeline unless --deploy is
given: `replayctl deploy` pushes it. Host `NAME` lives in namespace
`p4r-NAME`; run a command there with `ip netns exec p4r-NAME ...`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from agent.contract.cli_args import RUNS, ArgumentParser, doc_parts
from bmv2.launch import SWITCH_KINDS, SwitchStartError
from bmv2.testbed.netns import NETNS_DIR, NetnsError, have_netns
from bmv2.testbed.netns_bed import Testbed
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG, ConfigError

TAG = ""  # namespaces p4r-NAME, switch ports p4rsPORT


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m bmv2.testbed.standalone", description=description,
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switch", choices=("auto", *SWITCH_KINDS), default="auto",
                   help="auto: bmv2 when installed, else the Python switch")
    p.add_argument("-c", "--config", type=Path, default=DEFAULT_CONFIG)
    p.add_argument("--deploy", action="store_true", help="deploy the config at once")
    p.add_argument("--log-dir", type=Path, default=RUNS / "standalone")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ok, why = have_netns()
    if not ok:
        print(f"error: {why}", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a background job ignores it
        signal.signal(sig, _stop)
    try:
        cfg = cfgmod.load(args.config)
        bed = Testbed(cfg, args.switch, log_dir=args.log_dir, tag=TAG,
                      grpc_addr=cfg.switch.address, deploy_config=args.deploy)
        names = [bed.ns_name(h.name) for h in cfg.hosts]
        taken = [n for n in names if (NETNS_DIR / n).exists()]
        if taken:
            print(f"error: namespaces {', '.join(taken)} exist: a standalone testbed is "
                  "already up (stop it first)", file=sys.stderr)
            return 2
        with bed:
            assert bed.switch is not None
            pipeline = (bed.deploy_report.summary() if bed.deploy_report
                        else "no pipeline yet: run `replayctl deploy`")
            print(f"{bed.switch.kind} switch up, P4Runtime on {bed.switch.grpc_addr} "
                  f"(device {cfg.switch.device_id}); {pipeline}")
            print(f"replay VIP {cfg.vip}; switch log {args.log_dir}")
            for h in cfg.hosts:
                print(f"  {h.name:8} {h.role:14} {h.ip:12} port {h.port:3}  "
                      f"ip netns exec {bed.ns_name(h.name)} ...")
            print("Ctrl-C tears it down.", flush=True)
            while bed.switch.proc is not None and bed.switch.proc.poll() is None:
                time.sleep(0.5)
            print(f"error: the switch exited; see {args.log_dir}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("torn down", flush=True)
        return 0
    except (ConfigError, SwitchStartError, NetnsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
