"""Small bmv2 JSON programs built in Python, for constructs p4c's output is checked on later.

``program()`` takes header types, headers and a parser, and wraps them in the
v1model frame of basic_fwd.json (standard_metadata, errors, an empty egress);
ingress and egress are one action call each, whose primitives the test gives
(ingress forwards to port 1 after them). The helpers spell JSON operands the way p4c-bm2-ss does.
"""

from __future__ import annotations

import copy
from typing import Any

from .util import program_json

J = dict[str, Any]


def field(header: str, name: str) -> J:
    """A field operand."""
    return {"type": "field", "value": [header, name]}


def hexstr(v: int) -> J:
    """A constant operand."""
    return {"type": "hexstr", "value": hex(v)}


def header(name: str) -> J:
    """A header operand."""
    return {"type": "header", "value": name}


def expr(op: str, left: J | None, right: J | Any, **more: J) -> J:
    """An expression operand."""
    return {"type": "expression", "value": {"op": op, "left": left, "right": right, **more}}


def prim(op: str, *params: J) -> J:
    """A primitive call."""
    return {"op": op, "parameters": list(params)}


def state(name: str, ops: list[J], key: list[J] | None = None,
          cases: list[tuple[int, str | None]] = (), default: str | None = None) -> J:
    """A parse state: operations, then ``select(key) { cases; default }``."""
    trans = [{"type": "hexstr", "value": hex(v), "mask": None, "next_state": nxt}
             for v, nxt in cases]
    trans.append({"type": "default", "value": None, "mask": None, "next_state": default})
    return {"name": name, "id": 0, "parser_ops": ops, "transition_key": key or [],
            "transitions": trans}


def program(types: dict[str, list[list[Any]]], headers: dict[str, str], states: list[J],
            order: list[str], ingress: list[J], egress: list[J] = (), **top: Any) -> J:
    """A v1model program; ``types`` maps a type name to its fields ([name, width])."""
    j = copy.deepcopy(program_json("basic_fwd"))
    base_types, base_headers = j["header_types"][:2], j["headers"][:2]
    j["header_types"] = base_types + [
        {"name": n, "id": 2 + i, "fields": f, **({"max_length": top.pop(f"max_{n}")}
                                                   if f"max_{n}" in top else {})}
        for i, (n, f) in enumerate(types.items())]
    j["headers"] = base_headers + [{"name": n, "id": 2 + i, "header_type": t, "metadata": False}
                                   for i, (n, t) in enumerate(headers.items())]
    for i, s in enumerate(states):
        s["id"] = i
    j["parsers"][0]["parse_states"] = states
    j["parsers"][0]["init_state"] = states[0]["name"]
    j["deparsers"][0]["order"] = order
    fwd = prim("assign", field("standard_metadata", "egress_spec"), hexstr(1))
    j["actions"] = [{"name": "act", "id": 0, "runtime_data": [], "primitives": [*ingress, fwd]},
                    {"name": "eg", "id": 1, "runtime_data": [], "primitives": list(egress)}]
    j["pipelines"][0].update(init_table="call", tables=[], conditionals=[], action_calls=[
        {"name": "call", "id": 0, "action_id": 0, "next_node": None}])
    j["pipelines"][1].update(init_table="ecall", tables=[], conditionals=[], action_calls=[
        {"name": "ecall", "id": 1, "action_id": 1, "next_node": None}])
    j.update(top)
    return j


def header_id(j: J, name: str) -> int:
    """The id of header instance ``name``."""
    return next(h["id"] for h in j["headers"] if h["name"] == name)
