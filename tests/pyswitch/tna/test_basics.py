"""The TNA execution model on a small program, one TNA feature per op
(programs/tna_basics.p4): externs, the traffic manager, the loop port, drops and
bridged metadata, each checked against what the TNA document defines.

programs/tna_basics.ir.json.gz is p4test's IR of the program, made as the replay
program's is (bmv2.tna_artifacts.compile_ir, with p4test and the TNA headers)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from bmv2.pyswitch import Exact, Switch
from bmv2.pyswitch.tna import read_ir

PROGRAMS = Path(__file__).with_name("programs")
BASICS_IR = PROGRAMS / "tna_basics.ir.json.gz"
ETH = bytes.fromhex("020000000001" "020000000002" "88b5")
CPU_PORT = 64


def frame(op: int, port: int, idx: int = 0, arg: int = 0) -> bytes:
    """A test frame: Ethernet, then the test header (op, passes, port, idx, arg, res, res2)."""
    return ETH + struct.pack(">BBHIIII", op, 0, port, idx, arg, 0, 0) + bytes(20)


def fields(data: bytes) -> dict[str, int]:
    op, passes, port, idx, arg, res, res2 = struct.unpack(">BBHIIII", data[14:34])
    return {"op": op, "passes": passes, "port": port, "idx": idx, "arg": arg, "res": res,
            "res2": res2}


@pytest.fixture
def sw() -> Switch:
    return Switch(read_ir(BASICS_IR), cpu_port=CPU_PORT)


def one(sw: Switch, in_port: int, data: bytes) -> tuple[int, dict[str, int]]:
    (out,) = sw.process(in_port, data)
    return out[0], fields(out[1])


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC bit by bit (poly 0x8005 reflected, init 0): bf-utils' crc_16."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_the_program_is_tna(sw: Switch) -> None:
    assert sw.arch == "tna"
    assert "Ig.dmac" in sw.info.tables
    assert set(sw.info.registers) == {"Ig.cells", "Ig.pairs"}


def test_unicast_to_the_port_ingress_chose(sw: Switch) -> None:
    port, f = one(sw, 1, frame(1, 3))
    assert (port, f["passes"]) == (3, 1)     # egress ran once
    assert sw.stats.passes == 1 and sw.stats.egress_runs == 1


def test_a_register_action_returns_the_cell_before_its_change(sw: Switch) -> None:
    assert one(sw, 1, frame(2, 5, idx=1, arg=7))[1]["res"] == 0
    assert one(sw, 1, frame(2, 5, idx=1, arg=7))[1]["res"] == 7
    assert sw.register_read("Ig.cells", 1) == 14
    assert sw.register_read("Ig.cells", 0) == 0


def test_a_pair_register_keeps_both_halves(sw: Switch) -> None:
    assert one(sw, 1, frame(3, 5, idx=2, arg=9))[1]["res"] == 9
    assert one(sw, 1, frame(3, 5, idx=2, arg=4))[1]["res"] == 13
    assert sw.register_read("Ig.pairs", 2) == (13 << 32) | 9   # lo = sum, hi = max


def test_identity_hash_concatenates_and_crc16_is_crc_16(sw: Switch) -> None:
    idx, arg = 0x12345678, 0xABCDEF01
    f = one(sw, 1, frame(4, 1, idx=idx, arg=arg))[1]
    assert f["res"] == 0x5678EF01
    assert f["res2"] == crc16_arc(struct.pack(">II", idx, arg))


def test_random_stays_under_its_mask_and_varies(sw: Switch) -> None:
    seen = {one(sw, 1, frame(5, 1, arg=0x0F))[1]["res"] for _ in range(60)}
    assert seen <= set(range(16))
    assert len(seen) > 4


def test_multicast_copies_carry_their_port_and_rid(sw: Switch) -> None:
    sw.mc_group_set(5, [(1, 11), (2, 12), (3, 13)])
    out = sw.process(1, frame(6, 2, arg=5))
    got = sorted((port, fields(d)["res"], fields(d)["res2"]) for port, d in out)
    # the unicast copy ingress also asked for (rid 0), and one per replica
    assert got == [(1, 1, 11), (2, 2, 0), (2, 2, 12), (3, 3, 13)]
    assert sw.stats.replicas == 3


def test_the_loop_port_brings_a_packet_back_to_ingress(sw: Switch) -> None:
    port, f = one(sw, 1, frame(7, 2, arg=3))
    assert (port, f["res"], f["passes"]) == (2, 3, 3)
    assert sw.stats.recirculations == 2 and sw.stats.passes == 3


def test_drop_ctl_drops_in_ingress_and_in_egress(sw: Switch) -> None:
    assert sw.process(1, frame(8, 2)) == []
    assert sw.process(1, frame(9, 2)) == []
    assert sw.stats.dropped == 2 and sw.stats.egress_runs == 1


def test_bridged_metadata_reaches_egress_and_leaves_no_bytes(sw: Switch) -> None:
    data = frame(10, 2, arg=41)
    out = sw.process(1, data)
    assert len(out) == 1 and len(out[0][1]) == len(data)
    assert fields(out[0][1])["res"] == 42


def test_a_table_forwards_on_hit_and_drops_on_its_default(sw: Switch) -> None:
    sw.table_add("Ig.dmac", [Exact(0x020000000009)], "Ig.to_port", [4])
    hit = bytes.fromhex("020000000009" "020000000002" "0800") + bytes(46)
    miss = bytes.fromhex("020000000008" "020000000002" "0800") + bytes(46)
    assert sw.process(1, hit) == [(4, hit)]
    assert sw.process(1, miss) == []


def test_an_action_called_directly_and_by_a_table_keeps_its_parameter(sw: Switch) -> None:
    """p4c copies an action per direct call with its argument folded in: the control
    plane still sees the table's action, with its parameter."""
    assert [p.name for p in sw.info.actions["Ig.set_res"].params] == ["value"]
    assert one(sw, 1, frame(12, 3))[1]["res"] == 5
    assert [one(sw, 1, frame(13, 3, arg=a))[1]["res"] for a in (1, 2, 3)] == [100, 200, 0]


def test_ingress_drops_a_packet_its_parser_ran_out_of(sw: Switch) -> None:
    assert sw.process(1, ETH + bytes(10)) == []    # test_h is 24 bytes
    assert sw.stats.parser_errors == 1 and sw.stats.dropped == 1


def test_counters_count_packets_and_bytes(sw: Switch) -> None:
    for _ in range(3):
        sw.process(1, frame(1, 3))
    assert sw.counter_read("Ig.ops", 1) == (3, 3 * len(frame(1, 3)))


def test_a_register_touched_twice_in_a_pass_is_counted(sw: Switch) -> None:
    for op in (2, 3, 2):
        sw.process(1, frame(op, 5, idx=1, arg=1))
    assert sw._code.register_conflicts == {}
    f = one(sw, 1, frame(11, 5, idx=1, arg=1))[1]
    assert (f["res"], f["res2"]) == (2, 3)     # run as written, and counted
    assert sw._code.register_conflicts == {"Ig.cells": 1}
