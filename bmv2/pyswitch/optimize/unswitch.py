"""Step 5: assignments in a row that choose on the same test (``x if a < b else
y``, as p4c writes a conditional for each value it sets) become one if/else
holding each chosen branch; step 2 then runs again on the function."""

from __future__ import annotations

import ast
import copy
from typing import Any

from .facts import Keys, hits, statement_writes
from .nodes import located

_NEGATED = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}

_FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
            ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}

# (key of a, comparison, key of b): ``a op b``; (key of x, None, 0): ``x`` (a local)
_Cond = tuple[int, type | None, int]

def _cond(keys: Keys, t: ast.expr) -> _Cond | None:
    """A test ``a op b`` or a local's truth, that can neither raise nor have an effect."""
    if isinstance(t, ast.Name):
        return keys.info(t).key, None, 0
    if isinstance(t, ast.Compare) and len(t.ops) == 1 and type(t.ops[0]) in _NEGATED:
        i = keys.info(t)
        if i.safe and i.deps is not None:
            return keys.info(t.left).key, type(t.ops[0]), keys.info(t.comparators[0]).key
    return None

def _decides(c: _Cond, t: _Cond) -> bool | None:
    """The value of test ``t`` where ``c`` holds (True, False), or None if unknown."""
    a, op, b = t
    if op is None or c[1] is None:
        return True if t == c else None
    for x, o, y in ((a, op, b), (b, _FLIPPED[op], a)):
        if x == c[0] and y == c[2]:
            if o is c[1]:
                return True
            if o is _NEGATED[c[1]]:
                return False
    return None

def _first_cond(keys: Keys, e: ast.expr) -> ast.Compare | None:
    """The test of an ``x if a op b else y`` that evaluating ``e`` always evaluates."""
    if isinstance(e, ast.IfExp):
        return e.test if _cond(keys, e.test) else _first_cond(keys, e.test)  # type: ignore
    if isinstance(e, ast.BinOp):
        return _first_cond(keys, e.left) or _first_cond(keys, e.right)
    if isinstance(e, ast.UnaryOp):
        return _first_cond(keys, e.operand)
    if isinstance(e, ast.Compare):
        return _first_cond(keys, e.left) or _first_cond(keys, e.comparators[0])
    if isinstance(e, ast.BoolOp):
        return _first_cond(keys, e.values[0])
    return None

class _Decide(ast.NodeTransformer):
    """Replaces each ``x if t else y`` whose test ``c`` decides by its branch."""

    def __init__(self, keys: Keys, c: _Cond, value: bool) -> None:
        self.keys, self.c, self.value = keys, c, value
        self.count = 0

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        t = _cond(self.keys, node.test)
        known = None if t is None else _decides(self.c, t)
        if known is None:
            return self.generic_visit(node)
        self.count += 1
        return self.visit(node.body if known == self.value else node.orelse)

def unswitch_block(keys: Keys, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """Assignments in a row choosing on the same test (``x = (y | (1 if a < b else 0)) << 1``
    then ``a = a if a < b else a - b``, as p4c writes a conditional on one comparison)
    become one ``if a < b:`` / ``else:`` holding each chosen branch. The test is pure and
    cannot raise; the row ends at the statement that changes its inputs."""
    out: list[ast.stmt] = []
    changed = False
    i = 0
    while i < len(body):
        s = body[i]
        if isinstance(s, ast.If):
            b, cb = unswitch_block(keys, s.body)
            o, co = unswitch_block(keys, s.orelse)
            changed = changed or cb or co
            out.append(located(ast.If(s.test, b, o), s) if cb or co else s)
            i += 1
            continue
        test = _first_cond(keys, s.value) \
            if isinstance(s, ast.Assign) and len(s.targets) == 1 else None
        if test is None:
            out.append(s)
            i += 1
            continue
        c = _cond(keys, test)
        assert c is not None
        deps = keys.info(test).deps
        assert deps is not None
        uses, last = 0, i
        for j in range(i, len(body)):
            x = body[j]
            if not (isinstance(x, ast.Assign) and len(x.targets) == 1):
                break
            d = _Decide(keys, c, True)
            d.visit(copy.deepcopy(x.value))
            if d.count:
                uses += d.count
                last = j
            if hits(*statement_writes(x, keys), deps):
                break
        if uses < 2:
            out.append(s)
            i += 1
            continue
        arms: list[list[ast.stmt]] = [[], []]
        for x in body[i:last + 1]:
            for arm, value in zip(arms, (True, False), strict=True):
                arm.append(located(ast.Assign(copy.deepcopy(x.targets),
                                          _Decide(keys, c, value).visit(
                                              copy.deepcopy(x.value))), x))
        out.append(located(ast.If(copy.deepcopy(test), *arms), s))
        changed = True
        i = last + 1
    return out, changed
