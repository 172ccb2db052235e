"""Network namespaces and veth pairs for the project's own test hosts.

Everything made here is named with a prefix the project owns, addressed from
198.18.0.0/15, and removed by `Namespace.delete` / `VethPair.delete` (and by
`cleanup_prefix` after a crash). Needs root.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
NETNS_DIR = Path("/var/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(RuntimeError):
    """An ip(8) command failed, or namespaces are not available here."""


def have_netns() -> tuple[bool, str]:
    """Whether this process may create namespaces, and why not."""
    if os.geteuid() != 0:
        return False, "network namespaces need root"
    if subprocess.run(["which", "ip"], capture_output=True).returncode != 0:
        return False, "iproute2 ('ip') is not installed"
    return True, ""


def ip(*args: str, ns: str | None = None, check: bool = True) -> str:
    """Run `ip ARGS` (inside namespace `ns` if given)."""
    cmd = ["ip", *(["-n", ns] if ns else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise NetnsError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return proc.stdout


def sysctl(key: str, value: str, ns: str | None = None) -> None:
    cmd = ["sysctl", "-q", "-w", f"{key}={value}"]
    if ns:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    subprocess.run(cmd, capture_output=True)


@dataclass
class Namespace:
    """A named network namespace with loopback up."""

    name: str

    def create(self) -> Namespace:
        ip("netns", "add", self.name)
        ip("link", "set", "lo", "up", ns=self.name)
        return self

    def delete(self) -> None:
        ip("netns", "delete", self.name, check=False)

    def exec_prefix(self) -> list[str]:
        """Prefix that runs a command inside this namespace."""
        return ["ip", "netns", "exec", self.name]


@dataclass
class VethPair:
    """A veth pair: `a` in namespace `ns_a`, `b` in `ns_b` (None = this one)."""

    a: str
    b: str
    ns_a: str | None = None
    ns_b: str | None = None

    def create(self, mtu: int = 1500) -> VethPair:
        ip("link", "add", self.a, "type", "veth", "peer", "name", self.b)
        for name, ns in ((self.a, self.ns_a), (self.b, self.ns_b)):
            if ns:
                ip("link", "set", name, "netns", ns)
            sysctl(f"net.ipv6.conf.{name}.disable_ipv6", "1", ns)
            ip("link", "set", name, "mtu", str(mtu), ns=ns)
            ip("link", "set", name, "up", ns=ns)
        return self

    def delete(self) -> None:
        ip("link", "delete", self.a, ns=self.ns_a, check=False)


def configure_host(ns: str, iface: str, address: str, mac: str | None = None,
                   default_dev: bool = True) -> None:
    """Give `iface` in `ns` an address (CIDR) and optionally a MAC and default route."""
    if mac:
        ip("link", "set", iface, "address", mac, ns=ns)
    ip("addr", "add", address, "dev", iface, ns=ns)
    ip("link", "set", iface, "up", ns=ns)
    if default_dev:
        ip("route", "add", "default", "dev", iface, ns=ns, check=False)


def cleanup_prefix(prefix: str) -> None:
    """Delete every namespace whose name starts with `prefix` (crash leftovers)."""
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(prefix):
            ip("netns", "delete", name, check=False)


@contextmanager
def inside(ns: str):
    """Run the body in namespace `ns` (this thread only), then switch back."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(str(NETNS_DIR / ns), os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise NetnsError(f"setns({ns}): {os.strerror(ctypes.get_errno())}")
        yield
    finally:
        _libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


def raw_socket(iface: str, ns: str | None = None) -> socket.socket:
    """An AF_PACKET socket bound to `iface` (in `ns`), for sending and sniffing frames."""
    def make() -> socket.socket:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.bind((iface, 0))
        return sock

    if ns is None:
        return make()
    with inside(ns):
        return make()


def udp_socket(ns: str | None = None) -> socket.socket:
    """A UDP socket created inside `ns` (it stays there after we switch back)."""
    if ns is None:
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with inside(ns):
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
