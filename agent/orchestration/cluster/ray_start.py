"""`ray start`, with the raylet told the dashboard agent's listen port
(`python -m agent.orchestration.cluster.ray_start start ...`, what RayCluster runs).

Ray 2.60's start_raylet passes the raylet every agent port `ray start` was given but
the dashboard agent's listen port. A raylet without it waits for the agent to write
that port to a file, and aborts when the file is not there within 15 s: on a loaded
machine the agent's imports alone take longer, and the node never comes up. With
`--dashboard_agent_listen_port` on its command line the raylet does not wait.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

LISTEN_PORT_OPTION = "--dashboard-agent-listen-port"   # ray start's option
RAYLET_FLAG = "--dashboard_agent_listen_port"          # the raylet's flag


def with_listen_port(start_process: Callable, raylet_type: str, port: str) -> Callable:
    """`start_process` (services.start_ray_process), adding the listen port to a
    raylet's command line when it lacks one."""
    def start(command: list[str], process_type: str, *args, **kwargs):
        if process_type == raylet_type and not any(c.startswith(RAYLET_FLAG) for c in command):
            command = [*command, f"{RAYLET_FLAG}={port}"]
        return start_process(command, process_type, *args, **kwargs)
    return start


def main(argv: list[str]) -> int:
    from ray._private import ray_constants, services
    from ray.scripts.scripts import main as ray_main

    if LISTEN_PORT_OPTION in argv:
        port = argv[argv.index(LISTEN_PORT_OPTION) + 1]
        services.start_ray_process = with_listen_port(
            services.start_ray_process, ray_constants.PROCESS_TYPE_RAYLET, port)
    sys.argv = ["ray", *argv]
    return ray_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
