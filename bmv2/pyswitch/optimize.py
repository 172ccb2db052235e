"""Optimize the generated Python module before it is exec'd (same semantics, less work).

The code generator emits one expression per JSON expression, and p4c's bmv2
JSON recomputes an expression at every use: a register index is rebuilt for
each access (through a temporary field per access), casts and slices become
masks on values that already fit, and a ``(bit<1>)(a < b)`` is re-evaluated
wherever it is used. This pass rewrites the Python AST of every generated
function:

1. Scratch fields become Python locals. A metadata field whose every read, in
   every generated function, comes after a store of it in the same function
   (with no call in between that could store it) never carries a value from one
   function to another, and nothing else reads it (the engine's fields and the
   field-list fields are excluded): it is a local variable of each function.
2. One forward pass per function: constants and copies are propagated (action
   data of inlined entries, ``DROP_PORT``, ``pk.exit = True``), masks are
   dropped where the value's width is known to fit (unsigned fields and
   registers always hold values of their width: every store truncates; a metadata
   field every store fills from a narrower value holds that narrower width), range
   checks the width settles fold (``0 <= i < n`` is ``i < n`` for an unsigned
   ``i``), so are masks on a subtraction its test keeps in range
   (``a if a < b else (a - b) & M``), ``(1 if c else 0) == 1`` becomes ``c``,
   constants fold, and an expression already held by a local whose inputs have
   not changed since is read from it; so is a field stored or read before (the
   value stays in a local). An expression evaluated unconditionally that is
   evaluated again before its inputs change is computed into a temporary just
   before the statement that first needs it; only unconditional occurrences are
   hoisted, never past their own statement, so what runs and what raises is
   unchanged. A call to a table's entry (``e<k>.fn(...)``) forgets only what
   the table's actions may write.
3. Stores to locals that are never read, whose value can neither raise nor have
   an effect, are dropped (so are the scratch fields' stores nobody reads), and
   so are stores to fields stored again before anything reads them (the end of
   the function and every call taking F read them all). Consecutive if/elif
   chains testing the same unchanged locals (one const table after another,
   keyed on the same field) become one chain, and step 2 runs again on it;
   consecutive ``if``s on the same unchanged test are merged.
4. A register read into a field (``if i < n: F[a] = R[i]``, range-checked) that
   is read later in the block is stored through a local set in both
   branches (the else keeps the field's value), and steps 2 and 3 run again: the
   reads take the local, and a store the next one overwrites goes.
5. Assignments in a row that choose on the same test (``x if a < b else y``, as p4c
   writes a conditional for each value it sets: a sum-tree step sets the next index
   and the remaining mass on one comparison) become one if/else holding each chosen
   branch, and step 2 runs again on the function.
6. Locals whose lives do not overlap share one name: a call sets up and clears every
   local of its frame, and the egress function holds well over a hundred temporaries,
   few of them at once.

Functions with loops or ``try`` (the parser, actions with jumps) are analysed
for step 1 but not rewritten. ``tests/pyswitch/test_optimize.py`` runs every
corpus program and a replay.p4 workload with and without this pass.
"""

from __future__ import annotations

import ast
import copy
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from .program import Program

# Helpers of the generated code that only compute (they may raise).
PURE_CALLS = frozenset({"_chk", "_idx", "_last", "_shl", "_shlm", "_shr", "_mod", "_div",
                        "_two_comp_mod", "_usat_cast", "_sat_cast", "_sx", "min", "max"})
# Calls that change neither the PHV, registers nor the packet, but must run every time.
EFFECT_CALLS = frozenset({"_getrandbits", "_randint"})
# Helpers taking F that read it at the slots given by these arguments.
F_READERS = {"_hdr_eq": (1, 2), "_union_eq": (1, 2), "_push": (1,), "_pop": (1,),
             "_union_push": (1,), "_union_pop": (1,), "_swap": (1, 2)}
# ... and of those, the ones that write nothing.
F_READ_ONLY = frozenset({"_hdr_eq", "_union_eq"})

Res = tuple[str, Any]  # ('F', slot | '*'), ('G', global container), ('pk', attr), ('L', name)
F_ANY: Res = ("F", "*")


@dataclass
class Facts:
    """What the optimizer may assume about the program."""

    widths: dict[int, int]       # slot -> width of the unsigned value it always holds
    external: set[int]           # slots read outside the generated code
    meta_slots: int              # slots below this are metadata
    registers: dict[str, int]    # register array global -> bit width
    constants: dict[str, int] = field(default_factory=dict)  # global name -> value
    tables: dict[str, list[str]] = field(default_factory=dict)  # T<k> -> its A<id>s


# ---- per-expression facts, cached on the nodes ------------------------------------------


class _Info:
    __slots__ = ("deps", "fr", "fx", "key", "names", "out", "safe", "worth")

    def __init__(self, key: int, deps: frozenset[Res] | None, out: bool,
                 names: frozenset[str], safe: bool, worth: bool, fr: frozenset[int],
                 fx: tuple[ast.AST, ...]) -> None:
        self.key = key      # equal keys: the same expression
        self.deps = deps    # what it reads; None: not a pure computation
        self.out = out      # calls something that may change the PHV/registers/packet
        self.names = names  # names it loads
        self.safe = safe    # can neither raise nor have an effect
        self.worth = worth  # an operation worth keeping in a local when repeated
        self.fr = fr        # PHV slots it loads (constant indexes)
        self.fx = fx        # its other PHV accesses: F[non-constant], calls taking F


_EMPTY: frozenset[Any] = frozenset()
_ZERO_BITS = 64  # known-zero bits are tracked in the low 64 bits of a value
_ZERO_MASK = (1 << _ZERO_BITS) - 1


def _is_int_const(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) is int


def _is_f(e: ast.AST) -> bool:
    return isinstance(e, ast.Name) and e.id == "F"


def _f_slot(e: ast.AST) -> int | None:
    """Slot of ``F[c]`` with a constant ``c``."""
    if isinstance(e, ast.Subscript) and _is_f(e.value) and _is_int_const(e.slice):
        return e.slice.value  # type: ignore[attr-defined]
    return None


def _call_name(e: ast.Call) -> str | None:
    return e.func.id if isinstance(e.func, ast.Name) else None


def _is_hash(name: str | None) -> bool:
    """H<k>: a calculation of the program; reads the PHV and the payload, writes nothing."""
    return name is not None and name[:1] == "H" and name[1:].isdigit()


_UNSAFE_OPS = (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)


