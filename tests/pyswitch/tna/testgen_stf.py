"""P4Testgen's Tofino STF tests, run on the Python switch's TNA model.

P4Testgen (p4c's ``backends/p4tools/modules/testgen``, target ``tofino``, test
back end ``STF``) writes one test per path it found through a TNA program: table
entries (``add`` / ``setdefault``), one ``packet`` and the ``expect`` on the port
P4Testgen's model of Tofino sends it to, or none when it drops it. ``run_test``
applies the entries to a fresh switch, sends the packet and judges the outputs the
way Tofino's STF harness does: every expected packet, nothing more; ``*`` is any
nibble (a value P4Testgen leaves to the target), a final ``$`` forbids a longer
packet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bmv2.pyswitch import Exact, Lpm, Range, Switch, Ternary
from tests.pyswitch.stf import compare_pkt, parse_stf

CPU_PORT = 64   # Tofino 1's CPU port (pipe 0), as P4Testgen's Tofino target has it


@dataclass
class Outcome:
    """What the switch did with a test's packet, and whether it is what P4Testgen expects."""

    expected: list[tuple[int, str]]
    outputs: list[tuple[int, bytes]]
    verdict: str | None       # None: passed


def _number(text: str) -> int:
    return int(text.replace("*", "0"), 0)


def _mask(text: str, width: int) -> int:
    """A value spelt with '*' digits (0b / 0x): the mask of its known bits."""
    if not text.startswith(("0b", "0x")) or "*" not in text:
        return (1 << width) - 1
    per, body = (1, text[2:]) if text.startswith("0b") else (4, text[2:])
    mask = 0
    for c in body:
        mask = (mask << per) | (0 if c == "*" else (1 << per) - 1)
    return mask & ((1 << width) - 1)


def _match(kind: str, value: str, width: int) -> Any:
    if kind == "exact":
        return Exact(_number(value))
    if kind == "lpm":
        mask = _mask(value, width)
        return Lpm(_number(value), bin(mask).count("1"))
    if kind == "range":
        low, _, high = value.partition("..")
        return Range(_number(low), _number(high or low))
    return Ternary(_number(value), _mask(value, width))


def _lookup(names: list[str], name: str, what: str) -> str:
    """`name` as P4Testgen spells it, among the switch's names (a unique dotted suffix)."""
    if name in names:
        return name
    found = [n for n in names if n.endswith("." + name) or name.endswith("." + n)]
    if len(found) != 1:
        raise KeyError(f"{what} {name!r} is not in the program ({len(found)} candidates)")
    return found[0]


def _action(sw: Switch, act: tuple[str, list[tuple[str, str]]]) -> tuple[str, list[int]]:
    name = _lookup(list(sw.info.actions), act[0], "action")
    params = dict(act[1])
    info = sw.info.actions[name]
    return name, [_number(params[p.name]) & ((1 << p.bitwidth) - 1) for p in info.params]


def apply_entries(sw: Switch, stmts: list[tuple[Any, ...]]) -> None:
    """The test's ``add`` and ``setdefault`` lines, in order."""
    for st in stmts:
        if st[0] == "add":
            _, table, prio, matches, act, _ = st
            tname = _lookup(list(sw.info.tables), table, "table")
            info = sw.info.tables[tname]
            given = {k.split("[")[0]: v for k, v in matches}
            keys = []
            for key in info.keys:
                field = _lookup(list(given), key.name, "key field") if given else key.name
                keys.append(_match(key.match_type, given[field], key.bitwidth))
            action, params = _action(sw, act)
            kwargs = {"priority": int(prio)} if prio is not None else {}
            sw.table_add(tname, keys, action, params, **kwargs)
        elif st[0] == "setdefault":
            tname = _lookup(list(sw.info.tables), st[1], "table")
            action, params = _action(sw, st[2])
            sw.table_set_default(tname, action, params)


def judge(expected: list[tuple[int, str]], outputs: list[tuple[int, bytes]]) -> str | None:
    """The STF harness's verdict: None, or why the test fails."""
    if len(outputs) != len(expected):
        return f"expected {len(expected)} packet(s), got {len(outputs)}: " + ", ".join(
            f"port {p} {d.hex()}" for p, d in outputs)
    for (port, want), (got_port, data) in zip(expected, outputs, strict=True):
        if port != got_port:
            return f"expected a packet on port {port}, got one on port {got_port}"
        if not compare_pkt(want, data):
            return f"packet on port {port} differs: expected {want}, got {data.hex().upper()}"
    return None


def run_test(program: dict[str, Any], stf: str) -> Outcome:
    """One P4Testgen STF test on a fresh switch running `program` (p4test's IR)."""
    stmts = parse_stf(stf)
    sw = Switch(program, cpu_port=CPU_PORT)
    apply_entries(sw, stmts)
    expected = [(int(st[1]), st[2]) for st in stmts if st[0] == "expect" and st[1] is not None]
    outputs: list[tuple[int, bytes]] = []
    for st in stmts:
        if st[0] == "packet":
            outputs += [(p, bytes(d)) for p, d in sw.process(int(st[1]), bytes.fromhex(st[2]))]
    return Outcome(expected, outputs, judge(expected, outputs))
