"""`make mininet`: the main job's roles as a Mininet topology, the P4 switch a
Mininet node.

    python -m agent.orchestration.mininet_topo --switch auto --actors 2  # trains, like make run
    python -m agent.orchestration.mininet_topo --actors 2 --cli  # deploy, then the Mininet CLI

The Learner, N Actors and, for --backend host, the host replay server are
Mininet hosts with the config's addresses; the switch (bmv2 when installed or
asked for, else the Python switch) is a Mininet switch node; the controller
deploys the config over P4Runtime. Training then runs exactly as in `make run`
(agent.orchestration.launch), with the same options, output and exit codes. With --cli the
network stays up for Mininet's CLI (`pingall`, `learner ping 198.18.1.1`, ...)
until you leave it. Needs root and Mininet (Debian/Ubuntu: apt install mininet).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from functools import partial
from pathlib import Path

from agent.orchestration import launch
from bmv2.launch import PROCESS_KINDS
from bmv2.testbed.netns_bed import Bed
from controller.config import Config

DEBIAN_DIST = Path("/usr/lib/python3/dist-packages")  # where Debian's mininet package lives


def load_mininet() -> None:
    """Make Mininet importable (from this environment, or the system's Debian
    package, appended last so nothing of the venv is shadowed), or say how to get it."""
    if importlib.util.find_spec("mininet") is None and (DEBIAN_DIST / "mininet").is_dir():
        sys.path.append(str(DEBIAN_DIST))
    if importlib.util.find_spec("mininet") is None:
        raise launch.LaunchError("Mininet is not installed (Debian/Ubuntu: apt install "
                                 "mininet; or see mininet.org)")
    if shutil.which("mnexec") is None:
        raise launch.LaunchError("Mininet's mnexec is not on PATH (apt install mininet)")


def mininet_bed(cfg: Config, kind: str, log_dir: Path) -> Bed:
    """The launcher's bed factory: a Mininet network instead of bare namespaces."""
    if kind not in PROCESS_KINDS:
        raise launch.LaunchError(f"the Mininet topology runs {', '.join(PROCESS_KINDS)}; "
                                 f"{kind} runs on the namespace testbed (make run)")
    load_mininet()
    from mininet.log import setLogLevel

    from bmv2.testbed.mininet_bed import MininetBed

    setLogLevel("info")  # Mininet's own progress: hosts, links, switch start and stop
    return MininetBed(cfg, kind, log_dir)


def open_cli(args: argparse.Namespace) -> int:
    """Bring the network up, deploy, hand over to Mininet's CLI, tear down after."""
    cfg, kind = launch.run_config(args)
    with mininet_bed(cfg, kind, args.run_dir / "logs") as bed:
        from mininet.cli import CLI

        launch.say(f"switch up, pipeline deployed ({bed.deploy_report.summary()}); "
                   f"replay VIP {bed.config.vip}; 'exit' tears the network down")
        CLI(bed.net)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = launch.build_parser(__doc__, prog="python -m agent.orchestration.mininet_topo")
    p.add_argument("--cli", action="store_true",
                   help="open the Mininet CLI on the deployed network instead of training")
    return p


def main(argv: list[str] | None = None) -> None:
    args = launch.parse_args(argv, build_parser())
    if args.backend == "inprocess":
        print("error: --backend inprocess uses no network; run agent.orchestration.launch for it",
              file=sys.stderr)
        sys.exit(launch.EXIT_USAGE)
    runner = open_cli if args.cli else partial(launch.run, make_bed=mininet_bed)
    sys.exit(launch.guarded(runner, args))


if __name__ == "__main__":
    main()
