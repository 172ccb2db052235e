"""AST helpers every pass uses: source positions for new nodes, the statements of
a block, what a statement evaluates and stores, table-entry calls."""

from __future__ import annotations

import ast
from typing import Any


def terminates(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return False

SIMPLE = (ast.Assign, ast.AugAssign, ast.If, ast.Return, ast.Expr, ast.Pass, ast.Raise)

def simple(body: list[ast.stmt]) -> bool:
    """Only assignments, ifs, returns, expressions, raise and pass."""
    for s in body:
        if not isinstance(s, SIMPLE):
            return False
        if isinstance(s, ast.If) and not (simple(s.body) and simple(s.orelse)):
            return False
    return True

def all_statements(body: list[ast.stmt]) -> Any:
    """Every statement of a block, nested blocks included."""
    for s in body:
        yield s
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(s, name, None)
            if inner:
                yield from all_statements(inner)
        for h in getattr(s, "handlers", ()):
            yield from all_statements(h.body)

def entry_table(value: ast.expr) -> str | None:
    """T<k> when ``value`` is an entry of table k (``T<k>.default``, ``D<k>.get(...)``,
    ``T<k>.lookup(...)``)."""
    if isinstance(value, ast.Attribute) and value.attr == "default" \
            and isinstance(value.value, ast.Name) and value.value.id[:1] == "T":
        return value.value.id
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and isinstance(value.func.value, ast.Name):
        base, attr = value.func.value.id, value.func.attr
        if attr == "get" and base[:1] == "D":
            return "T" + base[1:]
        if attr == "lookup" and base[:1] == "T":
            return base
    return None

def stmt_exprs(s: ast.stmt) -> list[ast.expr]:
    """The expressions a statement evaluates itself (not those of nested blocks)."""
    if isinstance(s, ast.Assign | ast.AugAssign | ast.Expr):
        return [s.value]
    if isinstance(s, ast.If):
        return [s.test]
    if isinstance(s, ast.Return):
        return [] if s.value is None else [s.value]
    if isinstance(s, ast.Raise):
        return [] if s.exc is None else [s.exc]
    return []

def stmt_targets(s: ast.stmt) -> list[ast.expr]:
    if isinstance(s, ast.Assign):
        return list(s.targets)
    if isinstance(s, ast.AugAssign):
        return [s.target]
    return []

def located(new: Any, old: ast.AST) -> Any:
    """``new`` at the source position of ``old``."""
    return ast.copy_location(new, old)

NO_POSITION = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)

def deep_located(new: Any, old: ast.AST) -> Any:
    """``new`` and its new parts (nodes without a position) at the position of ``old``."""
    stack = [new]
    while stack:
        n = stack.pop()
        if "lineno" not in n.__dict__ and not isinstance(n, NO_POSITION):
            ast.copy_location(n, old)
            stack.extend(ast.iter_child_nodes(n))
    return new