class _Keys:
    """Facts about expressions and statements, cached on the nodes; equal expressions
    get equal keys."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.table: dict[tuple, int] = {}
        self.loads: dict[int, ast.Subscript] = {}
        self.actions: dict[str, tuple[set[Res], bool]] = {}  # A<id> -> what it may write
        self.entries_ok = True
        self.unique = 0
        self.field_reads: set[int] | None = set()  # slots generated code reads (None: any)

    def opaque(self) -> int:
        """A key equal to no other."""
        self.unique += 1
        return self.intern(("?", self.unique))

    def intern(self, t: tuple) -> int:
        k = self.table.get(t)
        if k is None:
            k = self.table[t] = len(self.table)
        return k

    def info(self, e: ast.AST) -> _Info:
        i = e.__dict__.get("_o")
        if i is None:
            i = self._compute(e)
            e._o = i  # type: ignore[attr-defined]
        return i

    def counts(self, s: ast.stmt) -> dict[int, int]:
        """How often each worthwhile expression occurs in a statement (nested blocks
        included)."""
        c = s.__dict__.get("_kc")
        if c is None:
            c = {}
            stack: list[ast.AST] = [*_stmt_exprs(s)]
            for t in _stmt_targets(s):
                if isinstance(t, ast.Subscript):
                    stack += [t.value, t.slice]
                elif isinstance(t, ast.Attribute):
                    stack.append(t.value)
            info = self.info
            while stack:
                n = stack.pop()
                i = info(n)
                if i.worth:
                    c[i.key] = c.get(i.key, 0) + 1
                for x in ast.iter_child_nodes(n):
                    if isinstance(x, ast.expr):
                        stack.append(x)
            if isinstance(s, ast.If):
                for x in s.body + s.orelse:
                    for k, v in self.counts(x).items():
                        c[k] = c.get(k, 0) + v
            s._kc = c  # type: ignore[attr-defined]
        return c

    def field_load(self, slot: int) -> _Info:
        """Facts of the expression ``F[slot]``."""
        node = self.loads.get(slot)
        if node is None:
            node = self.loads[slot] = ast.Subscript(ast.Name("F", ast.Load()),
                                                    ast.Constant(slot), ast.Load())
        return self.info(node)

    def entry_call(self, e: ast.AST) -> tuple[set[Res], bool] | None:
        """What ``e<k>.fn(pk, F, e<k>.params)`` (running an entry of table k) may write;
        None for any other expression."""
        if not (self.entries_ok and isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
                and e.func.attr == "fn" and isinstance(e.func.value, ast.Name)):
            return None
        name = e.func.value.id
        if not (name[:1] == "e" and name[1:].isdigit()) \
                or any(self.info(a).out for a in e.args):
            return None
        return self.table_writes("T" + name[1:])

    def check_entries(self, funcs: list[ast.FunctionDef]) -> None:
        """The generated code names a table k's entry ``e<k>``: check that it does."""
        for fn in funcs:
            for s in _statements(fn.body):
                for t in _stmt_targets(s):
                    for x in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(x, ast.Name) and x.id[:1] == "e" and x.id[1:].isdigit() \
                                and not (isinstance(s, ast.Assign)
                                         and _entry_table(s.value) == "T" + x.id[1:]):
                            self.entries_ok = False

    def table_writes(self, table: str) -> tuple[set[Res], bool]:
        """What running any entry of ``table`` may write (its actions' summaries)."""
        names = self.facts.tables.get(table)
        if names is None:
            return set(), True
        out: set[Res] = set()
        barrier = False
        for name in names:
            w, b = self.actions.get(name, (set(), True))
            out |= w
            barrier = barrier or b
        return out, barrier

    def summarize(self, fn: ast.FunctionDef) -> None:
        """Remember what action function ``fn`` may write (before it is rewritten)."""
        out: set[Res] = set()
        barrier = not _simple(fn.body)
        for s in fn.body:
            w, b = self.writes(s)
            out |= w
            barrier = barrier or b
        self.actions[fn.name] = ({r for r in out if r[0] != "L"}, barrier)

    def writes(self, s: ast.stmt) -> tuple[set[Res], bool]:
        """What a statement may write (nested blocks included), and whether it calls out."""
        w = s.__dict__.get("_wr")
        if w is None:
            w = s._wr = _writes(s, self)  # type: ignore[attr-defined]
        return w

    def _compute(self, e: Any) -> _Info:
        t = type(e)
        if t is ast.Name:
            return _Info(self.intern(("N", e.id)),
                         _EMPTY if e.id == "F" else frozenset({("L", e.id)}),
                         False, frozenset({e.id}), True, False, _EMPTY, ())
        if t is ast.Constant:
            v = e.value
            return _Info(self.intern(("C", type(v), v)), _EMPTY, False, _EMPTY, True, False,
                         _EMPTY, ())
        info = self.info
        own: Res | None = None
        out = False
        worth = True
        safe = True
        fr: frozenset[int] = _EMPTY
        fx: tuple[ast.AST, ...] = ()
        if t is ast.BinOp:
            kids = [info(e.left), info(e.right)]
            op, r = e.op, e.right
            if isinstance(op, _UNSAFE_OPS):
                safe = False
            elif isinstance(op, ast.LShift):
                safe = _is_int_const(r) and 0 <= r.value <= 1 << 16
            elif isinstance(op, ast.RShift):
                safe = _is_int_const(r) and r.value >= 0
            tag: tuple = ("B", type(op))
        elif t is ast.UnaryOp:
            kids = [info(e.operand)]
            worth = not isinstance(e.operand, ast.Constant)
            tag = ("U", type(e.op))
        elif t is ast.Compare:
            kids = [info(e.left)] + [info(c) for c in e.comparators]
            tag = ("Cmp", tuple(type(o) for o in e.ops))
        elif t is ast.BoolOp:
            kids = [info(v) for v in e.values]
            tag = ("Bo", type(e.op))
        elif t is ast.IfExp:
            kids = [info(e.test), info(e.body), info(e.orelse)]
            tag = ("If",)
        elif t is ast.Call:
            kids = [info(e.func)] + [info(a) for a in e.args]
            name = _call_name(e)
            worth = name in PURE_CALLS and not e.keywords
            out = name not in PURE_CALLS and name not in EFFECT_CALLS and not _is_hash(name)
            safe = False
            tag = ("Call",) if not e.keywords else ("?", self.opaque())
            if any(_is_f(a) for a in e.args):
                fx = (e,)
        elif t is ast.Subscript:
            kids = [info(e.value), info(e.slice)]
            base = e.value
            worth = False
            tag = ("S",)
            if isinstance(base, ast.Name):
                if base.id == "F":
                    slot = _f_slot(e)
                    own = F_ANY if slot is None else ("F", slot)
                    safe = slot is not None
                    if isinstance(e.ctx, ast.Load):
                        if slot is None:
                            fx = (e,)
                        else:
                            fr = frozenset({slot})
                            worth = True  # a field read more than once is kept in a local
                else:
                    own = ("G", base.id)
                    safe = False
                    worth = base.id in self.facts.registers
            else:
                safe = isinstance(base, ast.Tuple) and _is_int_const(e.slice)
        elif t is ast.Attribute:
            kids = [info(e.value)]
            worth = False
            if isinstance(e.value, ast.Name) and e.value.id == "pk":
                own = ("pk", e.attr)
                tag = ("A", e.attr)
            else:
                tag = ("?", self.opaque())
                safe = False
                kids.append(_OPAQUE)
        elif t is ast.Tuple or t is ast.List:
            kids = [info(x) for x in e.elts]
            worth = False
            tag = (t.__name__,)
        elif t is ast.Starred:
            kids = [info(e.value)]
            worth = False
            tag = ("*",)
        elif t is ast.Slice:
            kids = [info(x) for x in (e.lower, e.upper, e.step) if x is not None]
            worth = False
            tag = ("Sl", e.lower is not None, e.upper is not None, e.step is not None)
        else:
            names = frozenset(n.id for n in ast.walk(e) if isinstance(n, ast.Name))
            return _Info(self.opaque(), None, True, names, False, False, _EMPTY, (e,))
        deps: set[Res] | None = set()
        names: set[str] = set()
        for k in kids:
            if deps is not None:
                if k.deps is None:
                    deps = None
                else:
                    deps |= k.deps
            names |= k.names
            out = out or k.out
            safe = safe and k.safe
            if k.fr:
                fr = fr | k.fr
            if k.fx:
                fx = fx + k.fx
        if t is ast.Call and not worth:
            deps = None
        if deps is not None and own is not None:
            deps.add(own)
        return _Info(self.intern(tag + tuple(k.key for k in kids)),
                     None if deps is None else frozenset(deps), out, frozenset(names), safe,
                     worth, fr, fx)


_OPAQUE = _Info(-1, None, False, _EMPTY, False, False, _EMPTY, ())


# ---- step 1: which metadata slots are function-local scratch -------------------------------


