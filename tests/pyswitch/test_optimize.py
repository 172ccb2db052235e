"""The optimized generated code (bmv2/pyswitch/optimize/) against the code as generated.

Every corpus program and a long replay.p4 workload run on two switches, one
with the optimizer and one without; outputs, statistics, registers and counters
must be identical. A few hand-written functions check the cases the optimizer
must leave alone.
"""

from __future__ import annotations

import ast
import functools
import random
from typing import Any

import pytest

import bmv2.pyswitch.switch as switch_module
from agent.contract import protocol
from bmv2.pyswitch import Lpm, Switch
from bmv2.pyswitch.compiler import compile_program
from bmv2.pyswitch.engine import Engine
from bmv2.pyswitch.optimize import Facts, optimize_source
from bmv2.pyswitch.optimize.share_locals import share_locals

from .corpus import CORPORA, REPLAY_JSON, apply_setup


def _switches(monkeypatch: pytest.MonkeyPatch, path: Any, **kw: Any) -> tuple[Switch, Switch]:
    """The program with and without the optimizer, on one frozen clock: replay.p4's
    INSERT limit counts per window of the ingress timestamp, and two running
    clocks could put the same request in different windows."""
    monkeypatch.setattr(Engine, "now_us", lambda _self: 0)
    fast = Switch.from_json_file(path, **kw)
    with monkeypatch.context() as m:
        m.setattr(switch_module, "compile_program",
                  functools.partial(compile_program, optimize=False))
        plain = Switch.from_json_file(path, **kw)
    assert fast.generated_source != plain.generated_source
    return fast, plain


def _state(sw: Switch) -> dict[str, Any]:
    info = sw.info
    return {"stats": sw.stats.as_dict(),
            "registers": {r: sw.register_read_all(r) for r in info.registers},
            "counters": {c.name: [sw.counter_read(c.name, i) for i in range(c.size)]
                         for c in info.counters.values() if c.direct_table is None}}


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_corpus_same_with_and_without_optimizer(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = CORPORA[name]
    fast, plain = _switches(monkeypatch, corpus.path, seed=3)
    apply_setup(fast, corpus.setup)
    apply_setup(plain, corpus.setup)
    for _round in range(2):  # the second round meets the state the first one left
        for case in corpus.cases:
            assert fast.process(case.port, case.data) == plain.process(case.port, case.data), \
                case.name
    assert _state(fast) == _state(plain)


def _frame(msg: protocol.Message, src: str = "198.18.0.1") -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:64")
                 / IP(src=src, dst="198.18.0.100") / UDP(sport=40000, dport=45000)
                 / protocol.encode(msg))


@pytest.mark.skipif(not REPLAY_JSON.exists(), reason="p4src/build/replay.json not built")
def test_replay_workload_same_with_and_without_optimizer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.replication import sample_groups
    fast, plain = _switches(monkeypatch, REPLAY_JSON, cpu_port=255, seed=7)
    assert " m_" in fast.generated_source  # scratch fields became locals somewhere
    p = "ReplayIngress."
    for sw in (fast, plain):
        sw.table_add(p + "replay_vip", [0xC6120064], p + "replay_vip_hit")
        for table, size, mode in ((0, 4096, 2), (1, 64, 1)):
            sw.table_add(p + "replay.replay_table_config", [table], p + "replay.configure",
                         (1, size, 1, 255, mode))
            sw.table_add(p + "replay.replay_acl", [0xC6120001, table], p + "replay.allow", (7,))
        sw.table_add(p + "replay.sample_replication", [1], p + "replay.replicate", (512,))
        sw.table_add(p + "ipv4.ipv4_lpm", [Lpm(0xC6120001, 32)], p + "ipv4.forward", [1])
        for g, r in sample_groups(1, 512).items():
            sw.mc_group_set(g, r)
    rng = random.Random(11)
    words = protocol.words_to_payload
    msgs: list[protocol.Message] = []
    for i in range(400):
        table = rng.choice((0, 0, 1))
        msgs.append(protocol.insert(table, words([i, rng.getrandbits(32)]),
                                    priority=rng.choice((None, 0.0, 0.5, 1.0, 7.25, 1e4)),
                                    ack=rng.random() < 0.3))
        r = rng.random()
        if r < 0.25:
            msgs.append(protocol.sample(table, rng.choice((1, 3, 32, 100)),
                                        mode=rng.choice(list(protocol.Mode))))
        elif r < 0.35:
            msgs.append(protocol.update(table, rng.randrange(70), rng.randrange(5),
                                        rng.choice((0.0, 2.5, 100.0)), ack=True))
        elif r < 0.40:
            msgs.append(protocol.read(table, rng.randrange(80)))
        elif r < 0.42:
            msgs.append(protocol.get_state(table))
    msgs += [protocol.sample(2, 4), protocol.reset(1), protocol.sample(1, 8),
             protocol.get_state(1), protocol.sample(0, 255, mode=protocol.Mode.PRIORITIZED)]
    for msg in msgs:
        data = _frame(msg)
        assert fast.process(1, data) == plain.process(1, data), msg
    other = _frame(protocol.sample(0, 2), src="198.18.0.9")
    assert fast.process(1, other) == plain.process(1, other)
    assert _state(fast) == _state(plain)


