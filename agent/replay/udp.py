"""Small UDP socket helpers shared by the replay server, client and weight broadcast."""

from __future__ import annotations

import logging
import socket

log = logging.getLogger(__name__)

SOCKET_BUFFER_BYTES = 4 << 20


def udp_socket(bind: tuple[str, int], buffer_bytes: int = SOCKET_BUFFER_BYTES) -> socket.socket:
    """A UDP socket bound to `bind` with large send/receive buffers (reply bursts)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, buffer_bytes)
        except OSError:
            log.debug("could not set socket buffer option %s", opt)
    try:
        sock.bind(bind)
    except OSError:
        sock.close()
        raise
    return sock
