"""P4 expressions and statements of the IR as Python source over one gress's PHV.

A compiled block reads and writes ``F`` (the PHV, ``layout.Phv``), ``P`` (an
action's control-plane parameters) and ``pk`` (the packet being parsed or
deparsed, and what a pass counts). Values follow P4's rules for bit<W>: every
arithmetic result is cut to its width, comparisons are unsigned; int<W> values
are kept in two's complement and widened where a comparison or shift needs
their sign.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .ir import Node, kind, member_name, name_of, path_name, unsupported
from .layout import Header, Obj, Phv, Scalar, Struct, Types, const_value


@dataclass(frozen=True)
class Param:
    """An action's control-plane parameter: P[index]."""

    index: int
    width: int


@dataclass(frozen=True)
class Const:
    """A compile-time value."""

    value: int


@dataclass(frozen=True)
class Named:
    """A program object code refers to by a module-global name: an extern instance,
    a table, an action, a parser state."""

    what: str          # "extern", "table", "action", "state", "packet", "builtin"
    decl: Node | None
    ident: str         # the Python name
    label: str = ""    # the control-plane name (actions: what action_run compares with)
    inline: tuple[Node, tuple[int, ...]] | None = None   # a table that always runs one action


Binding = Obj | Param | Const | Named

_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Shl": "<<", "BAnd": "&", "BOr": "|",
           "BXor": "^"}
PORT_METADATA_BITS = 64     # Tofino 1's PORT_METADATA_SIZE
_RELATION = {"Equ": "==", "Neq": "!=", "Lss": "<", "Leq": "<=", "Grt": ">", "Geq": ">="}


class Lines:
    """Python source, indented as it is written."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self._n = 0

    def add(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def tmp(self, stem: str = "t") -> str:
        self._n += 1
        return f"_{stem}{self._n}"

    def block(self) -> _Indent:
        return _Indent(self)


class _Indent:
    def __init__(self, out: Lines) -> None:
        self.out = out

    def __enter__(self) -> None:
        self.out.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.out.add("pass")
        self.out.depth -= 1


class Scope:
    """Names in force in a block: a chain of dicts, innermost first."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Binding] = {}

    def bind(self, name: str, value: Binding) -> None:
        self.names[name] = value

    def look(self, name: str) -> Binding:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        raise unsupported(f"unresolved name '{name}'")


def sx(value: int, width: int) -> int:
    """A two's complement value of ``width`` bits as a Python int."""
    return value - (1 << width) if value >> (width - 1) & 1 else value


def sat_add(a: int, b: int, width: int, signed: bool) -> int:
    """|+| : saturating addition."""
    if signed:
        v = sx(a, width) + sx(b, width)
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
        return max(lo, min(hi, v)) & ((1 << width) - 1)
    return min(a + b, (1 << width) - 1)


def sat_sub(a: int, b: int, width: int, signed: bool) -> int:
    """|-| : saturating subtraction."""
    if signed:
        v = sx(a, width) - sx(b, width)
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
        return max(lo, min(hi, v)) & ((1 << width) - 1)
    return max(a - b, 0)


RUNTIME = {"_sx": sx, "_sat_add": sat_add, "_sat_sub": sat_sub}


