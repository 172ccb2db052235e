"""Network namespaces and veth pairs for the project's own test hosts.

Everything made here is named with a prefix the project owns, addressed from
198.18.0.0/15, and removed by `Namespace.delete` / `VethPair.delete` (and by
`cleanup_prefix` after a crash). Needs root.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.rl.namespace import NETNS_DIR, NetnsError, netns_path, setns

ETH_P_ALL = 0x0003
SIOCETHTOOL = 0x8946
ETHTOOL_STXCSUM = 0x17
# ethtool set commands of the segmentation offloads libpcap looks at (linux/ethtool.h)
ETHTOOL_STSO, ETHTOOL_SUFO, ETHTOOL_SGSO, ETHTOOL_SGRO = 0x1F, 0x22, 0x24, 0x2C


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

    def pids(self) -> list[int]:
        """Processes running inside this namespace."""
        return pids_in(netns_id(self.name))

    def stop_processes(self, timeout: float = 3.0) -> list[int]:
        """Stop what still runs inside (see `stop_processes_in`)."""
        return stop_processes_in(netns_id(self.name), timeout)

    def delete(self) -> None:
        """Stop the processes left inside, then remove the namespace."""
        if (NETNS_DIR / self.name).exists():
            self.stop_processes()
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
        """Add the pair and set both ends up; a failure deletes what was added."""
        ip("link", "add", self.a, "type", "veth", "peer", "name", self.b)
        placed: dict[str, str | None] = {self.a: None, self.b: None}
        try:
            for name, ns in ((self.a, self.ns_a), (self.b, self.ns_b)):
                if ns:
                    ip("link", "set", name, "netns", ns)
                    placed[name] = ns
                sysctl(f"net.ipv6.conf.{name}.disable_ipv6", "1", ns)
                ip("link", "set", name, "mtu", str(mtu), ns=ns)
                ip("link", "set", name, "up", ns=ns)
        except BaseException:
            ip("link", "delete", self.a, ns=placed[self.a], check=False)
            raise
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


def _ethtool_off(ns: str | None, iface: str, command: int) -> None:
    """One `ethtool -K iface FEATURE off` (the SIOCETHTOOL ioctl), inside `ns` if given."""
    cmd = ctypes.create_string_buffer(struct.pack("II", command, 0))
    ifreq = struct.pack("16sP", iface.encode(), ctypes.addressof(cmd)).ljust(40, b"\0")
    with inside(ns) if ns else contextlib.nullcontext():
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(sock, SIOCETHTOOL, ifreq)
    finally:
        sock.close()


def tx_checksum_off(ns: str, iface: str) -> None:
    """`ethtool -K iface tx off` inside namespace `ns`.

    On a veth the sender's kernel leaves UDP/TCP checksums to the "hardware";
    a switch that reads frames through a packet socket sends them on with the
    partial checksum and the receiving host drops them. Hosts that talk to
    each other through the switch need TX checksumming done in software.
    """
    _ethtool_off(ns, iface, ETHTOOL_STXCSUM)


def segmentation_offloads_off(iface: str, ns: str | None = None) -> None:
    """`ethtool -K iface tso off ufo off gso off gro off` on a switch port.

    bmv2 reads a port through libpcap, whose receive ring has room for 2 MB of
    frames. With any of these offloads on, libpcap sizes each frame of the ring
    for a 64 KB packet, so the ring holds about 32 frames and a burst of more
    (a Learner's UPDATEs for a batch) is dropped by the kernel before bmv2 sees
    it; with them off, a frame is MTU-sized and the ring holds about a thousand.
    Must be done before the switch opens the port."""
    for command in (ETHTOOL_STSO, ETHTOOL_SUFO, ETHTOOL_SGSO, ETHTOOL_SGRO):
        with contextlib.suppress(OSError):  # a feature the device does not have (UFO)
            _ethtool_off(ns, iface, command)


def link_names() -> set[str]:
    """The names of the links in this namespace (a veth's "@peer" left off)."""
    return {line.split()[0].split("@")[0]
            for line in ip("-br", "link", check=False).splitlines() if line.strip()}


def delete_links(names: list[str]) -> None:
    """Delete the links of these names in this namespace that exist (leftovers of a
    bring-up that was killed between adding a veth pair and moving its end away)."""
    present = link_names()
    for name in names:
        if name in present:
            ip("link", "delete", name, check=False)


def cleanup_prefix(prefix: str) -> None:
    """Delete every namespace whose name starts with `prefix` (crash leftovers)."""
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(prefix):
            ip("netns", "delete", name, check=False)


def netns_id(ns: str) -> tuple[int, int]:
    """(device, inode) of namespace `ns`: the same for every process inside it."""
    st = os.stat(netns_path(ns))
    return st.st_dev, st.st_ino


def pids_in(ns: tuple[int, int]) -> list[int]:
    """Processes (other than this one) inside the namespace with id `ns`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            st = os.stat(entry / "ns" / "net")
        except OSError:
            continue  # gone, or a kernel thread
        if (st.st_dev, st.st_ino) == ns:
            found.append(int(entry.name))
    return found


def stop_processes_in(ns: tuple[int, int], timeout: float = 3.0) -> list[int]:
    """SIGTERM what still runs inside namespace `ns` (only the project's own
    namespaces are passed here), SIGKILL what is left after `timeout`; returns
    the PIDs found. The id outlives the namespace's name and its first process."""
    found = pids_in(ns)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids_in(ns):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while pids_in(ns) and time.monotonic() < deadline:
            time.sleep(0.05)
    return found


@contextmanager
def inside(ns: str):
    """Run the body in namespace `ns` (this thread only), then switch back."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(str(netns_path(ns)), os.O_RDONLY)
    try:
        setns(target, ns)
        yield
    finally:
        setns(own, "back", check=False)
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


def udp_socket_in(ns: str | None = None) -> socket.socket:
    """An unbound UDP socket created inside `ns` (it stays there after we switch back);
    agent.replay.udp.udp_socket is the bound, large-buffered one the replay parts use."""
    if ns is None:
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with inside(ns):
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


class LossError(NetnsError):
    """Neither tc netem nor nftables can drop packets on this machine."""


NO_LOSS_TOOL = ("packet loss needs tc netem (kernel module sch_netem) or nftables "
                "('nft', Debian package nftables)")


def have_packet_loss() -> tuple[bool, str]:
    """Whether link_loss can drop packets here, and why not: nft is installed, or tc
    can attach netem (tried on the loopback of a namespace made for the probe)."""
    if shutil.which("nft"):
        return True, ""
    probe = subprocess.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root",
                            "netem", "loss", "1%"], capture_output=True, text=True)
    if probe.returncode == 0:
        return True, ""
    return False, f"{NO_LOSS_TOOL}: {probe.stderr.strip()}"


def link_loss(iface: str, ns: str, peer: str, percent: float) -> str:
    """Drop `percent` % of the frames in each direction of a veth link at random:
    `iface` is its end in namespace `ns`, `peer` its end in this namespace. tc
    netem on both ends' egress where the kernel has netem, else an nftables
    netdev table on `iface`'s ingress and egress. Returns the tool used."""
    netem = ["netem", "loss", f"{percent}%"]
    host_end = ["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", iface, "root", *netem]
    if subprocess.run(host_end, capture_output=True).returncode == 0:
        subprocess.run(["tc", "qdisc", "replace", "dev", peer, "root", *netem], check=True,
                       capture_output=True)
        return "netem"
    rule = f"numgen random mod 10000 < {round(percent * 100)} counter drop;"
    ruleset = (f"table netdev p4r_loss {{\n"
               f'  chain in {{ type filter hook ingress device "{iface}" priority 0; {rule} }}\n'
               f'  chain out {{ type filter hook egress device "{iface}" priority 0; {rule} }}\n'
               f"}}\n")
    proc = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=ruleset,
                          text=True, capture_output=True)
    if proc.returncode != 0:
        raise LossError(f"{NO_LOSS_TOOL}: {proc.stderr.strip()}")
    return "nftables"
