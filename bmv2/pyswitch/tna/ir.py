"""p4c's IR as JSON (`p4test --toJSON`): loading it and the few questions every
part of the TNA model asks of it (a node's kind, its name, its annotations, the
width of a type).

p4c writes a node in full the first time it meets it and as ``{"Node_ID": n}``
after that; ``load_ir`` puts the full node back in every such place, so the
tree can be walked as plain dicts. Vectors (``Vector<T>``, ``IndexedVector<T>``)
become Python lists.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ProgramError, UnsupportedConstruct

Node = dict[str, Any]


def read_ir(path: str | Path) -> Node:
    """The P4Program in a (possibly gzipped) p4test --toJSON file."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return load_ir(json.loads(raw))


def load_ir(doc: Any) -> Node:
    """The P4Program of a parsed --toJSON document, references resolved in place
    (so loading the same document twice is harmless)."""
    by_id: dict[int, Any] = {}

    def index(x: Any) -> None:
        if isinstance(x, dict):
            if "Node_Type" in x:
                by_id.setdefault(x["Node_ID"], x)
            for v in x.values():
                index(v)
        elif isinstance(x, list):
            for v in x:
                index(v)

    index(doc)
    # Resolve in place, memoising vectors so a shared vector stays one list.
    seen: dict[int, Any] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            if "Node_Type" not in x and set(x) == {"Node_ID"}:
                x = by_id.get(x["Node_ID"])
                if x is None:
                    raise ProgramError("IR node referenced but never given")
            if id(x) in seen:
                return seen[id(x)]
            kind = str(x.get("Node_Type", "")).split("<")[0]
            if kind in VECTORS and "vec" in x:
                out: list[Any] = []
                seen[id(x)] = out
                out.extend(walk(v) for v in x["vec"])
                return out
            seen[id(x)] = x
            for k, v in list(x.items()):
                x[k] = walk(v)
            return x
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    program = walk(doc)
    if not isinstance(program, dict) or program.get("Node_Type") != "P4Program":
        raise ProgramError("not a P4Program (p4test --toJSON output)")
    return program


VECTORS = {"Vector", "IndexedVector"}


def kind(node: Any) -> str:
    """The node's IR class (``Node_Type``), '' for a non-node."""
    return node.get("Node_Type", "") if isinstance(node, dict) else ""


def name_of(node: Node) -> str:
    """A declaration's name (IR ``ID``: a string or ``{"name": ...}``)."""
    n = node.get("name")
    if isinstance(n, dict):
        return n.get("name", "")
    return n or ""


def annotations(node: Node) -> list[Node]:
    """The node's annotations, [] when it has none."""
    ann = node.get("annotations")
    if isinstance(ann, dict):
        ann = ann.get("annotations", [])
    return ann or []


def annotation(node: Node, name: str) -> Node | None:
    """The annotation called ``name``, or None."""
    for a in annotations(node):
        if name_of(a) == name:
            return a
    return None


def annotation_strings(a: Node) -> list[str]:
    """The arguments of an annotation as strings (``@name("x")`` -> ["x"]), parsed
    (string literals) or, for one p4c left unparsed, its tokens less the commas."""
    out = [e["value"] for e in a.get("expr") or [] if kind(e) == "StringLiteral"]
    if not out and a.get("needsParsing"):
        out = [t["text"].strip('"') for t in a.get("body") or [] if t.get("text") != ","]
    return out


def control_plane_name(node: Node, fallback: str) -> str:
    """The name P4Info gives the node: its @name, without a leading dot."""
    a = annotation(node, "name")
    if a is not None:
        strings = annotation_strings(a)
        if strings:
            return strings[0].lstrip(".")
    return fallback


def member_name(expr: Node) -> str:
    """The member a Member expression selects (an IR ``ID``: a string or a dict)."""
    m = expr["member"]
    return m.get("name", "") if isinstance(m, dict) else m


def path_name(expr: Node) -> str:
    """The name a PathExpression refers to."""
    return name_of(expr["path"])


def walk(node: Any) -> Iterator[Node]:
    """Every node under ``node`` (itself included), depth first."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if id(x) in seen:
                continue
            seen.add(id(x))
            if "Node_Type" in x:
                yield x
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))


def unsupported(what: str, node: Node | None = None) -> UnsupportedConstruct:
    """The error for a construct the TNA model does not run."""
    where = f" ({kind(node)})" if node is not None else ""
    return UnsupportedConstruct(f"TNA model: {what}{where}")
