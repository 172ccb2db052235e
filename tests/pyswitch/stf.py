"""p4c's STF tests as p4c's bmv2 runner (backends/bmv2/bmv2stf.py) runs and judges them.

``parse_stf`` reads an STF file into statements; ``Script.build`` turns them into
what bmv2stf feeds the switch, in order: simple_switch_CLI command lines (table
names resolved, keys and priorities spelt the way bmv2stf spells them) and
packets, plus the expected packets per port; ``judge`` compares outputs the way
bmv2stf's checkOutputs does. ``BmCli`` applies those CLI lines to the Python
switch with simple_switch_CLI's parsing rules, so that a line bmv2's CLI rejects
is rejected here too. Written from the behaviour of p4c 1.2.4.8 and bmv2 1.15.5;
no p4c code is used.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bmv2.pyswitch import Exact, Lpm, Range, Switch, SwitchKeyError, Ternary
from bmv2.pyswitch.tables import BM_MAX_PRIORITY

Stmt = tuple[Any, ...]

PASSED_THROUGH = ("mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get",
                  "mc_mgrp_create", "mc_node_create", "mc_node_associate", "counter_read",
                  "counter_write", "register_read", "register_write", "register_reset",
                  "meter_get_rates", "meter_set_rates", "meter_array_set_rates")
_DIRECT_ARITY = {"mirroring_add": "nn", "mirroring_add_mc": "nn", "mirroring_delete": "n",
                 "mirroring_get": "n", "mc_mgrp_create": "n", "mc_node_create": "nl",
                 "mc_node_update": "nl", "mc_node_associate": "nn", "counter_read": "qn",
                 "counter_write": "qnnn", "register_read": "qn", "register_write": "qnn",
                 "register_reset": "q"}
_TOKEN = re.compile(r"""\s*(?:(?P<num>0[xX][0-9a-fA-F*]+|0[bB][*01]+|[0-9]+)
                    |(?P<id>[a-z$A-Z_][a-z$A-Z_0-9]*)|"(?P<qid>[^"]+)"
                    |(?P<op>==|!=|<=|>=|[:,.\[\]()=</>]))""", re.X)


class StfError(Exception):
    """The STF file does not parse (bmv2stf fails such a test)."""


# ---- parsing ------------------------------------------------------------------


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise StfError(f"unexpected character {text[pos:].strip()[:1]!r}")
        kind = m.lastgroup or ""
        out.append(("id" if kind == "qid" else kind, m.group(kind)))
        pos = m.end()
    return out


class _Line:
    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, kind: str, value: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v = self.toks[self.i]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: str | None = None) -> str:
        if not self.peek(kind, value):
            got = self.toks[self.i][1] if self.i < len(self.toks) else "end of line"
            raise StfError(f"expected {value or kind}, got {got!r}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def qname(self) -> str:
        name = self.take("id")
        if self.peek("op", "["):
            self.i += 1
            name += f"[{self.take('num')}]"
            self.take("op", "]")
        while self.peek("op", "."):
            self.i += 1
            name += "." + self.take("id")
        return name

    def action(self) -> tuple[str, list[tuple[str, str]]]:
        name = self.qname()
        self.take("op", "(")
        args: list[tuple[str, str]] = []
        while not self.peek("op", ")"):
            if args:
                self.take("op", ",")
            arg = self.take("id")
            self.take("op", ":")
            args.append((arg, self.take("num")))
        self.take("op", ")")
        return name, args

    def done(self) -> None:
        if self.i != len(self.toks):
            raise StfError(f"unexpected {self.toks[self.i][1]!r}")


def _statement(kw: str, rest: str) -> Stmt:
    if kw in ("packet", "expect"):
        m = re.fullmatch(r"\s*([0-9]+)((?:\s*(?:[0-9a-fA-F]+|\*|\$))*)\s*", rest)
        if m is None:
            raise StfError("bad packet data")
        data = "".join(m.group(2).split())
        if kw == "packet" and (not data or "*" in data or "$" in data):
            raise StfError("bad packet data")
        if "$" in data[:-1]:
            raise StfError("'$' must end the expected data")
        return (kw, m.group(1), data or None)
    line = _Line(_tokens(rest))
    if kw == "add":
        table = line.qname()
        prio = line.take("num") if line.peek("num") else None
        matches: list[tuple[str, Any]] = []
        while True:
            save = line.i
            key = line.qname()
            if not line.peek("op", ":"):
                line.i = save
                break
            line.take("op", ":")
            value: Any = line.take("num")
            if line.peek("op", "/"):
                line.i += 1
                value = (value, line.take("num"))
            matches.append((key, value))
        if not matches:
            raise StfError("add without a match")
        act = line.action()
        entry_id = None
        if line.peek("op", "="):
            line.i += 1
            entry_id = line.take("id")
        line.done()
        return ("add", table, prio, matches, act, entry_id)
    if kw == "setdefault":
        table = line.qname()
        act = line.action()
        line.done()
        return ("setdefault", table, act)
    if kw in ("wait", "no_packet"):
        line.done()
        return ("expect", None, None) if kw == "no_packet" else ("wait",)
    if kw == "check_counter":
        line.take("id")
        line.take("op", "(")
        line.take("id") if line.peek("id") else line.take("num")
        line.take("op", ")")
        return ("check_counter",)
    if kw in _DIRECT_ARITY:
        args: list[str] = []
        for a in _DIRECT_ARITY[kw]:
            if a == "q":
                args.append(line.qname())
            elif a == "n":
                args.append(line.take("num"))
            else:
                nums = [line.take("num")]
                while line.peek("num"):
                    nums.append(line.take("num"))
                args.append(" ".join(nums))
        line.done()
        return (kw, *args)
    if kw.startswith("meter_"):
        return (kw, *rest.split())
    raise StfError(f"unknown statement {kw!r}")


def parse_stf(text: str) -> list[Stmt]:
    """Statements of an STF file, as p4c's STF parser returns them (StfError if it fails)."""
    out: list[Stmt] = []
    for n, raw in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*([a-zA-Z_]+)(.*)", raw)
        head = raw.split("#", 1)[0].strip()
        if not head:
            continue
        if m is None:
            raise StfError(f"line {n}: a statement starts with a keyword")
        kw, rest = m.group(1).lower(), m.group(2)
        if kw not in ("packet", "expect"):
            rest = rest.split("#", 1)[0]
        try:
            out.append(_statement(kw, rest))
        except StfError as e:
            raise StfError(f"line {n}: {e}") from None
    return out


