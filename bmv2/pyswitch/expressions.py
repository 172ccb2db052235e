"""Compile bmv2 JSON expressions into Python source.

Semantics are bmv2's (src/bm_sim/expressions.cpp): integers of unbounded
precision (p4c inserts the masks and ``two_comp_mod`` that give P4 its
wrap-around), truncation only when a value is written into a field. Generated
code reads the PHV as ``F[slot]``, action data as ``P[i]`` and, in the parser,
the packet as ``data`` at offset ``pos``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import ParserError, ProgramError, UnsupportedConstruct
from .program import FieldSlot, HeaderInfo, Program, StackInfo, UnionInfo

SHIFT_LIMIT = 1 << 16


@dataclass(slots=True)
class Data:
    """An integer-valued expression; ``bits`` bounds it (0 <= v < 2**bits) when known."""

    code: str
    bits: int | None = None
    const: int | None = None


@dataclass(slots=True)
class Bool:
    """A boolean-valued expression."""

    code: str


@dataclass(slots=True)
class HeaderRef:
    """A header: fixed (``info`` is the instance) or one chosen at run time.

    A run-time choice (stack element, ``?:``) has the layout of ``info``:
    the same fields, the same union siblings at the same offsets.
    """

    base: str
    info: HeaderInfo
    static: bool

    def slot(self, offset: int) -> str:
        """Code for the slot at ``offset`` (``nfields``: validity, then the varbit width)."""
        if self.static:
            return str(self.info.base + offset)
        return f"{self.base} + {offset}" if offset else self.base

    def valid(self) -> Bool:
        """Code testing validity (metadata is always valid in bmv2)."""
        if self.info.metadata:
            return Bool("True")
        return Bool(f"(F[{self.slot(self.info.nfields)}] != 0)")

    def set_valid(self) -> list[str]:
        """Statements marking the header valid (a union member invalidates its siblings)."""
        n = self.info.nfields
        return [f"F[{self.slot(n)}] = 1", *(f"F[{self.slot(o)}] = 0" for o in self.info.siblings)]

    def nbytes(self) -> str:
        """Code for the size on the wire (the varbit field at its current width)."""
        if self.info.varbit is None:
            return str(self.info.nbytes)
        return f"({self.info.nbytes} + (F[{self.slot(self.info.nfields + 1)}] >> 3))"


@dataclass(slots=True)
class UnionRef:
    """A header union: fixed or a union stack element chosen at run time."""

    base: str
    info: UnionInfo
    static: bool

    def member(self, index: int) -> HeaderRef:
        """The member header at ``index``."""
        m = self.info.members[index]
        if self.static:
            return HeaderRef(str(m.base), m, True)
        off = m.base - self.info.base
        return HeaderRef(f"{self.base} + {off}" if off else self.base, m, False)

    def valid(self) -> Bool:
        """A union is valid when one of its members is."""
        tests = [self.member(i).valid().code for i in range(len(self.info.members))]
        return Bool("(" + " or ".join(tests) + ")") if tests else Bool("False")

    def layout(self) -> str:
        """(offset, nfields) of every member, relative to the union's base (helper argument)."""
        return repr(tuple((m.base - self.info.base, m.nfields) for m in self.info.members))


@dataclass(slots=True)
class StackRef:
    """A header stack or a header union stack (``info.unions`` set)."""

    info: StackInfo


@dataclass(slots=True)
class LValue:
    """A writable field: slot code and width."""

    slot: str
    width: int
    signed: bool


Value = Data | Bool | HeaderRef | UnionRef | StackRef


@dataclass(slots=True)
class Ctx:
    """Where an expression is compiled: for error messages, action data and parser access."""

    where: str
    params: list[int] | None = None
    parser: bool = False


def hexint(s: Any, where: str) -> int:
    """Value of a bmv2 ``hexstr`` (may be negative)."""
    if isinstance(s, bool) or not isinstance(s, str | int):
        raise ProgramError(f"bad hexstr {s!r} in {where}")
    if isinstance(s, int):
        return s
    try:
        return int(s, 16)
    except ValueError:
        raise ProgramError(f"bad hexstr {s!r} in {where}") from None


