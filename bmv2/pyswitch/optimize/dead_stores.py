"""Step 3: stores to locals never read (whose value can neither raise nor have an
effect) are dropped, and so are stores to fields stored again before anything
reads them; consecutive if/elif chains testing the same unchanged locals become
one chain, and consecutive ifs on the same unchanged test are merged."""

from __future__ import annotations

import ast

from .facts import EMPTY, Keys, Res, f_slot, hits
from .nodes import located, stmt_exprs, stmt_targets, terminates


def _target_reads(keys: Keys, t: ast.expr) -> frozenset[str]:
    if isinstance(t, ast.Subscript):
        return keys.info(t.value).names | keys.info(t.slice).names
    if isinstance(t, ast.Attribute):
        return keys.info(t.value).names
    if isinstance(t, ast.Tuple):
        out: frozenset[str] = EMPTY
        for x in t.elts:
            out = out | _target_reads(keys, x)
        return out
    return EMPTY

def dce(keys: Keys, body: list[ast.stmt], live: set[str]) -> tuple[list[ast.stmt], set[str]]:
    """Drops stores to locals that are not read later; the live set before the block."""
    out: list[ast.stmt] = []
    for s in reversed(body):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name):
            name = s.targets[0].id
            vi = keys.info(s.value)
            if name not in live and vi.safe:
                continue
            live = (live - {name}) | vi.names
        elif isinstance(s, ast.If):
            b, lb = dce(keys, s.body, set(live))
            o, lo = dce(keys, s.orelse, set(live))
            ti = keys.info(s.test)
            if not b and not o and ti.safe:
                continue
            s = located(ast.If(s.test, b or [located(ast.Pass(), s)], o), s)
            live = lb | lo | ti.names
        elif isinstance(s, ast.Return | ast.Raise):
            live = set()
            for e in stmt_exprs(s):
                live |= keys.info(e).names
        elif isinstance(s, ast.Pass):
            continue
        else:
            for e in stmt_exprs(s):
                live = live | keys.info(e).names
            for t in stmt_targets(s):
                live = live | _target_reads(keys, t)
                if isinstance(s, ast.AugAssign) and isinstance(t, ast.Name):
                    live = live | {t.id}
        out.append(s)
    out.reverse()
    return out, live

def dse(keys: Keys, body: list[ast.stmt], dead: set[int]) -> tuple[list[ast.stmt], set[int]]:
    """Drops stores to fields that are stored again before anything reads them (the
    function's end and every call taking F read them all); ``dead``: such fields after
    the block, returns those before it."""
    out: list[ast.stmt] = []
    for s in reversed(body):
        if isinstance(s, ast.Return | ast.Raise):
            dead = set()
        elif isinstance(s, ast.If):
            b, db = dse(keys, s.body, set(dead))
            o, do = dse(keys, s.orelse, set(dead))
            dead = db & do
            s = located(ast.If(s.test, b or [located(ast.Pass(), s)], o), s)
        else:
            slot = f_slot(s.targets[0]) if isinstance(s, ast.Assign) \
                and len(s.targets) == 1 else None
            if slot is not None:
                if slot in dead and keys.info(s.value).safe:
                    continue
                dead.add(slot)
            elif isinstance(s, ast.AugAssign):
                aug = f_slot(s.target)
                if aug is not None:
                    dead.discard(aug)
        for e in stmt_exprs(s) + [x for t in stmt_targets(s) if isinstance(t, ast.Subscript)
                                   for x in (t.value, t.slice)]:
            i = keys.info(e)
            if i.fx:
                dead = set()
            elif i.fr:
                dead -= i.fr
        out.append(s)
    out.reverse()
    return out, dead

def slots_read(keys: Keys, s: ast.stmt) -> set[int] | None:
    """PHV slots a statement (nested blocks included) may read; None: any."""
    out: set[int] = set()
    for e in stmt_exprs(s) + [x for t in stmt_targets(s) if isinstance(t, ast.Subscript)
                               for x in (t.value, t.slice)]:
        i = keys.info(e)
        if i.fx:
            return None
        out |= i.fr
    if isinstance(s, ast.If):
        for x in s.body + s.orelse:
            r = slots_read(keys, x)
            if r is None:
                return None
            out |= r
    return out

def merge_ifs(keys: Keys, body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in body:
        if isinstance(s, ast.If):
            s = located(ast.If(s.test, merge_ifs(keys, s.body), merge_ifs(keys, s.orelse)), s)
            prev = out[-1] if out else None
            if isinstance(prev, ast.If) and not prev.orelse and not s.orelse \
                    and keys.info(prev.test).key == keys.info(s.test).key \
                    and not terminates(prev.body):
                deps = keys.info(s.test).deps
                w: set[Res] = set()
                barrier = False
                for x in prev.body:
                    xw, xb = keys.writes(x)
                    w |= xw
                    barrier = barrier or xb
                if deps is not None and not hits(w, barrier, deps):
                    prev.body = [x for x in prev.body if not isinstance(x, ast.Pass)] + s.body
                    continue
        out.append(s)
    return out

def _chain(s: ast.If) -> tuple[list[ast.expr], list[list[ast.stmt]], list[ast.stmt]]:
    """An if/elif/.../else chain: its tests, their bodies, the final else."""
    tests, bodies = [s.test], [s.body]
    rest = s.orelse
    while len(rest) == 1 and isinstance(rest[0], ast.If):
        tests.append(rest[0].test)
        bodies.append(rest[0].body)
        rest = rest[0].orelse
    return tests, bodies, rest

def merge_chains(keys: Keys, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """Consecutive if/elif chains testing the same locals the same way become one chain
    (``if k == 1: A1 elif k == 2: B1`` then ``if k == 1: A2 elif k == 2: B2`` is
    ``if k == 1: A1; A2 elif k == 2: B1; B2``): no body may assign those locals, so each
    chain takes the same branch (or the first one returns). Then values flow from one
    table's action into the next one's."""
    out: list[ast.stmt] = []
    changed = False
    for s in body:
        if isinstance(s, ast.If):
            b, c1 = merge_chains(keys, s.body)
            o, c2 = merge_chains(keys, s.orelse)
            changed = changed or c1 or c2
            s = located(ast.If(s.test, b, o), s)
            prev = out[-1] if out else None
            if isinstance(prev, ast.If):
                merged = _merge_two(keys, prev, s)
                if merged is not None:
                    out[-1] = merged
                    changed = True
                    continue
        out.append(s)
    return out, changed

def _merge_two(keys: Keys, a: ast.If, b: ast.If) -> ast.If | None:
    ta, ba, ea = _chain(a)
    tb, bb, eb = _chain(b)
    if [keys.info(t).key for t in ta] != [keys.info(t).key for t in tb]:
        return None
    names: set[str] = set()
    for t in ta:
        deps = keys.info(t).deps
        if deps is None or any(d[0] != "L" for d in deps):
            return None
        names |= {d[1] for d in deps}
    for block in [*ba, ea, *bb, eb]:
        for x in block:
            w, _barrier = keys.writes(x)
            if any(r[0] == "L" and r[1] in names for r in w):
                return None
    merged = [x + y for x, y in zip(ba, bb, strict=True)]
    rest: list[ast.stmt] = ea + eb
    for test, block in reversed(list(zip(ta, merged, strict=True))):
        rest = [located(ast.If(test, [x for x in block if not isinstance(x, ast.Pass)]
                           or [located(ast.Pass(), a)], rest), a)]
    return rest[0]  # type: ignore[return-value]