# ---- the optimizer on hand-written functions ---------------------------------------------


# slots 0-7 are metadata (0 is read by the engine), 8-19 a header the harness looks at
FACTS = Facts(widths={i: 32 for i in range(20)}, external={0}, meta_slots=8,
              registers={"R0": 32}, tables={"T5": ["A1"]})


class _Entry:
    def __init__(self, ns: dict[str, Any], fn: str) -> None:
        self.ns, self.name, self.params = ns, fn, ()

    @property
    def fn(self) -> Any:
        return self.ns[self.name]


class _Table:
    def __init__(self, ns: dict[str, Any], fn: str) -> None:
        self.default = _Entry(ns, fn)


def _run(src: str, F: list[int], optimize: bool) -> tuple[list[Any], str]:
    regs = [5, 6, 7, 8]
    ns: dict[str, Any] = {"_chk": lambda i, n: i if 0 <= i < n else 1 // 0,
                          "_mod": lambda a, b: a % b, "R0": regs}
    ns["T5"] = _Table(ns, "A1")
    if optimize:
        tree = optimize_source(src, FACTS)
        code: Any = compile(tree, "t", "exec")
        text = ast.unparse(tree)
    else:
        code, text = compile(src, "t", "exec"), src
    exec(code, ns)
    F = list(F)
    try:
        ns["N"](None, F)
        error = False
    except ZeroDivisionError:
        error = True
    return [F[0], *F[8:], regs, error], text


