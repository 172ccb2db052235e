"""Generate the ingress/egress control flow: tables, conditionals, action calls.

A node's function ``N<k>(pk, F)`` runs the node and what follows it, and returns
the function to continue with (None at the end), which the engine calls in a loop.
Control flow is structured: the two branches of a conditional become an if/else
that falls through to the node where they meet (the conditional's immediate
post-dominator), so a pipeline pass is usually one call. Only a table whose next
node depends on its entry (``return e<k>.next``), deep nesting, or a graph with a
cycle continue in another function; only functions something can reach are
generated. Tables with const entries (exact match, no counters) become an if/elif
chain with each entry's action inline; a miss runs the default entry, which the
control plane may change. After anything that may run ``exit``, the code checks
``pk.exit``.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ProgramError, UnsupportedConstruct
from .expressions import Ctx, ExprCompiler, hexint
from .primitives import PrimitiveCompiler
from .program import Program
from .tablebuild import const_entries
from .tables import KeyField, Table

MAX_NESTING = 24  # conditionals nested in one function; deeper ones continue in another
CONST_INLINE_MAX = 16  # const entries a table may have to become an if/elif chain
_NODE_REF = re.compile(r"\bN(\d+)\b")


def _indent(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + s for s in lines]


class ControlGen:
    """Source of the two pipelines of a program."""

    def __init__(self, prog: Program, expr: ExprCompiler, prims: PrimitiveCompiler) -> None:
        self.prog = prog
        self.expr = expr
        self.prims = prims
        self.node_ids: dict[tuple[str, str], int] = {}
        self.table_ids: dict[str, int] = {}
        self.nodes: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self.ipdom: dict[tuple[str, str], str | None] = {}
        self.structured: dict[str, bool] = {}
        self.called_actions: set[int] = set()  # actions whose A<id> generated code may run
        self.may_exit = {a.id for a in prog.actions.values()
                         if any(p.get("op") == "exit" for p in a.primitives)}
        self.dynamic_next: set[tuple[str, str]] = set()  # tables continuing with e.next

    def source(self) -> list[str]:
        """Lines defining N<k> for the nodes something can reach, and INGRESS / EGRESS."""
        for pname in ("ingress", "egress"):
            p = self.prog.pipelines[pname]
            if p.get("action_profiles"):
                names = ", ".join(a.get("name", "?") for a in p["action_profiles"])
                raise UnsupportedConstruct(f"action profiles/selectors ({names})")
            for kind in ("tables", "conditionals", "action_calls"):
                for node in p.get(kind, []):
                    key = (pname, node["name"])
                    self.node_ids[key] = len(self.node_ids)
                    self.nodes[key] = (kind, node)
                    if kind == "tables":
                        self.table_ids[node["name"]] = len(self.table_ids)
                        self._check_table(node)
        for pname in ("ingress", "egress"):
            self._post_dominators(pname)
        entries = [self.node(pname, self.prog.pipelines[pname].get("init_table"), pname)
                   for pname in ("ingress", "egress")]
        # only the functions something can reach: the entry points, those generated code
        # names, the successors of tables that continue with their entry's next node
        by_id = {k: key for key, k in self.node_ids.items()}
        todo = [int(e[1:]) for e in entries if e != "None"]
        bodies: dict[int, list[str]] = {}
        while todo:
            k = todo.pop()
            if k in bodies:
                continue
            bodies[k] = body = self._function(*by_id[k])
            todo += [int(m) for m in _NODE_REF.findall("\n".join(body))]
            while self.dynamic_next:
                pname, name = self.dynamic_next.pop()
                kind, node = self.nodes[(pname, name)]
                todo += [int(n[1:]) for n in (self.node(pname, x, pname)
                                              for x in self._successors(kind, node))
                         if n != "None"]
        lines: list[str] = []
        for k in sorted(bodies):
            lines += [f"def N{k}(pk, F):", *_indent(bodies[k]), ""]
        for pname, first in zip(("ingress", "egress"), entries, strict=True):
            lines += [f"{pname.upper()} = {first}", ""]
        return lines

    def node(self, pname: str, name: str | None, where: str) -> str:
        """Name of the generated function of node ``name`` ('None' for the end)."""
        if name is None:
            return "None"
        k = self.node_ids.get((pname, name))
        if k is None:
            raise ProgramError(f"unknown control-flow node '{name}' in {where}")
        return f"N{k}"

    # ---- graph ------------------------------------------------------------

    def _successors(self, kind: str, node: dict[str, Any]) -> list[str | None]:
        if kind == "conditionals":
            return [node.get("true_next"), node.get("false_next")]
        if kind == "action_calls":
            return [node.get("next_node")]
        return sorted(set(node.get("next_tables", {}).values())
                      | {node.get("base_default_next")}, key=lambda x: x or "")

    def _static_next(self, node: dict[str, Any]) -> tuple[bool, str | None]:
        """(True, X) when a table continues with X whatever it does."""
        targets = set(node.get("next_tables", {}).values())
        if "__HIT__" not in node.get("next_tables", {}):
            targets.add(node.get("base_default_next"))
        if len(targets) == 1:
            return True, targets.pop()
        return False, None

    def _post_dominators(self, pname: str) -> None:
        """The immediate post-dominator of every node of a pipeline (None: the end), where
        the two branches of a conditional meet again. A pipeline whose graph has a cycle
        (not something p4c makes) gets none: its nodes then continue by function."""
        succ: dict[str, list[str | None]] = {}
        for (pn, name), (kind, node) in self.nodes.items():
            if pn == pname:
                static, nxt = self._static_next(node) if kind == "tables" else (False, None)
                succ[name] = [nxt] if static else self._successors(kind, node)
                for x in succ[name]:
                    self.node(pname, x, f"pipeline '{pname}'")
        pdom: dict[str | None, frozenset[str | None]] = {None: frozenset({None})}
        state: dict[str, int] = {}
        for root in succ:
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                name, i = stack.pop()
                if i == 0:
                    if state.get(name) == 2:
                        continue
                    if state.get(name) == 1:
                        self.structured[pname] = False
                        return
                    state[name] = 1
                nexts = succ[name]
                if i < len(nexts):
                    stack.append((name, i + 1))
                    x = nexts[i]
                    if x is not None and state.get(x) != 2:
                        if state.get(x) == 1:
                            self.structured[pname] = False
                            return
                        stack.append((x, 0))
                    continue
                state[name] = 2
                common = frozenset.intersection(*(pdom[x] for x in nexts))
                pdom[name] = common | {name}
                self.ipdom[(pname, name)] = max(common, key=lambda d: len(pdom[d]))
        self.structured[pname] = True

    # ---- emission -----------------------------------------------------------

    def _function(self, pname: str, name: str) -> list[str]:
        lines = self._region(pname, name, None, 0)
        if not lines or not lines[-1].startswith("return"):
            lines.append("return None")
        return lines

    def _region(self, pname: str, name: str | None, stop: str | None,
                depth: int) -> list[str]:
        """Code running node ``name`` and its successors up to ``stop``: the branches of
        a conditional become an if/else that falls through to where they meet."""
        lines: list[str] = []
        structured = self.structured[pname]
        first = True
        while name is not None and name != stop:
            if (not first and not structured) or depth > MAX_NESTING:
                return [*lines, f"return {self.node(pname, name, pname)}"]
            first = False
            kind, node = self.nodes[(pname, name)]
            if kind == "conditionals":
                cond = self.expr.boolean(node["expression"], Ctx(f"conditional '{name}'"))
                if not structured:
                    return [*lines, f"if {cond.code}:",
                            f"    return {self.node(pname, node.get('true_next'), pname)}",
                            f"return {self.node(pname, node.get('false_next'), pname)}"]
                join = self.ipdom[(pname, name)]
                yes = self._region(pname, node.get("true_next"), join, depth + 1)
                no = self._region(pname, node.get("false_next"), join, depth + 1)
                lines += [f"if {cond.code}:", *_indent(yes or ["pass"])]
                if no:
                    lines += ["else:", *_indent(no)]
                name = join
                continue
            if kind == "action_calls":
                act = self.prog.actions.get(node.get("action_id"))
                if act is None:
                    raise ProgramError(f"unknown action id in action call '{name}'")
                self.called_actions.add(act.id)
                lines.append(f"A{act.id}(pk, F, ())")
                if act.id in self.may_exit:
                    lines += ["if pk.exit:", "    return None"]
                name = node.get("next_node")
                continue
            code, name, falls = self._table(pname, node)
            lines += code
            if not falls:
                return lines
        return lines

    # ---- tables -----------------------------------------------------------

    def _check_table(self, t: dict[str, Any]) -> None:
        where = f"table '{t['name']}'"
        if t.get("type", "simple") != "simple":
            raise UnsupportedConstruct(f"table type '{t.get('type')}' (action profile) in {where}")
        if t.get("direct_meters"):
            raise UnsupportedConstruct(f"direct meter in {where}")
        if t.get("support_timeout"):
            raise UnsupportedConstruct(f"idle timeout (support_timeout) in {where}")

    def key_codes(self, t: dict[str, Any]) -> tuple[list[str], list[KeyField], list[int | None]]:
        """Per-field key code, key fields and static key masks of a table."""
        where = f"table '{t['name']}'"
        codes, fields, masks = [], [], []
        for k in t.get("key", []):
            mt = k.get("match_type")
            if mt == "valid":
                h = self.prog.header(k["target"], where)
                codes.append("1" if h.metadata else f"F[{h.valid_slot}]")
                fields.append(KeyField(k.get("name") or h.name, "valid", 1))
                masks.append(None)
                continue
            if mt not in ("exact", "lpm", "ternary", "range"):
                raise UnsupportedConstruct(f"match type '{mt}' in {where}")
            fs = self.prog.field_slot(k["target"][0], k["target"][1], where)
            if fs.varbit:
                raise UnsupportedConstruct(f"table key on varbit field '{fs.name}' in {where}")
            code = f"(F[{fs.slot}] & {fs.mask})" if fs.signed else f"F[{fs.slot}]"
            kmask = k.get("mask")
            m = None
            if kmask is not None:
                m = hexint(kmask, where) & fs.mask
                code = f"({code} & {m})"
            codes.append(code)
            fields.append(KeyField(k.get("name") or fs.name, mt, fs.width))
            masks.append(m)
        return codes, fields, masks

    def _table(self, pname: str, t: dict[str, Any]) -> tuple[list[str], str | None, bool]:
        """Code applying table ``t``, the node after it, and whether the code falls
        through to that node (else it returns the next node itself)."""
        tid = self.table_ids[t["name"]]
        codes, fields, masks = self.key_codes(t)
        de = t.get("default_entry")
        if not codes and de and de.get("action_entry_const") and not t.get("with_counters"):
            return self._const_default(t, de)
        shape = Table(t["name"], t.get("match_type", "exact"), fields, masks, {}, 1, False,
                      None)
        if codes and not t.get("with_counters"):
            entries = const_entries(self.prog, t, fields, masks)
            if entries is not None and len(entries) <= CONST_INLINE_MAX:
                return self._const_table(pname, t, shape, codes, entries)
        self.called_actions.update(self.action_ids(t))
        e = f"e{tid}"  # an entry of table tid (what the optimizer relies on)
        if not codes:
            lines = [f"{e} = T{tid}.default"]
        else:
            key = shape.key_code(codes)
            get = f"D{tid}.get({key})" if shape.match_type == "exact" else f"T{tid}.lookup({key})"
            lines = [f"{e} = {get}", f"if {e} is None:", f"    {e} = T{tid}.default"]
            if t.get("with_counters"):
                lines += ["else:", f"    {e}.packets += 1", f"    {e}.bytes += pk.ilen"]
        lines += [f"if {e}.fn is not _noop:", f"    {e}.fn(pk, F, {e}.params)"]
        static, nxt = self._static_next(t)
        if not static:
            self.dynamic_next.add((pname, t["name"]))
            return [*lines, f"return {e}.next"], None, False
        if any(i in self.may_exit for i in self.action_ids(t)):
            lines += ["if pk.exit:", "    return None"]
        return lines, nxt, True

    def action_ids(self, t: dict[str, Any]) -> list[int]:
        """Ids of the actions of table ``t``."""
        ids = t.get("action_ids")
        if ids is None:
            by_name = {a.name: a.id for a in self.prog.actions.values()}
            ids = [by_name[n] for n in t.get("actions", []) if n in by_name]
        return list(ids)

    def _action_body(self, a: Any, params: list[int] | tuple[int, ...]) -> list[str]:
        """Action ``a`` with constant action data, inline (a call if it has jumps)."""
        consts = "".join(f"{x}, " for x in params)
        if any(p.get("op") in ("_jump", "_jump_if_zero") for p in a.primitives):
            self.called_actions.add(a.id)
            return [f"A{a.id}(pk, F, ({consts}))"]
        ctx = Ctx(f"action '{a.name}'", [w for _n, w in a.params])
        return [f"P = ({consts})", *self.prims.body(a.primitives, ctx)]

    def _const_table(self, pname: str, t: dict[str, Any], shape: Table, codes: list[str],
                     entries: list[tuple[int | None, Any, int, tuple[int, ...]]]
                     ) -> tuple[list[str], str | None, bool]:
        """A table whose entries are const: the lookup is an if/elif chain, in lookup
        order, on the key (exact) or on the fields each entry's mask keeps (ternary:
        the first field that differs ends the test), each hit runs its action
        inline; a miss runs the (changeable) default entry."""
        tid = self.table_ids[t["name"]]
        where = f"table '{t['name']}'"
        nexts = t.get("next_tables", {})
        static, nxt = self._static_next(t)
        ternary = shape.match_type == "ternary"
        lines = [] if ternary else [f"_key = {shape.key_code(codes)}"]
        for i, (mask, value, aid, params) in enumerate(entries):
            a = self.prog.actions[aid]
            test = shape.field_test(codes, mask, value) if ternary else f"_key == {value!r}"
            lines.append(f"{'if' if i == 0 else 'elif'} {test}:")
            body = self._action_body(a, params)
            if not static:
                hit = nexts["__HIT__"] if "__HIT__" in nexts else nexts.get(a.name)
                if a.id in self.may_exit:
                    body += ["if pk.exit:", "    return None"]
                body.append(f"return {self.node(pname, hit, where)}")
            lines += _indent(body)
        e = f"e{tid}"
        lines += ["else:", f"    {e} = T{tid}.default", f"    if {e}.fn is not _noop:",
                  f"        {e}.fn(pk, F, {e}.params)"]
        self.called_actions.update(self.action_ids(t))  # any of them can be the default
        if not static:
            self.dynamic_next.add((pname, t["name"]))
            return [*lines, f"    return {e}.next"], None, False
        if any(i in self.may_exit for i in self.action_ids(t)):
            lines += ["if pk.exit:", "    return None"]
        return lines, nxt, True

    def _const_default(self, t: dict[str, Any],
                       de: dict[str, Any]) -> tuple[list[str], str | None, bool]:
        where = f"table '{t['name']}'"
        a = self.prog.actions.get(de.get("action_id"))
        if a is None:
            raise ProgramError(f"{where}: unknown default action id {de.get('action_id')}")
        data = de.get("action_data", [])
        if len(data) != len(a.params):
            raise ProgramError(f"{where}: default action '{a.name}' needs {len(a.params)} "
                               f"argument(s)")
        values = [hexint(x, where) & ((1 << w) - 1)
                  for x, (_n, w) in zip(data, a.params, strict=True)]
        nexts = t.get("next_tables", {})
        nxt = nexts["__MISS__"] if "__MISS__" in nexts else nexts.get(a.name,
                                                                        t.get("base_default_next"))
        lines = self._action_body(a, values)
        if a.id in self.may_exit:
            lines += ["if pk.exit:", "    return None"]
        return lines, nxt, True
