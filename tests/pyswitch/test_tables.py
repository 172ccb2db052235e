"""Match kinds, priorities, const entries, masked keys, next-node maps and the table API."""

from __future__ import annotations

import struct

import pytest

from bmv2.pyswitch import (
    ConstEntryError,
    DuplicateEntryError,
    EntryNotFoundError,
    Exact,
    InvalidEntryError,
    Lpm,
    Optional_,
    Range,
    Switch,
    TableFullError,
    Ternary,
    UnknownNameError,
)

ETH = bytes.fromhex("020000000001020000000002") + b"\x12\x34"
FIELDS = ("exact", "lpm", "lpm2", "tern", "range", "opt", "cst", "crange", "masked", "hm", "sw")


def inp(a: int = 0, b: int = 0, c: int = 0, d: int = 0, e: int = 0) -> bytes:
    return struct.pack("!BHIBH", a, b, c, d, e << 4)


def results(sw: Switch, **kw: int) -> dict[str, int]:
    pkt = ETH + inp(**kw) + b"payload"
    out = sw.process(0, pkt)
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    assert data[len(FIELDS):] == pkt
    return dict(zip(FIELDS, data[:len(FIELDS)], strict=True))


@pytest.fixture
def sw(load) -> Switch:
    return load("match_kinds")


def test_defaults(sw: Switch) -> None:
    r = results(sw, b=0x5555, d=200)
    assert r == {"exact": 0, "lpm": 0xEE, "lpm2": 0xEE, "tern": 0xEE, "range": 0xEE,
                 "opt": 0xEE, "cst": 0xEE, "crange": 4, "masked": 0xEE, "hm": 2, "sw": 30}


def test_exact_two_fields_and_direct_counter(sw: Switch) -> None:
    h = sw.table_add("I.t_exact", [Exact(7), Exact(0xABC)], "I.set_exact", [42])
    assert results(sw, a=7, e=0xABC)["exact"] == 42
    assert results(sw, a=7, e=0xABD)["exact"] == 0
    assert sw.direct_counter_read("I.t_exact", h) == (1, 31)
    sw.direct_counter_write("I.t_exact", h, 10, 20)
    assert sw.table_entry("I.t_exact", h).packets == 10
    sw.direct_counter_reset("I.t_exact")
    assert sw.direct_counter_read("I.t_exact", h) == (0, 0)
    with pytest.raises(UnknownNameError):
        sw.direct_counter_read("I.t_lpm", 0)


def test_lpm_longest_prefix_wins(sw: Switch) -> None:
    sw.table_add("I.t_lpm", [Lpm(0x0A000000, 8)], "I.set_lpm", [8])
    h24 = sw.table_add("I.t_lpm", [Lpm(0x0A0B0C00, 24)], "I.set_lpm", [24])
    sw.table_add("I.t_lpm", [Lpm(0, 0)], "I.set_lpm", [0])
    assert results(sw, c=0x0A0B0C0D)["lpm"] == 24
    assert results(sw, c=0x0A0B0D0D)["lpm"] == 8
    assert results(sw, c=0x0B000000)["lpm"] == 0
    sw.table_delete("I.t_lpm", h24)
    assert results(sw, c=0x0A0B0C0D)["lpm"] == 8


def test_lpm_bits_beyond_prefix_are_ignored(sw: Switch) -> None:
    sw.table_add("I.t_lpm", [Lpm(0x0A0B0CFF, 24)], "I.set_lpm", [1])
    assert sw.table_entries("I.t_lpm")[0].matches == (Lpm(0x0A0B0C00, 24),)
    with pytest.raises(DuplicateEntryError):
        sw.table_add("I.t_lpm", [Lpm(0x0A0B0C00, 24)], "I.set_lpm", [2])


def test_lpm_with_exact_field(sw: Switch) -> None:
    sw.table_add("I.t_lpm2", [Exact(1), Lpm(0x0A000000, 8)], "I.set_lpm2", [1])
    sw.table_add("I.t_lpm2", [Exact(2), Lpm(0x0A000000, 16)], "I.set_lpm2", [2])
    assert results(sw, a=1, c=0x0A000001)["lpm2"] == 1
    assert results(sw, a=2, c=0x0A000001)["lpm2"] == 2
    assert results(sw, a=2, c=0x0A010001)["lpm2"] == 0xEE
    assert results(sw, a=3, c=0x0A000001)["lpm2"] == 0xEE


def test_ternary_priorities(sw: Switch) -> None:
    sw.table_add("I.t_tern", [Ternary(0x1200, 0xFF00), Exact(1)], "I.set_tern", [1], priority=10)
    sw.table_add("I.t_tern", [Ternary(0x1234, 0xFFFF), Exact(1)], "I.set_tern", [2], priority=20)
    sw.table_add("I.t_tern", [None, Exact(1)], "I.set_tern", [3], priority=1)
    assert results(sw, a=1, b=0x1234)["tern"] == 2
    assert results(sw, a=1, b=0x12FF)["tern"] == 1
    assert results(sw, a=1, b=0x9999)["tern"] == 3
    assert results(sw, a=2, b=0x1234)["tern"] == 0xEE