# ---- what bmv2stf sends -------------------------------------------------------


@dataclass
class Script:
    """What bmv2stf does with a test: ``ops`` in order, ``expected`` per port."""

    ops: list[list[Any]] = field(default_factory=list)
    interfaces: list[int] = field(default_factory=list)
    expected: dict[int, list[str | None]] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def build(cls, program: dict[str, Any], stmts: list[Stmt]) -> Script:
        """Translate statements; an error bmv2stf raises mid-run ends ``ops`` with it."""
        s = cls()
        ports: set[int] = set()
        for st in stmts:
            if st[0] in ("packet", "expect") and st[1] is not None:
                ports.add(int(st[1]))
        s.interfaces = sorted(ports)
        names = _Names(program)
        for st in stmts:
            try:
                s._one(st, names)
            except (KeyError, ValueError, TypeError, AttributeError) as e:
                s.error = f"bmv2stf fails on {st[0]}: {e}"
                break
        return s

    def _one(self, st: Stmt, names: _Names) -> None:
        cmd = st[0]
        if cmd == "add":
            self.ops.append(["cli", names.table_add(st)])
        elif cmd == "setdefault":
            self.ops.append(["cli", names.set_default(st)])
        elif cmd in PASSED_THROUGH:
            self.ops.append(["cli", " ".join(st)])
        elif cmd == "packet":
            bytes.fromhex(st[2])
            self.ops.append(["packet", int(st[1]), st[2].upper()])
        elif cmd == "expect":
            if st[1] is None:
                raise TypeError("no_packet has no port")
            self.expected.setdefault(int(st[1]), []).append(st[2])


