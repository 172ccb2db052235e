"""Build the run-time Table objects of a program: actions, next nodes, default and
const entries from the JSON."""

from __future__ import annotations

from typing import Any, Protocol

from .errors import ProgramError, SwitchKeyError
from .expressions import hexint
from .program import Program
from .tables import (
    BM_MAX_PRIORITY,
    ActionInfo,
    ActionParam,
    Exact,
    KeyField,
    Lpm,
    Match,
    Range,
    Table,
    TableAction,
    Ternary,
    noop,
)


class ControlNodes(Protocol):
    """What building tables needs of the control-flow generator (controls.ControlGen)."""

    table_ids: dict[str, int]

    def node(self, pname: str, name: str | None, where: str) -> str: ...

    def key_codes(self, t: dict[str, Any]) -> tuple[list[str], list[KeyField], list[int | None]]:
        ...

NOOP_PRIMITIVES = ("no_op", "log_msg")  # an action of only these does nothing


def build_tables(prog: Program, controls: ControlNodes, ns: dict[str, Any]) -> dict[str, Table]:
    """Tables of both pipelines, wired to the generated functions in ``ns``."""
    tables: dict[str, Table] = {}
    for pname in ("ingress", "egress"):
        for t in prog.pipelines[pname].get("tables", []):
            tid = controls.table_ids[t["name"]]
            tables[t["name"]] = table = _make_table(prog, controls, ns, pname, t)
            ns[f"T{tid}"] = table
            ns[f"D{tid}"] = table.exact_dict
    return tables


def _make_table(prog: Program, controls: ControlNodes, ns: dict[str, Any], pname: str,
                t: dict[str, Any]) -> Table:
    where = f"table '{t['name']}'"
    _codes, fields, masks = controls.key_codes(t)
    nexts = t.get("next_tables", {})
    hit_miss = "__HIT__" in nexts or "__MISS__" in nexts
    if hit_miss and set(nexts) != {"__HIT__", "__MISS__"}:
        raise ProgramError(f"{where}: next_tables mixes __HIT__/__MISS__ and actions")

    def node(name: str | None) -> Any:
        ref = controls.node(pname, name, where)
        # a node no generated code can reach is not generated (nor needed: only code
        # returning e.next uses an entry's next node, and it keeps its successors)
        return None if ref == "None" else ns.get(ref)

    ids = t.get("action_ids")
    names = t.get("actions", [])
    if ids is None:
        by_name = {a.name: a for a in prog.actions.values()}
        defs = [by_name[n] for n in names]
    else:
        defs = [prog.actions[i] for i in ids]
    actions: dict[str, TableAction] = {}
    for a in defs:
        info = ActionInfo(a.name, a.id, tuple(ActionParam(n, w) for n, w in a.params))
        if hit_miss:
            hit, miss = node(nexts["__HIT__"]), node(nexts["__MISS__"])
        else:
            if a.name not in nexts:
                raise ProgramError(f"{where}: next_tables has no entry for action '{a.name}'")
            hit = miss = node(nexts[a.name])
        fn = noop if all(p.get("op") in NOOP_PRIMITIVES for p in a.primitives) \
            else ns[f"A{a.id}"]
        actions[a.name] = TableAction(info, fn, hit, miss)
    empty_next = node(nexts["__MISS__"]) if hit_miss else node(t.get("base_default_next"))
    max_size = int(t.get("max_size", len(t.get("entries", [])) or 1024))
    table = Table(t["name"], t.get("match_type", "exact"), fields, masks, actions, max_size,
                  bool(t.get("with_counters")), empty_next)
    by_id = {a.id: a.name for a in defs}
    try:
        de = t.get("default_entry")
        if de is not None:
            aname = by_id.get(de.get("action_id"))
            if aname is None:
                raise ProgramError(f"{where}: default action id {de.get('action_id')} "
                                   "is not an action of the table")
            data = _action_data(actions[aname], de.get("action_data", []), where)
            table.init_default(aname, data, bool(de.get("action_const")),
                               bool(de.get("action_entry_const")))
        if t.get("entries"):
            table.max_size = max(table.max_size, len(t["entries"]))
            for entry in t["entries"]:
                _const_entry(table, by_id, entry, where)
            table.immutable = True
    except SwitchKeyError as e:
        raise ProgramError(f"{where}: {e}") from e
    return table