@pytest.mark.parametrize("F", [[0] * 20, list(range(20)), [3] * 20])
@pytest.mark.parametrize("src", [
    # F[5] is read by another function before any store there: it stays in the PHV
    "def A(pk, F):\n    F[5] = F[1] + 1\n    F[10] = F[5]\n"
    "def B(pk, F):\n    F[11] = F[5]\n"
    "def N(pk, F):\n    A(pk, F)\n    B(pk, F)\n",
    # a call between the store and the read: the callee may have stored it
    "def A(pk, F):\n    F[5] = 9\n"
    "def N(pk, F):\n    F[5] = F[1]\n    A(pk, F)\n    F[10] = F[5]\n",
    # conditional raising parts are not hoisted out of their condition
    "def N(pk, F):\n    F[10] = F[2] if F[1] == 0 else _mod(F[3], F[1] - F[1])\n"
    "    F[11] = F[2] if F[1] == 0 else _mod(F[3], F[1] - F[1])\n",
    # a register index shared, the register written in between
    "def N(pk, F):\n    F[10] = R0[_chk(F[1] & 3, 4)]\n    R0[F[1] & 3] = F[10] + 1\n"
    "    F[11] = R0[_chk(F[1] & 3, 4)]\n",
    # masks: dropped only where the value fits
    "def N(pk, F):\n    F[10] = (F[1] << 1) & 4294967295\n    F[11] = (F[2] & 4294967295) | 1\n"
    "    F[12] = (1 if F[1] < F[2] else 0) ^ 1\n    F[13] = ((1 if F[3] else 0) == 1) + 0\n"
    "    F[14] = (F[1] - F[2]) & 255\n",
    # a slot stored under a condition, read after it
    "def N(pk, F):\n    if F[1]:\n        F[5] = 4\n    F[10] = F[5]\n",
    # repeated expressions, one input changing in between; the engine's slot 0 kept
    "def N(pk, F):\n    F[5] = F[2] + F[3]\n    F[10] = F[5] * 2\n    F[11] = F[2] + F[3]\n"
    "    F[2] = 0\n    F[12] = F[2] + F[3]\n    F[0] = F[12]\n",
    # a scratch field stepped from itself (v1model/sum_tree.p4's ADD_STEP): each step
    # is a new value, not the one the previous identical expression gave
    "def N(pk, F):\n    F[5] = F[1] << 12 | F[2]\n    F[6] = F[5]\n"
    "    F[6] = F[6] >> 1 & 4294967295\n    F[10] = F[6]\n"
    "    F[6] = F[6] >> 1 & 4294967295\n    F[11] = F[6]\n",
    # scratch stored in one branch only, read only in that branch
    "def N(pk, F):\n    if F[1] > 1:\n        F[5] = F[1] * 3\n        F[10] = F[5]\n"
    "    else:\n        F[11] = F[5]\n",
    # a field stored twice: the first store is dead unless something reads it between
    "def A(pk, F):\n    F[11] = F[10]\n"
    "def N(pk, F):\n    F[10] = F[1]\n    F[12] = F[10] + 1\n    F[10] = F[2]\n"
    "    F[10] = F[1] + 5\n    A(pk, F)\n    F[10] = F[3]\n    if F[1]:\n"
    "        F[13] = 1\n        return None\n    F[13] = 2\n",
    # stored in one branch, then everywhere
    "def N(pk, F):\n    if F[1] == 3:\n        F[10] = 7\n    else:\n        F[11] = F[10]\n"
    "    F[10] = F[2]\n",
    # chains on the same local merge; not when a body changes it
    "def N(pk, F):\n    k = F[1]\n    if k == 0:\n        F[10] = 5\n    elif k == 3:\n"
    "        F[11] = 6\n    if k == 0:\n        F[12] = F[10] + 1\n    elif k == 3:\n"
    "        F[13] = F[11] * 2\n    else:\n        F[14] = 1\n",
    "def N(pk, F):\n    k = F[1]\n    if k == 0:\n        k = 3\n    elif k == 3:\n"
    "        F[11] = 6\n    if k == 0:\n        F[12] = 1\n    elif k == 3:\n"
    "        F[13] = 2\n",
    # a table's entry runs an action: what it writes is re-read, the rest is kept
    "def A1(pk, F, P):\n    F[10] = F[10] + 1\n"
    "def N(pk, F):\n    F[10] = F[1] + F[2]\n    F[11] = F[1] + F[2]\n"
    "    e5 = T5.default\n    e5.fn(pk, F, e5.params)\n    F[12] = F[10]\n"
    "    F[13] = F[1] + F[2]\n",
    # range checks that the width settles, and those it does not
    "def N(pk, F):\n    _i = F[1] & 3\n    if 0 <= _i < 4:\n        F[10] = R0[_i]\n"
    "    _i = F[2] & 7\n    if 0 <= _i < 4:\n        F[11] = R0[_i]\n",
    # register reads into fields read later (a walk), in range or not
    "def N(pk, F):\n    _i = F[1] & 7\n    if 0 <= _i < 4:\n        F[10] = R0[_i]\n"
    "        F[11] = R0[_i]\n    F[12] = F[10] + F[11]\n    _i = F[4] & 7\n"
    "    if 0 <= _i < 4:\n        F[10] = R0[_i]\n    F[13] = F[10] * 2\n",
    # a read whose index is a field stored before it under the same condition
    "def N(pk, F):\n    if F[1] < 4:\n        F[10] = R0[F[1]]\n        F[11] = R0[F[10] & 3]\n"
    "    F[12] = F[10] + F[11]\n",
    # the mask of a subtraction its test keeps >= 0: dropped only where the value fits
    "def N(pk, F):\n    a = F[1]\n    c = F[1] << 1\n"
    "    F[10] = a if a < F[2] else (a - F[2]) & 4294967295\n"
    "    F[11] = (F[3] - a) & 4294967295 if a <= F[3] else F[3]\n"
    "    F[12] = a if a < F[2] else (a - F[2]) & 255\n"
    "    F[13] = c if c < F[2] else (c - F[2]) & 4294967295\n",
    # assignments choosing on one test; not past a store to the test's inputs
    "def N(pk, F):\n    a = F[1]\n    b = F[2]\n    F[10] = (F[3] | (1 if a >= b else 0)) << 1\n"
    "    F[11] = a if a < b else a - b\n    F[1] = b\n    F[12] = 7 if b > a else 9\n"
    "    a = 0 if a >= b else a + 1\n    F[13] = a + (1 if a >= b else 0)\n"
    "    F[14] = 5 if a >= b else 6\n",
    # a bit one test set, tested again (the walk's cell): only where the rest of the
    # value has that bit 0, and not past a store to the test's inputs or to the value
    "def N(pk, F):\n    c = F[1] << 1\n    m = c << 1 | (2 if F[2] >= F[3] else 0)\n"
    "    F[10] = F[2] if m & 2 == 0 else (F[2] - F[3]) & 4294967295\n"
    "    F[11] = 7 if m & 2 != 0 else 9\n    F[12] = 1 if m & 4 == 0 else 0\n"
    "    n = F[1] | (2 if F[3] > F[2] else 0)\n    F[13] = 1 if n & 2 == 0 else 0\n"
    "    k = m | 0\n    m = F[6]\n    F[14] = 1 if m & 2 == 0 else 0\n"
    "    F[2] = F[4]\n    F[15] = 1 if k & 2 == 0 else 0\n",
    "def N(pk, F):\n    c = F[1] << 1\n    a = F[2]\n    m = c << 1 | (2 if a >= F[3] else 0)\n"
    "    a = F[7]\n    F[16] = 1 if m & 2 == 0 else 0\n",
])
def test_optimizer_keeps_semantics(src: str, F: list[int]) -> None:
    want, _ = _run(src, F, False)
    got, text = _run(src, F, True)
    assert got == want, text