def fit(value: Data, width: int, signed: bool) -> str:
    """Code writing ``value`` into a field of ``width`` bits (bmv2 truncation)."""
    if not signed:
        if value.bits is not None and value.bits <= width:
            return value.code
        return f"({value.code} & {(1 << width) - 1})"
    if value.bits is not None and value.bits < width:
        return value.code
    half = 1 << (width - 1)
    return f"((({value.code} + {half}) & {(1 << width) - 1}) - {half})"


def _both(a: int | None, b: int | None, fn: Callable[[int, int], int]) -> int | None:
    return None if a is None or b is None else fn(a, b)


class ExprCompiler:
    """Turns JSON type/value objects into code strings."""

    def __init__(self, prog: Program, error_codes: dict[str, int]) -> None:
        self.prog = prog
        self.err = error_codes

    # ---- entry points -----------------------------------------------------

    def value(self, j: Any, ctx: Ctx) -> Value:
        """Compile any type/value object."""
        if not isinstance(j, dict) or "type" not in j:
            raise ProgramError(f"expected a type/value object in {ctx.where}, got {j!r}")
        t = j["type"]
        v = j.get("value")
        if t == "expression":
            if isinstance(v, dict) and "op" in v:
                return self._op(v, ctx)
            return self.value(v, ctx)
        handler = self._LEAVES.get(t)
        if handler is None:
            raise UnsupportedConstruct(f"operand type '{t}' in {ctx.where}")
        return handler(self, v, ctx)

    def data(self, j: Any, ctx: Ctx) -> Data:
        """Compile an integer-valued expression (booleans are not converted implicitly)."""
        r = self.value(j, ctx)
        if isinstance(r, Bool):
            return Data(f"(1 if {r.code} else 0)", 1)
        if not isinstance(r, Data):
            raise ProgramError(f"expected a data value in {ctx.where}, got a {type(r).__name__}")
        return r

    def boolean(self, j: Any, ctx: Ctx) -> Bool:
        """Compile a boolean expression."""
        r = self.value(j, ctx)
        if isinstance(r, Data):
            return Bool(f"({r.code} != 0)")
        if not isinstance(r, Bool):
            raise ProgramError(f"expected a boolean in {ctx.where}, got a {type(r).__name__}")
        return r

    def header(self, j: Any, ctx: Ctx) -> HeaderRef:
        """Compile a header-valued operand."""
        r = self.value(j, ctx)
        if not isinstance(r, HeaderRef):
            raise ProgramError(f"expected a header in {ctx.where}")
        return r

    def union(self, j: Any, ctx: Ctx) -> UnionRef:
        """Compile a header-union operand."""
        r = self.value(j, ctx)
        if not isinstance(r, UnionRef):
            raise ProgramError(f"expected a header union in {ctx.where}")
        return r

    def stack(self, j: Any, ctx: Ctx, unions: bool | None = False) -> StackRef:
        """Compile a stack operand: a header stack, a union stack (``unions``) or either (None)."""
        r = self.value(j, ctx)
        if not isinstance(r, StackRef) or \
                (unions is not None and (r.info.unions is not None) != unions):
            what = {False: "header stack", True: "header union stack", None: "stack"}[unions]
            raise ProgramError(f"expected a {what} in {ctx.where}")
        return r

    def lvalue(self, j: Any, ctx: Ctx) -> LValue:
        """Compile a writable field reference."""
        lv = self.any_lvalue(j, ctx)
        if lv.width == 0:
            raise UnsupportedConstruct(f"assignment of a value to varbit field {_short(j)} "
                                       f"in {ctx.where}")
        return lv

    def any_lvalue(self, j: Any, ctx: Ctx) -> LValue:
        """Compile a field reference, varbit fields included (width 0)."""
        if isinstance(j, dict) and j.get("type") == "field":
            f = self._field_slot(j["value"], ctx)
            return LValue(str(f.slot), f.width, f.signed)
        if isinstance(j, dict) and j.get("type") == "stack_field":
            st, fs, off = self.stack_field(j["value"], ctx)
            return LValue(self._last_slot(st, off), fs.width, fs.signed)
        if isinstance(j, dict) and j.get("type") == "union_stack_field":
            slot, fs = self.union_stack_field(j["value"], ctx)
            return LValue(slot, fs.width, fs.signed)
        if isinstance(j, dict) and j.get("type") == "expression":
            v = j.get("value")
            if isinstance(v, dict) and v.get("op") == "access_field":
                h = self.header(v["left"], ctx)
                return self._access_lvalue(h, v["right"], ctx)
            if isinstance(v, dict) and "type" in v:
                return self.any_lvalue(v, ctx)
        raise UnsupportedConstruct(f"assignment target {_short(j)} in {ctx.where}")

    # ---- leaves -----------------------------------------------------------

    def _field_slot(self, v: Any, ctx: Ctx) -> FieldSlot:
        return self.prog.field_slot(v[0], v[1], ctx.where)

    def _leaf_field(self, v: Any, ctx: Ctx) -> Data:
        f = self._field_slot(v, ctx)
        return Data(f"F[{f.slot}]", None if f.signed or f.varbit else f.width)

    def _leaf_hexstr(self, v: Any, ctx: Ctx) -> Data:
        c = hexint(v, ctx.where)
        return Data(str(c) if c >= 0 else f"({c})", c.bit_length() if c >= 0 else None, c)

    def _leaf_bool(self, v: Any, ctx: Ctx) -> Bool:
        return Bool("True" if v else "False")

    def _leaf_local(self, v: Any, ctx: Ctx) -> Data:
        if ctx.params is None:
            raise ProgramError(f"action data used outside an action in {ctx.where}")
        i = int(v)
        if not 0 <= i < len(ctx.params):
            raise ProgramError(f"action data index {i} out of range in {ctx.where}")
        return Data(f"P[{i}]", ctx.params[i])

    def _leaf_header(self, v: Any, ctx: Ctx) -> HeaderRef:
        h = self.prog.header(v, ctx.where)
        return HeaderRef(str(h.base), h, True)

    def _leaf_stack(self, v: Any, ctx: Ctx) -> StackRef:
        return StackRef(self.prog.stack(v, ctx.where))

    def _leaf_union(self, v: Any, ctx: Ctx) -> UnionRef:
        u = self.prog.union(v, ctx.where)
        return UnionRef(str(u.base), u, True)

    def _leaf_union_stack(self, v: Any, ctx: Ctx) -> StackRef:
        return StackRef(self.prog.union_stack(v, ctx.where))

    def union_stack_field(self, v: Any, ctx: Ctx) -> tuple[str, FieldSlot]:
        """Slot code and field of ``[union stack, member, field]`` in the last element."""
        st = self.prog.union_stack(v[0], ctx.where)
        assert st.unions is not None
        found = st.unions[0].member(v[1])
        if found is None:
            raise ProgramError(f"no member '{v[1]}' in union stack '{v[0]}' in {ctx.where}")
        m = found[1]
        for off, fs in enumerate([*m.fields, FieldSlot("$valid$", m.valid_slot, 1, False, "")]):
            if fs.name.rsplit(".", 1)[-1] == v[2]:
                return (f"_last(F[{st.next_slot}], {st.stride}, {self.err['StackOutOfBounds']}) "
                        f"+ {m.base + off}"), fs
        raise ProgramError(f"unknown field '{v[2]}' of '{v[0]}.{v[1]}' in {ctx.where}")

    def _leaf_union_stack_field(self, v: Any, ctx: Ctx) -> Data:
        slot, fs = self.union_stack_field(v, ctx)
        return Data(f"F[{slot}]", None if fs.signed or fs.varbit else fs.width)

    def stack_field(self, v: Any, ctx: Ctx) -> tuple[StackInfo, FieldSlot, int]:
        """Stack, field and field offset of a ``stack_field`` reference."""
        st = self.prog.stack(v[0], ctx.where)
        h0 = st.headers[0]
        for off, fs in enumerate(h0.fields):
            if fs.name == f"{h0.name}.{v[1]}":
                return st, fs, off
        if v[1] == "$valid$":
            return st, FieldSlot(f"{h0.name}.$valid$", h0.valid_slot, 1, False, h0.name), h0.nfields
        raise ProgramError(f"unknown field '{v[1]}' of stack '{v[0]}' in {ctx.where}")

    def _last_slot(self, st: StackInfo, off: int) -> str:
        return (f"_last(F[{st.next_slot}], {st.stride}, {self.err['StackOutOfBounds']}) "
                f"+ {st.base + off}")

    def _leaf_stack_field(self, v: Any, ctx: Ctx) -> Data:
        st, fs, off = self.stack_field(v, ctx)
        return Data(f"F[{self._last_slot(st, off)}]", None if fs.signed or fs.varbit else fs.width)

    def _leaf_register(self, v: Any, ctx: Ctx) -> Data:
        reg = self.prog.registers.get(v[0])
        if reg is None:
            raise ProgramError(f"unknown register array '{v[0]}' in {ctx.where}")
        idx = self.data(v[1], ctx)
        return Data(f"R{reg.id}[_chk({idx.code}, {reg.size})]", reg.bitwidth)

    def _leaf_lookahead(self, v: Any, ctx: Ctx) -> Data:
        if not ctx.parser:
            raise UnsupportedConstruct(f"lookahead outside the parser in {ctx.where}")
        off, width = int(v[0]), int(v[1])
        return Data(f"_peek(data, pos, {off}, {width})", width)

    _LEAVES: ClassVar[dict[str, Callable[[ExprCompiler, Any, Ctx], Value]]] = {
        "field": _leaf_field,
        "hexstr": _leaf_hexstr,
        "bool": _leaf_bool,
        "local": _leaf_local,
        "runtime_data": _leaf_local,
        "header": _leaf_header,
        "header_stack": _leaf_stack,
        "header_union": _leaf_union,
        "header_union_stack": _leaf_union_stack,
        "union_stack_field": _leaf_union_stack_field,
        "stack_field": _leaf_stack_field,
        "register": _leaf_register,
        "lookahead": _leaf_lookahead,
    }

    # ---- operators --------------------------------------------------------

    def _access_lvalue(self, h: HeaderRef, off: Any, ctx: Ctx) -> LValue:
        fs = self._field_at(h, off, ctx)
        return LValue(h.slot(int(off)), fs.width, fs.signed)

    def _field_at(self, h: HeaderRef, off: Any, ctx: Ctx) -> FieldSlot:
        if not isinstance(off, int) or not 0 <= off <= h.info.nfields:
            raise ProgramError(f"field offset {off!r} out of range in {ctx.where}")
        if off == h.info.nfields:
            return FieldSlot("$valid$", h.info.valid_slot, 1, False, h.info.name)
        return h.info.fields[off]

    def _op(self, e: dict[str, Any], ctx: Ctx) -> Value:
        op = e["op"]
        left, right = e.get("left"), e.get("right")
        if op in _ARITH:
            return self._arith(op, left, right, ctx)
        if op in ("==", "!="):
            return self._equality(op, left, right, ctx)
        if op in ("<", ">", "<=", ">="):
            a, b = self.data(left, ctx), self.data(right, ctx)
            return Bool(f"({a.code} {op} {b.code})")
        if op in ("and", "or"):
            a, b = self.boolean(left, ctx), self.boolean(right, ctx)
            return Bool(f"({a.code} {op} {b.code})")
        if op == "not":
            return Bool(f"(not {self.boolean(right, ctx).code})")
        if op == "~":
            return Data(f"(~{self.data(right, ctx).code})")
        if op == "d2b":
            return Bool(f"({self.data(right, ctx).code} != 0)")
        if op == "b2d":
            return Data(f"(1 if {self.boolean(right, ctx).code} else 0)", 1)
        if op == "valid":
            return self.header(right, ctx).valid()
        if op == "?":
            return self._ternary(self.boolean(e["cond"], ctx), self.value(left, ctx),
                                 self.value(right, ctx), ctx)
        if op == "valid_union":
            return self.union(right, ctx).valid()
        if op in ("two_comp_mod", "usat_cast", "sat_cast"):
            return self._cast(op, left, right, ctx)
        if op in ("dereference_header_stack", "dereference_stack"):
            st = self.stack(left, ctx).info
            idx = self.data(right, ctx)
            h0 = st.headers[0]
            if idx.const is not None:
                if not 0 <= idx.const < st.depth:
                    return HeaderRef(f"({st.base} + _idx({idx.const}, {st.depth}, "
                                     f"{self.err['StackOutOfBounds']}) * {st.stride})", h0, False)
                h = st.headers[idx.const]
                return HeaderRef(str(h.base), h, True)
            return HeaderRef(f"({st.base} + _idx({idx.code}, {st.depth}, "
                             f"{self.err['StackOutOfBounds']}) * {st.stride})", h0, False)
        if op == "dereference_union_stack":
            st = self.stack(left, ctx, unions=True).info
            assert st.unions is not None
            idx = self.data(right, ctx)
            if idx.const is not None and 0 <= idx.const < st.depth:
                u = st.unions[idx.const]
                return UnionRef(str(u.base), u, True)
            return UnionRef(f"({st.base} + _idx({idx.code}, {st.depth}, "
                            f"{self.err['StackOutOfBounds']}) * {st.stride})", st.unions[0], False)
        if op == "access_union_header":
            u = self.union(left, ctx)
            if not isinstance(right, int) or not 0 <= right < len(u.info.members):
                raise ProgramError(f"union member offset {right!r} out of range in {ctx.where}")
            return u.member(right)
        if op == "last_stack_index":
            st = self.stack(right, ctx, unions=None).info
            return Data(f"(F[{st.next_slot}] - 1)")
        if op == "size_stack":
            st = self.stack(right, ctx, unions=None).info
            return Data(f"F[{st.next_slot}]", st.depth.bit_length())
        if op == "access_field":
            h = self.header(left, ctx)
            fs = self._field_at(h, right, ctx)
            return Data(f"F[{h.slot(int(right))}]", None if fs.signed or fs.varbit else fs.width)
        raise UnsupportedConstruct(f"expression operator '{op}' in {ctx.where}")

    def _arith(self, op: str, left: Any, right: Any, ctx: Ctx) -> Data:
        unary = left is None and op in ("+", "-")
        a = Data("0", 0, 0) if unary else self.data(left, ctx)
        b = self.data(right, ctx)
        if op == "&":
            shifted = self._masked_shift(left, b, ctx)
            if shifted is not None:
                return shifted
            known = [x for x in (a.bits, b.bits) if x is not None]
            return Data(f"({a.code} & {b.code})", min(known) if known else None)
        if op in ("|", "^"):
            return Data(f"({a.code} {op} {b.code})", _both(a.bits, b.bits, max))
        if op == "+":
            return Data(f"({a.code} + {b.code})", _both(a.bits, b.bits, lambda x, y: max(x, y) + 1))
        if op == "-":
            return Data(f"({a.code} - {b.code})")
        if op == "*":
            return Data(f"({a.code} * {b.code})", _both(a.bits, b.bits, lambda x, y: x + y))
        if op == "<<":
            if b.const is not None and 0 <= b.const <= SHIFT_LIMIT:
                return Data(f"({a.code} << {b.const})",
                            None if a.bits is None else a.bits + b.const)
            return Data(f"_shl({a.code}, {b.code})")
        if op == ">>":
            if b.const is not None and b.const >= 0:
                return Data(f"({a.code} >> {b.const})",
                            None if a.bits is None else max(a.bits - b.const, 0))
            return Data(f"_shr({a.code}, {b.code})", a.bits)
        if op == "%":
            return Data(f"_mod({a.code}, {b.code})", _both(a.bits, b.bits, min))
        return Data(f"_div({a.code}, {b.code})", a.bits)  # "/"

    def _masked_shift(self, left: Any, mask: Data, ctx: Ctx) -> Data | None:
        """``(x << y) & m`` with a run-time ``y``: never build a huge intermediate."""
        if mask.const is None or mask.const < 0:
            return None
        inner = left.get("value") if isinstance(left, dict) else None
        if not (isinstance(inner, dict) and inner.get("op") == "<<"):
            return None
        amount = self.data(inner["right"], ctx)
        if amount.const is not None:
            return None
        x = self.data(inner["left"], ctx)
        return Data(f"_shlm({x.code}, {amount.code}, {mask.const})", mask.const.bit_length())

    def _ternary(self, c: Bool, a: Value, b: Value, ctx: Ctx) -> Value:
        """``c ? a : b`` on data, booleans, headers or unions (bmv2 evaluates one side)."""
        pick = f"if {c.code} else"
        if isinstance(a, Data) and isinstance(b, Data):
            return Data(f"({a.code} {pick} {b.code})", _both(a.bits, b.bits, max))
        if isinstance(a, Bool) and isinstance(b, Bool):
            return Bool(f"({a.code} {pick} {b.code})")
        if isinstance(a, HeaderRef) and isinstance(b, HeaderRef):
            if _header_layout(a.info) != _header_layout(b.info):
                raise ProgramError(f"'?' between headers of different types in {ctx.where}")
            return HeaderRef(f"({a.slot(0)} {pick} {b.slot(0)})", a.info, False)
        if isinstance(a, UnionRef) and isinstance(b, UnionRef):
            if [_header_layout(m) for m in a.info.members] != \
                    [_header_layout(m) for m in b.info.members]:
                raise ProgramError(f"'?' between unions of different types in {ctx.where}")
            return UnionRef(f"({a.base} {pick} {b.base})", a.info, False)
        raise UnsupportedConstruct(f"'?' between a {type(a).__name__} and a {type(b).__name__} "
                                   f"in {ctx.where}")

    def _equality(self, op: str, left: Any, right: Any, ctx: Ctx) -> Bool:
        a, b = self.value(left, ctx), self.value(right, ctx)
        if isinstance(a, UnionRef) and isinstance(b, UnionRef):
            if [m.type_name for m in a.info.members] != [m.type_name for m in b.info.members]:
                return Bool("False" if op == "==" else "True")
            code = f"_union_eq(F, {a.base}, {b.base}, {a.layout()})"
            return Bool(code if op == "==" else f"(not {code})")
        if isinstance(a, HeaderRef) and isinstance(b, HeaderRef):
            if a.info.type_name != b.info.type_name:  # bmv2 compares header type ids
                return Bool("False" if op == "==" else "True")
            code = f"_hdr_eq(F, {a.slot(0)}, {b.slot(0)}, {a.info.nfields}, " \
                   f"{a.valid().code}, {b.valid().code})"
            return Bool(code if op == "==" else f"(not {code})")
        if isinstance(a, Bool) and isinstance(b, Bool):
            return Bool(f"({a.code} {op} {b.code})")
        if isinstance(a, Data) and isinstance(b, Data):
            return Bool(f"({a.code} {op} {b.code})")
        if isinstance(a, Bool | Data) and isinstance(b, Bool | Data):
            da, db = self._as_data(a), self._as_data(b)
            return Bool(f"({da.code} {op} {db.code})")
        raise UnsupportedConstruct(f"'{op}' between these operands in {ctx.where}")

    def _as_data(self, v: Data | Bool) -> Data:
        return v if isinstance(v, Data) else Data(f"(1 if {v.code} else 0)", 1)

    def _cast(self, op: str, left: Any, right: Any, ctx: Ctx) -> Data:
        a, w = self.data(left, ctx), self.data(right, ctx)
        if w.const is None:
            return Data(f"_{op}({a.code}, {w.code})")
        width = w.const
        if width <= 0:
            raise ProgramError(f"{op} to width {width} in {ctx.where}")
        if op == "two_comp_mod":
            half = 1 << (width - 1)
            return Data(f"((({a.code} + {half}) & {(1 << width) - 1}) - {half})")
        if op == "usat_cast":
            return Data(f"min(max({a.code}, 0), {(1 << width) - 1})", width)
        half = 1 << (width - 1)
        return Data(f"min(max({a.code}, {-half}), {half - 1})")