class _Names:
    """Tables and actions of a program, looked up the way bmv2stf looks them up."""

    def __init__(self, program: dict[str, Any]) -> None:
        self.actions = {a["id"]: a for a in program["actions"]}
        self.tables: list[dict[str, Any]] = []
        for p in program["pipelines"][:2]:
            self.tables += p["tables"]
        widths = _field_widths(program)
        self.keys: dict[str, list[tuple[str, str, int]]] = {}
        for t in self.tables:
            ks = []
            for k in t["key"]:
                name = k["name"] if "name" in k else k["target"]
                if isinstance(name, list):
                    name = ".".join(k["target"])
                target = k["target"]
                width = widths.get(tuple(target), 1) if isinstance(target, list) else 1
                ks.append((name, k["match_type"], width))
            self.keys[t["name"]] = ks

    def table(self, name: str) -> dict[str, Any]:
        for t in self.tables:
            if t["name"] == name:
                return t
        found = [t for t in self.tables if t["name"].endswith(name)]
        if len(found) > 1:
            raise KeyError(f"table name {name} is ambiguous")
        if not found:
            raise KeyError(f"could not find table {name}")
        return found[0]

    def action(self, table: dict[str, Any], name: str) -> dict[str, Any]:
        acts = [self.actions[i] for i in table["action_ids"]]
        for a in acts:
            if a["name"] == name:
                return a
        found = [a for a in acts if a["name"].endswith(name)]
        if len(found) > 1:
            raise KeyError(f"ambiguous action name {name}")
        if not found:
            raise KeyError(f"no action {name} in table {table['name']}")
        return found[0]

    def _args(self, action: dict[str, Any], args: list[tuple[str, str]]) -> str:
        names = [p["name"] for p in action["runtime_data"]]
        values: dict[str, str] = {}
        for k, v in args:
            if k not in names:
                raise KeyError(f"unexpected action arg {k}")
            values[k] = v
        return " ".join(values[n] for n in names)

    def table_add(self, st: Stmt) -> str:
        _cmd, tname, prio, matches, (aname, args), _id = st
        t = self.table(tname)
        types = {k: mt for k, mt, _w in self.keys[t["name"]]}  # a name given twice counts once
        defaults = {"ternary": "0&&&0", "lpm": "0/0", "exact": "0", "valid": "0"}
        values: dict[str, str] = {}
        for kname, mt in types.items():
            if mt not in defaults:
                raise KeyError(f"unexpected key type {mt}")
            values[kname] = defaults[mt]
        for key, value in matches:
            kname = _key_name(key, types)
            if types[kname] == "ternary":
                values[kname] = _ternary(value)
            elif types[kname] == "lpm":
                values[kname] = _lpm(value)
            else:
                values[kname] = value
        a = self.action(t, aname)
        line = (f"table_add {t['name']} {a['name']} {' '.join(values.values())}"
                f" => {self._args(a, args)}")
        if t["match_type"] == "ternary":
            line += " " + str(10000 - int(prio))
        return line

    def set_default(self, st: Stmt) -> str:
        _cmd, tname, (aname, args) = st
        a = self.action(self.table(tname), aname)
        line = f"table_set_default {tname} {aname}"
        rest = self._args(a, args)
        return f"{line} {rest}" if rest else line


def _field_widths(program: dict[str, Any]) -> dict[tuple[str, str], int]:
    types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in program["header_types"]}
    out: dict[tuple[str, str], int] = {}
    for h in program["headers"]:
        for fname, w in types[h["header_type"]].items():
            out[(h["name"], fname)] = w if isinstance(w, int) else 0
        out[(h["name"], "$valid$")] = 1
    return out


def _key_name(key: str, types: dict[str, str]) -> str:
    m = re.match(r"(.*)\$([0-9]+)(.*)", key)
    if m:
        key = f"{m.group(1)}[{m.group(2)}]{m.group(3)}"
    for cand in (key, key + "$", key + ".$valid$"):
        if cand in types:
            return cand
    if key.endswith(".valid") and key[:-5] + "$valid$" in types:
        return key[:-5] + "$valid$"
    found = None
    for name in types:
        if name.endswith("." + key) or name.endswith("." + key + "$") or \
                (key == "valid" and name.endswith(".$valid$")):
            found = name
    if found is None and key == "valid" and "$valid$" in types:
        found = "$valid$"
    if found is None:
        raise KeyError(f"unexpected key field {key}")
    return found


