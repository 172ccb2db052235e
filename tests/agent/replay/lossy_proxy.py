"""A UDP proxy on loopback that drops, duplicates or filters datagrams (seeded)."""

from __future__ import annotations

import random
import select
import socket
import threading
import time
from collections.abc import Callable

Filter = Callable[[str, bytes], bool]  # (direction "up"/"down", datagram) -> drop it?


class LossyProxy:
    """Client <-> proxy <-> server, one client at a time; runs for at most `lifetime` s."""

    def __init__(self, server: tuple[str, int], *, loss: float = 0.0, duplicate: float = 0.0,
                 drop: Filter | None = None, seed: int = 0, lifetime: float = 60.0) -> None:
        self.server = server
        self.loss, self.duplicate, self.drop = loss, duplicate, drop
        self.rng = random.Random(seed)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        self.dropped = 0
        self._client: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._deadline = time.monotonic() + lifetime
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        return self.front.getsockname()

    def _forward(self, direction: str, data: bytes, sock: socket.socket,
                 dest: tuple[str, int]) -> None:
        if (self.drop is not None and self.drop(direction, data)) or self.rng.random() < self.loss:
            self.dropped += 1
            return
        for _ in range(2 if self.rng.random() < self.duplicate else 1):
            sock.sendto(data, dest)

    def _run(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            ready, _, _ = select.select([self.front, self.back], [], [], 0.05)
            for sock in ready:
                data, addr = sock.recvfrom(65535)
                if sock is self.front:
                    self._client = addr
                    self._forward("up", data, self.back, self.server)
                elif self._client is not None:
                    self._forward("down", data, self.front, self._client)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.front.close()
        self.back.close()
