"""Step 4: a range-checked register read into a field that the block reads later
(``if i < n: F[a] = R[i]``) is stored through a local set in both branches, so
that steps 2 and 3, run again, read the local and drop the overwritten store."""

from __future__ import annotations

import ast
import copy

from .dead_stores import slots_read
from .facts import Keys, f_slot
from .nodes import deep_located, located


class StoreSplitter:
    """``if T: F[a] = R[i]`` (no else; the body only stores fields), a register read
    (range-checked: nearly always done) into a field that a later statement of the
    block reads, becomes ``if T: v = R[i] else: v = F[a]`` then ``F[a] = v``: the next
    forward pass reads ``v`` for F[a], and the store goes if F[a] is stored again first
    (the sum-tree walk reads two cells per level into the same two fields)."""

    def __init__(self, keys: Keys) -> None:
        self.keys = keys

    def block(self, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
        """The rewritten block, and whether anything changed."""
        later: set[int] | None = set()  # slots read after the statement (None: any)
        out: list[ast.stmt] = []
        changed = False
        for s in reversed(body):
            reads = slots_read(self.keys, s)
            if isinstance(s, ast.If):
                b, cb = self.block(s.body)
                o, co = self.block(s.orelse)
                if cb or co:
                    s = located(ast.If(s.test, b, o), s)
                    changed = True
                split = self.split(s, later)
                if split is not None:
                    out += reversed(split)
                    changed = True
                    s = None
            if s is not None:
                out.append(s)
            later = None if later is None or reads is None else later | reads
        out.reverse()
        return out, changed

    def register_read(self, e: ast.expr) -> bool:
        return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) \
            and e.value.id in self.keys.facts.registers

    def split(self, s: ast.If, later: set[int] | None) -> list[ast.stmt] | None:
        """The statements replacing ``s``, or None to keep it."""
        if s.orelse:
            return None
        stores: list[tuple[int, ast.Assign]] = []
        for x in s.body:
            slot = f_slot(x.targets[0]) if isinstance(x, ast.Assign) \
                and len(x.targets) == 1 else None
            i = self.keys.info(x.value) if slot is not None else None
            if slot is None or i is None or i.out or i.deps is None or i.fx \
                    or any(k == slot or k in i.fr for k, _x in stores):
                return None
            stores.append((slot, x))  # type: ignore[arg-type]
        moved = {k for k, x in stores if self.register_read(x.value)
                 and (later is None or k in later)}
        if not moved:
            return None
        body: list[ast.stmt] = []
        orelse: list[ast.stmt] = []
        after: list[ast.stmt] = []
        for k, x in stores:
            if k not in moved:
                body.append(x)
                continue
            name = f"v_{k}"  # one local per field, as F[k] is one slot
            load = ast.Subscript(ast.Name("F", ast.Load()), ast.Constant(k), ast.Load())
            body.append(deep_located(ast.Assign([ast.Name(name, ast.Store())], x.value), x))
            orelse.append(deep_located(ast.Assign([ast.Name(name, ast.Store())], load), x))
            after.append(deep_located(ast.Assign([copy.copy(x.targets[0])],
                                             ast.Name(name, ast.Load())), x))
        return [located(ast.If(s.test, body, orelse), s), *after]