def _ternary(value: str) -> str:
    if value.startswith("0x"):
        digit, prefix = "F", "0x"
    elif value.startswith("0b"):
        digit, prefix = "1", "0b"
    elif value.startswith("0o"):
        digit, prefix = "7", "0o"
    else:
        raise ValueError(f"decimal value {value} not supported for ternary key")
    body = value[2:]
    mask = "".join("0" if c == "*" else digit for c in body)
    return f"{prefix}{body.replace('*', '0')}&&&{prefix}{mask}"


def _lpm(value: str) -> str:
    """bmv2stf's makeLpm (a value spelt a/b is a tuple there, and this raises)."""
    if value.startswith("0x"):
        per = 4
    elif value.startswith("0b"):
        per = 1
    elif value.startswith("0o"):
        per = 3
    else:
        value, per = "0x" + hex(int(value)), 4
    digits = len(value) - 2 - value.count("*")
    return f"{value.replace('*', '0')}/{digits * per}"


# ---- judging ------------------------------------------------------------------


def compare_pkt(expected: str, received: bytes) -> bool:
    """testutils.compare_pkt: '*' is any nibble, a final '$' forbids a longer packet."""
    strict = expected.endswith("$")
    exp = expected[:-1] if strict else expected
    got = received.hex().upper()
    exp = "".join(exp.split()).upper()
    if strict and len(got) > len(exp):
        return False
    if len(got) < len(exp):
        return False
    return all(e in ("*", g) for e, g in zip(exp, got, strict=False))


def judge(script: Script, outputs: dict[int, list[bytes]]) -> str | None:
    """bmv2stf's checkOutputs: None when the test passes, else why it fails."""
    if script.error:
        return script.error
    pending = set(script.expected)
    for port in script.interfaces:
        got = outputs.get(port, [])
        want = script.expected.get(port, [])
        if len(want) != len(got):
            return f"expected {len(want)} packets on port {port}, got {len(got)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if w and not compare_pkt(w, g):
                return f"packet {i} on port {port} differs"
        pending.discard(port)
    if pending:
        return f"expected packets on port(s) {sorted(pending)} not received"
    return None


# ---- simple_switch_CLI on the Python switch ---------------------------------


def _suffixes(names: list[str]) -> dict[str, str]:
    """runtime_CLI's SUFFIX_LOOKUP_MAP: every unique dotted suffix of the (distinct) names."""
    count: Counter[str] = Counter()
    found: dict[str, str] = {}
    for name in dict.fromkeys(names):
        parts = name.split(".")
        for i in range(len(parts)):
            s = ".".join(parts[i:])
            found[s] = name
            count[s] += 1
    return {s: n for s, n in found.items() if count[s] == 1}


