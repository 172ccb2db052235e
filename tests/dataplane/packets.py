"""Send this, expect that: raw frames in and out of the test hosts, built with
scapy, around a switch started by bmv2.testbed.netns_bed."""

from __future__ import annotations

import itertools
import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from agent.contract import protocol
from agent.contract.protocol import Message, Op, ProtocolError, Status
from bmv2.testbed.netns import raw_socket
from bmv2.testbed.netns_bed import Testbed
from controller.config import Config
from controller.inband import InbandChannel
from controller.stats import COUNTER, counter_index

CONFIG = Path(__file__).with_name("testbed.yaml")  # the testbed of tests/dataplane
HEADER_FRAME = 14 + 20 + 8 + protocol.HEADER_BYTES   # a reply of the header alone: Ethernet,
                                                     # IPv4, UDP, replay header
PACKET_OUTGOING = 4


@dataclass
class Received:
    """One frame seen on a host's interface."""

    data: bytes

    @property
    def scapy(self) -> Ether:
        return Ether(self.data)

    def replay(self) -> Message | None:
        pkt = self.scapy
        if UDP not in pkt or pkt[UDP].sport != protocol.REPLAY_UDP_PORT:
            return None
        try:
            return protocol.decode(bytes(pkt[UDP].payload))
        except ProtocolError:
            return None


class PacketTestbed:
    """Hosts h1..hN as raw sockets, the switch under test, and the controller."""

    def __init__(self, cfg: Config, kind: str, log_dir: Path) -> None:
        self.cfg = cfg
        self.kind = kind
        self.bed = Testbed(cfg, kind, ip_stack=False, log_dir=log_dir)
        self.socks: dict[str, socket.socket] = {}
        self.inband: InbandChannel | None = None
        self._ids = itertools.count(1)

    def start(self) -> None:
        self.bed.start()
        self.cfg = self.bed.config
        for h in self.cfg.hosts:
            sock = raw_socket(self.bed.host_iface(h.name), self.bed.ns_name(h.name))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self.socks[h.name] = sock
        self.inband = InbandChannel(self.session, self.cfg.vip, self.cfg.vip_mac, timeout=10)
        self.drain()

    def stop(self) -> None:
        for sock in self.socks.values():
            sock.close()
        self.bed.stop()

    @property
    def session(self):
        assert self.bed.session is not None
        return self.bed.session

    # --- frames -----------------------------------------------------------------

    def send(self, host: str, frame: bytes | Ether) -> None:
        self.socks[host].send(bytes(frame))

    def recv(self, host: str, timeout: float = 2.0) -> Received | None:
        """The next frame the switch sent to `host`, or None."""
        sock = self.socks[host]
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([sock], [], [], remaining)
            if not ready:
                return None
            data, addr = sock.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING:
                return Received(data)

    def drain(self) -> None:
        for host in self.socks:
            while self.recv(host, timeout=0.05) is not None:
                pass
        self.session.drain_packet_ins()

    def silent(self, host: str, timeout: float = 0.5) -> bool:
        """True if no frame reaches `host` within `timeout`."""
        return self.recv(host, timeout) is None

    # --- replay -------------------------------------------------------------------

    def replay_frame(self, host: str, udp_payload: bytes, sport: int = 40000) -> Ether:
        h = self.cfg.host(host)
        return (Ether(src=h.mac, dst=self.cfg.vip_mac) / IP(src=h.ip, dst=self.cfg.vip)
                / UDP(sport=sport, dport=protocol.REPLAY_UDP_PORT) / Raw(udp_payload))

    def request(self, host: str, msg: Message, replies: int = 1,
                timeout: float = 5.0) -> list[Message]:
        """Send `msg` from `host` and collect up to `replies` replies with its id."""
        rid = next(self._ids)
        data = protocol.encode(protocol.with_request_id(msg, rid))
        self.send(host, self.replay_frame(host, data))
        return self.collect(host, rid, replies, timeout)

    def collect(self, host: str, rid: int, replies: int, timeout: float = 5.0) -> list[Message]:
        got: dict[int, Message] = {}
        deadline = time.monotonic() + timeout
        while len(got) < replies:
            frame = self.recv(host, max(0.0, deadline - time.monotonic()))
            if frame is None:
                break
            msg = frame.replay()
            if msg is not None and msg.request_id == rid:
                got[msg.index] = msg
                if not msg.ok and msg.status != Status.NOT_READY:  # a refusal answers once
                    break
        return [got[i] for i in sorted(got)]

    def one(self, host: str, msg: Message) -> Message:
        replies = self.request(host, msg)
        assert len(replies) == 1, f"expected one reply to {Op(msg.op).name}, got {replies}"
        return replies[0]

    def insert(self, table: int, payload: bytes, priority: float | None = None,
               host: str = "h1") -> Message:
        reply = self.one(host, protocol.insert(table, payload, priority=priority, ack=True))
        assert reply.ok, reply.status_name()
        return reply

    def sample(self, table: int, n: int, mode: int = protocol.Mode.DEFAULT,
               host: str = "h1") -> list[Message]:
        return self.request(host, protocol.sample(table, n, mode=mode), replies=n)

    # --- controller side -------------------------------------------------------------

    def switch_doc(self) -> dict:
        """The config's `switch:` section for replayctl against this testbed's switch: its
        address and the target whose program it runs (the TNA model's is not the default)."""
        return {"address": self.cfg.switch.address, "target": self.cfg.switch.target.name}

    def cpu(self, msg: Message) -> Message:
        assert self.inband is not None
        (reply,) = self.inband.request(msg)
        return reply

    def reset(self, table: int) -> None:
        reply = self.cpu(protocol.reset(table))
        assert reply.ok, reply.status_name()

    def untouched(self, table: int) -> bool:
        """The table's state is all zero: its ring, sequence, size, maximum and sum."""
        s = self.state(table)
        return s.ok and (s.slot, s.stamp, s.priority, s.size, s.total) == (0, 0, 0, 0, 0)

    def read_slot(self, table: int, slot: int) -> Message:
        reply = self.cpu(protocol.read(table, slot))
        assert reply.ok, reply.status_name()
        return reply

    def state(self, table: int) -> Message:
        return self.cpu(protocol.get_state(table))

    def counter(self, table: int, op: Op, status: Status) -> int:
        index = counter_index(table, int(op), int(status))
        return self.session.read_counter(COUNTER, index)[index][0]


def payload(i: int) -> bytes:
    """A payload of 16 words that differ from one i to another."""
    words = [i, i ^ 0xDEADBEEF, 0xFFFFFFFF - i] + [i * 7 + k for k in range(13)]
    return protocol.words_to_payload(words)


def fields(msg: Message) -> tuple:
    """What a reply says about the table, without its request id."""
    return (msg.status, msg.slot, msg.stamp, msg.priority, msg.size, msg.total, msg.payload)
