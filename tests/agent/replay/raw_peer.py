"""A raw UDP peer of a replay server: sends datagrams as given, collects replies."""

from __future__ import annotations

import socket

from agent.contract import protocol
from agent.contract.protocol import Message

LOOPBACK = "127.0.0.1"
OUTSIDER = "127.0.0.2"  # a loopback source address the ACL does not list


class RawPeer:
    """A UDP socket that sends raw datagrams to a server and collects its replies."""

    def __init__(self, server: tuple[str, int], bind_ip: str = LOOPBACK) -> None:
        self.server = server
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind_ip, 0))

    def send(self, data: bytes | Message) -> None:
        self.sock.sendto(protocol.encode(data) if isinstance(data, Message) else data,
                         self.server)

    def replies(self, expect: int, timeout: float = 2.0) -> list[Message]:
        """Exactly the replies that arrive within `timeout` (stops early at `expect`)."""
        out: list[Message] = []
        self.sock.settimeout(timeout)
        while len(out) < expect:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                break
            out.append(protocol.decode(data))
        return out

    def none_within(self, timeout: float = 0.2) -> bool:
        """True if no datagram arrives within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            self.sock.recv(4096)
        except TimeoutError:
            return True
        return False

    def request(self, msg: Message, expect: int = 1) -> list[Message]:
        self.send(msg)
        return self.replies(expect)

    def close(self) -> None:
        self.sock.close()
