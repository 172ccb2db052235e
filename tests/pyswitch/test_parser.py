"""Parser semantics: select values, masks and defaults, stacks, lookahead, verify, errors."""

from __future__ import annotations

import copy
import struct

import pytest

from bmv2.pyswitch import Switch

from .util import program_json

DST = bytes.fromhex("020000000001")
SRC = bytes.fromhex("020000000002")


def eth(ether_type: int) -> bytes:
    return DST + SRC + struct.pack("!H", ether_type)


def result(err: int = 0, path: int = 0, last_index: int = 0, peek: int = 0,
           nmpls: int = 0) -> bytes:
    return struct.pack("!BBBHB", err, path, last_index, peek, nmpls)


def mpls(label: int, bos: int, ttl: int = 64, tc: int = 0) -> bytes:
    return struct.pack("!I", label << 12 | tc << 9 | bos << 8 | ttl)


@pytest.fixture
def sw(load) -> Switch:
    return load("parser_features")


def run(sw: Switch, data: bytes) -> bytes:
    out = sw.process(0, data)
    assert len(out) == 1 and out[0][0] == 1
    return out[0][1]


def test_default_transition_keeps_payload(sw: Switch) -> None:
    pkt = eth(0x9000) + b"\x45payload"
    assert run(sw, pkt) == result() + pkt


def test_masked_select_and_multi_field_key(sw: Switch) -> None:
    # 0x88xx matches "0x8800 &&& 0xff00"; (kind=1, _) -> parse_inner
    pkt = eth(0x88AB) + bytes([0x1F, 0x05]) + bytes([0x4A, 0x99]) + b"rest"
    assert run(sw, pkt) == result(path=1 | 4) + pkt
    # (kind=2, flags &&& 0x8 == 0x8) -> parse_opt
    pkt = eth(0x8801) + bytes([0x2C, 0x05]) + b"\x01\x02" + b"rest"
    assert run(sw, pkt) == result(path=1 | 8) + pkt
    # kind=2 with flags bit 3 clear: falls to the default (accept)
    pkt = eth(0x8801) + bytes([0x27, 0x05]) + b"\x01\x02rest"
    assert run(sw, pkt) == result(path=1) + pkt


def test_verify_sets_custom_error_and_keeps_header(sw: Switch) -> None:
    pkt = eth(0x8800) + bytes([0x10, 0xFF]) + b"rest"
    assert run(sw, pkt) == result(err=3, path=1) + pkt


def test_header_stack_and_lookahead(sw: Switch) -> None:
    inner = bytes([0x45, 0x66])
    pkt = eth(0x8847) + mpls(100, 0) + mpls(200, 1) + inner + b"xyz"
    assert run(sw, pkt) == result(path=2 | 4, last_index=1, peek=0x4566, nmpls=2) + pkt


def test_lookahead_without_match_leaves_bytes(sw: Switch) -> None:
    pkt = eth(0x8847) + mpls(7, 1) + b"\x60\x01zz"
    assert run(sw, pkt) == result(path=2, last_index=0, peek=0x6001, nmpls=1) + pkt


def test_stack_overflow_is_stack_out_of_bounds(sw: Switch) -> None:
    labels = mpls(1, 0) + mpls(2, 0) + mpls(3, 0) + mpls(4, 0)
    pkt = eth(0x8847) + labels + b"z"
    assert run(sw, pkt) == result(err=2, path=2, nmpls=3) + pkt


def test_advance_consumes_bytes(sw: Switch) -> None:
    pkt = eth(0x0123) + b"\xde\xad" + b"\x01\x02" + b"tail"
    assert run(sw, pkt) == result(path=16 | 8) + eth(0x0123) + b"\x01\x02" + b"tail"


@pytest.mark.parametrize("cut", [0, 1, 13])
def test_short_ethernet_is_packet_too_short(sw: Switch, cut: int) -> None:
    pkt = eth(0x8800)[:cut]
    assert run(sw, pkt) == result(err=1) + pkt


def test_short_inner_header_keeps_what_was_extracted(sw: Switch) -> None:
    pkt = eth(0x8800) + b"\x10"
    assert run(sw, pkt) == result(err=1, path=1) + pkt
    assert sw.stats.parser_errors == 1


def test_lookahead_past_end_is_packet_too_short(sw: Switch) -> None:
    pkt = eth(0x8847) + mpls(5, 1) + b"\x45"
    assert run(sw, pkt) == result(err=1, path=2, nmpls=1) + pkt


def test_parser_primitive_op() -> None:
    j = copy.deepcopy(program_json("parser_features"))
    start = j["parsers"][0]["parse_states"][0]
    start["parser_ops"].append({"op": "primitive", "parameters": [{
        "op": "assign", "parameters": [
            {"type": "field", "value": ["scalars", "metadata_t.peek"]},
            {"type": "hexstr", "value": "0x1234"}]}]})
    sw = Switch(j)
    pkt = eth(0x9000) + b"x"
    assert run(sw, pkt) == result(peek=0x1234) + pkt
