"""Generate the parser: one function running the parse states as a small state machine.

bmv2 semantics (src/bm_sim/parser.cpp): an extract that finds too few bytes raises
PacketTooShort and parsing stops with what was extracted so far; select keys are the
concatenation of byte-padded fields; a state without a matching case and without a
default accepts. Parsers with loops get a step limit (ParserTimeout) so that a
program cannot hang the switch.
"""

from __future__ import annotations

from typing import Any

from .errors import ProgramError, UnsupportedConstruct
from .expressions import Ctx, ExprCompiler, HeaderRef, fit, hexint
from .primitives import PrimitiveCompiler
from .program import HeaderInfo, Program

PARSER_STEP_LIMIT = 1 << 16


def _indent(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + s for s in lines]


def _field_value(code: str, width: int, signed: bool) -> str:
    return f"({code} & {(1 << width) - 1})" if signed else code


def sign_extend(v: int, w: int) -> int:
    """A ``w``-bit two's complement value as a Python int."""
    return v - (1 << w) if v >> (w - 1) else v


class ParserGen:
    """Source of the parser of a program."""

    def __init__(self, prog: Program, expr: ExprCompiler, prims: PrimitiveCompiler,
                 err: dict[str, int]) -> None:
        self.prog = prog
        self.expr = expr
        self.prims = prims
        self.err = err

    def source(self) -> list[str]:
        """Lines defining ``parse(pk, F, data) -> (bytes parsed, error code)``."""
        p = self.prog.parser
        states = {s["name"]: s for s in p.get("parse_states", [])}
        ids = {name: i for i, name in enumerate(states)}
        init = p.get("init_state")
        if init is not None and init not in ids:
            raise ProgramError(f"parser init state '{init}' does not exist")
        cyclic = self._parser_cyclic(states)
        body = ["n = len(data)", "pos = 0"]
        if init is None:
            return ["def parse(pk, F, data):", "    return 0, 0", ""]
        body.append(f"st = {ids[init]}")
        if cyclic:
            body.append("steps = 0")
        loop: list[str] = []
        if cyclic:
            loop += ["steps += 1", f"if steps > {PARSER_STEP_LIMIT}:",
                     f"    raise ParserError({self.err['ParserTimeout']})"]
        for k, (name, s) in enumerate(states.items()):
            where = f"parser state '{name}'"
            code = self._state(s, ids, where)
            loop += [f"{'if' if k == 0 else 'elif'} st == {ids[name]}:", *_indent(code)]
        body += ["try:", "    while True:", *_indent(loop, 2),
                 "except ParserError as e:", "    return pos, e.code"]
        return ["def parse(pk, F, data):", *_indent(body), ""]

    def _parser_cyclic(self, states: dict[str, dict[str, Any]]) -> bool:
        color: dict[str, int] = {}

        def visit(name: str) -> bool:
            color[name] = 1
            for t in states[name].get("transitions", []):
                nxt = t.get("next_state")
                if nxt is None or nxt not in states:
                    continue
                if color.get(nxt) == 1 or (nxt not in color and visit(nxt)):
                    return True
            color[name] = 2
            return False

        return any(name not in color and visit(name) for name in states)

    def _state(self, s: dict[str, Any], ids: dict[str, int], where: str) -> list[str]:
        ctx = Ctx(where, parser=True)
        code: list[str] = []
        for op in s.get("parser_ops", []):
            code += self._parser_op(op, ctx)
        code += self._transitions(s, ids, ctx)
        return code

    def _extract(self, h: HeaderInfo, base: str | None, ctx: Ctx) -> list[str]:
        if h.varbit is not None:
            raise UnsupportedConstruct(f"'extract' of header '{h.name}' with a varbit field "
                                       f"(bmv2 needs 'extract_VL') in {ctx.where}")
        nb = h.nbytes
        pts = self.err["PacketTooShort"]
        lines = [f"_e = pos + {nb}", "if _e > n:", f"    raise ParserError({pts})",
                 "_v = int.from_bytes(data[pos:_e], 'big')"]
        vals = []
        shift = h.nbits
        for fs in h.fields:
            shift -= fs.width
            v = f"_v >> {shift}" if shift else "_v"
            if shift + fs.width < h.nbits:
                v = f"{v} & {fs.mask}" if shift else f"_v & {fs.mask}"
            if fs.signed:
                v = f"_sx({v}, {fs.width})"
            vals.append(v)
        return [*lines, *self._store(h, base, vals), "pos = _e"]

    def _store(self, h: HeaderInfo, base: str | None, vals: list[str]) -> list[str]:
        """Write extracted field values, mark the header valid (union siblings invalid)."""
        b = str(h.base) if base is None else base
        ref = HeaderRef(b, h, base is None)
        return [f"F[{ref.slot(0)}:{ref.slot(len(vals) + 1)}] = ({', '.join(vals)}, 1,)",
                *ref.set_valid()[1:]]

    def _extract_vl(self, h: HeaderInfo, base: str | None, length: str) -> list[str]:
        """bmv2's extract_VL: checks in its order, then fields around a varbit of ``length``."""
        if h.varbit is None:
            raise ProgramError(f"'extract_VL' of header '{h.name}' without a varbit field")
        b = str(h.base) if base is None else base
        ref = HeaderRef(b, h, base is None)
        width_slot = ref.slot(h.nfields + 1)
        lines = [f"_w = {length}", "if _w < 0 or _w % 8:",
                 f"    raise ParserError({self.err['ParserInvalidArgument']})",
                 f"_t = {h.nbytes} + (F[{width_slot}] >> 3) + (_w >> 3)",
                 "if n - pos < _t:", f"    raise ParserError({self.err['PacketTooShort']})"]
        if h.max_bytes:
            lines += [f"if _t > {h.max_bytes}:",
                      f"    raise ParserError({self.err['HeaderTooShort']})"]
        lines += [f"_e = pos + {h.nbytes} + (_w >> 3)", "_v = int.from_bytes(data[pos:_e], 'big')"]
        vals = []
        for i, fs in enumerate(h.fields):
            shift = sum(f.width for f in h.fields[i + 1:])  # the varbit counts 0 here
            mask = "((1 << _w) - 1)" if i == h.varbit else str(fs.mask)
            if i < h.varbit:
                v = f"(_v >> ({shift} + _w)) & {mask}"
            else:
                v = f"(_v >> {shift}) & {mask}" if shift else f"_v & {mask}"
            vals.append(f"_sx({v}, {fs.width})" if fs.signed else v)
        store = self._store(h, base, vals)
        return [*lines, *store, f"F[{width_slot}] = _w", "pos = _e"]

    def _extract_op(self, params: list[Any], ctx: Ctx, varbit: bool) -> list[str]:
        target = params[0]

        def one(h: HeaderInfo, base: str | None) -> list[str]:
            if not varbit:
                return self._extract(h, base, ctx)
            return self._extract_vl(h, base, self.expr.data(params[1], ctx).code)

        kind = target.get("type")
        if kind == "regular":
            h = self.prog.header(target["value"], ctx.where)
            if h.metadata:
                raise ProgramError(f"extract of metadata '{h.name}' in {ctx.where}")
            return one(h, None)
        if kind in ("stack", "union_stack"):
            if kind == "stack":
                st = self.prog.stack(target["value"], ctx.where)
                h, off = st.headers[0], 0
            else:
                st = self.prog.union_stack(target["value"][0], ctx.where)
                assert st.unions is not None
                found = st.unions[0].member(target["value"][1])
                if found is None:
                    raise ProgramError(f"no member '{target['value'][1]}' in union stack "
                                       f"'{st.name}' in {ctx.where}")
                h = found[1]
                off = h.base - st.base
            return [f"if F[{st.next_slot}] >= {st.depth}:",
                    f"    raise ParserError({self.err['StackOutOfBounds']})",
                    f"_b = {st.base + off} + F[{st.next_slot}] * {st.stride}",
                    *one(h, "_b"), f"F[{st.next_slot}] += 1"]
        raise UnsupportedConstruct(f"extract of type '{kind}' in {ctx.where}")

    def _parser_op(self, op: dict[str, Any], ctx: Ctx) -> list[str]:
        kind = op.get("op")
        params = op.get("parameters", [])
        pts = self.err["PacketTooShort"]
        if kind in ("extract", "extract_VL"):
            return self._extract_op(params, ctx, kind == "extract_VL")
        if kind == "set":
            if self.expr.any_lvalue(params[0], ctx).width == 0:
                return self.prims.assign_vl(params[0], params[1], ctx)
            dst = self.expr.lvalue(params[0], ctx)
            src = params[1]
            lines: list[str] = []
            if src.get("type") == "lookahead":
                nbytes = (int(src["value"][1]) + 7) // 8
                lines += [f"if n - pos < {nbytes}:", f"    raise ParserError({pts})"]
            val = self.expr.data(src, ctx)
            return [*lines, f"F[{dst.slot}] = {fit(val, dst.width, dst.signed)}"]
        if kind == "verify":
            cond = self.expr.boolean(params[0], ctx)
            err = self.expr.data(params[1], ctx)
            return [f"if not {cond.code}:", f"    raise ParserError({err.code})"]
        if kind == "shift":
            k = int(params[0]) if isinstance(params[0], int) else hexint(params[0], ctx.where)
            return [f"if n - pos < {k}:", f"    raise ParserError({pts})", f"pos += {k}"]
        if kind == "advance":
            amount = self.expr.data(params[0], ctx)
            bad = self.err["ParserInvalidArgument"]
            return [f"_a = {amount.code}", "if _a < 0 or _a % 8:", f"    raise ParserError({bad})",
                    "_a //= 8", "if n - pos < _a:", f"    raise ParserError({pts})", "pos += _a"]
        if kind == "primitive":
            return self.prims.body([params[0]], ctx)
        raise UnsupportedConstruct(f"parser operation '{kind}' in {ctx.where}")

    def _key_part(self, k: dict[str, Any], ctx: Ctx) -> tuple[str, int]:
        t = k.get("type")
        if t == "field":
            fs = self.prog.field_slot(k["value"][0], k["value"][1], ctx.where)
            if fs.varbit:
                raise UnsupportedConstruct(f"select on varbit field '{fs.name}' in {ctx.where}")
            return _field_value(f"F[{fs.slot}]", fs.width, fs.signed), fs.width
        if t == "stack_field":
            d = self.expr.data(k, ctx)
            _st, fs, _off = self.expr.stack_field(k["value"], ctx)
            return _field_value(d.code, fs.width, fs.signed), fs.width
        if t == "union_stack_field":
            slot, fs = self.expr.union_stack_field(k["value"], ctx)
            return _field_value(f"F[{slot}]", fs.width, fs.signed), fs.width
        if t == "lookahead":
            off, width = int(k["value"][0]), int(k["value"][1])
            return f"_peek(data, pos, {off}, {width})", width
        raise UnsupportedConstruct(f"transition key type '{t}' in {ctx.where}")

    def _transitions(self, s: dict[str, Any], ids: dict[str, int], ctx: Ctx) -> list[str]:
        def goto(nxt: str | None) -> list[str]:
            if nxt is None:
                return ["return pos, 0"]
            if nxt not in ids:
                raise ProgramError(f"unknown next state '{nxt}' in {ctx.where}")
            return [f"st = {ids[nxt]}", "continue"]

        keys = [self._key_part(k, ctx) for k in s.get("transition_key", [])]
        total = sum((w + 7) // 8 * 8 for _c, w in keys)
        parts = []
        shift = total
        for c, w in keys:
            shift -= (w + 7) // 8 * 8
            parts.append(f"({c} << {shift})" if shift else c)
        lines: list[str] = []
        default: str | None = None
        has_default = False
        cases: list[tuple[int, int | None, str | None]] = []
        for t in s.get("transitions", []):
            kind = t.get("type", "hexstr")
            if kind == "hexstr" and t.get("value") == "default":
                kind = "default"
            if kind == "default":
                default, has_default = t.get("next_state"), True
                break
            if kind != "hexstr":
                raise UnsupportedConstruct(f"transition type '{kind}' in {ctx.where}")
            value = hexint(t["value"], ctx.where)
            mask = t.get("mask")
            m = hexint(mask, ctx.where) if mask is not None else None
            cases.append((value, m, t.get("next_state")))
        if cases:
            if not parts:
                raise ProgramError(f"value transitions without a key in {ctx.where}")
            lines.append(f"_k = {' | '.join(parts)}")
            for value, m, nxt in cases:
                test = f"_k == {value}" if m is None else f"_k & {m} == {value & m}"
                lines += [f"if {test}:", *_indent(goto(nxt))]
        lines += goto(default if has_default else None)
        return lines

