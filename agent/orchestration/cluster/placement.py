"""Which Ray node stands for which configured host, checked before anything is placed.

A node stands for host NAME when it carries the custom resource `host:NAME` (one
unit: one role per host). The switch's ACL and source guard know a host by its
address and its switch port, so a role placed on that node must be able to send
from the host's address and reach the replay service from it; `route_problem`
checks that on the node itself.
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

RESOURCE_PREFIX = "host:"
EXTRA_HINT = "pip install -e '.[cluster]' or make setup EXTRAS=cluster"


class PlacementError(RuntimeError):
    """The cluster cannot run this config's roles (one line, for exit code 2)."""


def resource(host: str) -> str:
    """The custom resource of the node that stands for `host`."""
    return f"{RESOURCE_PREFIX}{host}"


def ray_missing() -> str | None:
    """Why `--cluster ray` cannot run here (Ray not installed), or None."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed ({EXTRA_HINT})"
    return None


@dataclass(frozen=True)
class Node:
    """One alive Ray node as ray.nodes() describes it."""

    node_id: str
    ip: str
    resources: Mapping[str, float]

    @property
    def hosts(self) -> list[str]:
        """The configured hosts this node can stand for."""
        return sorted(k.removeprefix(RESOURCE_PREFIX) for k, v in self.resources.items()
                      if k.startswith(RESOURCE_PREFIX) and v >= 1)


def alive_nodes(ray_nodes: Iterable[Mapping]) -> list[Node]:
    """ray.nodes()'s entries as Nodes, the dead ones left out."""
    return [Node(n["NodeID"], n["NodeManagerAddress"], dict(n.get("Resources", {})))
            for n in ray_nodes if n.get("Alive")]


def nodes_for(hosts: Iterable[str], nodes: Iterable[Node]) -> dict[str, list[Node]]:
    """host -> the alive nodes that can stand for it."""
    found: dict[str, list[Node]] = {h: [] for h in hosts}
    for node in nodes:
        for h in node.hosts:
            if h in found:
                found[h].append(node)
    return found


def missing_hosts(hosts: Iterable[str], nodes: Iterable[Node]) -> list[str]:
    """The hosts no alive node stands for, in the order given."""
    return [h for h, ns in nodes_for(hosts, nodes).items() if not ns]


def missing_message(missing: list[str], address: str) -> str:
    """The one-line error for hosts without a node."""
    names = ", ".join(f"{h} (resource {resource(h)})" for h in missing)
    return (f"no Ray node for host{'s' if len(missing) > 1 else ''} {names} in the cluster at "
            f"{address}: start one with ray start --resources "
            f"'{{\"{resource(missing[0])}\": 1}}' on the machine cabled as that host")


def route_problem(host: str, ip: str, replay: tuple[str, int]) -> str | None:
    """Run on a node: why it cannot stand for `host` (address `ip`) towards the replay
    service at `replay`, or None. The node must own `ip` and its route to the
    replay address must leave from `ip` (what the switch's source guard accepts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((ip, 0))
        except OSError as exc:
            return f"host {host}'s address {ip} is not on this node ({exc.strerror})"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(replay)
        except OSError as exc:
            return f"no route from host {host} to the switch's replay address {replay[0]} " \
                   f"({exc.strerror})"
        source = s.getsockname()[0]
    if source != ip:
        return (f"the route to the switch's replay address {replay[0]} leaves from {source}, "
                f"not from host {host}'s address {ip}")
    return None