def _terminates(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


_SIMPLE = (ast.Assign, ast.AugAssign, ast.If, ast.Return, ast.Expr, ast.Pass, ast.Raise)


def _simple(body: list[ast.stmt]) -> bool:
    """Only assignments, ifs, returns, expressions, raise and pass."""
    for s in body:
        if not isinstance(s, _SIMPLE):
            return False
        if isinstance(s, ast.If) and not (_simple(s.body) and _simple(s.orelse)):
            return False
    return True


def _lower_bound(e: ast.AST, assigned: dict[str, list[ast.AST] | None], depth: int = 0) -> int:
    """A lower bound of a (PHV index) expression's value, 0 when unknown; a local's is
    the least over every value the function assigns it."""
    if depth > 8:
        return 0
    if _is_int_const(e):
        return max(e.value, 0)  # type: ignore[attr-defined]
    if isinstance(e, ast.Name):
        vs = assigned.get(e.id)
        return 0 if not vs else min(_lower_bound(v, assigned, depth + 1) for v in vs)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _lower_bound(e.left, assigned, depth + 1) + _lower_bound(e.right, assigned,
                                                                         depth + 1)
    return 0


def _statements(body: list[ast.stmt]) -> Any:
    """Every statement of a block, nested blocks included."""
    for s in body:
        yield s
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(s, name, None)
            if inner:
                yield from _statements(inner)
        for h in getattr(s, "handlers", ()):
            yield from _statements(h.body)


def _assignments(fn: ast.FunctionDef) -> dict[str, list[ast.AST] | None]:
    """Every value the function assigns each local (None: not only plain assignments)."""
    assigned: dict[str, list[ast.AST] | None] = {}
    for s in _statements(fn.body):
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

    def __init__(self, fn: ast.FunctionDef, keys: _Keys, bad: set[int]) -> None:
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
        name = _call_name(c)
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
                slot = _f_slot(s.target)
                if slot is not None:
                    if slot not in stored:
                        self.bad.add(slot)
                    self.stores.add(slot)
                    if self.keys.field_reads is not None:
                        self.keys.field_reads.add(slot)
                elif isinstance(s.target, ast.Subscript) and _is_f(s.target.value):
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
        slot = _f_slot(t)
        if slot is not None:
            stored.add(slot)
            self.stores.add(slot)
            return
        if isinstance(t, ast.Subscript) and _is_f(t.value):  # a store at a computed index
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


def local_slots(funcs: list[ast.FunctionDef], keys: _Keys) -> set[int]:
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
    if _is_int_const(e):
        v = e.value  # type: ignore[attr-defined]
        return v.bit_length() if v >= 0 else None
    slot = _f_slot(e) if isinstance(e, ast.Subscript) and _is_f(e.value) else None
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


def _narrow_metadata(funcs: list[ast.FunctionDef], facts: Facts) -> Facts:
    """Metadata fields (not the engine's, not in field lists) that every store in the
    generated code fills from narrower values (``meta.x = (bit<32>)hdr.y``) hold
    values of that narrower width (metadata starts as 0)."""
    bound: dict[int, int] = {}
    unknown: set[int] = set()
    generated = {fn.name for fn in funcs}
    for fn in funcs:
        assigned = _assignments(fn)
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and any(_is_f(a) for a in n.args):
                name = _call_name(n)
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
                if not (isinstance(t, ast.Subscript) and _is_f(t.value)):
                    if isinstance(t, ast.Tuple | ast.List | ast.Starred):
                        return facts
                    continue
                slot = _f_slot(t)
                if slot is None:  # a slice or a computed index: what it may reach is lost
                    sl = t.slice
                    lo = sl.lower if isinstance(sl, ast.Slice) else sl
                    hi = sl.upper if isinstance(sl, ast.Slice) else None
                    if lo is None or _lower_bound(lo, assigned) < facts.meta_slots:
                        if not (_is_int_const(lo) and _is_int_const(hi)):
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


# ---- step 2: the forward pass ----------------------------------------------------------------


class _State:
    """What is known at one point of a function."""

    __slots__ = ("attrs", "avail", "copies", "fconst", "flags", "widths", "zeros")

    def __init__(self) -> None:
        self.copies: dict[str, ast.expr] = {}     # local -> Constant / Name / constant tuple
        self.attrs: dict[str, ast.Constant] = {}  # pk attribute -> the constant stored
        self.avail: dict[int, tuple[str, frozenset[Res]]] = {}  # key -> (local, deps)
        self.widths: dict[str, int] = {}          # local -> width of its value
        self.fconst: dict[int, ast.Constant] = {}  # slot -> the constant stored
        self.zeros: dict[str, int] = {}           # local -> bits known to be 0 in its value
        # local -> (bit K, test C, C's deps): (local & K) != 0 exactly when C holds
        self.flags: dict[str, tuple[int, ast.expr, frozenset[Res]]] = {}

    def clone(self) -> _State:
        s = _State()
        s.copies = dict(self.copies)
        s.attrs = dict(self.attrs)
        s.avail = dict(self.avail)
        s.widths = dict(self.widths)
        s.fconst = dict(self.fconst)
        s.zeros = dict(self.zeros)
        s.flags = dict(self.flags)
        return s

    def meet(self, other: _State) -> None:
        self.copies = {k: v for k, v in self.copies.items()
                       if k in other.copies and _same(other.copies[k], v)}
        self.attrs = {k: v for k, v in self.attrs.items()
                      if k in other.attrs and other.attrs[k].value == v.value
                      and type(other.attrs[k].value) is type(v.value)}
        self.avail = {k: v for k, v in self.avail.items() if other.avail.get(k) == v}
        self.widths = {k: v for k, v in self.widths.items() if other.widths.get(k) == v}
        self.fconst = {k: v for k, v in self.fconst.items()
                       if k in other.fconst and _same(other.fconst[k], v)}
        self.zeros = {k: v & other.zeros[k] for k, v in self.zeros.items() if k in other.zeros}
        self.flags = {k: v for k, v in self.flags.items() if other.flags.get(k) == v}

    def kill(self, res: Res) -> None:
        kind, what = res
        if self.flags:
            self.flags = {k: v for k, v in self.flags.items() if not _reads(v[2], res)}
        if kind == "L":
            self.copies.pop(what, None)
            self.widths.pop(what, None)
            self.zeros.pop(what, None)
            self.flags.pop(what, None)
            if any(isinstance(v, ast.Name) and v.id == what for v in self.copies.values()):
                self.copies = {k: v for k, v in self.copies.items()
                               if not (isinstance(v, ast.Name) and v.id == what)}
            self.avail = {k: v for k, v in self.avail.items()
                          if v[0] != what and not _reads(v[1], res)}
            return
        if kind == "pk":
            self.attrs.pop(what, None)
        if kind == "F" and what == "*":
            self.fconst.clear()
        elif kind == "F":
            self.fconst.pop(what, None)
        self.avail = {k: v for k, v in self.avail.items() if not _reads(v[1], res)}

    def barrier(self) -> None:
        """After a call that may change the PHV, registers, counters or the packet."""
        self.attrs.clear()
        self.fconst.clear()
        self.avail = {k: v for k, v in self.avail.items()
                      if all(d[0] == "L" for d in v[1])}
        self.flags = {k: v for k, v in self.flags.items() if all(d[0] == "L" for d in v[2])}


def _scratch_local(slot: int) -> str:
    """The local a scratch field (a slot only one function uses) lives in."""
    return f"m_{slot}"


def _scratch_slot(name: str) -> int | None:
    """The slot a scratch field's local stands for (None: another local)."""
    return int(name[2:]) if name.startswith("m_") else None


def _reads(deps: frozenset[Res], res: Res) -> bool:
    """Does a value reading ``deps`` change when ``res`` is written?"""
    if res in deps:
        return True
    if res[0] == "F":
        return any(d[0] == "F" for d in deps) if res[1] == "*" else F_ANY in deps
    return False


def _same(a: ast.AST, b: ast.AST) -> bool:
    """Two copies (names, constants, tuples of constants) are the same value."""
    if isinstance(a, ast.Name):
        return isinstance(b, ast.Name) and a.id == b.id
    if isinstance(a, ast.Constant):
        return isinstance(b, ast.Constant) and type(a.value) is type(b.value) \
            and a.value == b.value
    if isinstance(a, ast.Tuple):
        return isinstance(b, ast.Tuple) and len(a.elts) == len(b.elts) \
            and all(_same(x, y) for x, y in zip(a.elts, b.elts, strict=True))
    return False


def _is_bool(e: ast.AST) -> bool:
    if isinstance(e, ast.Compare):
        return True
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return True
    if isinstance(e, ast.Constant):
        return type(e.value) is bool
    if isinstance(e, ast.BoolOp):
        return all(_is_bool(v) for v in e.values)
    return False


def _is_b2d(e: ast.AST) -> bool:
    """``(1 if c else 0)`` with a boolean ``c``."""
    return isinstance(e, ast.IfExp) and isinstance(e.body, ast.Constant) \
        and type(e.body.value) is int and e.body.value == 1 \
        and isinstance(e.orelse, ast.Constant) and type(e.orelse.value) is int \
        and e.orelse.value == 0 and _is_bool(e.test)


def _pre_simplify(e: ast.expr) -> ast.expr:
    """``(1 if c else 0) == 1`` -> ``c`` and relatives, before ``(1 if c else 0)`` is
    shared."""
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], ast.Eq
                                                                       | ast.NotEq):
        left, right = e.left, e.comparators[0]
        if _is_b2d(right) and _is_int_const(left):
            left, right = right, left
        if _is_b2d(left) and _is_int_const(right):
            rv = right.value  # type: ignore[attr-defined]
            test = left.test  # type: ignore[attr-defined]
            if rv not in (0, 1):
                return ast.Constant(isinstance(e.ops[0], ast.NotEq))
            if (rv == 1) == isinstance(e.ops[0], ast.Eq):
                return _pre_simplify(test)
            return ast.UnaryOp(ast.Not(), test)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitXor) and _is_b2d(e.left) \
            and _is_int_const(e.right) and e.right.value == 1:  # type: ignore[attr-defined]
        return ast.IfExp(e.left.test, ast.Constant(0), ast.Constant(1))  # type: ignore
    return e


