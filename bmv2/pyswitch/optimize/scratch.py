"""Step 1: scratch fields become locals. A metadata field whose every read, in
every generated function, comes after a store of it in the same function (with
no call in between that could store it) never carries a value from one function
to another, and nothing else reads it: it is a local of each function. Also the
narrower width of a metadata field every store fills from a narrower value."""

from __future__ import annotations

import ast
from dataclasses import replace

from .facts import F_READ_ONLY, F_READERS, Facts, Keys, call_name, f_slot, is_f, is_int_const
from .nodes import all_statements


def _lower_bound(e: ast.AST, assigned: dict[str, list[ast.AST] | None], depth: int = 0) -> int:
    """A lower bound of a (PHV index) expression's value, 0 when unknown; a local's is
    the least over every value the function assigns it."""
    if depth > 8:
        return 0
    if is_int_const(e):
        return max(e.value, 0)  # type: ignore[attr-defined]
    if isinstance(e, ast.Name):
        vs = assigned.get(e.id)
        return 0 if not vs else min(_lower_bound(v, assigned, depth + 1) for v in vs)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _lower_bound(e.left, assigned, depth + 1) + _lower_bound(e.right, assigned,
                                                                         depth + 1)
    return 0

def _assignments(fn: ast.FunctionDef) -> dict[str, list[ast.AST] | None]:
    """Every value the function assigns each local (None: not only plain assignments)."""
    assigned: dict[str, list[ast.AST] | None] = {}
    for s in all_statements(fn.body):
        if isinstance(s, ast.Assign):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    vs = assigned.setdefault(t.id, [])
                    if vs is not None:
                        vs.append(s.value)
                elif isinstance(t, ast.Tuple):
                    assigned.update((x.id, None) for x in t.elts if isinstance(x, ast.Name))
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            assigned[s.target.id] = None
    return assigned

class _ReadCheck:
    """Slots a function reads without a store of them earlier in the same call."""

    def __init__(self, fn: ast.FunctionDef, keys: Keys, bad: set[int]) -> None:
        self.keys = keys
        self.meta_slots = keys.facts.meta_slots
        self.bad = bad
        self.all_bad = False
        self.stores: set[int] = set()
        self.assigned = _assignments(fn)

    def reads(self, e: ast.AST | None, stored: set[int]) -> None:
        if e is None:
            return
        i = self.keys.info(e)
        for n in i.fx:
            if isinstance(n, ast.Call):
                self._call(n, stored)
            elif isinstance(n, ast.Subscript):
                lo = n.slice.lower if isinstance(n.slice, ast.Slice) else n.slice
                if lo is None or _lower_bound(lo, self.assigned) < self.meta_slots:
                    self.all_bad = True
            else:
                self.all_bad = True
        if i.fr:
            if self.keys.field_reads is not None:
                self.keys.field_reads |= i.fr
            if not i.fr <= stored:
                self.bad.update(i.fr - stored)

    def _call(self, c: ast.Call, stored: set[int]) -> None:
        name = call_name(c)
        if name in F_READERS:
            for k in F_READERS[name]:
                if k >= len(c.args) or _lower_bound(c.args[k], self.assigned) \
                        < self.meta_slots:
                    self.all_bad = True
        # any other callee is a generated function, checked on its own; it may store
        # anything, so after it nothing counts as stored by this function (and reads in
        # the same expression are checked as if after it)
        if name not in F_READ_ONLY:
            stored.clear()

    def block(self, body: list[ast.stmt], stored: set[int]) -> set[int] | None:
        """Checks a block; the slots surely stored after it (None: it never falls through)."""
        for s in body:
            if isinstance(s, ast.Assign):
                self.reads(s.value, stored)
                for t in s.targets:
                    self._target(t, stored)
            elif isinstance(s, ast.AugAssign):
                self.reads(s.value, stored)
                slot = f_slot(s.target)
                if slot is not None:
                    if slot not in stored:
                        self.bad.add(slot)
                    self.stores.add(slot)
                    if self.keys.field_reads is not None:
                        self.keys.field_reads.add(slot)
                elif isinstance(s.target, ast.Subscript) and is_f(s.target.value):
                    self.all_bad = True  # F[non-constant] += ...: not generated
                else:
                    self._target(s.target, stored)
                    self.reads(s.target, stored)
            elif isinstance(s, ast.If):
                self.reads(s.test, stored)
                a = self.block(s.body, set(stored))
                b = self.block(s.orelse, set(stored))
                if a is None and b is None:
                    return None
                stored = a if b is None else b if a is None else a & b  # type: ignore[operator]
            elif isinstance(s, ast.Return):
                self.reads(s.value, stored)
                return None
            elif isinstance(s, ast.Raise):
                self.reads(s.exc, stored)
                return None
            elif isinstance(s, ast.Break | ast.Continue):
                return None
            elif isinstance(s, ast.Expr):
                self.reads(s.value, stored)
            elif isinstance(s, ast.While):
                self.reads(s.test, stored)
                self.block(s.body, set(stored))
                self.block(s.orelse, set(stored))
                stored = set()
            elif isinstance(s, ast.Try):
                self.block(s.body, set(stored))
                for h in s.handlers:
                    self.block(h.body, set())
                self.block(s.orelse, set())
                self.block(s.finalbody, set())
                stored = set()
            elif not isinstance(s, ast.Pass):
                self.all_bad = True
        return stored

    def _target(self, t: ast.AST, stored: set[int]) -> None:
        slot = f_slot(t)
        if slot is not None:
            stored.add(slot)
            self.stores.add(slot)
            return
        if isinstance(t, ast.Subscript) and is_f(t.value):  # a store at a computed index
            lo = t.slice.lower if isinstance(t.slice, ast.Slice) else t.slice
            if lo is None or _lower_bound(lo, self.assigned) < self.meta_slots:
                self.all_bad = True
        if isinstance(t, ast.Subscript | ast.Attribute):
            self.reads(t.value, stored)
            if isinstance(t, ast.Subscript):
                self.reads(t.slice, stored)
        elif isinstance(t, ast.Tuple):
            for x in t.elts:
                self._target(x, stored)
        elif not isinstance(t, ast.Name):
            self.all_bad = True

