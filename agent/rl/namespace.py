"""Entering a network namespace: what a process placed on a testbed host does
first, before it opens any socket (the trainer's actor processes; bmv2.testbed.netns,
which makes the namespaces, switches threads with the same call).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/var/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(RuntimeError):
    """An ip(8) command failed, or namespaces are not available here."""


def netns_path(ns: str) -> Path:
    """The namespace file of `ns`: a name under /var/run/netns, or a path as given
    (e.g. /proc/PID/ns/net for a Mininet host, whose namespaces have no name)."""
    return Path(ns) if "/" in ns else NETNS_DIR / ns


def setns(fd: int, ns: str, check: bool = True) -> None:
    """Move the calling thread into the namespace open as `fd` (`ns` names it in errors)."""
    if _libc.setns(fd, CLONE_NEWNET) != 0 and check:
        raise NetnsError(f"setns({ns}): {os.strerror(ctypes.get_errno())}")


def enter(ns: str) -> None:
    """Move the calling thread into namespace `ns` for good (a process entry point
    calls this first, before it opens any socket)."""
    fd = os.open(str(netns_path(ns)), os.O_RDONLY)
    try:
        setns(fd, ns)
    finally:
        os.close(fd)