def _fold(op: ast.operator, a: int, b: int) -> int | None:
    if isinstance(op, ast.Add):
        v = a + b
    elif isinstance(op, ast.Sub):
        v = a - b
    elif isinstance(op, ast.Mult):
        v = a * b
    elif isinstance(op, ast.BitAnd):
        v = a & b
    elif isinstance(op, ast.BitOr):
        v = a | b
    elif isinstance(op, ast.BitXor):
        v = a ^ b
    elif isinstance(op, ast.RShift) and b >= 0:
        v = a >> b
    elif isinstance(op, ast.LShift) and 0 <= b <= 64:
        v = a << b
    else:
        return None
    return v if v >= 0 else None


def _guarded_sub(e: ast.IfExp) -> tuple[bool, ast.expr, ast.expr] | None:
    """``a if a < b else a - b`` and relatives: (the subtracting branch is the body,
    a, b) when the test makes ``a >= b`` hold in that branch."""
    t = e.test
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1):
        return None
    left, op, right = t.left, t.ops[0], t.comparators[0]
    if isinstance(op, ast.GtE):    # a >= b: a - b in the body
        return True, left, right
    if isinstance(op, ast.Lt):     # a < b: in the orelse
        return False, left, right
    if isinstance(op, ast.LtE):    # b <= a: in the body
        return True, right, left
    if isinstance(op, ast.Gt):     # b > a: in the orelse
        return False, right, left
    return None


_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


