"""Step 2: one forward pass per function. Constants and copies are propagated,
masks dropped where the value's width is known to fit, range checks the width
settles folded, constants folded, and an expression already held by a local
whose inputs have not changed is read from it; an expression evaluated again
before its inputs change is computed once into a temporary just before the
statement that first needs it (only unconditional occurrences, never past their
own statement). A call to a table's entry forgets only what its actions write."""

from __future__ import annotations

import ast
import copy

from .facts import F_ANY, ZERO_BITS, ZERO_MASK, Keys, Res, call_name, f_slot, hits, is_int_const
from .forward_state import (
    COMPARE,
    State,
    fold,
    guarded_sub,
    is_b2d,
    is_bool,
    pre_simplify,
    same_expr,
    scratch_local,
    scratch_slot,
)
from .nodes import all_statements, deep_located, located, stmt_exprs, stmt_targets


class ForwardPass:
    """Steps 2 and 3 on one function."""

    def __init__(self, fn: ast.FunctionDef, keys: Keys, slots: set[int]) -> None:
        self.fn = fn
        self.keys = keys
        self.facts = keys.facts
        self.slots = slots    # scratch fields that are locals m_<slot>
        self.cur: tuple[list[ast.stmt], int] = ([], 0)  # the statement being rewritten
        self.assigned = {a.arg for a in fn.args.args}
        for s in all_statements(fn.body):
            for t in stmt_targets(s):
                if isinstance(t, ast.Name):
                    self.assigned.add(t.id)
        self.ntemps = 0
        self.prefix: list[ast.stmt] = []
        self.no_cse = False

    def again(self, key: int, deps: frozenset[Res], after: bool = False) -> bool:
        """Is the expression ``key`` (reading ``deps``) evaluated again after its
        occurrence in the current statement (``after``: after the statement), before its
        inputs change?"""
        body, i = self.cur
        counts = self.keys.counts
        writes = self.keys.writes
        if not after:
            if counts(body[i]).get(key, 0) > 1:
                return True
            if hits(*writes(body[i]), deps):
                return False
        for j in range(i + 1, len(body)):
            if key in counts(body[j]):
                return True
            if hits(*writes(body[j]), deps):
                return False
        return False

    # ---- widths --------------------------------------------------------------------

    def width(self, e: ast.AST, st: State) -> int | None:
        """w with 0 <= value < 2**w (an int, not a bool), when known."""
        if isinstance(e, ast.Constant):
            v = e.value
            return v.bit_length() if type(v) is int and v >= 0 else None
        if isinstance(e, ast.Name):
            return st.widths.get(e.id)
        if isinstance(e, ast.Subscript):
            slot = f_slot(e)
            if slot is not None:
                return self.facts.widths.get(slot)
            if isinstance(e.value, ast.Name):
                return self.facts.registers.get(e.value.id)
            return None
        if isinstance(e, ast.IfExp):
            a, b = self.width(e.body, st), self.width(e.orelse, st)
            g = guarded_sub(e)
            if g is not None and self._is_sub_of(e.body if g[0] else e.orelse, g[1], g[2]) \
                    and self.width(g[2], st) is not None:  # 0 <= a - b <= a
                if g[0]:
                    a = self.width(g[1], st)
                else:
                    b = self.width(g[1], st)
            return None if a is None or b is None else max(a, b)
        if isinstance(e, ast.Call):
            name = call_name(e)
            args = e.args
            if name == "_getrandbits" and len(args) == 1 and is_int_const(args[0]):
                return args[0].value  # type: ignore[attr-defined]
            if name == "_chk" and len(args) == 2 and is_int_const(args[1]):
                return max(args[1].value - 1, 0).bit_length()  # type: ignore[attr-defined]
            if name == "_shlm" and len(args) == 3 and is_int_const(args[2]) \
                    and args[2].value >= 0:  # type: ignore[attr-defined]
                return args[2].value.bit_length()  # type: ignore[attr-defined]
            return None
        if not isinstance(e, ast.BinOp):
            return None
        op = e.op
        a, b = self.width(e.left, st), self.width(e.right, st)
        if isinstance(op, ast.BitAnd):
            known = [x for x in (a, b) if x is not None]
            return min(known) if known else None
        if a is None:
            return None
        if isinstance(op, ast.RShift):
            if is_int_const(e.right) and e.right.value >= 0:  # type: ignore[attr-defined]
                return max(a - e.right.value, 0)  # type: ignore[attr-defined]
            return None
        if isinstance(op, ast.LShift):
            if is_int_const(e.right) and 0 <= e.right.value <= 1 << 16:  # type: ignore
                return a + e.right.value  # type: ignore[attr-defined]
            return None
        if b is None:
            return None
        if isinstance(op, ast.BitOr | ast.BitXor):
            return max(a, b)
        if isinstance(op, ast.Add):
            return max(a, b) + 1
        if isinstance(op, ast.Mult):
            return a + b
        return None

    # ---- expressions -----------------------------------------------------------------

    def simplify(self, e: ast.expr, st: State) -> ast.expr:
        """Local algebra on a node whose children are already rewritten."""
        if isinstance(e, ast.BinOp):
            left, right, op = e.left, e.right, e.op
            if is_int_const(left) and is_int_const(right):
                v = fold(op, left.value, right.value)  # type: ignore[attr-defined]
                if v is not None:
                    return ast.Constant(v)
            if isinstance(op, ast.Add | ast.BitOr | ast.BitXor | ast.LShift | ast.RShift):
                # x + 0, x << 0, 0 | x ...: x, if x is an int (not a bool)
                for x, z in ((left, right), (right, left)):
                    if is_int_const(z) and z.value == 0 \
                            and (z is right or not isinstance(op, ast.LShift | ast.RShift)) \
                            and self.width(x, st) is not None:  # type: ignore[attr-defined]
                        return x
            if isinstance(op, ast.BitAnd):
                for x, m in ((left, right), (right, left)):
                    if is_int_const(m):
                        mv = m.value  # type: ignore[attr-defined]
                        if mv >= 0 and mv & (mv + 1) == 0:
                            w = self.width(x, st)
                            if w is not None and w <= mv.bit_length():
                                return x
            if isinstance(op, ast.BitXor) and is_b2d(left) and is_int_const(right) \
                    and right.value == 1:  # type: ignore[attr-defined]
                return ast.IfExp(left.test, ast.Constant(0),  # type: ignore[attr-defined]
                                 ast.Constant(1))
            return e
        if isinstance(e, ast.Compare) and len(e.ops) == 2 and is_int_const(e.left) \
                and e.left.value == 0 and isinstance(e.ops[0], ast.LtE) \
                and isinstance(e.ops[1], ast.Lt):  # 0 <= x < C
            x, c = e.comparators
            w = self.width(x, st)
            if w is not None and is_int_const(c) and 1 << w <= c.value:  # type: ignore
                return located(ast.Constant(True), e)
            if w is not None:  # an int known to be >= 0: only the upper bound can fail
                return located(ast.Compare(x, [ast.Lt()], [c]), e)
            return e
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            flag = self.flag_test(e, st)
            if flag is not None:
                return self.simplify(located(flag, e), st)
            left, right, op = e.left, e.comparators[0], e.ops[0]
            if is_b2d(right) and is_int_const(left):
                left, right = right, left
            if is_b2d(left) and is_int_const(right) and isinstance(op, ast.Eq | ast.NotEq):
                rv = right.value  # type: ignore[attr-defined]
                test = left.test  # type: ignore[attr-defined]
                if rv not in (0, 1):
                    return ast.Constant(isinstance(op, ast.NotEq))
                if (rv == 1) == isinstance(op, ast.Eq):
                    return test
                return self.simplify(ast.UnaryOp(ast.Not(), test), st)
            if is_int_const(right) and isinstance(op, ast.Lt):
                w = self.width(left, st)
                if w is not None and 1 << w <= right.value:  # type: ignore[attr-defined]
                    return located(ast.Constant(True), e)
            if is_int_const(left) and left.value == 0 and isinstance(op, ast.LtE) \
                    and self.width(right, st) is not None:  # type: ignore[attr-defined]
                return located(ast.Constant(True), e)
            if is_int_const(left) and is_int_const(right) and type(op) in COMPARE:
                return ast.Constant(COMPARE[type(op)](left.value,  # type: ignore
                                                       right.value))  # type: ignore
            return e
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            if isinstance(e.operand, ast.Constant):
                return ast.Constant(not e.operand.value)
            return e
        if isinstance(e, ast.IfExp) and isinstance(e.test, ast.Constant):
            return e.body if e.test.value else e.orelse
        if isinstance(e, ast.IfExp) and isinstance(e.test, ast.UnaryOp) \
                and isinstance(e.test.op, ast.Not):  # x if not c else y: y if c else x
            return self.simplify(located(ast.IfExp(e.test.operand, e.orelse, e.body), e), st)
        if isinstance(e, ast.IfExp):
            return self._unmask_guarded_sub(e, st)
        if isinstance(e, ast.BoolOp) and isinstance(e.values[0], ast.Constant) \
                and type(e.values[0].value) is bool:
            first, rest = e.values[0].value, e.values[1:]
            if isinstance(e.op, ast.And) != first:
                return e.values[0]  # False and ... / True or ...
            if len(rest) == 1:
                return rest[0] if is_bool(rest[0]) else e
            return ast.BoolOp(e.op, rest)
        return e

    def _is_sub_of(self, e: ast.AST, a: ast.expr, b: ast.expr) -> bool:
        """``e`` is ``a - b``."""
        key = self.keys.info
        return isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) \
            and key(e.left).key == key(a).key and key(e.right).key == key(b).key

    def _unmask_guarded_sub(self, e: ast.IfExp, st: State) -> ast.expr:
        """``a if a < b else (a - b) & M`` -> ``a if a < b else a - b`` where ``a`` fits
        in M and ``b`` is an int >= 0: in that branch 0 <= a - b <= a."""
        g = guarded_sub(e)
        if g is None:
            return e
        in_body, a, b = g
        arm = e.body if in_body else e.orelse
        if not (isinstance(arm, ast.BinOp) and isinstance(arm.op, ast.BitAnd)
                and is_int_const(arm.right) and self._is_sub_of(arm.left, a, b)):
            return e
        m = arm.right.value  # type: ignore[attr-defined]
        wa, wb = self.width(a, st), self.width(b, st)
        if m < 0 or m & (m + 1) or wa is None or wa > m.bit_length() or wb is None:
            return e
        if in_body:
            return located(ast.IfExp(e.test, arm.left, e.orelse), e)
        return located(ast.IfExp(e.test, e.body, arm.left), e)

    def rewrite(self, e: ast.expr, st: State, uncond: bool, hoist: bool) -> ast.expr:
        """``e`` with known values substituted, simplified, and repeated parts shared."""
        t = type(e)
        if t is ast.Name:
            if isinstance(e.ctx, ast.Load):  # type: ignore[attr-defined]
                v = st.copies.get(e.id)  # type: ignore[attr-defined]
                if v is not None:
                    return copy.copy(v)
                if e.id not in self.assigned \
                        and e.id in self.facts.constants:  # type: ignore[attr-defined]
                    return located(ast.Constant(self.facts.constants[e.id]), e)  # type: ignore
            return e
        if t is ast.Constant:
            return e
        if t is ast.Subscript and isinstance(e.ctx, ast.Load):  # type: ignore[attr-defined]
            slot = f_slot(e)
            if slot is not None:
                if slot in self.slots:
                    return self.rewrite(located(ast.Name(scratch_local(slot), ast.Load()), e), st,
                                        uncond, hoist)
                c = st.fconst.get(slot)
                if c is not None:
                    return located(ast.Constant(c.value), e)
        pre = pre_simplify(e)
        if pre is not e:
            e = deep_located(pre, e)
        info = self.keys.info(e)
        cse = info.worth and not self.no_cse
        if cse:
            hit = st.avail.get(info.key)
            if hit is not None:
                return located(ast.Name(hit[0], ast.Load()), e)
            if uncond and hoist and info.deps is not None and self.again(info.key, info.deps):
                value = deep_located(self.simplify(self._children(e, st, uncond, False), st), e)
                if isinstance(value, ast.Name | ast.Constant):
                    return value
                vi = self.keys.info(value)
                hit = st.avail.get(vi.key) if vi.worth else None
                if hit is not None:
                    st.avail[info.key] = (hit[0], info.deps)
                    return located(ast.Name(hit[0], ast.Load()), e)
                name = f"t_{self.ntemps}"
                self.ntemps += 1
                self.assigned.add(name)
                target = located(ast.Name(name, ast.Store()), e)
                self.prefix.append(located(ast.Assign([target], value), e))
                w = self.width(value, st)
                if w is not None:
                    st.widths[name] = w
                st.avail[info.key] = (name, info.deps)
                if vi.worth and vi.deps is not None:
                    st.avail.setdefault(vi.key, (name, vi.deps))
                return located(ast.Name(name, ast.Load()), e)
        out = self.simplify(self._children(e, st, uncond, hoist), st)
        if out is not e:
            deep_located(out, e)
        if cse and out is not e and not isinstance(out, ast.Name | ast.Constant):
            oi = self.keys.info(out)
            if oi.worth:
                hit = st.avail.get(oi.key)
                if hit is not None:
                    return located(ast.Name(hit[0], ast.Load()), e)
        return out

    def _children(self, e: ast.expr, st: State, uncond: bool, hoist: bool) -> ast.expr:
        r = self.rewrite
        if isinstance(e, ast.BinOp):
            return located(ast.BinOp(r(e.left, st, uncond, hoist), e.op,
                                 r(e.right, st, uncond, hoist)), e)
        if isinstance(e, ast.UnaryOp):
            return located(ast.UnaryOp(e.op, r(e.operand, st, uncond, hoist)), e)
        if isinstance(e, ast.BoolOp):
            vals = [r(e.values[0], st, uncond, hoist)]
            vals += [r(v, st, False, hoist) for v in e.values[1:]]
            return located(ast.BoolOp(e.op, vals), e)
        if isinstance(e, ast.Compare):
            left = r(e.left, st, uncond, hoist)
            comps = [r(c, st, uncond and i == 0, hoist) for i, c in enumerate(e.comparators)]
            return located(ast.Compare(left, e.ops, comps), e)
        if isinstance(e, ast.IfExp):
            test = r(e.test, st, uncond, hoist)
            if isinstance(test, ast.Constant):
                return r(e.body if test.value else e.orelse, st, uncond, hoist)
            return located(ast.IfExp(test, r(e.body, st, False, hoist),
                                 r(e.orelse, st, False, hoist)), e)
        if isinstance(e, ast.Call):
            args = [r(a, st, uncond, hoist) for a in e.args]
            return located(ast.Call(e.func, args, e.keywords), e)
        if isinstance(e, ast.Subscript):
            value = r(e.value, st, uncond, hoist)
            sl = e.slice
            if isinstance(sl, ast.Slice):
                sl = located(ast.Slice(*(None if x is None else r(x, st, uncond, hoist)
                                     for x in (sl.lower, sl.upper, sl.step))), sl)
            else:
                sl = r(sl, st, uncond, hoist)
            if isinstance(e.ctx, ast.Load) and isinstance(value, ast.Tuple) \
                    and is_int_const(sl) \
                    and 0 <= sl.value < len(value.elts):  # type: ignore[attr-defined]
                return copy.copy(value.elts[sl.value])  # type: ignore[attr-defined]
            return located(ast.Subscript(value, sl, e.ctx), e)
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "pk" \
                    and isinstance(e.ctx, ast.Load) and e.attr in st.attrs:
                return copy.copy(st.attrs[e.attr])
            return located(ast.Attribute(r(e.value, st, uncond, hoist), e.attr, e.ctx), e)
        if isinstance(e, ast.Tuple):
            return located(ast.Tuple([r(x, st, uncond, hoist) for x in e.elts], e.ctx), e)
        if isinstance(e, ast.List):
            return located(ast.List([r(x, st, uncond, hoist) for x in e.elts], e.ctx), e)
        return e

    # ---- statements -------------------------------------------------------------------

    def store(self, t: ast.expr, st: State) -> None:
        if isinstance(t, ast.Name):
            st.kill(("L", t.id))
            slot = scratch_slot(t.id)
            if slot is not None:  # a scratch field: F[slot] in the original code
                st.kill(("F", slot))
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            if t.value.id == "F":
                slot = f_slot(t)
                sl = t.slice
                if slot is not None:
                    st.kill(("F", slot))
                elif isinstance(sl, ast.Slice) and sl.step is None and sl.lower is not None \
                        and sl.upper is not None and is_int_const(sl.lower) \
                        and is_int_const(sl.upper) \
                        and sl.upper.value - sl.lower.value <= 64:  # type: ignore
                    for k in range(sl.lower.value, sl.upper.value):  # type: ignore
                        st.kill(("F", k))
                else:
                    st.kill(F_ANY)
            else:
                st.kill(("G", t.value.id))
        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                and t.value.id == "pk":
            st.kill(("pk", t.attr))
        elif isinstance(t, ast.Tuple):
            for x in t.elts:
                self.store(x, st)
        else:
            st.barrier()

    def target(self, t: ast.expr, st: State) -> ast.expr:
        slot = f_slot(t)
        if slot is not None and slot in self.slots:
            return located(ast.Name(scratch_local(slot), ast.Store()), t)
        if isinstance(t, ast.Subscript):
            sl = t.slice
            if isinstance(sl, ast.Slice):
                sl = located(ast.Slice(*(None if x is None else self.rewrite(x, st, True, True)
                                     for x in (sl.lower, sl.upper, sl.step))), sl)
            else:
                sl = self.rewrite(sl, st, True, True)
            return located(ast.Subscript(self.rewrite(t.value, st, True, True), sl, t.ctx), t)
        if isinstance(t, ast.Attribute):
            return located(ast.Attribute(self.rewrite(t.value, st, True, True), t.attr, t.ctx), t)
        return t

    def effects(self, e: ast.AST, st: State) -> None:
        if self.keys.info(e).out:
            st.barrier()

    def block(self, body: list[ast.stmt], st: State) -> tuple[list[ast.stmt], State | None]:
        """The rewritten statements and the state after them (None: never falls through)."""
        out: list[ast.stmt] = []
        for i, s in enumerate(body):
            self.cur = (body, i)
            self.prefix = []
            # a statement that calls out (an action, a table's function) may change
            # anything between its subexpressions: nothing is shared inside it
            self.no_cse = any(self.keys.info(e).out for e in stmt_exprs(s)) \
                or any(self.keys.info(t).out for t in stmt_targets(s))
            new = self.stmt(s, st)
            self.no_cse = False
            out += self.prefix
            if new is None:
                continue
            stmts, after = new
            out += stmts
            if after is None:
                return out, None
            st = after
        return out, st

    def stmt(self, s: ast.stmt, st: State) -> tuple[list[ast.stmt], State | None] | None:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            value = self.rewrite(s.value, st, True, True)
            tgt = self.target(s.targets[0], st)
            self.effects(value, st)
            self.effects(tgt, st)
            w = self.width(value, st)
            if isinstance(tgt, ast.Name):
                if isinstance(value, ast.Name) and value.id == tgt.id:
                    return None  # x = x
                self.store(tgt, st)
                self._assigned_local(tgt.id, s.value, value, st, w)
                return [located(ast.Assign([tgt], value), s)], st
            slot = f_slot(tgt)
            if slot is not None:
                return self._field_store(s, slot, tgt, value, st, w)
            self.store(tgt, st)
            if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) \
                    and tgt.value.id == "pk" and isinstance(value, ast.Constant):
                st.attrs[tgt.attr] = value
            return [located(ast.Assign([tgt], value), s)], st
        if isinstance(s, ast.AugAssign):
            value = self.rewrite(s.value, st, True, True)
            tgt = self.target(s.target, st)
            self.effects(value, st)
            self.effects(tgt, st)
            if isinstance(tgt, ast.Name) and tgt.id in st.copies:
                new: ast.stmt = deep_located(ast.Assign(
                    [ast.Name(tgt.id, ast.Store())],
                    self.simplify(ast.BinOp(copy.copy(st.copies[tgt.id]), s.op, value), st)),
                    s)
            else:
                new = located(ast.AugAssign(tgt, s.op, value), s)
            self.store(tgt, st)
            return [new], st
        if isinstance(s, ast.If):
            test = self.rewrite(s.test, st, True, True)
            self.effects(test, st)
            prefix = self.prefix
            if isinstance(test, ast.Constant):
                stmts, after = self.block(s.body if test.value else s.orelse, st)
                self.prefix = prefix
                return stmts, after
            body, a = self.block(s.body, st.clone())
            orelse, b = self.block(s.orelse, st.clone())
            self.prefix = prefix
            node = located(ast.If(test, body or [located(ast.Pass(), s)], orelse), s)
            if a is None or b is None:
                return [node], (a if b is None else b)
            a.meet(b)
            return [node], a
        if isinstance(s, ast.Return):
            if s.value is not None:
                return [located(ast.Return(self.rewrite(s.value, st, True, True)), s)], None
            return [s], None
        if isinstance(s, ast.Expr):
            value = self.rewrite(s.value, st, True, True)
            called = self.keys.entry_call(value)
            if called is not None:  # what any action of the table may write
                writes, barrier = called
                if barrier:
                    st.barrier()
                for r in writes:
                    st.kill(r)
            else:
                self.effects(value, st)
            return [located(ast.Expr(value), s)], st
        if isinstance(s, ast.Pass):
            return None
        if isinstance(s, ast.Raise):
            return [s], None
        for t in stmt_targets(s):  # anything else (not generated): forget what it touches
            self.store(t, st)
        st.barrier()
        return [s], st

    def _field_store(self, s: ast.stmt, slot: int, tgt: ast.expr, value: ast.expr, st: State,
                     w: int | None) -> tuple[list[ast.stmt], State] | None:
        """``F[slot] = value``: later reads of the field read the value's local."""
        load = self.keys.field_load(slot)
        hit = st.avail.get(load.key)
        if isinstance(value, ast.Name) and hit is not None and hit[0] == value.id:
            return None  # the field holds that value already
        c = st.fconst.get(slot)
        if isinstance(value, ast.Constant) and c is not None and same_expr(c, value):
            return None
        if not isinstance(value, ast.Name | ast.Constant) \
                and self.again(load.key, frozenset({("F", slot)}), after=True):
            name = f"t_{self.ntemps}"
            self.ntemps += 1
            self.assigned.add(name)
            target = located(ast.Name(name, ast.Store()), s)
            self.prefix.append(located(ast.Assign([target], value), s))
            if w is not None:
                st.widths[name] = w
            self.note_bits(name, value, st)
            value = located(ast.Name(name, ast.Load()), s)
        self.store(tgt, st)
        if isinstance(value, ast.Name):
            st.avail[load.key] = (value.id, frozenset({("F", slot), ("L", value.id)}))
        elif isinstance(value, ast.Constant) and type(value.value) is int:
            st.fconst[slot] = value
        return [located(ast.Assign([tgt], value), s)], st

    def zeros(self, e: ast.AST, st: State) -> int:
        """Bits (of the low ZERO_BITS) known to be 0 in the int value of ``e``."""
        if isinstance(e, ast.Constant):
            return ZERO_MASK & ~e.value if type(e.value) is int and e.value >= 0 else 0
        if isinstance(e, ast.Name):
            return st.zeros.get(e.id, 0)
        if isinstance(e, ast.IfExp):
            return self.zeros(e.body, st) & self.zeros(e.orelse, st)
        if not isinstance(e, ast.BinOp):
            return 0
        if isinstance(e.op, ast.LShift) and is_int_const(e.right) \
                and 0 <= e.right.value < ZERO_BITS:  # type: ignore[attr-defined]
            n = e.right.value  # type: ignore[attr-defined]
            return ZERO_MASK & ((self.zeros(e.left, st) << n) | ((1 << n) - 1))
        if isinstance(e.op, ast.BitOr):
            return self.zeros(e.left, st) & self.zeros(e.right, st)
        if isinstance(e.op, ast.BitAnd):
            return self.zeros(e.left, st) | self.zeros(e.right, st)
        return 0

    def note_bits(self, name: str, value: ast.expr, st: State) -> None:
        """What local ``name``, just assigned ``value``, is known to hold bitwise: its
        zero bits, and a flag bit when the value is ``x | (K if C else 0)`` with bit K
        of x known to be 0 (the walk's cell: its bit 1 says which way a step went)."""
        zeros = self.zeros(value, st)
        if zeros:
            st.zeros[name] = zeros
        parts = [value]
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
            parts = [value.right, value.left]
        for i, part in enumerate(parts):
            if not (isinstance(part, ast.IfExp) and is_bool(part.test)
                    and is_int_const(part.body) and is_int_const(part.orelse)
                    and part.orelse.value == 0):  # type: ignore[attr-defined]
                continue
            k = part.body.value  # type: ignore[attr-defined]
            rest = parts[1 - i] if len(parts) == 2 else ast.Constant(0)
            deps = self.keys.info(part.test).deps
            if k > 0 and k & (k - 1) == 0 and self.zeros(rest, st) & k \
                    and deps is not None and ("L", name) not in deps:
                st.flags[name] = (k, part.test, deps)
                return

    def flag_test(self, e: ast.Compare, st: State) -> ast.expr | None:
        """``(x & K) == 0`` or ``!= 0`` for a local x whose bit K a test C set: not C, C."""
        left, right, op = e.left, e.comparators[0], e.ops[0]
        if not (isinstance(op, ast.Eq | ast.NotEq) and is_int_const(right)
                and right.value == 0 and isinstance(left, ast.BinOp)  # type: ignore
                and isinstance(left.op, ast.BitAnd) and isinstance(left.left, ast.Name)
                and is_int_const(left.right)):
            return None
        flag = st.flags.get(left.left.id)
        if flag is None or flag[0] != left.right.value:  # type: ignore[attr-defined]
            return None
        test = copy.deepcopy(flag[1])
        return test if isinstance(op, ast.NotEq) else ast.UnaryOp(ast.Not(), test)

    def _assigned_local(self, name: str, orig: ast.expr, value: ast.expr, st: State,
                        w: int | None) -> None:
        if isinstance(value, ast.Constant) or (isinstance(value, ast.Name)
                                               and value.id != name) \
                or (isinstance(value, ast.Tuple)
                    and all(isinstance(x, ast.Constant) for x in value.elts)):
            st.copies[name] = value
        else:
            # what the assignment overwrites: the local, and for a scratch field's local
            # (m_<slot>) the field the original code names (F[slot] = F[slot] >> 1)
            stored = {("L", name)}
            slot = scratch_slot(name)
            if slot is not None:
                stored.add(("F", slot))
            vi = self.keys.info(value)
            if vi.worth and vi.deps is not None and not stored & vi.deps:
                st.avail.setdefault(vi.key, (name, vi.deps))
                oi = self.keys.info(orig)
                if oi.worth and oi.deps is not None and not stored & oi.deps:
                    st.avail.setdefault(oi.key, (name, vi.deps | oi.deps))
        if w is not None:
            st.widths[name] = w
        self.note_bits(name, value, st)