def _param(text: str, width: int) -> int:
    """runtime_CLI.parse_param: int(text, 0) in (width + 7) // 8 bytes."""
    v = int(text, 0)
    if v < 0 or v >= 1 << (8 * ((width + 7) // 8)):
        raise ValueError(f"{text} does not fit {width} bits")
    return v & ((1 << width) - 1)


class BmCli:
    """simple_switch_CLI commands applied to the Python switch; ``run`` returns an error."""

    def __init__(self, sw: Switch, program: dict[str, Any]) -> None:
        self.sw = sw
        names = _Names(program)
        self.table_json = {t["name"]: t for t in names.tables}
        self.keys = names.keys
        self.table_names = _suffixes(list(self.table_json))
        self.action_names = _suffixes([a["name"] for a in program["actions"]])
        self.action_params = {a["name"]: [p["bitwidth"] for p in a["runtime_data"]]
                              for a in program["actions"]}
        self.registers = _suffixes([r["name"] for r in program.get("register_arrays", [])])
        self.counters = _suffixes([c["name"] for c in program.get("counter_arrays", [])])
        self.nodes: list[tuple[int, list[int]]] = []
        self.groups: dict[int, list[int]] = {}

    def run(self, line: str) -> str | None:
        """Apply one command line; the error simple_switch_CLI would print, or None."""
        cmd, *args = line.split()
        try:
            getattr(self, f"_{cmd}")(args)
        except (SwitchKeyError, KeyError, ValueError, IndexError, AttributeError) as e:
            return f"{cmd}: {e}"
        return None

    def _action(self, table: str, name: str) -> str:
        full = self.action_names[name]
        if full not in self.table_json[table]["actions"]:
            raise KeyError(f"table {table} has no action {name}")
        return full

    def _data(self, action: str, args: list[str]) -> list[int]:
        """runtime_CLI.parse_runtime_data: zip() drops extra parameters; too few fail later."""
        widths = self.action_params[action]
        return [_param(a, w) for a, w in zip(args, widths, strict=False)]

    def _table_add(self, args: list[str]) -> None:
        table = self.table_names[args[0]]
        action = self._action(table, args[1])
        prio = None
        if self.table_json[table]["match_type"] in ("ternary", "range"):
            prio = BM_MAX_PRIORITY - int(args.pop(-1))
        rest = args[2:]
        split = rest.index("=>") if "=>" in rest else len(rest)
        keys, params = rest[:split], rest[split + 1:]
        fields = self.keys[table]
        if len(keys) != len(fields):
            raise ValueError(f"table {table} needs {len(fields)} key fields")
        data = self._data(action, params)
        matches: list[Any] = []
        for text, (_n, mt, w) in zip(keys, fields, strict=True):
            if mt == "lpm":
                v, plen = text.split("/")
                matches.append(Lpm(_param(v, w), int(plen)))
            elif mt == "ternary":
                v, m = text.split("&&&")
                matches.append(Ternary(_param(v, w) & _param(m, w), _param(m, w)))
            elif mt == "range":
                lo, hi = text.split("->")
                matches.append(Range(_param(lo, w), _param(hi, w)))
            elif mt == "valid":
                matches.append(Exact(1 if int(text) else 0))
            else:
                matches.append(Exact(_param(text, w)))
        self.sw.table_add(table, matches, action, data, prio)

    def _table_set_default(self, args: list[str]) -> None:
        table = self.table_names[args[0]]
        action = self._action(table, args[1])
        self.sw.table_set_default(table, action, self._data(action, args[2:]))

    def _mirroring_add(self, args: list[str]) -> None:
        self.sw.clone_session_set(int(args[0]), port=int(args[1]))

    def _mirroring_add_mc(self, args: list[str]) -> None:
        self.sw.clone_session_set(int(args[0]), mc_group=int(args[1]))

    def _mirroring_delete(self, args: list[str]) -> None:
        self.sw.clone_session_delete(int(args[0]))

    def _mc_mgrp_create(self, args: list[str]) -> None:
        group = int(args[0])
        if group in self.groups:
            raise ValueError(f"group {group} exists")
        self.groups[group] = []
        self.sw.mc_group_set(group, [])

    def _mc_node_create(self, args: list[str]) -> None:
        self.nodes.append((int(args[0]), [int(p) for p in args[1:]]))

    def _mc_node_associate(self, args: list[str]) -> None:
        group, node = int(args[0]), int(args[1])
        if not 0 <= node < len(self.nodes):
            raise KeyError(f"no multicast node {node}")
        self.groups[group].append(node)
        self.sw.mc_group_set(group, [(port, rid) for n in self.groups[group]
                                     for rid, ports in [self.nodes[n]] for port in sorted(ports)])

    def _register_write(self, args: list[str]) -> None:
        self.sw.register_write(self.registers[args[0]], int(args[1]), int(args[2]))

    def _register_reset(self, args: list[str]) -> None:
        self.sw.register_reset(self.registers[args[0]])

    def _counter_write(self, args: list[str]) -> None:
        self.sw.counter_write(self.counters[args[0]], int(args[1]), int(args[2]), int(args[3]))

    def _read_only(self, args: list[str]) -> None:
        """counter_read, register_read, mirroring_get: they change nothing."""

    _counter_read = _register_read = _mirroring_get = _read_only


def run_on_pyswitch(program: dict[str, Any], script: Script,
                    sw: Switch | None = None) -> dict[int, list[bytes]]:
    """Run the script on a Python switch; the packets that left each STF port."""
    sw = sw or Switch(program)
    cli = BmCli(sw, program)
    outputs: dict[int, list[bytes]] = {p: [] for p in script.interfaces}
    for op in script.ops:
        if op[0] == "cli":
            cli.run(op[1])
        else:
            for port, data in sw.process(op[1], bytes.fromhex(op[2])):
                if port in outputs:
                    outputs[port].append(data)
    return outputs
