"""What the passes know of the program and of each expression: the program's
facts (field widths, the engine's fields, registers, constants, each table's
actions), the helpers of the generated code that only compute, and, per
expression, its key, width, known-zero bits and the resources it reads and
writes (Keys caches them on the nodes)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .nodes import all_statements, entry_table, simple, stmt_exprs, stmt_targets

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

class Info:
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

EMPTY: frozenset[Any] = frozenset()

ZERO_BITS = 64  # known-zero bits are tracked in the low 64 bits of a value

ZERO_MASK = (1 << ZERO_BITS) - 1

def is_int_const(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) is int

def is_f(e: ast.AST) -> bool:
    return isinstance(e, ast.Name) and e.id == "F"

def f_slot(e: ast.AST) -> int | None:
    """Slot of ``F[c]`` with a constant ``c``."""
    if isinstance(e, ast.Subscript) and is_f(e.value) and is_int_const(e.slice):
        return e.slice.value  # type: ignore[attr-defined]
    return None

def call_name(e: ast.Call) -> str | None:
    return e.func.id if isinstance(e.func, ast.Name) else None

def _is_hash(name: str | None) -> bool:
    """H<k>: a calculation of the program; reads the PHV and the payload, writes nothing."""
    return name is not None and name[:1] == "H" and name[1:].isdigit()

_UNSAFE_OPS = (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)

class Keys:
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

    def info(self, e: ast.AST) -> Info:
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
            stack: list[ast.AST] = [*stmt_exprs(s)]
            for t in stmt_targets(s):
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

    def field_load(self, slot: int) -> Info:
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
            for s in all_statements(fn.body):
                for t in stmt_targets(s):
                    for x in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(x, ast.Name) and x.id[:1] == "e" and x.id[1:].isdigit() \
                                and not (isinstance(s, ast.Assign)
                                         and entry_table(s.value) == "T" + x.id[1:]):
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
        barrier = not simple(fn.body)
        for s in fn.body:
            w, b = self.writes(s)
            out |= w
            barrier = barrier or b
        self.actions[fn.name] = ({r for r in out if r[0] != "L"}, barrier)

    def writes(self, s: ast.stmt) -> tuple[set[Res], bool]:
        """What a statement may write (nested blocks included), and whether it calls out."""
        w = s.__dict__.get("_wr")
        if w is None:
            w = s._wr = statement_writes(s, self)  # type: ignore[attr-defined]
        return w

    def _compute(self, e: Any) -> Info:
        t = type(e)
        if t is ast.Name:
            return Info(self.intern(("N", e.id)),
                         EMPTY if e.id == "F" else frozenset({("L", e.id)}),
                         False, frozenset({e.id}), True, False, EMPTY, ())
        if t is ast.Constant:
            v = e.value
            return Info(self.intern(("C", type(v), v)), EMPTY, False, EMPTY, True, False,
                         EMPTY, ())
        info = self.info
        own: Res | None = None
        out = False
        worth = True
        safe = True
        fr: frozenset[int] = EMPTY
        fx: tuple[ast.AST, ...] = ()
        if t is ast.BinOp:
            kids = [info(e.left), info(e.right)]
            op, r = e.op, e.right
            if isinstance(op, _UNSAFE_OPS):
                safe = False
            elif isinstance(op, ast.LShift):
                safe = is_int_const(r) and 0 <= r.value <= 1 << 16
            elif isinstance(op, ast.RShift):
                safe = is_int_const(r) and r.value >= 0
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
            name = call_name(e)
            worth = name in PURE_CALLS and not e.keywords
            out = name not in PURE_CALLS and name not in EFFECT_CALLS and not _is_hash(name)
            safe = False
            tag = ("Call",) if not e.keywords else ("?", self.opaque())
            if any(is_f(a) for a in e.args):
                fx = (e,)
        elif t is ast.Subscript:
            kids = [info(e.value), info(e.slice)]
            base = e.value
            worth = False
            tag = ("S",)
            if isinstance(base, ast.Name):
                if base.id == "F":
                    slot = f_slot(e)
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
                safe = isinstance(base, ast.Tuple) and is_int_const(e.slice)
        elif t is ast.Attribute:
            kids = [info(e.value)]
            worth = False
            if isinstance(e.value, ast.Name) and e.value.id == "pk":
                own = ("pk", e.attr)
                tag = ("A", e.attr)
            else:
                tag = ("?", self.opaque())
                safe = False
                kids.append(OPAQUE)
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
            return Info(self.opaque(), None, True, names, False, False, EMPTY, (e,))
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
        return Info(self.intern(tag + tuple(k.key for k in kids)),
                     None if deps is None else frozenset(deps), out, frozenset(names), safe,
                     worth, fr, fx)

OPAQUE = Info(-1, None, False, EMPTY, False, False, EMPTY, ())

def statement_writes(s: ast.stmt, keys: Keys) -> tuple[set[Res], bool]:
    """What a statement (with its nested blocks) may write, and whether it calls out."""
    out: set[Res] = set()
    called = keys.entry_call(s.value) if isinstance(s, ast.Expr) else None
    if called is not None:
        out |= called[0]
        barrier = called[1]
    else:
        barrier = any(keys.info(e).out for e in stmt_exprs(s))
    for t in stmt_targets(s):
        barrier = barrier or keys.info(t).out
        for x in (t.elts if isinstance(t, ast.Tuple) else [t]):
            if isinstance(x, ast.Name):
                out.add(("L", x.id))
            elif isinstance(x, ast.Subscript) and is_f(x.value):
                slot = f_slot(x)
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

def hits(writes: set[Res], barrier: bool, deps: frozenset[Res]) -> bool:
    for d in deps:
        if d in writes or (d[0] != "L" and barrier):
            return True
        if d[0] == "F" and (F_ANY in writes or (d == F_ANY
                                                and any(w[0] == "F" for w in writes))):
            return True
    return False
