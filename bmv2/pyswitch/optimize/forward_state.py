"""What the forward pass (step 2) knows at one point of a function (copies,
constants, available expressions, widths, known-zero bits, flags), and the
expression rewrites it uses: comparisons of ASTs, constant folding, boolean
forms, guarded subtractions."""

from __future__ import annotations

import ast

from .facts import F_ANY, Res, is_int_const


class State:
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

    def clone(self) -> State:
        s = State()
        s.copies = dict(self.copies)
        s.attrs = dict(self.attrs)
        s.avail = dict(self.avail)
        s.widths = dict(self.widths)
        s.fconst = dict(self.fconst)
        s.zeros = dict(self.zeros)
        s.flags = dict(self.flags)
        return s

    def meet(self, other: State) -> None:
        self.copies = {k: v for k, v in self.copies.items()
                       if k in other.copies and same_expr(other.copies[k], v)}
        self.attrs = {k: v for k, v in self.attrs.items()
                      if k in other.attrs and other.attrs[k].value == v.value
                      and type(other.attrs[k].value) is type(v.value)}
        self.avail = {k: v for k, v in self.avail.items() if other.avail.get(k) == v}
        self.widths = {k: v for k, v in self.widths.items() if other.widths.get(k) == v}
        self.fconst = {k: v for k, v in self.fconst.items()
                       if k in other.fconst and same_expr(other.fconst[k], v)}
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

def scratch_local(slot: int) -> str:
    """The local a scratch field (a slot only one function uses) lives in."""
    return f"m_{slot}"

def scratch_slot(name: str) -> int | None:
    """The slot a scratch field's local stands for (None: another local)."""
    return int(name[2:]) if name.startswith("m_") else None

def _reads(deps: frozenset[Res], res: Res) -> bool:
    """Does a value reading ``deps`` change when ``res`` is written?"""
    if res in deps:
        return True
    if res[0] == "F":
        return any(d[0] == "F" for d in deps) if res[1] == "*" else F_ANY in deps
    return False

def same_expr(a: ast.AST, b: ast.AST) -> bool:
    """Two copies (names, constants, tuples of constants) are the same value."""
    if isinstance(a, ast.Name):
        return isinstance(b, ast.Name) and a.id == b.id
    if isinstance(a, ast.Constant):
        return isinstance(b, ast.Constant) and type(a.value) is type(b.value) \
            and a.value == b.value
    if isinstance(a, ast.Tuple):
        return isinstance(b, ast.Tuple) and len(a.elts) == len(b.elts) \
            and all(same_expr(x, y) for x, y in zip(a.elts, b.elts, strict=True))
    return False

def is_bool(e: ast.AST) -> bool:
    if isinstance(e, ast.Compare):
        return True
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return True
    if isinstance(e, ast.Constant):
        return type(e.value) is bool
    if isinstance(e, ast.BoolOp):
        return all(is_bool(v) for v in e.values)
    return False

def is_b2d(e: ast.AST) -> bool:
    """``(1 if c else 0)`` with a boolean ``c``."""
    return isinstance(e, ast.IfExp) and isinstance(e.body, ast.Constant) \
        and type(e.body.value) is int and e.body.value == 1 \
        and isinstance(e.orelse, ast.Constant) and type(e.orelse.value) is int \
        and e.orelse.value == 0 and is_bool(e.test)

def pre_simplify(e: ast.expr) -> ast.expr:
    """``(1 if c else 0) == 1`` -> ``c`` and relatives, before ``(1 if c else 0)`` is
    shared."""
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], ast.Eq
                                                                       | ast.NotEq):
        left, right = e.left, e.comparators[0]
        if is_b2d(right) and is_int_const(left):
            left, right = right, left
        if is_b2d(left) and is_int_const(right):
            rv = right.value  # type: ignore[attr-defined]
            test = left.test  # type: ignore[attr-defined]
            if rv not in (0, 1):
                return ast.Constant(isinstance(e.ops[0], ast.NotEq))
            if (rv == 1) == isinstance(e.ops[0], ast.Eq):
                return pre_simplify(test)
            return ast.UnaryOp(ast.Not(), test)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitXor) and is_b2d(e.left) \
            and is_int_const(e.right) and e.right.value == 1:  # type: ignore[attr-defined]
        return ast.IfExp(e.left.test, ast.Constant(0), ast.Constant(1))  # type: ignore
    return e

def fold(op: ast.operator, a: int, b: int) -> int | None:
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

def guarded_sub(e: ast.IfExp) -> tuple[bool, ast.expr, ast.expr] | None:
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

COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
