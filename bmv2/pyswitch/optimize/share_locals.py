"""Step 6: locals whose lives do not overlap share one name (a call sets up and
clears every local of its frame; the egress function holds well over a hundred
temporaries, few of them at once)."""

from __future__ import annotations

import ast
from typing import Any


def _names(node: ast.AST) -> Any:
    """The names ``node`` loads, then those it stores (a statement's value is evaluated
    before its target is stored)."""
    loads, stores = [], []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (stores if isinstance(n.ctx, ast.Store) else loads).append(n.id)
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        loads.append(node.target.id)
    return loads, stores

def share_locals(fn: ast.FunctionDef) -> None:
    """Locals whose lives do not overlap take one name (a frame's locals are set up and
    cleared on every call: fewer is cheaper). The function has no loops, so every run
    visits its statements in source order: a local lives from its first statement to
    its last, and two whose spans are disjoint never hold a needed value at once.
    Locals a statement may read before any assignment (an ``UnboundLocalError``) keep
    their own names, so do the parameters."""
    params = {a.arg for a in fn.args.args}
    span: dict[str, list[int]] = {}
    unsafe: set[str] = set()
    pos = 0

    def visit(node: ast.AST, assigned: set[str]) -> None:
        nonlocal pos
        loads, stores = _names(node)
        for name in loads + stores:
            if name not in params:
                span.setdefault(name, [pos, pos])[1] = pos
        unsafe.update(n for n in loads if n not in assigned)
        assigned.update(stores)
        pos += 1

    def block(body: list[ast.stmt], assigned: set[str]) -> set[str] | None:
        for s in body:
            if isinstance(s, ast.If):
                visit(s.test, assigned)
                a, b = block(s.body, set(assigned)), block(s.orelse, set(assigned))
                if a is None or b is None:
                    if a is None and b is None:
                        return None
                    assigned = b if a is None else a
                else:
                    assigned = a & b
            else:
                visit(s, assigned)
                if isinstance(s, ast.Return | ast.Raise):
                    return None
        return assigned

    block(fn.body, set(params))
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    free: list[tuple[int, str]] = []  # (last statement, name) of names in use
    rename: dict[str, str] = {}
    for name, (first, last) in sorted(span.items(), key=lambda kv: (kv[1][0], kv[0])):
        if name not in stored or name in unsafe:
            continue
        free.sort()
        if free and free[0][0] < first:
            _end, to = free.pop(0)
            rename[name] = to
        else:
            to = name
        free.append((last, to))
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in rename:
            n.id = rename[n.id]