class _Func:
    """Steps 2 and 3 on one function."""

    def __init__(self, fn: ast.FunctionDef, keys: _Keys, slots: set[int]) -> None:
        self.fn = fn
        self.keys = keys
        self.facts = keys.facts
        self.slots = slots    # scratch fields that are locals m_<slot>
        self.cur: tuple[list[ast.stmt], int] = ([], 0)  # the statement being rewritten
        self.assigned = {a.arg for a in fn.args.args}
        for s in _statements(fn.body):
            for t in _stmt_targets(s):
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
            if _hits(*writes(body[i]), deps):
                return False
        for j in range(i + 1, len(body)):
            if key in counts(body[j]):
                return True
            if _hits(*writes(body[j]), deps):
                return False
        return False

    # ---- widths --------------------------------------------------------------------

    def width(self, e: ast.AST, st: _State) -> int | None:
        """w with 0 <= value < 2**w (an int, not a bool), when known."""
        if isinstance(e, ast.Constant):
            v = e.value
            return v.bit_length() if type(v) is int and v >= 0 else None
        if isinstance(e, ast.Name):
            return st.widths.get(e.id)
        if isinstance(e, ast.Subscript):
            slot = _f_slot(e)
            if slot is not None:
                return self.facts.widths.get(slot)
            if isinstance(e.value, ast.Name):
                return self.facts.registers.get(e.value.id)
            return None
        if isinstance(e, ast.IfExp):
            a, b = self.width(e.body, st), self.width(e.orelse, st)
            g = _guarded_sub(e)
            if g is not None and self._is_sub_of(e.body if g[0] else e.orelse, g[1], g[2]) \
                    and self.width(g[2], st) is not None:  # 0 <= a - b <= a
                if g[0]:
                    a = self.width(g[1], st)
                else:
                    b = self.width(g[1], st)
            return None if a is None or b is None else max(a, b)
        if isinstance(e, ast.Call):
            name = _call_name(e)
            args = e.args
            if name == "_getrandbits" and len(args) == 1 and _is_int_const(args[0]):
                return args[0].value  # type: ignore[attr-defined]
            if name == "_chk" and len(args) == 2 and _is_int_const(args[1]):
                return max(args[1].value - 1, 0).bit_length()  # type: ignore[attr-defined]
            if name == "_shlm" and len(args) == 3 and _is_int_const(args[2]) \
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
            if _is_int_const(e.right) and e.right.value >= 0:  # type: ignore[attr-defined]
                return max(a - e.right.value, 0)  # type: ignore[attr-defined]
            return None
        if isinstance(op, ast.LShift):
            if _is_int_const(e.right) and 0 <= e.right.value <= 1 << 16:  # type: ignore
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

    def simplify(self, e: ast.expr, st: _State) -> ast.expr:
        """Local algebra on a node whose children are already rewritten."""
        if isinstance(e, ast.BinOp):
            left, right, op = e.left, e.right, e.op
            if _is_int_const(left) and _is_int_const(right):
                v = _fold(op, left.value, right.value)  # type: ignore[attr-defined]
                if v is not None:
                    return ast.Constant(v)
            if isinstance(op, ast.Add | ast.BitOr | ast.BitXor | ast.LShift | ast.RShift):
                # x + 0, x << 0, 0 | x ...: x, if x is an int (not a bool)
                for x, z in ((left, right), (right, left)):
                    if _is_int_const(z) and z.value == 0 \
                            and (z is right or not isinstance(op, ast.LShift | ast.RShift)) \
                            and self.width(x, st) is not None:  # type: ignore[attr-defined]
                        return x
            if isinstance(op, ast.BitAnd):
                for x, m in ((left, right), (right, left)):
                    if _is_int_const(m):
                        mv = m.value  # type: ignore[attr-defined]
                        if mv >= 0 and mv & (mv + 1) == 0:
                            w = self.width(x, st)
                            if w is not None and w <= mv.bit_length():
                                return x
            if isinstance(op, ast.BitXor) and _is_b2d(left) and _is_int_const(right) \
                    and right.value == 1:  # type: ignore[attr-defined]
                return ast.IfExp(left.test, ast.Constant(0),  # type: ignore[attr-defined]
                                 ast.Constant(1))
            return e
        if isinstance(e, ast.Compare) and len(e.ops) == 2 and _is_int_const(e.left) \
                and e.left.value == 0 and isinstance(e.ops[0], ast.LtE) \
                and isinstance(e.ops[1], ast.Lt):  # 0 <= x < C
            x, c = e.comparators
            w = self.width(x, st)
            if w is not None and _is_int_const(c) and 1 << w <= c.value:  # type: ignore
                return _at(ast.Constant(True), e)
            if w is not None:  # an int known to be >= 0: only the upper bound can fail
                return _at(ast.Compare(x, [ast.Lt()], [c]), e)
            return e
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            flag = self.flag_test(e, st)
            if flag is not None:
                return self.simplify(_at(flag, e), st)
            left, right, op = e.left, e.comparators[0], e.ops[0]
            if _is_b2d(right) and _is_int_const(left):
                left, right = right, left
            if _is_b2d(left) and _is_int_const(right) and isinstance(op, ast.Eq | ast.NotEq):
                rv = right.value  # type: ignore[attr-defined]
                test = left.test  # type: ignore[attr-defined]
                if rv not in (0, 1):
                    return ast.Constant(isinstance(op, ast.NotEq))
                if (rv == 1) == isinstance(op, ast.Eq):
                    return test
                return self.simplify(ast.UnaryOp(ast.Not(), test), st)
            if _is_int_const(right) and isinstance(op, ast.Lt):
                w = self.width(left, st)
                if w is not None and 1 << w <= right.value:  # type: ignore[attr-defined]
                    return _at(ast.Constant(True), e)
            if _is_int_const(left) and left.value == 0 and isinstance(op, ast.LtE) \
                    and self.width(right, st) is not None:  # type: ignore[attr-defined]
                return _at(ast.Constant(True), e)
            if _is_int_const(left) and _is_int_const(right) and type(op) in _COMPARE:
                return ast.Constant(_COMPARE[type(op)](left.value,  # type: ignore
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
            return self.simplify(_at(ast.IfExp(e.test.operand, e.orelse, e.body), e), st)
        if isinstance(e, ast.IfExp):
            return self._unmask_guarded_sub(e, st)
        if isinstance(e, ast.BoolOp) and isinstance(e.values[0], ast.Constant) \
                and type(e.values[0].value) is bool:
            first, rest = e.values[0].value, e.values[1:]
            if isinstance(e.op, ast.And) != first:
                return e.values[0]  # False and ... / True or ...
            if len(rest) == 1:
                return rest[0] if _is_bool(rest[0]) else e
            return ast.BoolOp(e.op, rest)
        return e

    def _is_sub_of(self, e: ast.AST, a: ast.expr, b: ast.expr) -> bool:
        """``e`` is ``a - b``."""
        key = self.keys.info
        return isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) \
            and key(e.left).key == key(a).key and key(e.right).key == key(b).key

    def _unmask_guarded_sub(self, e: ast.IfExp, st: _State) -> ast.expr:
        """``a if a < b else (a - b) & M`` -> ``a if a < b else a - b`` where ``a`` fits
        in M and ``b`` is an int >= 0: in that branch 0 <= a - b <= a."""
        g = _guarded_sub(e)
        if g is None:
            return e
        in_body, a, b = g
        arm = e.body if in_body else e.orelse
        if not (isinstance(arm, ast.BinOp) and isinstance(arm.op, ast.BitAnd)
                and _is_int_const(arm.right) and self._is_sub_of(arm.left, a, b)):
            return e
        m = arm.right.value  # type: ignore[attr-defined]
        wa, wb = self.width(a, st), self.width(b, st)
        if m < 0 or m & (m + 1) or wa is None or wa > m.bit_length() or wb is None:
            return e
        if in_body:
            return _at(ast.IfExp(e.test, arm.left, e.orelse), e)
        return _at(ast.IfExp(e.test, e.body, arm.left), e)

    def rewrite(self, e: ast.expr, st: _State, uncond: bool, hoist: bool) -> ast.expr:
        """``e`` with known values substituted, simplified, and repeated parts shared."""
        t = type(e)
        if t is ast.Name:
            if isinstance(e.ctx, ast.Load):  # type: ignore[attr-defined]
                v = st.copies.get(e.id)  # type: ignore[attr-defined]
                if v is not None:
                    return copy.copy(v)
                if e.id not in self.assigned \
                        and e.id in self.facts.constants:  # type: ignore[attr-defined]
                    return _at(ast.Constant(self.facts.constants[e.id]), e)  # type: ignore
            return e
        if t is ast.Constant:
            return e
        if t is ast.Subscript and isinstance(e.ctx, ast.Load):  # type: ignore[attr-defined]
            slot = _f_slot(e)
            if slot is not None:
                if slot in self.slots:
                    return self.rewrite(_at(ast.Name(_scratch_local(slot), ast.Load()), e), st,
                                        uncond, hoist)
                c = st.fconst.get(slot)
                if c is not None:
                    return _at(ast.Constant(c.value), e)
        pre = _pre_simplify(e)
        if pre is not e:
            e = _deep_at(pre, e)
        info = self.keys.info(e)
        cse = info.worth and not self.no_cse
        if cse:
            hit = st.avail.get(info.key)
            if hit is not None:
                return _at(ast.Name(hit[0], ast.Load()), e)
            if uncond and hoist and info.deps is not None and self.again(info.key, info.deps):
                value = _deep_at(self.simplify(self._children(e, st, uncond, False), st), e)
                if isinstance(value, ast.Name | ast.Constant):
                    return value
                vi = self.keys.info(value)
                hit = st.avail.get(vi.key) if vi.worth else None
                if hit is not None:
                    st.avail[info.key] = (hit[0], info.deps)
                    return _at(ast.Name(hit[0], ast.Load()), e)
                name = f"t_{self.ntemps}"
                self.ntemps += 1
                self.assigned.add(name)
                self.prefix.append(_at(ast.Assign([_at(ast.Name(name, ast.Store()), e)], value),
                                       e))
                w = self.width(value, st)
                if w is not None:
                    st.widths[name] = w
                st.avail[info.key] = (name, info.deps)
                if vi.worth and vi.deps is not None:
                    st.avail.setdefault(vi.key, (name, vi.deps))
                return _at(ast.Name(name, ast.Load()), e)
        out = self.simplify(self._children(e, st, uncond, hoist), st)
        if out is not e:
            _deep_at(out, e)
        if cse and out is not e and not isinstance(out, ast.Name | ast.Constant):
            oi = self.keys.info(out)
            if oi.worth:
                hit = st.avail.get(oi.key)
                if hit is not None:
                    return _at(ast.Name(hit[0], ast.Load()), e)
        return out

    def _children(self, e: ast.expr, st: _State, uncond: bool, hoist: bool) -> ast.expr:
        r = self.rewrite
        if isinstance(e, ast.BinOp):
            return _at(ast.BinOp(r(e.left, st, uncond, hoist), e.op,
                                 r(e.right, st, uncond, hoist)), e)
        if isinstance(e, ast.UnaryOp):
            return _at(ast.UnaryOp(e.op, r(e.operand, st, uncond, hoist)), e)
        if isinstance(e, ast.BoolOp):
            vals = [r(e.values[0], st, uncond, hoist)]
            vals += [r(v, st, False, hoist) for v in e.values[1:]]
            return _at(ast.BoolOp(e.op, vals), e)
        if isinstance(e, ast.Compare):
            left = r(e.left, st, uncond, hoist)
            comps = [r(c, st, uncond and i == 0, hoist) for i, c in enumerate(e.comparators)]
            return _at(ast.Compare(left, e.ops, comps), e)
        if isinstance(e, ast.IfExp):
            test = r(e.test, st, uncond, hoist)
            if isinstance(test, ast.Constant):
                return r(e.body if test.value else e.orelse, st, uncond, hoist)
            return _at(ast.IfExp(test, r(e.body, st, False, hoist),
                                 r(e.orelse, st, False, hoist)), e)
        if isinstance(e, ast.Call):
            return _at(ast.Call(e.func, [r(a, st, uncond, hoist) for a in e.args], e.keywords), e)
        if isinstance(e, ast.Subscript):
            value = r(e.value, st, uncond, hoist)
            sl = e.slice
            if isinstance(sl, ast.Slice):
                sl = _at(ast.Slice(*(None if x is None else r(x, st, uncond, hoist)
                                     for x in (sl.lower, sl.upper, sl.step))), sl)
            else:
                sl = r(sl, st, uncond, hoist)
            if isinstance(e.ctx, ast.Load) and isinstance(value, ast.Tuple) \
                    and _is_int_const(sl) \
                    and 0 <= sl.value < len(value.elts):  # type: ignore[attr-defined]
                return copy.copy(value.elts[sl.value])  # type: ignore[attr-defined]
            return _at(ast.Subscript(value, sl, e.ctx), e)
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "pk" \
                    and isinstance(e.ctx, ast.Load) and e.attr in st.attrs:
                return copy.copy(st.attrs[e.attr])
            return _at(ast.Attribute(r(e.value, st, uncond, hoist), e.attr, e.ctx), e)
        if isinstance(e, ast.Tuple):
            return _at(ast.Tuple([r(x, st, uncond, hoist) for x in e.elts], e.ctx), e)
        if isinstance(e, ast.List):
            return _at(ast.List([r(x, st, uncond, hoist) for x in e.elts], e.ctx), e)
        return e

    # ---- statements -------------------------------------------------------------------

    def store(self, t: ast.expr, st: _State) -> None:
        if isinstance(t, ast.Name):
            st.kill(("L", t.id))
            slot = _scratch_slot(t.id)
            if slot is not None:  # a scratch field: F[slot] in the original code
                st.kill(("F", slot))
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            if t.value.id == "F":
                slot = _f_slot(t)
                sl = t.slice
                if slot is not None:
                    st.kill(("F", slot))
                elif isinstance(sl, ast.Slice) and sl.step is None and sl.lower is not None \
                        and sl.upper is not None and _is_int_const(sl.lower) \
                        and _is_int_const(sl.upper) \
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

    def target(self, t: ast.expr, st: _State) -> ast.expr:
        slot = _f_slot(t)
        if slot is not None and slot in self.slots:
            return _at(ast.Name(_scratch_local(slot), ast.Store()), t)
        if isinstance(t, ast.Subscript):
            sl = t.slice
            if isinstance(sl, ast.Slice):
                sl = _at(ast.Slice(*(None if x is None else self.rewrite(x, st, True, True)
                                     for x in (sl.lower, sl.upper, sl.step))), sl)
            else:
                sl = self.rewrite(sl, st, True, True)
            return _at(ast.Subscript(self.rewrite(t.value, st, True, True), sl, t.ctx), t)
        if isinstance(t, ast.Attribute):
            return _at(ast.Attribute(self.rewrite(t.value, st, True, True), t.attr, t.ctx), t)
        return t

    def effects(self, e: ast.AST, st: _State) -> None:
        if self.keys.info(e).out:
            st.barrier()

    def block(self, body: list[ast.stmt], st: _State) -> tuple[list[ast.stmt], _State | None]:
        """The rewritten statements and the state after them (None: never falls through)."""
        out: list[ast.stmt] = []
        for i, s in enumerate(body):
            self.cur = (body, i)
            self.prefix = []
            # a statement that calls out (an action, a table's function) may change
            # anything between its subexpressions: nothing is shared inside it
            self.no_cse = any(self.keys.info(e).out for e in _stmt_exprs(s)) \
                or any(self.keys.info(t).out for t in _stmt_targets(s))
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

    def stmt(self, s: ast.stmt, st: _State) -> tuple[list[ast.stmt], _State | None] | None:
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
                return [_at(ast.Assign([tgt], value), s)], st
            slot = _f_slot(tgt)
            if slot is not None:
                return self._field_store(s, slot, tgt, value, st, w)
            self.store(tgt, st)
            if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) \
                    and tgt.value.id == "pk" and isinstance(value, ast.Constant):
                st.attrs[tgt.attr] = value
            return [_at(ast.Assign([tgt], value), s)], st
        if isinstance(s, ast.AugAssign):
            value = self.rewrite(s.value, st, True, True)
            tgt = self.target(s.target, st)
            self.effects(value, st)
            self.effects(tgt, st)
            if isinstance(tgt, ast.Name) and tgt.id in st.copies:
                new: ast.stmt = _deep_at(ast.Assign(
                    [ast.Name(tgt.id, ast.Store())],
                    self.simplify(ast.BinOp(copy.copy(st.copies[tgt.id]), s.op, value), st)),
                    s)
            else:
                new = _at(ast.AugAssign(tgt, s.op, value), s)
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
            node = _at(ast.If(test, body or [_at(ast.Pass(), s)], orelse), s)
            if a is None or b is None:
                return [node], (a if b is None else b)
            a.meet(b)
            return [node], a
        if isinstance(s, ast.Return):
            if s.value is not None:
                return [_at(ast.Return(self.rewrite(s.value, st, True, True)), s)], None
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
            return [_at(ast.Expr(value), s)], st
        if isinstance(s, ast.Pass):
            return None
        if isinstance(s, ast.Raise):
            return [s], None
        for t in _stmt_targets(s):  # anything else (not generated): forget what it touches
            self.store(t, st)
        st.barrier()
        return [s], st

    def _field_store(self, s: ast.stmt, slot: int, tgt: ast.expr, value: ast.expr, st: _State,
                     w: int | None) -> tuple[list[ast.stmt], _State] | None:
        """``F[slot] = value``: later reads of the field read the value's local."""
        load = self.keys.field_load(slot)
        hit = st.avail.get(load.key)
        if isinstance(value, ast.Name) and hit is not None and hit[0] == value.id:
            return None  # the field holds that value already
        c = st.fconst.get(slot)
        if isinstance(value, ast.Constant) and c is not None and _same(c, value):
            return None
        if not isinstance(value, ast.Name | ast.Constant) \
                and self.again(load.key, frozenset({("F", slot)}), after=True):
            name = f"t_{self.ntemps}"
            self.ntemps += 1
            self.assigned.add(name)
            self.prefix.append(_at(ast.Assign([_at(ast.Name(name, ast.Store()), s)], value), s))
            if w is not None:
                st.widths[name] = w
            self.note_bits(name, value, st)
            value = _at(ast.Name(name, ast.Load()), s)
        self.store(tgt, st)
        if isinstance(value, ast.Name):
            st.avail[load.key] = (value.id, frozenset({("F", slot), ("L", value.id)}))
        elif isinstance(value, ast.Constant) and type(value.value) is int:
            st.fconst[slot] = value
        return [_at(ast.Assign([tgt], value), s)], st

    def zeros(self, e: ast.AST, st: _State) -> int:
        """Bits (of the low _ZERO_BITS) known to be 0 in the int value of ``e``."""
        if isinstance(e, ast.Constant):
            return _ZERO_MASK & ~e.value if type(e.value) is int and e.value >= 0 else 0
        if isinstance(e, ast.Name):
            return st.zeros.get(e.id, 0)
        if isinstance(e, ast.IfExp):
            return self.zeros(e.body, st) & self.zeros(e.orelse, st)
        if not isinstance(e, ast.BinOp):
            return 0
        if isinstance(e.op, ast.LShift) and _is_int_const(e.right) \
                and 0 <= e.right.value < _ZERO_BITS:  # type: ignore[attr-defined]
            n = e.right.value  # type: ignore[attr-defined]
            return _ZERO_MASK & ((self.zeros(e.left, st) << n) | ((1 << n) - 1))
        if isinstance(e.op, ast.BitOr):
            return self.zeros(e.left, st) & self.zeros(e.right, st)
        if isinstance(e.op, ast.BitAnd):
            return self.zeros(e.left, st) | self.zeros(e.right, st)
        return 0

    def note_bits(self, name: str, value: ast.expr, st: _State) -> None:
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
            if not (isinstance(part, ast.IfExp) and _is_bool(part.test)
                    and _is_int_const(part.body) and _is_int_const(part.orelse)
                    and part.orelse.value == 0):  # type: ignore[attr-defined]
                continue
            k = part.body.value  # type: ignore[attr-defined]
            rest = parts[1 - i] if len(parts) == 2 else ast.Constant(0)
            deps = self.keys.info(part.test).deps
            if k > 0 and k & (k - 1) == 0 and self.zeros(rest, st) & k \
                    and deps is not None and ("L", name) not in deps:
                st.flags[name] = (k, part.test, deps)
                return

    def flag_test(self, e: ast.Compare, st: _State) -> ast.expr | None:
        """``(x & K) == 0`` or ``!= 0`` for a local x whose bit K a test C set: not C, C."""
        left, right, op = e.left, e.comparators[0], e.ops[0]
        if not (isinstance(op, ast.Eq | ast.NotEq) and _is_int_const(right)
                and right.value == 0 and isinstance(left, ast.BinOp)  # type: ignore
                and isinstance(left.op, ast.BitAnd) and isinstance(left.left, ast.Name)
                and _is_int_const(left.right)):
            return None
        flag = st.flags.get(left.left.id)
        if flag is None or flag[0] != left.right.value:  # type: ignore[attr-defined]
            return None
        test = copy.deepcopy(flag[1])
        return test if isinstance(op, ast.NotEq) else ast.UnaryOp(ast.Not(), test)

    def _assigned_local(self, name: str, orig: ast.expr, value: ast.expr, st: _State,
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
            slot = _scratch_slot(name)
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


def _entry_table(value: ast.expr) -> str | None:
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


def _stmt_exprs(s: ast.stmt) -> list[ast.expr]:
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


def _stmt_targets(s: ast.stmt) -> list[ast.expr]:
    if isinstance(s, ast.Assign):
        return list(s.targets)
    if isinstance(s, ast.AugAssign):
        return [s.target]
    return []


# ---- step 3: dead stores, if merging --------------------------------------------------------


def _target_reads(keys: _Keys, t: ast.expr) -> frozenset[str]:
    if isinstance(t, ast.Subscript):
        return keys.info(t.value).names | keys.info(t.slice).names
    if isinstance(t, ast.Attribute):
        return keys.info(t.value).names
    if isinstance(t, ast.Tuple):
        out: frozenset[str] = _EMPTY
        for x in t.elts:
            out = out | _target_reads(keys, x)
        return out
    return _EMPTY


def _dce(keys: _Keys, body: list[ast.stmt], live: set[str]) -> tuple[list[ast.stmt], set[str]]:
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
            b, lb = _dce(keys, s.body, set(live))
            o, lo = _dce(keys, s.orelse, set(live))
            ti = keys.info(s.test)
            if not b and not o and ti.safe:
                continue
            s = _at(ast.If(s.test, b or [_at(ast.Pass(), s)], o), s)
            live = lb | lo | ti.names
        elif isinstance(s, ast.Return | ast.Raise):
            live = set()
            for e in _stmt_exprs(s):
                live |= keys.info(e).names
        elif isinstance(s, ast.Pass):
            continue
        else:
            for e in _stmt_exprs(s):
                live = live | keys.info(e).names
            for t in _stmt_targets(s):
                live = live | _target_reads(keys, t)
                if isinstance(s, ast.AugAssign) and isinstance(t, ast.Name):
                    live = live | {t.id}
        out.append(s)
    out.reverse()
    return out, live


def _dse(keys: _Keys, body: list[ast.stmt], dead: set[int]) -> tuple[list[ast.stmt], set[int]]:
    """Drops stores to fields that are stored again before anything reads them (the
    function's end and every call taking F read them all); ``dead``: such fields after
    the block, returns those before it."""
    out: list[ast.stmt] = []
    for s in reversed(body):
        if isinstance(s, ast.Return | ast.Raise):
            dead = set()
        elif isinstance(s, ast.If):
            b, db = _dse(keys, s.body, set(dead))
            o, do = _dse(keys, s.orelse, set(dead))
            dead = db & do
            s = _at(ast.If(s.test, b or [_at(ast.Pass(), s)], o), s)
        else:
            slot = _f_slot(s.targets[0]) if isinstance(s, ast.Assign) \
                and len(s.targets) == 1 else None
            if slot is not None:
                if slot in dead and keys.info(s.value).safe:
                    continue
                dead.add(slot)
            elif isinstance(s, ast.AugAssign):
                aug = _f_slot(s.target)
                if aug is not None:
                    dead.discard(aug)
        for e in _stmt_exprs(s) + [x for t in _stmt_targets(s) if isinstance(t, ast.Subscript)
                                   for x in (t.value, t.slice)]:
            i = keys.info(e)
            if i.fx:
                dead = set()
            elif i.fr:
                dead -= i.fr
        out.append(s)
    out.reverse()
    return out, dead


def _writes(s: ast.stmt, keys: _Keys) -> tuple[set[Res], bool]:
    """What a statement (with its nested blocks) may write, and whether it calls out."""
    out: set[Res] = set()
    called = keys.entry_call(s.value) if isinstance(s, ast.Expr) else None
    if called is not None:
        out |= called[0]
        barrier = called[1]
    else:
        barrier = any(keys.info(e).out for e in _stmt_exprs(s))
    for t in _stmt_targets(s):
        barrier = barrier or keys.info(t).out
        for x in (t.elts if isinstance(t, ast.Tuple) else [t]):
            if isinstance(x, ast.Name):
                out.add(("L", x.id))
            elif isinstance(x, ast.Subscript) and _is_f(x.value):
                slot = _f_slot(x)
                out.add(F_ANY if slot is None else ("F", slot))
            elif isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name):
                out.add(("G", x.value.id))
            elif isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name):
                out.add(("pk", x.attr))
            else:
                barrier = True
    if isinstance(s, ast.If):
        for x in s.body + s.orelse:
            w, b = keys.writes(x)
            out |= w
            barrier = barrier or b
    return out, barrier