def test_ternary_equal_priority_lowest_handle_wins(sw: Switch) -> None:
    sw.table_add("I.t_tern", [Ternary(0, 0), Exact(5)], "I.set_tern", [1], priority=5)
    sw.table_add("I.t_tern", [Ternary(0x0001, 0x0001), Exact(5)], "I.set_tern", [2], priority=5)
    assert results(sw, a=5, b=1)["tern"] == 1


def test_ternary_needs_priority_and_same_key_other_priority_is_allowed(sw: Switch) -> None:
    with pytest.raises(InvalidEntryError, match="priority"):
        sw.table_add("I.t_tern", [Ternary(1, 1), Exact(1)], "I.set_tern", [1])
    sw.table_add("I.t_tern", [Ternary(1, 1), Exact(1)], "I.set_tern", [1], priority=1)
    sw.table_add("I.t_tern", [Ternary(1, 1), Exact(1)], "I.set_tern", [2], priority=2)
    with pytest.raises(DuplicateEntryError):
        sw.table_add("I.t_tern", [Ternary(1, 1), Exact(1)], "I.set_tern", [3], priority=2)
    assert sw.table_find("I.t_tern", [Ternary(1, 1), Exact(1)], 2) == 1
    assert sw.table_find("I.t_tern", [Ternary(1, 1), Exact(1)], 3) is None


def test_range_and_ternary_fields(sw: Switch) -> None:
    sw.table_add("I.t_range", [Range(10, 20), None], "I.set_range", [1], priority=1)
    sw.table_add("I.t_range", [Range(15, 15), Ternary(0x80, 0x80)], "I.set_range", [2],
                 priority=2)
    assert results(sw, d=10)["range"] == 1
    assert results(sw, d=20)["range"] == 1
    assert results(sw, d=21)["range"] == 0xEE
    assert results(sw, d=15, a=0x81)["range"] == 2
    assert results(sw, d=15, a=0x01)["range"] == 1
    with pytest.raises(InvalidEntryError, match="low"):
        sw.table_add("I.t_range", [Range(9, 3), None], "I.set_range", [1], priority=1)


def test_optional_match(sw: Switch) -> None:
    sw.table_add("I.t_opt", [Optional_(4), None], "I.set_opt", [1], priority=1)
    sw.table_add("I.t_opt", [Optional_(4), Optional_(9)], "I.set_opt", [2], priority=2)
    assert results(sw, a=4, d=9)["opt"] == 2
    assert results(sw, a=4, d=8)["opt"] == 1
    assert results(sw, a=5, d=9)["opt"] == 0xEE


def test_const_entries_in_order_and_immutable(sw: Switch) -> None:
    assert results(sw, b=0x1234)["cst"] == 1
    assert results(sw, b=0x00FF)["cst"] == 3
    assert results(sw, b=0x0100)["cst"] == 0xEE      # a miss: the default entry
    sw.table_set_default("I.t_cst", "I.set_cst", [5])  # the default stays changeable
    assert results(sw, b=0x0100)["cst"] == 5
    assert results(sw, b=0x12FF)["cst"] == 1
    assert results(sw, d=7)["crange"] == 1
    assert results(sw, d=10)["crange"] == 2
    assert results(sw, d=15)["crange"] == 3
    entries = sw.table_entries("I.t_cst")
    assert [e.params for e in entries] == [(1,), (2,), (3,)]
    assert entries[0].priority > entries[1].priority > entries[2].priority
    assert sw.info.tables["I.t_cst"].const_entries
    with pytest.raises(ConstEntryError):
        sw.table_add("I.t_cst", [Ternary(1, 1)], "I.set_cst", [1], priority=1)
    with pytest.raises(ConstEntryError):
        sw.table_delete("I.t_cst", 0)
    with pytest.raises(ConstEntryError):
        sw.table_clear("I.t_cst")


def test_masked_key(sw: Switch) -> None:
    sw.table_add("I.t_masked", [Exact(0x1234)], "I.set_masked", [9])
    assert sw.table_entries("I.t_masked")[0].matches == (Exact(0x0230),)
    assert results(sw, b=0xF23F)["masked"] == 9
    with pytest.raises(DuplicateEntryError):
        sw.table_add("I.t_masked", [Exact(0x0230)], "I.set_masked", [1])


def test_hit_miss_and_action_run(sw: Switch) -> None:
    sw.table_add("I.t_hm", [Exact(1)], "I.nop", [])
    assert results(sw, a=1)["hm"] == 1
    assert results(sw, a=2)["hm"] == 2
    sw.table_add("I.t_sw", [Exact(1)], "I.act_a", [])
    sw.table_add("I.t_sw", [Exact(2)], "I.act_b", [7])
    sw.table_add("I.t_sw", [Exact(3)], "I.nop", [])
    assert [results(sw, a=a)["sw"] for a in (1, 2, 3, 4)] == [10, 20, 30, 30]
    sw.table_set_default("I.t_sw", "I.act_b", [0])
    assert results(sw, a=4)["sw"] == 20
    sw.table_reset_default("I.t_sw")
    assert results(sw, a=4)["sw"] == 30


