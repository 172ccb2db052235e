"""Random, truncated and mutated packets never raise out of process()."""

from __future__ import annotations

import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from bmv2.pyswitch import Exact, Lpm, Switch
from controller.program import DEFAULT

from .util import PROGRAM_NAMES, program_json

REPLAY_JSON = DEFAULT.bmv2_json


def samples() -> list[bytes]:
    base = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    return [
        bytes(base / IP(src="198.18.0.1", dst="198.18.1.2") / UDP(sport=1, dport=45000)
              / bytes(range(100))),
        bytes(base / IP(src="198.18.0.1", dst="198.18.1.2", ihl=6, options=b"\x01" * 4)
              / UDP() / b"x"),
        bytes(base / ARP(op=1, hwdst="00:00:00:00:00:00", psrc="198.18.0.1",
                         pdst="198.18.0.254")),
        bytes(Ether(type=0x8847) / (b"\x00\x01\x01\x40" * 5)),
    ]


def switches() -> list[Switch]:
    out = [Switch(program_json(n), seed=1) for n in PROGRAM_NAMES]
    fwd = out[0]
    fwd.table_add("I.ipv4_lpm", [Lpm(0xC6120000, 15)], "I.forward", [1])
    mk = out[PROGRAM_NAMES.index("match_kinds")]
    mk.table_add("I.t_exact", [Exact(0), Exact(0)], "I.set_exact", [1])
    flow = out[PROGRAM_NAMES.index("v1model_flow")]
    flow.clone_session_set(5, port=3)
    flow.clone_session_set(6, port=4)
    flow.mc_group_set(7, [(1, 1), (2, 2)])
    out.append(Switch.from_json_file(REPLAY_JSON, seed=1))
    return out


def check(sw: Switch, packets: list[tuple[int, bytes]]) -> None:
    for port, data in packets:
        out = sw.process(port, data)
        assert isinstance(out, list)
        for p, d in out:
            assert 0 <= p < 512 and isinstance(d, bytes)
    # actions_misc asserts and indexes stacks at run time: its errors are counted drops
    if "I.t_classify" not in sw.info.tables:
        assert sw.stats.errors == 0


def test_random_buffers() -> None:
    rng = random.Random(7)
    sws = switches()
    n = 20_000 // len(sws) + 1
    for sw in sws:
        packets = [(rng.choice((0, 1, 255)), rng.randbytes(rng.randrange(0, 200)))
                   for _ in range(n)]
        check(sw, packets)


def test_truncations_and_bit_flips() -> None:
    rng = random.Random(8)
    for sw in switches():
        packets = []
        for s in samples():
            packets += [(0, s[:i]) for i in range(len(s) + 1)]
            packets += [(255, s[:i]) for i in range(0, len(s) + 1, 7)]
            for _ in range(200):
                b = bytearray(s)
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
                packets.append((rng.randrange(4), bytes(b)))
        check(sw, packets)


@pytest.mark.parametrize("port", [-1, 512, "1"])
def test_bad_ports_are_dropped(port: object) -> None:
    sw = Switch(program_json("basic_fwd"))
    assert sw.process(port, b"x" * 20) == []  # type: ignore[arg-type]
    assert sw.stats.dropped == 1


def test_no_pipeline_drops() -> None:
    sw = Switch()
    assert not sw.loaded
    assert sw.process(1, b"abc") == []