class CodeGen:
    """Expressions and statements of one gress's blocks as Python source.

    ``call_extern(binding, method, args, out)`` and ``call_table`` are the program
    compiler's: they know the runtime objects behind the names.
    """

    def __init__(self, types: Types, phv: Phv, errors: dict[str, int],
                 call_extern: Callable[..., str], watch: dict[int, int] | None = None) -> None:
        self.types = types
        self.phv = phv
        self.errors = errors
        self.call_extern = call_extern
        self.watch = watch or {}    # slot -> flag slot set whenever the slot is written

    def set(self, slot: int, value: str, out: Lines) -> None:
        """F[slot] = value (and the slot's written flag, if it has one)."""
        out.add(f"F[{slot}] = {value}")
        if slot in self.watch:
            out.add(f"F[{self.watch[slot]}] = 1")

    # ---- names and lvalues --------------------------------------------------

    def resolve(self, e: Node, scope: Scope) -> Binding:
        """What a PathExpression / Member chain names."""
        k = kind(e)
        if k == "PathExpression":
            return scope.look(path_name(e))
        if k == "Member":
            member = member_name(e)
            if kind(e["expr"]) == "TypeNameExpression":
                return self._type_member(e["expr"], member)
            base = self.resolve(e["expr"], scope)
            if isinstance(base, Struct):
                return base.members[member]
            if isinstance(base, Header) and member in base.fields:
                return base.fields[member]
            raise unsupported(f"member '{member}' of {type(base).__name__}", e)
        if k == "ArrayIndex":
            raise unsupported("header stacks", e)
        raise unsupported(f"not a name: {k}", e)

    def _type_member(self, t: Node, member: str) -> Binding:
        tname = path_name(t["typeName"]) if kind(t["typeName"]) == "Type_Name" else ""
        if tname == "error":
            return Const(self.errors[member])
        decl = self.types.decls.get(tname)
        if decl is not None and kind(decl) == "Type_Enum":
            names = [name_of(m) for m in decl["members"]]
            return Const(names.index(member))
        if decl is not None and kind(decl) == "Type_SerEnum":
            for m in decl["members"]:
                if name_of(m) == member:
                    return Const(int(m["value"]["value"]))
        raise unsupported(f"{tname}.{member}")

    def scalar(self, e: Node, scope: Scope) -> Scalar:
        b = self.resolve(e, scope)
        if not isinstance(b, Scalar):
            raise unsupported("a scalar was expected", e)
        return b

    # ---- expressions --------------------------------------------------------

    def width(self, e: Node) -> int:
        return self.types.width(e["type"])

    def signed(self, e: Node) -> bool:
        return self.types.is_signed(e["type"])

    def expr(self, e: Node, scope: Scope, out: Lines) -> str:
        """Python source for the value of ``e`` (a bit/int value as an int, bool as bool)."""
        k = kind(e)
        if k in ("Constant", "BoolLiteral"):
            v = const_value(e)
            if isinstance(v, bool):
                return repr(v)
            t = self.types.resolve(e["type"])
            if kind(t) == "Type_Bits":
                v &= (1 << int(t["size"])) - 1
            return str(v)
        if k in ("PathExpression", "Member") and not self._is_call_member(e):
            b = self.resolve(e, scope)
            if isinstance(b, Scalar):
                return f"F[{b.slot}]"
            if isinstance(b, Param):
                return f"P[{b.index}]"
            if isinstance(b, Const):
                return str(b.value)
            raise unsupported("a value was expected", e)
        if k == "Member":   # t.apply().hit / .miss
            return self._table_result(e, scope, out)
        if k in _BINARY:
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            w = self.width(e)
            if k == "Shl":
                return f"((({a}) << ({b})) & {(1 << w) - 1} if ({b}) < {w} else 0)"
            if k in ("BAnd", "BOr", "BXor"):
                return f"(({a}) {_BINARY[k]} ({b}))"
            return f"((({a}) {_BINARY[k]} ({b})) & {(1 << w) - 1})"
        if k == "Shr":
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            w = self.width(e)
            if self.signed(e):
                return f"((_sx({a}, {w}) >> ({b})) & {(1 << w) - 1})"
            return f"(({a}) >> ({b}))"
        if k in ("Div", "Mod"):
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            op = "//" if k == "Div" else "%"
            return f"(({a}) {op} ({b}) if ({b}) else 0)"
        if k in ("AddSat", "SubSat"):
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            fn = "_sat_add" if k == "AddSat" else "_sat_sub"
            return f"{fn}({a}, {b}, {self.width(e)}, {self.signed(e)})"
        if k in _RELATION:
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            lt = e["left"]["type"]
            if k not in ("Equ", "Neq") and self.types.is_signed(lt):
                w = self.types.width(lt)
                a, b = f"_sx({a}, {w})", f"_sx({b}, {w})"
            if kind(self.types.resolve(lt)) in ("Type_Header", "Type_Struct"):
                raise unsupported("comparing headers or structs", e)
            return f"(({a}) {_RELATION[k]} ({b}))"
        if k in ("LAnd", "LOr"):
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            return f"(({a}) {'and' if k == 'LAnd' else 'or'} ({b}))"
        if k == "LNot":
            return f"(not ({self.expr(e['expr'], scope, out)}))"
        if k == "Cmpl":
            return f"(~({self.expr(e['expr'], scope, out)}) & {(1 << self.width(e)) - 1})"
        if k == "Neg":
            return f"(-({self.expr(e['expr'], scope, out)}) & {(1 << self.width(e)) - 1})"
        if k == "UPlus":
            return self.expr(e["expr"], scope, out)
        if k == "Slice":
            v = self.expr(e["e0"], scope, out)
            hi, lo = const_value(e["e1"]), const_value(e["e2"])
            return f"((({v}) >> {lo}) & {(1 << (hi - lo + 1)) - 1})"
        if k == "Concat":
            a, b = self.expr(e["left"], scope, out), self.expr(e["right"], scope, out)
            return f"((({a}) << {self.width(e['right'])}) | ({b}))"
        if k == "Mux":
            c = self.expr(e["e0"], scope, out)
            a, b = self.expr(e["e1"], scope, out), self.expr(e["e2"], scope, out)
            return f"(({a}) if ({c}) else ({b}))"
        if k == "Cast":
            return self._cast(e, scope, out)
        if k == "MethodCallExpression":
            return self.call(e, scope, out)
        raise unsupported(f"expression {k}", e)

    def _is_call_member(self, e: Node) -> bool:
        return kind(e) == "Member" and kind(e["expr"]) == "MethodCallExpression"

    def _cast(self, e: Node, scope: Scope, out: Lines) -> str:
        v = self.expr(e["expr"], scope, out)
        dst = self.types.resolve(e["destType"])
        src = self.types.resolve(e["expr"]["type"])
        if kind(dst) == "Type_Boolean":
            return f"(({v}) != 0)"
        if kind(dst) != "Type_Bits":
            raise unsupported(f"cast to {kind(dst)}", e)
        w = int(dst["size"])
        if kind(src) == "Type_Boolean":
            return f"(1 if ({v}) else 0)"
        if kind(src) == "Type_Bits" and src.get("isSigned") and int(src["size"]) < w:
            return f"(_sx({v}, {int(src['size'])}) & {(1 << w) - 1})"
        if kind(src) == "Type_Bits" and int(src["size"]) <= w and not src.get("isSigned"):
            return v
        return f"(({v}) & {(1 << w) - 1})"

    def bits_of(self, e: Node, scope: Scope, out: Lines) -> tuple[str, int]:
        """(value, width) of a list or struct of fields concatenated, first field
        highest: the data a Hash, Checksum or register index is computed over."""
        k = kind(e)
        if k in ("ListExpression", "StructExpression"):
            parts = e["components"]
            if k == "StructExpression":
                parts = [c["expression"] for c in parts]
            code, total = "0", 0
            for p in parts:
                v, w = self.bits_of(p, scope, out)
                code = f"(({code}) << {w}) | ({v})" if total else v
                total += w
            return code, total
        if k in ("PathExpression", "Member") and not self._is_call_member(e):
            b = self.resolve(e, scope)
            if isinstance(b, Header):
                code, total = "0", 0
                for f in b.fields.values():
                    code = f"(({code}) << {f.width}) | F[{f.slot}]" if total else f"F[{f.slot}]"
                    total += f.width
                return code, total
        return self.expr(e, scope, out), self.width(e)

    def _table_result(self, e: Node, scope: Scope, out: Lines) -> str:
        call = e["expr"]
        member = member_name(e)
        target = self.resolve(call["method"]["expr"], scope)
        if not (isinstance(target, Named) and target.what == "table"):
            raise unsupported(f".{member} of a call that is no table apply", e)
        r = out.tmp("r")
        out.add(f"{r} = {target.ident}(pk, F)")
        if member == "hit":
            return f"{r}[0]"
        if member == "miss":
            return f"(not {r}[0])"
        if member == "action_run":
            return f"{r}[1]"
        raise unsupported(f"table apply().{member}", e)

    # ---- calls --------------------------------------------------------------

    def call(self, e: Node, scope: Scope, out: Lines) -> str:
        """A method or function call; its value ("None" for a void call)."""
        m = e["method"]
        args = [a["expression"] for a in e.get("arguments") or []]
        if kind(m) == "Member":
            method = member_name(m)
            obj = m["expr"]
            if method in ("isValid", "setValid", "setInvalid"):
                h = self.resolve(obj, scope)
                if not isinstance(h, Header):
                    raise unsupported(f"{method} on a non-header", e)
                if method == "isValid":
                    return f"F[{h.valid}]"
                out.add(f"F[{h.valid}] = {1 if method == 'setValid' else 0}")
                return "None"
            target = self.resolve(obj, scope)
            if isinstance(target, Named) and target.what == "table" and method == "apply":
                if target.inline is not None:     # its action's body, in place
                    action, args = target.inline
                    ascope = Scope(scope)
                    for p, v in zip(action["parameters"]["parameters"], args, strict=True):
                        ascope.bind(name_of(p), Const(v))
                    self.stmt(action["body"], ascope, out)
                    return "None"
                r = out.tmp("r")
                out.add(f"{r} = {target.ident}(pk, F)")
                return r
            if isinstance(target, Named):
                return self.call_extern(self, target, method, args, e, scope, out)
            raise unsupported(f"call of {method}", e)
        if kind(m) == "PathExpression":
            target = scope.look(path_name(m))
            if isinstance(target, Named) and target.what == "action":
                vals = ", ".join(self.expr(a, scope, out) for a in args)
                out.add(f"{target.ident}(pk, F, ({vals}{',' if args else ''}))")
                return "None"
            if isinstance(target, Named) and target.what == "builtin":
                return self.call_extern(self, target, path_name(m), args, e, scope, out)
        raise unsupported("call", e)

    # ---- statements ---------------------------------------------------------

    def copy(self, dst: Obj, src: Obj, out: Lines) -> None:
        """dst = src for headers and structs: every slot, validity too."""
        d, s = dst.slots() if not isinstance(dst, Scalar) else [dst.slot], \
            src.slots() if not isinstance(src, Scalar) else [src.slot]
        if len(d) != len(s):
            raise unsupported("assignment between different types")
        for a, b in zip(d, s, strict=True):
            self.set(a, f"F[{b}]", out)

    def stmt(self, s: Node | None, scope: Scope, out: Lines) -> None:
        """One statement (or declaration) as Python lines."""
        if s is None:
            return
        k = kind(s)
        if k == "BlockStatement":
            for c in s["components"]:
                self.stmt(c, scope, out)
        elif k == "AssignmentStatement":
            self._assignment(s, scope, out)
        elif k == "MethodCallStatement":
            v = self.call(s["methodCall"], scope, out)
            if v != "None" and not v.startswith("_r"):
                out.add(v)
        elif k == "IfStatement":
            out.add(f"if {self.expr(s['condition'], scope, out)}:")
            with out.block():
                self.stmt(s["ifTrue"], scope, out)
            if s.get("ifFalse") is not None:
                out.add("else:")
                with out.block():
                    self.stmt(s["ifFalse"], scope, out)
        elif k == "SwitchStatement":
            self._switch(s, scope, out)
        elif k == "Declaration_Variable":
            obj = self.phv.alloc(s["type"], name_of(s))
            scope.bind(name_of(s), obj)
            if s.get("initializer") is not None:
                self._store(obj, s["initializer"], scope, out)
        elif k == "Declaration_Constant":
            scope.bind(name_of(s), Const(const_value(s["initializer"])))
        elif k == "EmptyStatement":
            pass
        elif k == "ExitStatement":
            out.add("raise _Exit")
        elif k == "ReturnStatement":
            if s.get("expression") is not None:
                out.add(f"return {self.expr(s['expression'], scope, out)}")
            else:
                out.add("return")
        else:
            raise unsupported(f"statement {k}", s)

    def _assignment(self, s: Node, scope: Scope, out: Lines) -> None:
        left = s["left"]
        if kind(left) == "Slice":
            dst = self.scalar(left["e0"], scope)
            hi, lo = const_value(left["e1"]), const_value(left["e2"])
            m = ((1 << (hi - lo + 1)) - 1) << lo
            v = self.expr(s["right"], scope, out)
            self.set(dst.slot, f"(F[{dst.slot}] & {~m & dst.mask}) | ((({v}) << {lo}) & {m})", out)
            return
        self._store(self.resolve(left, scope), s["right"], scope, out)

    def _store(self, dst: Binding, value: Node, scope: Scope, out: Lines) -> None:
        k = kind(value)
        if isinstance(dst, Scalar):
            self.set(dst.slot, self.expr(value, scope, out), out)
            return
        if not isinstance(dst, Header | Struct):
            raise unsupported("assignment to a non-value", value)
        if k in ("PathExpression", "Member") and not self._is_call_member(value):
            src = self.resolve(value, scope)
            if isinstance(src, Header | Struct):
                self.copy(dst, src, out)
                return
        if k == "StructExpression":
            members = dst.fields if isinstance(dst, Header) else dst.members
            for c in value["components"]:
                self._store(members[name_of(c)], c["expression"], scope, out)
            if isinstance(dst, Header):
                out.add(f"F[{dst.valid}] = 1")
            return
        if k in ("InvalidHeader", "Invalid") and isinstance(dst, Header):
            out.add(f"F[{dst.valid}] = 0")
            return
        if (k == "MethodCallExpression" and isinstance(dst, Struct)
                and kind(value["method"]) == "PathExpression"
                and path_name(value["method"]) == "port_metadata_unpack"):
            self._port_metadata_unpack(dst, out)
            return
        raise unsupported(f"assignment of {k} to a header or struct", value)

    def _port_metadata_unpack(self, dst: Struct, out: Lines) -> None:
        """``T port_metadata_unpack<T>(pkt)``: T from the leading bits of the port
        metadata the ingress parser is at (PORT_METADATA_SIZE: 64 bits on Tofino 1),
        which the parser then skips."""
        leaves: list[Scalar] = []

        def collect(obj: Obj) -> None:
            if isinstance(obj, Scalar):
                leaves.append(obj)
            elif isinstance(obj, Struct):
                for m in obj.members.values():
                    collect(m)
            else:
                raise unsupported("port_metadata_unpack of a struct holding a header")
        collect(dst)
        width = sum(leaf.width for leaf in leaves)
        if width > PORT_METADATA_BITS:
            raise unsupported(f"port metadata of {width} bits")
        v = out.tmp("pm")
        nb = PORT_METADATA_BITS // 8
        out.add(f"if pk.pos + {nb} > pk.end:")
        out.add("    raise _TooShort")
        out.add(f"{v} = int.from_bytes(pk.data[pk.pos:pk.pos + {nb}], 'big')")
        out.add(f"pk.pos += {nb}")
        shift = PORT_METADATA_BITS
        for leaf in leaves:
            shift -= leaf.width
            self.set(leaf.slot, f"({v} >> {shift}) & {leaf.mask}", out)

    def _switch(self, s: Node, scope: Scope, out: Lines) -> None:
        subject = s["expression"]
        v = out.tmp("sw")
        out.add(f"{v} = {self.expr(subject, scope, out)}")
        action_run = kind(subject) == "Member" and self._is_call_member(subject)
        pending: list[str] = []
        first = True
        for case in s["cases"]:
            label = case["label"]
            if kind(label) == "DefaultExpression":
                pending.append("True")
            elif action_run:
                act = scope.look(path_name(label))
                if not isinstance(act, Named):
                    raise unsupported("a switch label that is no action", label)
                pending.append(f"{v} == {act.label!r}")
            else:
                pending.append(f"{v} == {self.expr(label, scope, out)}")
            if case.get("statement") is None:
                continue           # falls through to the next label's statement
            out.add(f"{'if' if first else 'elif'} {' or '.join(pending)}:")
            first = False
            pending = []
            with out.block():
                self.stmt(case["statement"], scope, out)


def unpack_lines(h: Header, value: str, out: Lines) -> None:
    """Lines that set a header's fields from its wire value (an int) and make it valid."""
    shift = h.nbits + h.pad
    for f in h.fields.values():
        shift -= f.width
        out.add(f"F[{f.slot}] = ({value} >> {shift}) & {f.mask}" if shift
                else f"F[{f.slot}] = {value} & {f.mask}")
    out.add(f"F[{h.valid}] = 1")


def pack_code(h: Header, shared: frozenset[int] = frozenset()) -> str:
    """Python source for a valid header's wire value (an int) from its fields; a
    field whose slot it shares with a wider one (@pa_alias) is cut to its width."""
    code, total = "0", 0
    for f in h.fields.values():
        v = f"(F[{f.slot}] & {f.mask})" if f.slot in shared else f"F[{f.slot}]"
        code = f"(({code}) << {f.width}) | {v}" if total else v
        total += f.width
    return f"(({code}) << {h.pad})" if h.pad else code