def test_optimizer_removes_scratch_and_repeats() -> None:
    src = ("def N(pk, F):\n"
           "    F[5] = (F[1] << 2) & 4294967295 | F[2]\n"
           "    _i = F[5]\n"
           "    if 0 <= _i < 4:\n"
           "        F[11] = R0[_i]\n"
           "    F[6] = (F[1] << 2) & 4294967295 | F[2]\n"
           "    _i = F[6]\n"
           "    if 0 <= _i < 4:\n"
           "        F[12] = R0[_i]\n")
    _F, text = _run(src, [0] * 20, True)
    assert "F[5]" not in text and "F[6]" not in text  # scratch fields became locals
    assert text.count("<< 2") == 1 and text.count("if ") == 1, text


def test_optimizer_keeps_register_reads_in_locals() -> None:
    src = ("def N(pk, F):\n"
           "    _i = F[1] & 7\n"
           "    if 0 <= _i < 4:\n"
           "        F[10] = R0[_i]\n"
           "    F[12] = F[10] + 1\n"
           "    _i = F[2] & 7\n"
           "    if 0 <= _i < 4:\n"
           "        F[10] = R0[_i]\n"
           "    F[13] = F[10] + 1\n")
    _F, text = _run(src, [0] * 20, True)
    assert "0 <=" not in text, text  # an unsigned index: only the upper bound is checked
    # F[10]: loaded once (the first read out of range), stored once at the end
    assert text.count("F[10]") == 2 and text.count("else") == 1, text


@pytest.mark.parametrize("src", [
    # the walk step of v1model/sum_tree.p4 before: a guarded subtraction
    "def N(pk, F):\n    m = F[1]\n    s = F[2]\n    i = F[3] & 255\n"
    "    F[10] = (i | (1 if m >= s else 0)) << 1\n"
    "    F[11] = m if m < s else (m - s) & 4294967295\n",
    # and now: bit 1 of the cell, set by the test, chooses the subtraction (the flag
    # bit is read as the comparison that set it)
    "def N(pk, F):\n    c = F[1] << 1\n    F[5] = c << 1 | (2 if F[2] >= F[3] else 0)\n"
    "    F[10] = F[2] if F[5] & 2 == 0 else (F[2] - F[3]) & 4294967295\n"
    "    F[11] = F[5]\n",
])
def test_optimizer_chooses_once_per_walk_step(src: str) -> None:
    """A sum-tree walk step: the two assignments choosing on one comparison become
    one if/else, and the subtraction that comparison guards loses its mask."""
    _F, text = _run(src, [0] * 20, True)
    assert "4294967295" not in text and " else " not in text and "& 2 " not in text, text
    assert text.count("if ") == 1 and text.count("else:") == 1, text