_ARITH = {"+", "-", "*", "<<", ">>", "&", "|", "^", "%", "/"}


def _header_layout(h: HeaderInfo) -> tuple[Any, ...]:
    """What two headers must share for one to stand for the other in generated code."""
    return (tuple((f.width, f.signed) for f in h.fields), h.metadata, h.siblings)


def _short(j: Any) -> str:
    text = repr(j)
    return text if len(text) < 120 else text[:117] + "..."


# ---- run-time helpers used by generated code --------------------------------


def _last(n: int, stride: int, err: int) -> int:
    if n <= 0:
        raise ParserError(err)
    return (n - 1) * stride


def _idx(i: int, depth: int, err: int) -> int:
    if 0 <= i < depth:
        return i
    raise ParserError(err)


def _chk(i: int, size: int) -> int:
    if 0 <= i < size:
        return i
    raise IndexError(f"register index {i} out of range")


def _shl(a: int, b: int) -> int:
    if b < 0 or b > SHIFT_LIMIT:
        raise OverflowError(f"shift by {b}")
    return a << b


def _shlm(a: int, b: int, mask: int) -> int:
    if b < 0:
        raise OverflowError(f"shift by {b}")
    if b > mask.bit_length():
        return 0
    return (a << b) & mask


def _shr(a: int, b: int) -> int:
    if b < 0:
        raise OverflowError(f"shift by {b}")
    return a >> b


