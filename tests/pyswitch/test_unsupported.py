"""Constructs the switch does not implement are refused at load time, by name."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from bmv2.pyswitch import ProgramError, Switch, UnsupportedConstruct

from .util import program_json


@pytest.mark.parametrize(("name", "text"), [
    ("unsupported_meter", "meters (meter_arrays: I.m)"),
    ("unsupported_selector", "action profiles/selectors (I.sel)"),
])
def test_compiled_programs_are_refused(name: str, text: str) -> None:
    with pytest.raises(UnsupportedConstruct, match=text.replace("(", r"\(").replace(")", r"\)")):
        Switch(program_json(name))


def _first_action(j: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in j["actions"] if a["name"] == name)


def _unknown_primitive(j: dict[str, Any]) -> None:
    _first_action(j, "I.forward")["primitives"].append({"op": "xyz", "parameters": []})


def _unknown_operator(j: dict[str, Any]) -> None:
    _first_action(j, "I.forward")["primitives"][0]["parameters"][1] = {
        "type": "expression",
        "value": {"type": "expression", "value": {
            "op": "**", "left": {"type": "hexstr", "value": "0x1"},
            "right": {"type": "runtime_data", "value": 0}}}}


def _varbit(j: dict[str, Any]) -> None:
    j["header_types"][-1]["fields"].append(["opts", "*"])


def _vset(j: dict[str, Any]) -> None:
    j["parse_vsets"] = [{"name": "pvs", "id": 0, "compressed_bitwidth": 16}]


def _parser_op(j: dict[str, Any]) -> None:
    j["parsers"][0]["parse_states"][0]["parser_ops"].append({"op": "wiggle", "parameters": []})


def _hash_algo(j: dict[str, Any]) -> None:
    j["calculations"] = [{"name": "c", "id": 0, "algo": "random", "input": []}]


def _extern_method(j: dict[str, Any]) -> None:
    _first_action(j, "I.forward")["primitives"].append(
        {"op": "_Foo_bar", "parameters": [{"type": "extern", "value": "foo"}]})


def _digest(j: dict[str, Any]) -> None:
    j["learn_lists"] = [{"id": 1, "name": "digest_t", "elements": []}]


def _timeout(j: dict[str, Any]) -> None:
    j["pipelines"][0]["tables"][0]["support_timeout"] = True


def _table_match(j: dict[str, Any]) -> None:
    tables = j["pipelines"][0]["tables"]
    t = next(t for t in tables if t["name"] == "I.ipv4_lpm")
    t["key"][0]["match_type"] = "fuzzy"


@pytest.mark.parametrize(("mutate", "text"), [
    (_unknown_primitive, "primitive 'xyz' in action 'I.forward'"),
    (_unknown_operator, "expression operator '**' in action 'I.forward'"),
    (_varbit, "'extract' of header 'ipv4' with a varbit field (bmv2 needs 'extract_VL')"),
    (_vset, "parser value sets (parse_vsets: pvs)"),
    (_parser_op, "parser operation 'wiggle' in parser state 'start'"),
    (_hash_algo, "hash algorithm 'random' in calculation 'c'"),
    (_extern_method, "primitive '_Foo_bar' in action 'I.forward'"),
    (_digest, "digests"),
    (_timeout, "idle timeout"),
    (_table_match, "match type 'fuzzy' in table 'I.ipv4_lpm'"),
])
def test_mutated_json_is_refused_by_name(mutate: Callable[[dict[str, Any]], None],
                                         text: str) -> None:
    j = copy.deepcopy(program_json("basic_fwd"))
    mutate(j)
    with pytest.raises(UnsupportedConstruct) as info:
        Switch(j)
    assert text in str(info.value)


def test_failed_load_keeps_the_old_pipeline() -> None:
    sw = Switch(program_json("basic_fwd"))
    j = copy.deepcopy(program_json("basic_fwd"))
    _unknown_primitive(j)
    with pytest.raises(UnsupportedConstruct):
        sw.load(j)
    assert "I.ipv4_lpm" in sw.info.tables


@pytest.mark.parametrize("bad", [[], {"headers": 3}, {"__meta__": {"version": [3, 0]}}])
def test_malformed_json(bad: Any) -> None:
    with pytest.raises(ProgramError):
        Switch(bad)
