"""Replay requests from the controller, in band: PacketOut through the CPU
port, replies back as PacketIn. bmv2's P4Runtime server cannot read or write
registers, so READ / WRITE / RESET / GET_STATE / SET_STATE travel this way."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable

from agent.contract import protocol
from agent.contract.protocol import Message, ProtocolError
from controller import udp_frame
from controller.p4runtime_session import P4RuntimeSession

CONTROLLER_MAC = "02:00:00:00:ff:fe"
CONTROLLER_IP = "198.19.255.254"
CONTROLLER_PORT = 45001


class InbandTimeout(TimeoutError):
    """Replies did not come back through the CPU port in time."""


class InbandChannel:
    """Send replay messages through the CPU port and match their replies."""

    def __init__(self, session: P4RuntimeSession, vip: str, vip_mac: str,
                 timeout: float = 5.0, window: int = 64) -> None:
        self.session = session
        self.vip = vip
        self.vip_mac = vip_mac
        self.timeout = timeout
        self.window = window
        self._ids = itertools.count(int(time.time()) & 0xFFFF_0000)

    def _frame(self, msg: Message) -> bytes:
        return udp_frame.build(udp_frame.UdpFrame(
            CONTROLLER_MAC, self.vip_mac, CONTROLLER_IP, self.vip, CONTROLLER_PORT,
            protocol.REPLAY_UDP_PORT, protocol.encode(msg)))

    def _next_id(self) -> int:
        return next(self._ids) & 0xFFFF_FFFF

    def _receive(self, deadline: float) -> Message | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        packet = self.session.packet_in(timeout=remaining)
        if packet is None:
            return None
        frame = udp_frame.parse(packet.payload)
        if frame is None or frame.src_port != protocol.REPLAY_UDP_PORT:
            return None
        try:
            return protocol.decode(frame.payload)
        except ProtocolError:
            return None

    def request(self, msg: Message, replies: int = 1) -> list[Message]:
        """Send one request and wait for its `replies` replies."""
        rid = self._next_id()
        self.session.packet_out(self._frame(protocol.with_request_id(msg, rid)))
        got: dict[int, Message] = {}
        deadline = time.monotonic() + self.timeout
        while len(got) < replies:
            reply = self._receive(deadline)
            if reply is None and time.monotonic() >= deadline:
                raise InbandTimeout(f"{protocol.Op(msg.op).name}: {len(got)} of {replies} "
                                    f"replies in {self.timeout:.0f} s")
            if reply is not None and reply.request_id == rid:
                got[reply.index] = reply
                if not reply.ok:
                    break
        return [got[i] for i in sorted(got)]

    def pipeline(self, messages: Iterable[Message]) -> list[Message]:
        """Send many single-reply requests with up to `window` in flight; replies in order."""
        pending: dict[int, int] = {}
        results: dict[int, Message] = {}
        todo = list(messages)
        sent = 0
        deadline = time.monotonic() + self.timeout
        while len(results) < len(todo):
            while sent < len(todo) and len(pending) < self.window:
                rid = self._next_id()
                pending[rid] = sent
                self.session.packet_out(self._frame(protocol.with_request_id(todo[sent], rid)))
                sent += 1
            reply = self._receive(deadline)
            if reply is None:
                if time.monotonic() >= deadline:
                    raise InbandTimeout(f"{len(results)} of {len(todo)} replies in "
                                        f"{self.timeout:.0f} s")
                continue
            position = pending.pop(reply.request_id, None)
            if position is not None:
                results[position] = reply
                deadline = time.monotonic() + self.timeout
        return [results[i] for i in range(len(todo))]