def _mod(a: int, b: int) -> int:
    return a % b


def _div(a: int, b: int) -> int:
    return a // b


def _two_comp_mod(v: int, w: int) -> int:
    half = 1 << (w - 1)
    return ((v + half) & ((1 << w) - 1)) - half


def _usat_cast(v: int, w: int) -> int:
    return min(max(v, 0), (1 << w) - 1)


def _sat_cast(v: int, w: int) -> int:
    half = 1 << (w - 1)
    return min(max(v, -half), half - 1)


def _peek(data: bytes, pos: int, off: int, width: int) -> int:
    """``width`` bits at bit ``off`` after byte ``pos``; zeros past the end."""
    start = pos + off // 8
    nbits = off % 8 + width
    nbytes = (nbits + 7) // 8
    chunk = data[start:start + nbytes]
    value = int.from_bytes(chunk, "big") << 8 * (nbytes - len(chunk))
    return (value >> (nbytes * 8 - nbits)) & ((1 << width) - 1)


def _hdr_eq(F: list[int], a: int, b: int, n: int, va: bool, vb: bool) -> bool:
    return va and vb and F[a:a + n] == F[b:b + n]


def _union_eq(F: list[int], a: int, b: int, layout: tuple[tuple[int, int], ...]) -> bool:
    """bmv2's HeaderUnion::cmp: the same member valid in both, with equal fields."""
    for off, n in layout:
        if F[a + off + n]:
            return bool(F[b + off + n]) and F[a + off:a + off + n] == F[b + off:b + off + n]
    return False


RUNTIME_HELPERS: dict[str, Any] = {
    "_last": _last,
    "_idx": _idx,
    "_chk": _chk,
    "_shl": _shl,
    "_shlm": _shlm,
    "_shr": _shr,
    "_mod": _mod,
    "_div": _div,
    "_two_comp_mod": _two_comp_mod,
    "_usat_cast": _usat_cast,
    "_sat_cast": _sat_cast,
    "_peek": _peek,
    "_hdr_eq": _hdr_eq,
    "_union_eq": _union_eq,
}
