"""Tables of a TNA program: their lookup functions and their ``Table`` objects (the
Python switch's, so the control plane treats them as a v1model program's), their
defaults and const entries; tables that always run one action run it in place."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedConstruct
from ..tables import Exact, KeyField, Lpm, Match, Range, Table, TableAction, Ternary, noop
from .codegen import CodeGen, Lines, Named, Scope
from .ir import (
    Node,
    annotation,
    annotation_strings,
    control_plane_name,
    kind,
    member_name,
    name_of,
    path_name,
    unsupported,
)
from .layout import const_value


def _in_tcam(table: Node) -> bool:
    """A table bf-p4c places in TCAM (``@ternary(1)``): its exact keys take ternary
    entries, as Tofino's STF harness programs them (P4Testgen's STF back end,
    ``targets/tofino/rename_keys.h``, writes them so)."""
    a = annotation(table, "ternary")
    if a is None:
        return False
    args = annotation_strings(a) or [str(e.get("value")) for e in a.get("expr") or []]
    return args == ["1"]


class TableCompiler:
    """The table half of ``program.ProgramCompiler``."""

    ns: dict[str, Any]
    out: Lines
    tables: dict[str, Table]
    table_specs: list[tuple[str, dict[str, Node], Scope]]
    actions: dict
    action_infos: dict

    def _table_fn(self, gen: CodeGen, scope: Scope, t: Named) -> None:
        """The apply function of a table: look up, run the action, (hit, action name)."""
        props = {name_of(p): p for p in t.decl["properties"]["properties"]}
        keys = props["key"]["value"]["keyElements"] if "key" in props else []
        codes, fields = [], []
        in_tcam = _in_tcam(t.decl)
        out = Lines()
        out.add(f"def {t.ident}(pk, F):")
        with out.block():
            for ke in keys:
                mt = path_name(ke["matchType"])
                if mt not in ("exact", "ternary", "lpm", "range", "optional"):
                    raise UnsupportedConstruct(f"TNA model: match kind {mt} ({t.label})")
                codes.append(gen.expr(ke["expression"], scope, out))
                fname = control_plane_name(ke, self._key_text(ke["expression"]))
                if mt == "optional" or (mt == "exact" and in_tcam):
                    mt = "ternary"
                fields.append(KeyField(fname, mt, gen.width(ke["expression"])))
            table = self._make_table(t, props, fields, gen, scope)
            tid = t.ident.replace("TA", "T")
            self.ns[tid] = table
            if keys:
                key = table.key_code(codes)
                get = (f"{tid}.exact_dict.get({key})" if table.match_type == "exact"
                       else f"{tid}.lookup({key})")
                out.add(f"e = {get}")
                out.add("if e is None:")
                out.add(f"    e = {tid}.default")
                out.add("    h = False")
                out.add("else:")
                out.add("    h = True")
            elif self._const_default(props, scope) is not None:
                # a keyless table whose action is fixed (p4c makes one for every
                # statement outside a table): the action, called directly
                a, args = self._const_default(props, scope)
                out.add(f"{a.ident}(pk, F, ({''.join(f'{v}, ' for v in args)}))")
                out.add(f"return False, {a.label!r}")
                self.out.lines += out.lines
                return
            else:
                out.add(f"e = {tid}.default")
                out.add("h = False")
            out.add("if e.fn is not _noop:")
            out.add("    e.fn(pk, F, e.params)")
            out.add("return h, e.action.info.name")
        self.out.lines += out.lines

    def _inline(self, table: Node, scope: Scope) -> tuple[Node, tuple[int, ...]] | None:
        """The action and arguments of a table that has no key and a const default
        (p4c makes one for every statement outside a table): run in place."""
        props = {name_of(p): p for p in table["properties"]["properties"]}
        keys = props["key"]["value"]["keyElements"] if "key" in props else []
        found = None if keys or "counters" in props else self._const_default(props, scope)
        if found is None:
            return None
        action, args = found
        return action.decl, tuple(args)

    @staticmethod
    def _const_default(props: dict[str, Node], scope: Scope) -> tuple[Named, list[int]] | None:
        """The const default action of a table and its arguments, or None."""
        p = props.get("default_action")
        if p is None or not p.get("isConstant"):
            return None
        e = p["value"]["expression"]
        ref = e["method"] if kind(e) == "MethodCallExpression" else e
        args = [int(const_value(x["expression"])) for x in
                (e.get("arguments") or [])] if kind(e) == "MethodCallExpression" else []
        return scope.look(path_name(ref)), args

    @staticmethod
    def _key_text(e: Node) -> str:
        k = kind(e)
        if k == "PathExpression":
            return path_name(e)
        if k == "Member":
            return f"{TableCompiler._key_text(e['expr'])}.{member_name(e)}"
        return k

    def _make_table(self, t: Named, props: dict[str, Node], fields: list[KeyField],
                    gen: CodeGen, scope: Scope) -> Table:
        kinds = {f.match_type for f in fields}
        mt = ("range" if "range" in kinds else "ternary" if "ternary" in kinds
              else "lpm" if "lpm" in kinds else "exact")
        actions: dict[str, TableAction] = {}
        for el in props["actions"]["value"]["actionList"]:
            e = el["expression"]
            ref = e["method"] if kind(e) == "MethodCallExpression" else e
            a = scope.look(path_name(ref))
            if not isinstance(a, Named) or a.what != "action":
                raise unsupported("a table action that is no action", el)
            actions[a.label] = TableAction(self.action_infos[id(a.decl)], a.ident, None, None)
        size = 512
        if "size" in props:
            size = int(const_value(props["size"]["value"]["expression"]))
        table = Table(t.label, mt, fields, [None] * len(fields), actions, size,
                      "counters" in props, None)
        self.tables[t.label] = table
        self.table_specs.append((t.label, props, scope))
        return table

    def _build_tables(self) -> None:
        """Now that the actions exist: their functions, defaults and const entries."""
        for label, props, scope in self.table_specs:
            table = self.tables[label]
            for act in table.actions.values():
                act.fn = self.ns[act.fn]
                if act.fn is None:
                    act.fn = noop
            if "default_action" in props:
                p = props["default_action"]
                e = p["value"]["expression"]
                ref = e["method"] if kind(e) == "MethodCallExpression" else e
                a = scope.look(path_name(ref))
                vals = [int(const_value(x["expression"])) for x in
                        (e.get("arguments") or [])] if kind(e) == "MethodCallExpression" else []
                const = bool(p.get("isConstant"))
                table.init_default(a.label, vals, const, const)
            if "entries" in props:
                self._const_entries(table, props["entries"]["value"]["entries"], scope)

    def _const_entries(self, table: Table, entries: list[Node], scope: Scope) -> None:
        """A table's const entries, the first one winning (the highest priority)."""
        for i, entry in enumerate(entries):
            keysets = entry["keys"]["components"]
            matches = [self._match(kf, ks) for kf, ks in zip(table.keys, keysets, strict=True)]
            act = entry["action"]
            a = scope.look(path_name(act["method"]))
            params = [int(const_value(x["expression"])) for x in act.get("arguments") or []]
            prio = len(entries) - i if table.needs_priority else None
            table.add(matches, a.label, params, prio)
        table.immutable = True

    @staticmethod
    def _match(kf: KeyField, ks: Node) -> Match:
        k = kind(ks)
        if k == "DefaultExpression":
            return None
        if k == "Mask":
            value, mask = int(const_value(ks["left"])), int(const_value(ks["right"]))
            if kf.match_type == "lpm":
                return Lpm(value, bin(mask).count("1"))
            return Ternary(value, mask)
        if k == "Range":
            return Range(int(const_value(ks["left"])), int(const_value(ks["right"])))
        value = int(const_value(ks))
        if kf.match_type == "ternary":
            return Ternary(value, (1 << kf.bitwidth) - 1)
        if kf.match_type == "lpm":
            return Lpm(value, kf.bitwidth)
        return Exact(value)

    # ---- blocks ----------------------------------------------------------------

