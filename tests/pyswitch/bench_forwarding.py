"""Packets/s of the Python switch (a measurement, not a test):

    .venv/bin/python -m tests.pyswitch.bench_forwarding [--seconds S]

basic_fwd: Ethernet + IPv4 parse, one LPM lookup (100 routes), deparse.
replay.p4 (if built): plain IPv4 forwarding through the project's program, and
replay INSERT / SAMPLE requests.
"""

from __future__ import annotations

import argparse
import struct
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from bmv2.pyswitch import Exact, Lpm, Switch
from controller.program import DEFAULT
from controller.replication import sample_groups

from .util import program_json

REPLAY_JSON = DEFAULT.bmv2_json
REPLAY_HEADER = struct.Struct("!8B5IQ")


def rate(sw: Switch, port: int, data: bytes, seconds: float) -> float:
    """Injected packets per second for ``seconds`` of wall time."""
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(200):
            sw.process(port, data)
        n += 200
    return n / (time.perf_counter() - start)


def udp(dst: str, dport: int = 5678, payload: bytes = b"x" * 64) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
                 / IP(src="198.18.0.1", dst=dst) / UDP(sport=5000, dport=dport) / payload)


def bench_basic(seconds: float) -> None:
    sw = Switch(program_json("basic_fwd"))
    for i in range(100):
        sw.table_add("I.ipv4_lpm", [Lpm(0x0A000000 + (i << 8), 24)], "I.forward", [4])
    sw.table_add("I.ipv4_lpm", [Lpm(0xC6120100, 24)], "I.forward", [3])
    pkt = udp("198.18.1.2")
    assert sw.process(1, pkt) == [(3, pkt)]
    print(f"basic_fwd ipv4 forwarding: {rate(sw, 1, pkt, seconds):9.0f} packets/s")


def bench_replay(seconds: float) -> None:
    sw = Switch.from_json_file(REPLAY_JSON, seed=1)
    sw.table_add("ReplayIngress.source.source_guard",  # the sender's port, MAC and address
                 [Exact(1), Exact(0x020000000001), Exact(0xC6120001)],
                 "ReplayIngress.source.bound", [])
    sw.table_add("ReplayIngress.ipv4.ipv4_lpm", [Lpm(0xC6120100, 24)],
                 "ReplayIngress.ipv4.forward", [3])
    pkt = udp("198.18.1.2")
    assert [p for p, _d in sw.process(1, pkt)] == [3]
    print(f"replay.p4 ipv4 forwarding: {rate(sw, 1, pkt, seconds):9.0f} packets/s")
    vip = 0xC612FFFE
    sw.table_add("ReplayIngress.replay_vip", [Exact(vip)], "ReplayIngress.replay_vip_hit", [])
    sw.table_add("ReplayIngress.replay.replay_table_config", [Exact(0)],
                 "ReplayIngress.replay.configure", [1, 4096, 1, 64, 1])
    sw.table_add("ReplayIngress.replay.replay_acl", [Exact(0xC6120001), Exact(0)],
                 "ReplayIngress.replay.allow", [7])
    sw.clone_session_set(100, port=0)
    sw.table_add("ReplayIngress.replay.sample_replication", [Exact(1)],
                 "ReplayIngress.replay.replicate", [512])
    for group, replicas in sample_groups(1, 512).items():
        sw.mc_group_set(group, replicas)

    def request(op: int, flags: int, count: int = 0, payload: bytes = b"") -> bytes:
        body = REPLAY_HEADER.pack(1, op, flags, 0, 0, count, 0, 0, 1, 0, 0, 1 << 16, 0, 0)
        return udp("198.18.255.254", 45000, body + payload)

    insert = request(1, 0x04, payload=bytes(64))
    print(f"replay.p4 INSERT (no ack):  {rate(sw, 1, insert, seconds):9.0f} requests/s")
    sample = request(2, 0x10, count=32)
    assert len(sw.process(1, sample)) == 32
    r = rate(sw, 1, sample, seconds)
    print(f"replay.p4 SAMPLE 32 uniform: {r:8.0f} requests/s = {32 * r:.0f} replies/s "
          "(more: python -m tests.pyswitch.bench_sample)")


def main() -> None:
    ap = argparse.ArgumentParser(description="Python switch packets/s")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    bench_basic(args.seconds)
    if REPLAY_JSON.exists():
        bench_replay(args.seconds)


if __name__ == "__main__":
    main()
