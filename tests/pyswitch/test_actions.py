"""Stack push/pop and run-time indexing, predicated actions, exit, assert, random,
and bmv2's _jump/_jump_if_zero primitives."""

from __future__ import annotations

import copy
import struct

import pytest

from bmv2.pyswitch import Exact, Lpm, Switch

from .util import program_json


def pkt(op: int, idx: int = 0, val: int = 0, items: tuple[int, ...] = (5, 6, 0)) -> bytes:
    return bytes([op, idx, val, *items]) + b"tail"


def run(sw: Switch, data: bytes) -> list[tuple[int, bytes]]:
    return sw.process(0, data)


def res(count: int, r: int = 0, flag: int = 0, sel: int = 0) -> bytes:
    return bytes([count, r, flag, sel])


@pytest.fixture
def sw(load) -> Switch:
    return load("actions_misc", seed=4)


def test_push_front(sw: Switch) -> None:
    assert run(sw, pkt(1, val=9)) == [(1, res(3) + bytes([1, 0, 9, 9, 5, 6, 0]) + b"tail")]


def test_pop_front(sw: Switch) -> None:
    assert run(sw, pkt(2)) == [(1, res(3) + bytes([2, 0, 0, 6, 0]) + b"tail")]


def test_runtime_index_write_and_read(sw: Switch) -> None:
    assert run(sw, pkt(3, idx=1, val=9)) == [(1, res(3) + bytes([3, 1, 9, 5, 9, 0]) + b"tail")]
    # element 3 exists but is invalid: written, not emitted
    assert run(sw, pkt(3, idx=3, val=9)) == [(1, res(3) + bytes([3, 3, 9, 5, 6, 0]) + b"tail")]
    assert run(sw, pkt(8, idx=1)) == [(1, res(3, sel=6) + bytes([8, 1, 0, 5, 6, 0]) + b"tail")]


def test_out_of_range_index_drops_and_counts(sw: Switch) -> None:
    assert run(sw, pkt(3, idx=7, val=1)) == []
    assert run(sw, pkt(8, idx=4)) == []
    assert sw.stats.errors == 2


def test_predicated_action(sw: Switch) -> None:
    sw.table_add("I.t_classify", [Exact(4)], "I.classify", [10])
    assert run(sw, pkt(4, val=20)) == [(2, res(3, flag=1) + bytes([4, 0, 20, 5, 6, 0]) + b"tail")]
    assert run(sw, pkt(4, val=5)) == []


def test_random_within_bounds(sw: Switch) -> None:
    seen = {run(sw, pkt(5))[0][1][1] for _ in range(300)}
    assert seen == set(range(10, 21))


def test_assert(sw: Switch) -> None:
    assert len(run(sw, pkt(6, val=1))) == 1
    assert run(sw, pkt(6, val=0)) == []
    assert sw.stats.errors == 1


def test_exit_in_action(sw: Switch) -> None:
    assert run(sw, pkt(7)) == [(3, res(3) + bytes([7, 0, 0, 5, 6, 0]) + b"tail")]


def test_parser_stack_overflow(sw: Switch) -> None:
    out = run(sw, pkt(0, items=(1, 2, 3, 4, 5)))
    assert out == [(1, res(4) + bytes([0, 0, 0, 1, 2, 3, 4]) + b"\x05tail")]


def _jumping_forward() -> dict:
    """basic_fwd with I.forward rewritten: forward(5) goes to port 7, others as asked."""
    j = copy.deepcopy(program_json("basic_fwd"))
    act = next(a for a in j["actions"] if a["name"] == "I.forward")
    espec = {"type": "field", "value": ["standard_metadata", "egress_spec"]}

    def assign(value: dict) -> dict:
        return {"op": "assign", "parameters": [espec, value]}

    cond = {"type": "expression", "value": {"type": "expression", "value": {
        "op": "b2d", "left": None, "right": {"type": "expression", "value": {
            "op": "==", "left": {"type": "local", "value": 0},
            "right": {"type": "hexstr", "value": "0x0005"}}}}}}
    act["primitives"] = [
        {"op": "_jump_if_zero", "parameters": [cond, {"type": "hexstr", "value": "0x3"}]},
        assign({"type": "hexstr", "value": "0x7"}),
        {"op": "_jump", "parameters": [{"type": "hexstr", "value": "0x4"}]},
        assign({"type": "runtime_data", "value": 0}),
    ]
    return j


def test_jump_primitives() -> None:
    sw = Switch(_jumping_forward())
    sw.table_add("I.ipv4_lpm", [Lpm(0x0A000000, 8)], "I.forward", [5])
    sw.table_add("I.ipv4_lpm", [Lpm(0x0B000000, 8)], "I.forward", [2])
    eth = bytes(12) + b"\x08\x00"

    def ip(dst: int) -> bytes:
        return bytes([0x45, 0, 0, 20]) + bytes(12) + struct.pack("!I", dst)

    assert [p for p, _d in sw.process(0, eth + ip(0x0A000001))] == [7]
    assert [p for p, _d in sw.process(0, eth + ip(0x0B000001))] == [2]
    assert "while True:" in sw.generated_source