def test_timestamps_taken_only_when_read() -> None:
    """The engine skips clock readings of fields no code reads; a program that reads
    one still sees it move."""
    import time

    from bmv2.pyswitch import Lpm

    from .corpus import _udp
    from .util import program_json

    j = program_json("basic_fwd")
    src_field = {"type": "field", "value": ["ethernet", "src"]}
    plain = Switch(j)
    for a in j["actions"]:
        if a["name"] == "I.forward":
            a["primitives"].append({"op": "assign", "parameters": [src_field, {
                "type": "field", "value": ["standard_metadata", "ingress_global_timestamp"]}]})
    stamped = Switch(j)
    outs = []
    for sw in (plain, stamped):
        sw.table_add("I.ipv4_lpm", [Lpm(0xC6120100, 24)], "I.forward", [3])
        first = sw.process(1, _udp("198.18.1.2"))
        time.sleep(0.002)
        outs.append((first, sw.process(1, _udp("198.18.1.2"))))
    assert outs[0][0] == outs[0][1]
    (_p1, a), (_p2, b) = outs[1][0][0], outs[1][1][0]
    assert int.from_bytes(b[6:12], "big") - int.from_bytes(a[6:12], "big") >= 2000


def test_locals_share_names() -> None:
    """Locals whose lives are disjoint take one name; one read where it may be unbound
    keeps its own (its UnboundLocalError stays), and so do the parameters."""
    src = ("def N(pk, F):\n"
           "    a = F[1] + 1\n"
           "    F[10] = a * 2\n"
           "    b = F[2] + a\n"
           "    if b > 3:\n"
           "        c = b - 3\n"
           "        F[11] = c\n"
           "    else:\n"
           "        d = b + 1\n"
           "        F[12] = d\n"
           "    e = F[3]\n"
           "    if e:\n"
           "        u = 5\n"
           "    F[13] = u + e\n"
           "    pk = F[4]\n"
           "    F[14] = pk\n")
    fn = ast.parse(src)
    share_locals(fn.body[0])  # type: ignore[arg-type]
    text = ast.unparse(fn)
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    assert stored == {"a", "b", "u", "pk"}, text  # c, d, e reuse a's name; u stays
    for F0 in ([0] * 20, list(range(20)), [0, 9] * 10, [0, 0, 0, 1] * 5):
        results = []
        for code in (src, text):
            ns: dict[str, Any] = {}
            exec(code, ns)
            F = list(F0)
            try:
                ns["N"](None, F)
                results.append(F)
            except UnboundLocalError:
                results.append(None)
        assert results[0] == results[1], text


def test_metadata_filled_from_narrower_values_keeps_their_width() -> None:
    """A metadata field every store fills from an 8-bit value holds 8 bits: shifting it
    left by one needs no 32-bit mask. One also stored from a wide value keeps it."""
    src = ("def A(pk, F, P):\n"
           "    F[3] = F[9] & 255\n"
           "    F[4] = F[9] & 255\n"
           "def B(pk, F, P):\n"
           "    F[3] = 7\n"
           "    F[4] = F[9]\n"
           "def N(pk, F):\n"
           "    A(pk, F, ())\n"
           "    F[10] = F[3] << 1 & 4294967295\n"
           "    F[11] = F[4] << 1 & 4294967295\n"
           "    B(pk, F, ())\n"
           "    F[12] = F[3] << 1 & 4294967295\n")
    for F in ([0] * 20, [2**31 + 5] * 20, list(range(20))):
        want, _ = _run(src, F, False)
        got, text = _run(src, F, True)
        assert got == want, text
    body = text.split("def N(", 1)[1]
    assert body.count("4294967295") == 1 and "F[4] << 1 & 4294967295" in body, text
