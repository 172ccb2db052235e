"""Variable-length (varbit) fields, as simple_switch runs them (hand-built bmv2 JSON)."""

from __future__ import annotations

from typing import Any

import pytest

from bmv2.pyswitch import Switch

from .jsonprog import expr, field, header, hexstr, prim, program, state

TYPES = {
    "out_t": [["err", 32]],
    "len_t": [["len", 8]],
    "opt_t": [["a", 8], ["opts", "*"], ["tail", 8]],
    "v_t": [["b", 8], ["opts", "*"]],
    "ck_t": [["ck", 16]],
}
HEADERS = {"out": "out_t", "l": "len_t", "opt": "opt_t", "opt2": "opt_t", "v": "v_t",
           "ck": "ck_t"}
REPORT = [prim("add_header", header("out")),
          prim("assign", field("out", "err"), field("standard_metadata", "parser_error"))]


def varbit_program(bits_per_unit: int = 8, ingress: list[dict[str, Any]] = (),
                   order: tuple[str, ...] = ("out", "l", "opt"),
                   egress: list[dict[str, Any]] = (), **top: Any) -> Switch:
    """Parse len, then opt with a varbit of len * bits_per_unit bits; report parser_error."""
    states = [state("start", [
        {"op": "extract", "parameters": [{"type": "regular", "value": "l"}]},
        {"op": "extract_VL", "parameters": [
            {"type": "regular", "value": "opt"},
            expr("*", field("l", "len"), hexstr(bits_per_unit))]}])]
    return Switch(program(TYPES, HEADERS, states, list(order), [*REPORT, *ingress], egress,
                          max_opt_t=6, **top))


def out(err: int) -> bytes:
    return err.to_bytes(4, "big")


def test_extract_and_emit_keep_the_varbit_length() -> None:
    sw = varbit_program()
    pkt = bytes([2, 0x11, 0xAA, 0xBB, 0x22]) + b"zz"
    assert sw.process(3, pkt) == [(1, out(0) + pkt)]
    empty = bytes([0, 0x11, 0x22]) + b"zz"
    assert sw.process(3, empty) == [(1, out(0) + empty)]


def test_fields_after_the_varbit_are_shifted_by_its_length() -> None:
    sw = varbit_program(ingress=[prim("assign", field("opt", "tail"), hexstr(0x99)),
                                 prim("assign", field("opt", "a"), hexstr(0x77))])
    pkt = bytes([3, 0x11, 1, 2, 3, 0x22, 0x55])
    assert sw.process(3, pkt) == [(1, out(0) + bytes([3, 0x77, 1, 2, 3, 0x99, 0x55]))]


@pytest.mark.parametrize(("unit", "pkt", "err"), [
    (4, bytes([1, 0x11, 0xAA, 0x22]), 6),           # 4 bits: ParserInvalidArgument
    (8, bytes([5]) + bytes(10), 4),                 # 7 bytes > max_length 6: HeaderTooShort
    (8, bytes([3, 0x11, 0xAA, 0xBB]), 1),           # needs 5 bytes, 3 left: PacketTooShort
])
def test_parser_errors(unit: int, pkt: bytes, err: int) -> None:
    sw = varbit_program(unit)
    # the packet goes on with what was extracted: len; opt stays invalid, its bytes payload
    assert sw.process(3, pkt) == [(1, out(err) + pkt)]
    assert sw.stats.parser_errors == 1


def test_copy_header_and_assign_vl_carry_the_width() -> None:
    ingress = [prim("assign_header", header("opt2"), header("opt")),
               prim("add_header", header("v")),
               prim("assign_VL", field("v", "opts"), field("opt", "opts"))]
    sw = varbit_program(ingress=ingress, order=("out", "l", "opt", "opt2", "v"))
    pkt = bytes([2, 0x11, 0xAA, 0xBB, 0x22])
    assert sw.process(3, pkt) == [(1, out(0) + pkt + pkt[1:] + bytes([0, 0xAA, 0xBB]))]


def test_validity_changes_count_the_varbit_in_the_packet_length() -> None:
    # ingress: out (4 bytes) is added; opt (a, 2 bytes of varbit, tail) removed, then added
    # again: bmv2 zeroes the fields but keeps the varbit's width, and counts it both times
    egress = [prim("assign", field("out", "err"), field("standard_metadata", "packet_length"))]
    sw = varbit_program(ingress=[prim("remove_header", header("opt"))], egress=egress)
    pkt = bytes([2, 0x11, 0xAA, 0xBB, 0x22, 0x00])
    assert sw.process(3, pkt) == [(1, out(6 + 4 - 4) + pkt[:1] + pkt[5:])]
    sw = varbit_program(ingress=[prim("remove_header", header("opt")),
                                 prim("add_header", header("opt"))], egress=egress)
    assert sw.process(3, pkt) == [(1, out(6 + 4 - 4 + 4) + pkt[:1] + bytes(4) + pkt[5:])]


def _csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_checksum_over_a_varbit_header(n: int) -> None:
    calc = {"name": "c", "id": 0, "algo": "csum16",
            "input": [field("l", "len"), header("opt"), field("opt", "opts")]}
    ck = {"name": "ck", "id": 0, "target": ["ck", "ck"], "type": "generic", "calculation": "c",
          "verify": False, "update": True, "if_cond": None}
    sw = varbit_program(ingress=[prim("add_header", header("ck"))],
                        order=("out", "l", "opt", "ck"), calculations=[calc], checksums=[ck])
    opts = bytes(range(0xA0, 0xA0 + n))
    pkt = bytes([n, 0x11]) + opts + bytes([0x22])
    expect = _csum16(pkt + opts)
    assert sw.process(3, pkt) == [(1, out(0) + pkt + expect.to_bytes(2, "big"))]