def local_slots(funcs: list[ast.FunctionDef], keys: Keys) -> set[int]:
    """Metadata slots that can be function locals everywhere (step 1)."""
    facts = keys.facts
    bad = set(facts.external)
    stores: set[int] = set()
    all_bad = False
    for fn in funcs:
        chk = _ReadCheck(fn, keys, bad)
        chk.block(fn.body, set())
        all_bad = all_bad or chk.all_bad
        stores |= chk.stores
    if all_bad:  # some access may reach any metadata field
        keys.field_reads = None
        return set()
    return {s for s in stores if s < facts.meta_slots and s not in bad}

def _store_width(e: ast.AST, facts: Facts) -> int | None:
    """A bound on the width of a value stored as generated (None: unknown)."""
    if is_int_const(e):
        v = e.value  # type: ignore[attr-defined]
        return v.bit_length() if v >= 0 else None
    slot = f_slot(e) if isinstance(e, ast.Subscript) and is_f(e.value) else None
    if slot is not None:
        return facts.widths.get(slot)
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
        return facts.registers.get(e.value.id)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitAnd):
        ws = [w for w in (_store_width(e.left, facts), _store_width(e.right, facts))
              if w is not None]
        return min(ws) if ws else None
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr | ast.BitXor):
        a, b = _store_width(e.left, facts), _store_width(e.right, facts)
        return None if a is None or b is None else max(a, b)
    return None

def narrow_metadata(funcs: list[ast.FunctionDef], facts: Facts) -> Facts:
    """Metadata fields (not the engine's, not in field lists) that every store in the
    generated code fills from narrower values (``meta.x = (bit<32>)hdr.y``) hold
    values of that narrower width (metadata starts as 0)."""
    bound: dict[int, int] = {}
    unknown: set[int] = set()
    generated = {fn.name for fn in funcs}
    for fn in funcs:
        assigned = _assignments(fn)
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and any(is_f(a) for a in n.args):
                name = call_name(n)
                if name not in generated and name not in F_READ_ONLY and not (
                        isinstance(n.func, ast.Attribute) and n.func.attr == "fn"):
                    return facts  # a helper that may store anywhere
                continue
            if isinstance(n, ast.AugAssign):
                targets, value = [n.target], None
            elif isinstance(n, ast.Assign):
                targets, value = n.targets, n.value
            else:
                continue
            for t in targets:
                if not (isinstance(t, ast.Subscript) and is_f(t.value)):
                    if isinstance(t, ast.Tuple | ast.List | ast.Starred):
                        return facts
                    continue
                slot = f_slot(t)
                if slot is None:  # a slice or a computed index: what it may reach is lost
                    sl = t.slice
                    lo = sl.lower if isinstance(sl, ast.Slice) else sl
                    hi = sl.upper if isinstance(sl, ast.Slice) else None
                    if lo is None or _lower_bound(lo, assigned) < facts.meta_slots:
                        if not (is_int_const(lo) and is_int_const(hi)):
                            return facts
                        unknown.update(range(lo.value, hi.value))  # type: ignore[union-attr]
                    continue
                w = None if value is None or len(targets) > 1 else _store_width(value, facts)
                if w is None:
                    unknown.add(slot)
                else:
                    bound[slot] = max(bound.get(slot, 0), w)
    widths = dict(facts.widths)
    for slot, w in bound.items():
        if slot < facts.meta_slots and slot not in unknown and slot not in facts.external \
                and w < widths.get(slot, 0):
            widths[slot] = w
    return replace(facts, widths=widths)