def _hits(writes: set[Res], barrier: bool, deps: frozenset[Res]) -> bool:
    for d in deps:
        if d in writes or (d[0] != "L" and barrier):
            return True
        if d[0] == "F" and (F_ANY in writes or (d == F_ANY
                                                and any(w[0] == "F" for w in writes))):
            return True
    return False


def _slots_read(keys: _Keys, s: ast.stmt) -> set[int] | None:
    """PHV slots a statement (nested blocks included) may read; None: any."""
    out: set[int] = set()
    for e in _stmt_exprs(s) + [x for t in _stmt_targets(s) if isinstance(t, ast.Subscript)
                               for x in (t.value, t.slice)]:
        i = keys.info(e)
        if i.fx:
            return None
        out |= i.fr
    if isinstance(s, ast.If):
        for x in s.body + s.orelse:
            r = _slots_read(keys, x)
            if r is None:
                return None
            out |= r
    return out


class _StoreSplitter:
    """``if T: F[a] = R[i]`` (no else; the body only stores fields), a register read
    (range-checked: nearly always done) into a field that a later statement of the
    block reads, becomes ``if T: v = R[i] else: v = F[a]`` then ``F[a] = v``: the next
    forward pass reads ``v`` for F[a], and the store goes if F[a] is stored again first
    (the sum-tree walk reads two cells per level into the same two fields)."""

    def __init__(self, keys: _Keys) -> None:
        self.keys = keys

    def block(self, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
        """The rewritten block, and whether anything changed."""
        later: set[int] | None = set()  # slots read after the statement (None: any)
        out: list[ast.stmt] = []
        changed = False
        for s in reversed(body):
            reads = _slots_read(self.keys, s)
            if isinstance(s, ast.If):
                b, cb = self.block(s.body)
                o, co = self.block(s.orelse)
                if cb or co:
                    s = _at(ast.If(s.test, b, o), s)
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
            slot = _f_slot(x.targets[0]) if isinstance(x, ast.Assign) \
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
            body.append(_deep_at(ast.Assign([ast.Name(name, ast.Store())], x.value), x))
            orelse.append(_deep_at(ast.Assign([ast.Name(name, ast.Store())], load), x))
            after.append(_deep_at(ast.Assign([copy.copy(x.targets[0])],
                                             ast.Name(name, ast.Load())), x))
        return [_at(ast.If(s.test, body, orelse), s), *after]


def _merge_ifs(keys: _Keys, body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in body:
        if isinstance(s, ast.If):
            s = _at(ast.If(s.test, _merge_ifs(keys, s.body), _merge_ifs(keys, s.orelse)), s)
            prev = out[-1] if out else None
            if isinstance(prev, ast.If) and not prev.orelse and not s.orelse \
                    and keys.info(prev.test).key == keys.info(s.test).key \
                    and not _terminates(prev.body):
                deps = keys.info(s.test).deps
                w: set[Res] = set()
                barrier = False
                for x in prev.body:
                    xw, xb = keys.writes(x)
                    w |= xw
                    barrier = barrier or xb
                if deps is not None and not _hits(w, barrier, deps):
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


def _merge_chains(keys: _Keys, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """Consecutive if/elif chains testing the same locals the same way become one chain
    (``if k == 1: A1 elif k == 2: B1`` then ``if k == 1: A2 elif k == 2: B2`` is
    ``if k == 1: A1; A2 elif k == 2: B1; B2``): no body may assign those locals, so each
    chain takes the same branch (or the first one returns). Then values flow from one
    table's action into the next one's."""
    out: list[ast.stmt] = []
    changed = False
    for s in body:
        if isinstance(s, ast.If):
            b, c1 = _merge_chains(keys, s.body)
            o, c2 = _merge_chains(keys, s.orelse)
            changed = changed or c1 or c2
            s = _at(ast.If(s.test, b, o), s)
            prev = out[-1] if out else None
            if isinstance(prev, ast.If):
                merged = _merge_two(keys, prev, s)
                if merged is not None:
                    out[-1] = merged
                    changed = True
                    continue
        out.append(s)
    return out, changed


def _merge_two(keys: _Keys, a: ast.If, b: ast.If) -> ast.If | None:
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
        rest = [_at(ast.If(test, [x for x in block if not isinstance(x, ast.Pass)]
                           or [_at(ast.Pass(), a)], rest), a)]
    return rest[0]  # type: ignore[return-value]


# ---- entry points -------------------------------------------------------------------------


_NEGATED = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
            ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
# (key of a, comparison, key of b): ``a op b``; (key of x, None, 0): ``x`` (a local)
_Cond = tuple[int, type | None, int]


def _cond(keys: _Keys, t: ast.expr) -> _Cond | None:
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


def _first_cond(keys: _Keys, e: ast.expr) -> ast.Compare | None:
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

    def __init__(self, keys: _Keys, c: _Cond, value: bool) -> None:
        self.keys, self.c, self.value = keys, c, value
        self.count = 0

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        t = _cond(self.keys, node.test)
        known = None if t is None else _decides(self.c, t)
        if known is None:
            return self.generic_visit(node)
        self.count += 1
        return self.visit(node.body if known == self.value else node.orelse)


def _unswitch(keys: _Keys, body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
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
            b, cb = _unswitch(keys, s.body)
            o, co = _unswitch(keys, s.orelse)
            changed = changed or cb or co
            out.append(_at(ast.If(s.test, b, o), s) if cb or co else s)
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
            if _hits(*_writes(x, keys), deps):
                break
        if uses < 2:
            out.append(s)
            i += 1
            continue
        arms: list[list[ast.stmt]] = [[], []]
        for x in body[i:last + 1]:
            for arm, value in zip(arms, (True, False), strict=True):
                arm.append(_at(ast.Assign(copy.deepcopy(x.targets),
                                          _Decide(keys, c, value).visit(
                                              copy.deepcopy(x.value))), x))
        out.append(_at(ast.If(copy.deepcopy(test), *arms), s))
        changed = True
        i = last + 1
    return out, changed


def optimize_function(fn: ast.FunctionDef, keys: _Keys, slots: set[int]) -> None:
    """Steps 2 and 3 on one function (only assignments, ifs, returns, expressions)."""
    f = _Func(fn, keys, slots)
    body, _ = f.block(fn.body, _State())
    body, _ = _dce(keys, body, set())
    body, merged = _merge_chains(keys, body)
    if merged:  # once more: values now flow further
        f, body = _propagate_again(f, fn, keys, slots, body)
    body, _ = _dse(keys, body, set())
    body = _merge_ifs(keys, body)
    body, split = _StoreSplitter(keys).block(body)
    if split:  # once more: the split fields' values now flow to their reads
        f, body = _propagate_again(f, fn, keys, slots, body)
        body, _ = _dse(keys, body, set())
        body = _merge_ifs(keys, body)
    body, unswitched = _unswitch(keys, body)
    if unswitched:  # once more: the chosen branches simplify
        f, body = _propagate_again(f, fn, keys, slots, body)
    fn.body = body or [_at(ast.Pass(), fn)]


def _propagate_again(f: _Func, fn: ast.FunctionDef, keys: _Keys, slots: set[int],
                     body: list[ast.stmt]) -> tuple[_Func, list[ast.stmt]]:
    """Step 2 once more over `body` (temporaries numbered on from `f`'s), then DCE."""
    again = _Func(_at(ast.FunctionDef(fn.name, fn.args, body, [], None, None), fn), keys, slots)
    again.ntemps = f.ntemps
    body, _ = again.block(body, _State())
    body, _ = _dce(keys, body, set())
    return again, body


def optimize_source(src: str, facts: Facts) -> ast.Module:
    """The optimized module of generated source ``src``."""
    return _optimize(src, facts)[0]


def _optimize(src: str, facts: Facts) -> tuple[ast.Module, set[int] | None]:
    """The optimized module and the fields its code may read (None: any)."""
    tree = ast.parse(src)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    facts = _narrow_metadata(funcs, facts)
    keys = _Keys(facts)
    keys.check_entries(funcs)
    slots = local_slots(funcs, keys)
    for fn in funcs:
        if fn.name[:1] == "A":
            keys.summarize(fn)
    for fn in funcs:
        if _simple(fn.body):
            optimize_function(fn, keys, slots)
            share_locals(fn)
    return tree, keys.field_reads


# ---- step 6: locals share names ----------------------------------------------------------


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


def _at(new: Any, old: ast.AST) -> Any:
    """``new`` at the source position of ``old``."""
    return ast.copy_location(new, old)


_NO_POSITION = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)


def _deep_at(new: Any, old: ast.AST) -> Any:
    """``new`` and its new parts (nodes without a position) at the position of ``old``."""
    stack = [new]
    while stack:
        n = stack.pop()
        if "lineno" not in n.__dict__ and not isinstance(n, _NO_POSITION):
            ast.copy_location(n, old)
            stack.extend(ast.iter_child_nodes(n))
    return new


# Fields the engine reads or writes itself (simple_switch's standard and intrinsic
# metadata): their whole header is left alone by step 1.
ENGINE_FIELDS = (
    "standard_metadata.ingress_port", "standard_metadata.packet_length",
    "standard_metadata.instance_type", "standard_metadata.egress_spec",
    "standard_metadata.egress_port", "standard_metadata.parser_error",
    "standard_metadata.checksum_error", "intrinsic_metadata.mcast_grp",
    "intrinsic_metadata.egress_rid", "intrinsic_metadata.priority",
    "intrinsic_metadata.ingress_global_timestamp", "intrinsic_metadata.egress_global_timestamp",
    "queueing_metadata.enq_timestamp", "queueing_metadata.enq_qdepth",
    "queueing_metadata.deq_timedelta", "queueing_metadata.deq_qdepth", "queueing_metadata.qid",
)


def program_facts(prog: Program, drop_port: int,
                  tables: dict[str, list[str]] | None = None) -> Facts:
    """The facts of one program: field widths, engine fields, registers (and the action
    functions of each table object, T<k> -> [A<id>, ...])."""
    widths: dict[int, int] = {}
    for h in prog.headers.values():
        for fs in h.fields:
            if not fs.signed and not fs.varbit:  # a varbit's width is only known at run time
                widths[fs.slot] = fs.width
        widths[h.valid_slot] = 1
    external: set[int] = set()
    for name in ENGINE_FIELDS:
        fs = prog.optional_field(name)
        if fs is not None:
            h = prog.headers[fs.header]
            external.update(f.slot for f in h.fields)
            external.add(h.valid_slot)
    for fl in prog.field_lists.values():
        external.update(f.slot for f in fl)
    registers = {f"R{r.id}": r.bitwidth for r in prog.registers.values()}
    return Facts(widths, external, prog.meta_slots, registers, {"DROP_PORT": drop_port},
                 tables or {})


class OptimizedCode:
    """The optimized code of one generated module; its source is unparsed on demand."""

    def __init__(self, tree: ast.Module, field_reads: set[int] | None, name: str) -> None:
        self._tree: ast.Module | None = tree
        self._source: str | None = None
        self.field_reads = None if field_reads is None else frozenset(field_reads)
        try:
            self.code = compile(tree, name, "exec")
        except (TypeError, ValueError):  # a new node without a position: give it one
            ast.fix_missing_locations(tree)
            self.code = compile(tree, name, "exec")

    @property
    def source(self) -> str:
        if self._source is None:
            assert self._tree is not None
            self._source = ast.unparse(self._tree) + "\n"
            self._tree = None
        return self._source


_CACHE: dict[tuple[str, tuple], OptimizedCode] = {}
_CACHE_SIZE = 8


def optimized_code(src: str, facts: Facts, name: str) -> OptimizedCode | None:
    """The optimized code of generated source ``src`` (the last few are remembered:
    loading the same program again costs no optimization). None, with a warning, if
    the optimizer fails (a bug of ours): the caller then runs the code as generated."""
    key = (src, (tuple(sorted(facts.widths.items())), tuple(sorted(facts.external)),
                 facts.meta_slots, tuple(sorted(facts.registers.items())),
                 tuple(sorted(facts.constants.items())),
                 tuple(sorted((k, tuple(v)) for k, v in facts.tables.items()))))
    hit = _CACHE.get(key)
    if hit is None:
        try:
            hit = OptimizedCode(*_optimize(src, facts), name=name)
        except Exception as e:  # never stop a program from loading
            warnings.warn(f"pyswitch: optimizing {name} failed ({e!r}); running the code "
                          "as generated", RuntimeWarning, stacklevel=2)
            return None
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hit
    return hit
