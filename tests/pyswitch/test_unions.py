"""Header unions, union stacks and '?:' on headers, as simple_switch runs them (hand-built JSON)."""

from __future__ import annotations

from typing import Any

import pytest

from bmv2.pyswitch import Switch

from .jsonprog import expr, field, header, header_id, hexstr, prim, program, state

TYPES = {"out_t": [["r", 8]], "base_t": [["t", 8]], "A": [["x", 8]], "B": [["y", 16]]}
HEADERS = {"out": "out_t", "base": "base_t", "u.a": "A", "u.b": "B", "u2.a": "A", "u2.b": "B",
           "us[0].a": "A", "us[0].b": "B", "us[1].a": "A", "us[1].b": "B", "b1": "B", "b2": "B"}
MEMBERS = ["u.a", "u.b", "u2.a", "u2.b", "us[0].a", "us[0].b", "us[1].a", "us[1].b"]


def b2d(cond: dict[str, Any]) -> dict[str, Any]:
    return expr("b2d", None, cond)


def extract(target: str | list[str], kind: str = "regular") -> dict[str, Any]:
    return {"op": "extract", "parameters": [{"type": kind, "value": target}]}


def union_program(ingress: list[dict[str, Any]], order: list[str] | None = None,
                  states: list[dict[str, Any]] | None = None) -> Switch:
    """base.t selects: 0 -> u.a, 1 -> u.b, 2 -> us.next.a, 3 -> us.next.b (then base again)."""
    states = states or [
        state("start", [extract("base")], [field("base", "t")],
              [(0, "pa"), (1, "pb"), (2, "psa"), (3, "psb")]),
        state("pa", [extract("u.a")]), state("pb", [extract("u.b")]),
        state("psa", [extract(["us", "a"], "union_stack")], default="start"),
        state("psb", [extract(["us", "b"], "union_stack")], default="start")]
    j = program(TYPES, HEADERS, states, order or ["out", *MEMBERS], [
        prim("add_header", header("out")), *ingress])
    ids = {n: header_id(j, n) for n in MEMBERS}
    j["header_union_types"] = [{"name": "U", "id": 0, "headers": [["a", "A"], ["b", "B"]]}]
    j["header_unions"] = [
        {"name": u, "id": i, "union_type": "U", "header_ids": [ids[f"{u}.a"], ids[f"{u}.b"]]}
        for i, u in enumerate(["u", "u2", "us[0]", "us[1]"])]
    j["header_union_stacks"] = [{"name": "us", "id": 0, "union_type": "U",
                                 "header_union_ids": [2, 3]}]
    return Switch(j)


def report(value: dict[str, Any]) -> dict[str, Any]:
    return prim("assign", field("out", "r"), value)


@pytest.mark.parametrize(("pkt", "valid"), [(b"\x00\xaa", 1), (b"\x01\xbb\xcc", 1), (b"\x05", 0)])
def test_extract_through_a_member_and_union_validity(pkt: bytes, valid: int) -> None:
    sw = union_program([report(b2d(expr("valid_union", None, {"type": "header_union",
                                                              "value": "u"})))])
    assert sw.process(0, pkt) == [(1, bytes([valid]) + pkt[1:])]


def test_set_valid_on_a_member_invalidates_the_other() -> None:
    sw = union_program([prim("add_header", header("u.b"))])
    assert sw.process(0, b"\x00\xaa") == [(1, b"\x00\x00\x00")]
    # already valid: nothing changes
    assert sw.process(0, b"\x01\xbb\xcc") == [(1, b"\x00\xbb\xcc")]


def test_copy_into_a_member_invalidates_the_other() -> None:
    sw = union_program([prim("add_header", header("b1")),
                        prim("assign", field("b1", "y"), hexstr(0x1234)),
                        prim("assign_header", header("u.b"), header("b1"))])
    assert sw.process(0, b"\x00\xaa") == [(1, b"\x00\x12\x34")]


def test_assign_union_and_union_equality() -> None:
    u, u2 = {"type": "header_union", "value": "u"}, {"type": "header_union", "value": "u2"}
    eq = report(b2d(expr("==", u, u2)))
    sw = union_program([eq, prim("assign_union", u2, u), prim("add_header", header("out")), eq],
                       order=["out", "u2.a", "u2.b"])
    # before the copy: u valid, u2 not -> 0; after: equal -> 1, u2 emitted
    assert sw.process(0, b"\x01\xbb\xcc") == [(1, b"\x01\xbb\xcc")]
    # neither valid: never equal
    assert sw.process(0, b"\x07") == [(1, b"\x00")]


def test_union_stack_extract_and_size() -> None:
    us = {"type": "header_union_stack", "value": "us"}
    sw = union_program([report(expr("size_stack", None, us))],
                       order=["out", "us[0].a", "us[0].b", "us[1].a", "us[1].b", "base"])
    assert sw.process(0, b"\x02\xaa\x03\xbb\xcc\x09") == [(1, b"\x02\xaa\xbb\xcc\x09")]
    # a third element does not fit: StackOutOfBounds, the rest stays payload
    assert sw.process(0, b"\x02\xaa\x02\xab\x02\xac") == [(1, b"\x02\xaa\xab\x02\xac")]
    assert sw.stats.parser_errors == 1


def test_select_on_a_union_stack_field() -> None:
    key = [{"type": "union_stack_field", "value": ["us", "a", "x"]}]
    states = [state("start", [extract("base")], [field("base", "t")], [(2, "psa")]),
              state("psa", [extract(["us", "a"], "union_stack")], key, [(0xFF, None)], "start")]
    sw = union_program([], order=["out", "us[0].a", "us[1].a", "base"], states=states)
    assert sw.process(0, b"\x02\xff\x02\x11") == [(1, b"\x00\xff\x02\x02\x11")]
    assert sw.process(0, b"\x02\x01\x02\x11\x07") == [(1, b"\x00\x01\x11\x07")]


def test_member_of_a_union_stack_element_chosen_at_run_time() -> None:
    us = {"type": "header_union_stack", "value": "us"}
    elem = expr("dereference_union_stack", us, field("out", "r"))
    member_b = expr("access_union_header", elem, 1)
    sw = union_program([report(hexstr(1)), prim("add_header", member_b)],
                       order=["out", "us[0].a", "us[0].b", "us[1].a", "us[1].b"])
    # us[0].a, us[1].a extracted; us[1].b set valid at run time invalidates us[1].a
    assert sw.process(0, b"\x02\xaa\x02\xbb\x09") == [(1, b"\x01\xaa\x00\x00")]


@pytest.mark.parametrize(("t", "expect"), [(0, b"\x11\x11"), (1, b"\x22\x22")])
def test_conditional_operator_on_headers(t: int, expect: bytes) -> None:
    pick = expr("?", header("b1"), header("b2"),
                cond=expr("==", field("base", "t"), hexstr(0)))
    sw = union_program([prim("add_header", header("b1")), prim("add_header", header("b2")),
                        prim("assign", field("b1", "y"), hexstr(0x1111)),
                        prim("assign", field("b2", "y"), hexstr(0x2222)),
                        prim("assign_header", header("u.b"), pick)], order=["u.a", "u.b"])
    assert sw.process(0, bytes([t, 0xAA, 0xAA])) == [(1, expect + b"\xaa\xaa"[t + 1:])]