def test_modify_find_clear(sw: Switch) -> None:
    h = sw.table_add("I.t_exact", [Exact(1), Exact(2)], "I.set_exact", [5])
    assert sw.table_find("I.t_exact", [Exact(1), Exact(2)]) == h
    sw.table_modify("I.t_exact", h, "I.set_exact", [6])
    assert results(sw, a=1, e=2)["exact"] == 6
    sw.table_modify("I.t_exact", h, "I.nop", [])
    assert results(sw, a=1, e=2)["exact"] == 0
    sw.table_clear("I.t_exact")
    assert sw.table_entries("I.t_exact") == []
    with pytest.raises(EntryNotFoundError):
        sw.table_modify("I.t_exact", h, "I.nop", [])
    with pytest.raises(EntryNotFoundError):
        sw.table_delete("I.t_exact", h)


def test_handles_are_reused_lowest_first(sw: Switch) -> None:
    hs = [sw.table_add("I.t_hm", [Exact(i)], "I.nop", []) for i in range(4)]
    assert hs == [0, 1, 2, 3]
    sw.table_delete("I.t_hm", 2)
    sw.table_delete("I.t_hm", 1)
    assert sw.table_add("I.t_hm", [Exact(9)], "I.nop", []) == 1


def test_default_entry_rules(sw: Switch) -> None:
    assert sw.table_get_default("I.t_opt") == ("I.set_opt", (0xEE,))
    with pytest.raises(ConstEntryError):
        sw.table_set_default("I.t_opt", "I.set_opt", [1])
    sw.table_set_default("I.t_lpm", "I.set_lpm", [3])
    assert results(sw, c=1)["lpm"] == 3
    assert sw.table_get_default("I.t_lpm") == ("I.set_lpm", (3,))
    sw.table_reset_default("I.t_lpm")
    assert results(sw, c=1)["lpm"] == 0xEE


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda s: s.table_add("nope", [], "x", []), UnknownNameError, "no table 'nope'"),
    (lambda s: s.table_add("I.t_hm", [Exact(1)], "I.set_lpm", [1]), UnknownNameError,
     "not an action of table"),
    (lambda s: s.table_add("I.t_lpm", [Lpm(1, 32)], "I.set_lpm", []), InvalidEntryError,
     "takes 1 parameter"),
    (lambda s: s.table_add("I.t_lpm", [Lpm(1, 32)], "I.set_lpm", [256]), InvalidEntryError,
     "does not fit parameter 'v'"),
    (lambda s: s.table_add("I.t_exact", [Exact(1), Exact(0x1000)], "I.nop", []),
     InvalidEntryError, "does not fit key field 'hdr.inp.e'"),
    (lambda s: s.table_add("I.t_exact", [Exact(1)], "I.nop", []), InvalidEntryError,
     "2 key field"),
    (lambda s: s.table_add("I.t_lpm", [Lpm(1, 33)], "I.set_lpm", [1]), InvalidEntryError,
     "prefix length"),
    (lambda s: s.table_add("I.t_lpm", [Range(1, 2)], "I.set_lpm", [1]), InvalidEntryError,
     "is lpm"),
    (lambda s: s.table_add("I.t_exact", [None, Exact(1)], "I.nop", []), InvalidEntryError,
     "is exact"),
])
def test_errors_are_key_errors_with_messages(sw: Switch, call, error, text) -> None:
    with pytest.raises(error, match=text) as info:
        call(sw)
    assert isinstance(info.value, KeyError)
    assert text in str(info.value)


def test_table_full(sw: Switch) -> None:
    size = sw.info.tables["I.t_lpm"].max_size
    assert size == 1024
    for i in range(size):
        sw.table_add("I.t_lpm", [Lpm(i, 32)], "I.set_lpm", [1])
    with pytest.raises(TableFullError, match="full"):
        sw.table_add("I.t_lpm", [Lpm(size, 32)], "I.set_lpm", [1])


def test_a_const_ternary_entry_tested_field_by_field_matches_the_masked_key() -> None:
    """The code generator tests a const ternary entry field by field; for every
    key and every entry that is the same as masking the concatenated key."""
    from itertools import product

    from bmv2.pyswitch.tables import KeyField, Table

    table = Table("t", "ternary", [KeyField("a", "ternary", 2), KeyField("b", "exact", 1),
                                   KeyField("c", "ternary", 3)], [None] * 3, {}, 1, False, None)
    names = ["a", "b", "c"]
    key_code = table.key_code(names)
    for mask, value in product(range(64), range(64)):
        test = table.field_test(names, mask, value)
        for fields in product(range(4), range(2), range(8)):
            env = dict(zip(names, fields, strict=True))
            key = eval(key_code, {}, env)
            assert eval(test, {}, env) == (key & mask == value), (mask, value, test)
    assert table.field_test(["a", "b", "c"], None, 0b01_1_010) == "a == 1 and b == 1 and c == 2"
