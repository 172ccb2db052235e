"""The STF runner: parsing, bmv2stf's translation and judging, the CLI on the Python switch."""

from __future__ import annotations

import pytest

from bmv2.pyswitch import Switch

from .stf import (
    BmCli,
    Script,
    StfError,
    _suffixes,
    compare_pkt,
    judge,
    parse_stf,
    run_on_pyswitch,
)
from .util import program_json

ETH = "000000000001 000000000002 0800"
# in_t: a=7, b=0x1234, c=0x0a010203, d=0, e/pad=0
INP = "07 1234 0a010203 00 0000"
STF = f"""
# tables of match_kinds.p4
add t_tern 5 hdr.inp.b:0x12** hdr.inp.a:7 I.set_tern(v:0x33)
ADD I.t_tern 9 b:0x1234 a:7 set_tern(v:0x44)   # higher STF priority wins
add t_lpm c:0x0a****** set_lpm(v:0x55)
setdefault t_hm nop()
packet 0 {ETH} {INP}
expect 1 ** 55 ** 44
"""


def test_parse_statements() -> None:
    stmts = parse_stf(STF + "mc_node_create 3 1 2\nexpect 2 ab** $\nwait\n")
    assert stmts[0] == ("add", "t_tern", "5", [("hdr.inp.b", "0x12**"), ("hdr.inp.a", "7")],
                        ("I.set_tern", [("v", "0x33")]), None)
    assert stmts[3] == ("setdefault", "t_hm", ("nop", []))
    assert stmts[4] == ("packet", "0", (ETH + INP).replace(" ", ""))
    assert stmts[5] == ("expect", "1", "**55**44")
    assert stmts[6:] == [("mc_node_create", "3", "1 2"), ("expect", "2", "ab**$"), ("wait",)]


@pytest.mark.parametrize("bad", ["packet 0 zz", "add t a:1", "frobnicate 1", "expect 1 ab$cd",
                                 "remove all"])  # p4c's lexer never makes 'all' a keyword
def test_parse_errors(bad: str) -> None:
    with pytest.raises(StfError):
        parse_stf(bad)


def test_translation_spells_commands_like_bmv2stf() -> None:
    script = Script.build(program_json("match_kinds"), parse_stf(STF))
    assert script.error is None
    assert [op[1] for op in script.ops if op[0] == "cli"] == [
        "table_add I.t_tern I.set_tern 0x1200&&&0xFF00 7 => 0x33 9995",
        "table_add I.t_tern I.set_tern 0x1234&&&0xFFFF 7 => 0x44 9991",
        "table_add I.t_lpm I.set_lpm 0x0a000000/8 => 0x55",
        "table_set_default t_hm nop",
    ]
    assert script.interfaces == [0, 1]
    assert script.expected == {1: ["**55**44"]}


def test_what_bmv2stf_cannot_translate_fails_the_test() -> None:
    script = Script.build(program_json("match_kinds"),
                          parse_stf("add t_crange d:1 I.set_crange(v:1)\npacket 0 00"))
    assert script.error == "bmv2stf fails on add: 'unexpected key type range'"
    assert judge(script, {}) == script.error


def test_run_and_judge_on_the_python_switch() -> None:
    j = program_json("match_kinds")
    script = Script.build(j, parse_stf(STF))
    outputs = run_on_pyswitch(j, script)
    assert judge(script, outputs) is None
    assert outputs[0] == []
    wrong = Script.build(j, parse_stf(STF.replace("** 44", "** 33")))
    assert judge(wrong, outputs) == "packet 0 on port 1 differs"
    extra = Script.build(j, parse_stf(STF + f"packet 0 {ETH} {INP}\n"))
    assert judge(extra, run_on_pyswitch(j, extra)) == "expected 1 packets on port 1, got 2"


@pytest.mark.parametrize(("expected", "data", "ok"), [
    ("AB**", b"\xab\xcd", True),
    ("AB**", b"\xab\xcd\xef", True),      # a longer packet passes unless '$' ends the data
    ("AB**$", b"\xab\xcd\xef", False),
    ("AB**$", b"\xab\xcd", True),
    ("ABCD", b"\xab", False),
    ("AC**", b"\xab\xcd", False),
])
def test_compare_pkt(expected: str, data: bytes, ok: bool) -> None:
    assert compare_pkt(expected, data) is ok


def test_cli_rejects_what_simple_switch_cli_rejects() -> None:
    j = program_json("match_kinds")
    sw = Switch(j)
    cli = BmCli(sw, j)
    assert cli.run("table_add I.t_exact I.set_exact 256 1 => 1") is not None  # a: 1 byte
    assert cli.run("table_add I.t_exact I.set_exact 010 1 => 1") is not None  # int("010", 0)
    assert cli.run("table_add t_lpm set_lpm 0x0x0a/12 => 1") is not None
    assert sw.table_entries("I.t_exact") == []
    assert cli.run("table_add t_exact set_exact 0x07 1 => 9 99") is None  # extra data dropped
    assert [e.params for e in sw.table_entries("I.t_exact")] == [(9,)]


def test_cli_priorities_and_multicast() -> None:
    j = program_json("match_kinds")
    sw = Switch(j)
    cli = BmCli(sw, j)
    assert cli.run("table_add t_tern set_tern 0x0000&&&0x0000 7 => 1 10") is None
    assert cli.run("table_add t_tern set_tern 0x1234&&&0xFFFF 7 => 2 20") is None
    out = sw.process(0, bytes.fromhex((ETH + INP).replace(" ", "")))
    assert out[0][1][3] == 1  # bmv2: the lower priority number wins
    for line in ("mc_mgrp_create 5", "mc_node_create 0 3 2", "mc_node_create 7 4",
                 "mc_node_associate 5 0", "mc_node_associate 5 1"):
        assert cli.run(line) is None
    assert sw.mc_groups()[5] == [(2, 0), (3, 0), (4, 7)]
    assert cli.run("mc_node_associate 5 9") is not None


def test_cli_names_resolve_by_unique_suffix() -> None:
    # p4c gives each table its own copy of an action with a bound argument, same name
    names = _suffixes(["I.set", "I.set", "E.set", "I.other"])
    assert names == {"I.set": "I.set", "E.set": "E.set", "other": "I.other",
                     "I.other": "I.other"}