def _action_data(act: TableAction, data: list[Any], where: str) -> list[int]:
    if len(data) != len(act.info.params):
        raise ProgramError(f"{where}: action '{act.info.name}' needs {len(act.info.params)} "
                           f"argument(s), got {len(data)}")
    return [hexint(x, where) & ((1 << p.bitwidth) - 1)
            for x, p in zip(data, act.info.params, strict=True)]


def _const_entry(table: Table, by_id: dict[int, str], entry: dict[str, Any], where: str) -> None:
    matches: list[Match] = []
    keys = entry.get("match_key", [])
    if len(keys) != len(table.keys):
        raise ProgramError(f"{where}: const entry has {len(keys)} key field(s)")
    for kf, mk in zip(table.keys, keys, strict=True):
        full = (1 << kf.bitwidth) - 1
        mt = mk.get("match_type")
        if mt != kf.match_type:
            raise ProgramError(f"{where}: const entry match type '{mt}' for '{kf.name}'")
        if mt == "exact":
            matches.append(Exact(hexint(mk["key"], where) & full))
        elif mt == "valid":
            matches.append(Exact(1 if mk["key"] else 0))
        elif mt == "lpm":
            matches.append(Lpm(hexint(mk["key"], where) & full, int(mk["prefix_length"])))
        elif mt == "ternary":
            matches.append(Ternary(hexint(mk["key"], where) & full,
                                   hexint(mk["mask"], where) & full))
        else:
            matches.append(Range(hexint(mk["start"], where) & full,
                                 hexint(mk["end"], where) & full))
    ae = entry.get("action_entry", {})
    aname = by_id.get(ae.get("action_id"))
    if aname is None:
        raise ProgramError(f"{where}: const entry action id {ae.get('action_id')}")
    data = _action_data(table.actions[aname], ae.get("action_data", []), where)
    prio = None
    if table.needs_priority:
        prio = BM_MAX_PRIORITY - int(entry.get("priority", 0))
    table.add(matches, aname, data, prio)



def const_entries(prog: Program, t: dict[str, Any], fields: list[KeyField],
                  masks: list[int | None]
                  ) -> list[tuple[int | None, Any, int, tuple[int, ...]]] | None:
    """(mask, lookup key, action id, action data) of each const entry of exact or
    ternary table ``t``, in the order a lookup tries them (mask None: the key must
    equal it; else ``key & mask`` must); None when the table has none (or they are
    malformed: the table's own build reports that)."""
    match_type = t.get("match_type", "exact")
    if match_type not in ("exact", "ternary") or not t.get("entries"):
        return None
    ids = t.get("action_ids")
    if ids is None:
        by_name = {a.name: a for a in prog.actions.values()}
        defs = [by_name.get(n) for n in t.get("actions", [])]
    else:
        defs = [prog.actions.get(i) for i in ids]
    if any(a is None for a in defs):
        return None
    actions = {a.name: TableAction(ActionInfo(a.name, a.id, tuple(ActionParam(n, w)
                                                                for n, w in a.params)),
                                   _no_fn, None, None) for a in defs if a is not None}
    table = Table(t["name"], match_type, fields, masks, actions, len(t["entries"]), False,
                  None)
    by_id = {a.id: a.name for a in defs if a is not None}
    try:
        for entry in t["entries"]:
            _const_entry(table, by_id, entry, f"table '{t['name']}'")
    except (SwitchKeyError, ProgramError, KeyError, TypeError, ValueError):
        return None
    if match_type == "exact":
        return [(None, key, e.action.info.id, e.params) for key, e in table.exact_dict.items()]
    return [(mask, value, e.action.info.id, e.params)
            for _order, e, mask, value, _ranges in table.ternary_entries()]


def _no_fn(pk: Any, F: list[int], P: tuple[int, ...]) -> None:
    return None
