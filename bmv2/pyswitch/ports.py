"""Switch ports on Linux interfaces, through raw AF_PACKET sockets.

``-i PORT@IFACE`` binds switch port PORT to interface IFACE, as in bmv2. Each
interface is put in promiscuous mode, and one thread per port hands every
frame received on it (frames the host itself sends out are skipped, like
bmv2's pcap capture in direction "in") to the switch. Frames the switch emits
on a port are written to its interface; frames for ports without one are
dropped, as bmv2 does.
"""

from __future__ import annotations

import logging
import os
import selectors
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
RECEIVE_BUFFER_BYTES = 8 << 20   # per port socket (capped by net.core.rmem_max)
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
MAX_FRAME = 65535

Receiver = Callable[[int, bytes], None]


class PortError(ValueError):
    """A bad ``PORT@IFACE`` argument or an interface that cannot be opened."""


@dataclass(frozen=True)
class PortSpec:
    """A switch port number bound to an interface name."""

    port: int
    iface: str


def parse_port_spec(text: str) -> PortSpec:
    """Parse ``PORT@IFACE`` (PORT a non-negative integer, IFACE an interface name)."""
    port_text, sep, iface = text.partition("@")
    if not sep or not port_text or not iface:
        raise PortError(f"interface {text!r} is not of the form PORT@IFACE, e.g. 1@veth1")
    try:
        port = int(port_text, 10)
    except ValueError:
        raise PortError(f"interface {text!r}: port {port_text!r} is not a number") from None
    if port < 0:
        raise PortError(f"interface {text!r}: port must be >= 0")
    if len(iface) >= 16 or "/" in iface or any(c.isspace() for c in iface):
        raise PortError(f"interface {text!r}: {iface!r} is not a valid interface name")
    return PortSpec(port, iface)


def check_port_specs(specs: Iterable[PortSpec]) -> dict[int, str]:
    """Port number -> interface name, refusing a port or an interface used twice."""
    ports: dict[int, str] = {}
    for spec in specs:
        if spec.port in ports:
            raise PortError(f"port {spec.port} is given twice ({ports[spec.port]}, {spec.iface})")
        if spec.iface in ports.values():
            raise PortError(f"interface {spec.iface} is bound to two ports")
        ports[spec.port] = spec.iface
    return ports


def _open(iface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        # room for a burst (a Learner's UPDATEs for a batch) while the thread is busy:
        # the default 208 KB holds a couple of hundred small frames
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        sock.bind((iface, 0))
        ifindex = socket.if_nametoindex(iface)
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class PortSet:
    """The switch's interfaces: a receive thread per port and a send path."""

    def __init__(self, interfaces: dict[int, str], receive: Receiver) -> None:
        self._receive = receive
        self._sockets: dict[int, socket.socket] = {}
        self._threads: list[threading.Thread] = []
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = threading.Event()
        try:
            for port, iface in interfaces.items():
                try:
                    self._sockets[port] = _open(iface)
                except PermissionError:
                    raise PortError(
                        f"cannot open interface {iface} for port {port}: raw sockets need "
                        "root or CAP_NET_RAW"
                    ) from None
                except OSError as exc:
                    raise PortError(
                        f"cannot open interface {iface} for port {port}: {exc.strerror}"
                    ) from None
        except PortError:
            self.close()
            raise
        self.interfaces = dict(interfaces)

    @property
    def ports(self) -> list[int]:
        """The port numbers that have an interface."""
        return sorted(self._sockets)

    def start(self) -> None:
        """Start one receive thread per port."""
        for port, sock in self._sockets.items():
            thread = threading.Thread(
                target=self._rx_loop, args=(port, sock), name=f"port-{port}-rx", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def send(self, port: int, frame: bytes) -> None:
        """Write a frame on a port's interface (dropped if the port has none)."""
        sock = self._sockets.get(port)
        if sock is None or self._stopping.is_set():
            return
        try:
            sock.send(frame)
        except OSError as exc:
            log.warning("port %d (%s): frame of %d bytes not sent: %s",
                        port, self.interfaces[port], len(frame), exc.strerror)

    def _rx_loop(self, port: int, sock: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is sock:
                        self._drain(port, sock)

    def _drain(self, port: int, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                frame, address = sock.recvfrom(MAX_FRAME)
            except BlockingIOError:
                return
            except OSError as exc:
                log.warning("port %d: receive failed: %s", port, exc.strerror)
                return
            if address[2] == PACKET_OUTGOING:
                continue
            try:
                self._receive(port, frame)
            except Exception:
                log.exception("port %d: the switch failed on a received frame", port)

    def close(self) -> None:
        """Stop the receive threads and close every socket."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        os.write(self._wake_w, b"x")
        for thread in self._threads:
            thread.join(timeout=2.0)
        for sock in self._sockets.values():
            sock.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
