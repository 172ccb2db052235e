"""Compile action bodies (bmv2 primitives, v1model/simple_switch set) into Python source.

Generated statements run with ``pk`` (the Pkt), ``F`` (the PHV) and ``P``
(action data) in scope. Semantics follow targets/simple_switch/primitives.cpp
and src/bm_sim/core/primitives.cpp; ``_jump``/``_jump_if_zero`` become a small
program-counter loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import ProgramError, UnsupportedConstruct
from .expressions import Bool, Ctx, Data, ExprCompiler, HeaderRef, UnionRef, fit
from .program import Program

Handler = Callable[["PrimitiveCompiler", list[Any], Ctx], list[str]]

_ARITY = {
    "assign": 2, "modify_field": 2, "assign_header": 2, "copy_header": 2, "assign_VL": 2,
    "assign_union": 2, "assign_union_stack": 2, "assign_header_stack": 2, "push": 2, "pop": 2,
    "add_header": 1, "add_header_fast": 1,
    "remove_header": 1, "mark_to_drop": 1, "drop": 0, "no_op": 0, "exit": 0,
    "add_to_field": 2, "subtract_from_field": 2, "add": 3, "subtract": 3, "bit_xor": 3,
    "bit_or": 3, "bit_and": 3, "shift_left": 3, "shift_right": 3,
    "count": 2, "register_read": 3, "register_write": 3, "modify_field_rng_uniform": 3,
    "modify_field_with_hash_based_offset": 4, "clone_ingress_pkt_to_egress": 2,
    "clone_egress_pkt_to_egress": 2, "resubmit": 1, "recirculate": 1, "truncate": 1,
    "assert": 1, "assume": 1, "log_msg": 2, "_jump": 1, "_jump_if_zero": 2,
}


class PrimitiveCompiler:
    """Turns primitive calls into Python statements."""

    def __init__(self, prog: Program, expr: ExprCompiler, calc_ids: dict[str, int]) -> None:
        self.prog = prog
        self.expr = expr
        self.calc_ids = calc_ids
        self.egress_spec = prog.fields["standard_metadata.egress_spec"]
        self.mcast = prog.optional_field("intrinsic_metadata.mcast_grp")

    # ---- action bodies ----------------------------------------------------

    def body(self, prims: list[dict[str, Any]], ctx: Ctx) -> list[str]:
        """Statements for a list of primitives (an action body)."""
        for i, p in enumerate(prims):
            self._check(p, ctx, i)
        if not any(p["op"] in ("_jump", "_jump_if_zero") for p in prims):
            lines: list[str] = []
            for p in prims:
                lines += self.one(p, ctx)
            return lines or ["pass"]
        return self._with_jumps(prims, ctx)

    def _check(self, p: Any, ctx: Ctx, i: int) -> None:
        if not isinstance(p, dict) or "op" not in p:
            raise ProgramError(f"malformed primitive #{i} in {ctx.where}")
        op = p["op"]
        if op not in _ARITY:
            raise UnsupportedConstruct(f"primitive '{op}' in {ctx.where}")
        n = len(p.get("parameters", []))
        if n != _ARITY[op]:
            raise ProgramError(f"primitive '{op}' in {ctx.where} takes {_ARITY[op]} "
                               f"parameter(s), got {n}")

    def _jump_target(self, j: Any, n: int, ctx: Ctx) -> int:
        d = self.expr.data(j, ctx)
        if d.const is None or not 0 <= d.const <= n:
            raise ProgramError(f"bad jump offset in {ctx.where}")
        return d.const

    def _with_jumps(self, prims: list[dict[str, Any]], ctx: Ctx) -> list[str]:
        n = len(prims)
        leaders = {0}
        for i, p in enumerate(prims):
            if p["op"] == "_jump":
                leaders |= {self._jump_target(p["parameters"][0], n, ctx), i + 1}
            elif p["op"] == "_jump_if_zero":
                leaders |= {self._jump_target(p["parameters"][1], n, ctx), i + 1}
        starts = sorted(x for x in leaders if x < n)

        def goto(t: int) -> list[str]:
            return ["break"] if t >= n else [f"pc = {t}", "continue"]

        lines = ["pc = 0", "while True:"]
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else n
            block: list[str] = []
            for i in range(start, end):
                p = prims[i]
                params = p["parameters"]
                if p["op"] == "_jump":
                    block += goto(self._jump_target(params[0], n, ctx))
                elif p["op"] == "_jump_if_zero":
                    cond = self.expr.data(params[0], ctx)
                    block.append(f"if {cond.code} == 0:")
                    block += ["    " + s for s in goto(self._jump_target(params[1], n, ctx))]
                else:
                    block += self.one(p, ctx)
            if end < n:
                block.append(f"pc = {end}")
            else:
                block.append("break")
            lines.append(f"    if pc == {start}:")
            lines += ["        " + s for s in block]
        lines.append("    break")
        return lines

    # ---- single primitives ------------------------------------------------

    def one(self, p: dict[str, Any], ctx: Ctx) -> list[str]:
        """Statements for one primitive call."""
        op = p["op"]
        handler = _HANDLERS.get(op)
        if handler is None:
            raise UnsupportedConstruct(f"primitive '{op}' in {ctx.where}")
        return handler(self, p.get("parameters", []), ctx)

    def _assign(self, params: list[Any], ctx: Ctx) -> list[str]:
        dst, src = params
        if isinstance(dst, dict) and dst.get("type") in ("header", "header_stack"):
            raise ProgramError(f"'assign' to a {dst['type']} in {ctx.where}")
        lv = self.expr.lvalue(dst, ctx)
        val = self.expr.data(src, ctx)
        return [f"F[{lv.slot}] = {fit(val, lv.width, lv.signed)}"]

    def assign_vl(self, dst_j: Any, src_j: Any, ctx: Ctx) -> list[str]:
        """bmv2's assign_VL: the varbit field takes the value and the width of the source."""
        dst, src = self._varbit(dst_j, ctx), self._varbit(src_j, ctx)
        return [f"F[{dst[1]}] = F[{src[1]}]", f"F[{dst[0]}] = F[{src[0]}]"]

    def _varbit(self, j: Any, ctx: Ctx) -> tuple[str, str]:
        """(value slot, width slot) code of a varbit field reference."""
        lv = self.expr.any_lvalue(j, ctx)
        if lv.width != 0:
            raise ProgramError(f"assign_VL on a field that is not varbit in {ctx.where}")
        if isinstance(j, dict) and j.get("type") == "field":
            fs = self.expr.prog.field_slot(j["value"][0], j["value"][1], ctx.where)
            h = self.prog.headers[fs.header]
            return str(fs.slot), str(h.valid_slot + 1)
        v = j.get("value") if isinstance(j, dict) else None
        if isinstance(v, dict) and v.get("op") == "access_field":
            h_ref = self.expr.header(v["left"], ctx)
            return lv.slot, h_ref.slot(h_ref.info.nfields + 1)
        raise UnsupportedConstruct(f"varbit operand {j!r} in {ctx.where}")

    def _assign_vl(self, params: list[Any], ctx: Ctx) -> list[str]:
        return self.assign_vl(params[0], params[1], ctx)

    def _assign_header(self, params: list[Any], ctx: Ctx) -> list[str]:
        dst = self.expr.header(params[0], ctx)
        src = self.expr.header(params[1], ctx)
        return self.copy_header(dst, src, ctx)

    def copy_header(self, dst: HeaderRef, src: HeaderRef, ctx: Ctx) -> list[str]:
        """bmv2's assign_header: copy fields and validity (varbit width included)."""
        if [(f.width, f.signed) for f in dst.info.fields] != \
                [(f.width, f.signed) for f in src.info.fields]:
            raise ProgramError(f"assign_header between different header types in {ctx.where}")
        n = dst.info.nfields
        lines = ["_d = " + dst.slot(0), "_s = " + src.slot(0)]
        copy = [f"F[_d:_d + {n}] = F[_s:_s + {n}]"]
        if dst.info.varbit is not None:
            copy.append(f"F[_d + {n + 1}] = F[_s + {n + 1}]")
        copy += HeaderRef("_d", dst.info, False).set_valid()
        valid = src.valid()
        if valid.code == "True":
            return [*lines, *copy]
        return [*lines, f"if F[_s + {n}]:", *("    " + x for x in copy),
                "else:", f"    F[_d + {n}] = 0"]

    def _assign_union(self, params: list[Any], ctx: Ctx) -> list[str]:
        dst = self.expr.union(params[0], ctx)
        src = self.expr.union(params[1], ctx)
        return self._copy_union(dst, src, ctx)

    def _copy_union(self, dst: UnionRef, src: UnionRef, ctx: Ctx) -> list[str]:
        if len(dst.info.members) != len(src.info.members):
            raise ProgramError(f"assign_union between different union types in {ctx.where}")
        lines: list[str] = []
        for i in range(len(dst.info.members)):
            lines += self.copy_header(dst.member(i), src.member(i), ctx)
        return lines

    def _assign_union_stack(self, params: list[Any], ctx: Ctx) -> list[str]:
        dst = self.expr.stack(params[0], ctx, unions=True).info
        src = self.expr.stack(params[1], ctx, unions=True).info
        assert dst.unions is not None and src.unions is not None
        if dst.depth != src.depth:
            raise ProgramError(f"assign_union_stack between different stacks in {ctx.where}")
        lines = [f"F[{dst.next_slot}] = F[{src.next_slot}]"]
        for d, s in zip(dst.unions, src.unions, strict=True):
            lines += self._copy_union(UnionRef(str(d.base), d, True),
                                      UnionRef(str(s.base), s, True), ctx)
        return lines

    def _assign_header_stack(self, params: list[Any], ctx: Ctx) -> list[str]:
        dst = self.expr.stack(params[0], ctx).info
        src = self.expr.stack(params[1], ctx).info
        if dst.depth != src.depth or dst.stride != src.stride:
            raise ProgramError(f"assign_header_stack between different stacks in {ctx.where}")
        size = dst.depth * dst.stride
        return [f"F[{dst.base}:{dst.base + size}] = F[{src.base}:{src.base + size}]",
                f"F[{dst.next_slot}] = F[{src.next_slot}]"]

    def _add_header(self, params: list[Any], ctx: Ctx) -> list[str]:
        h = self.expr.header(params[0], ctx)
        if h.info.metadata:
            return ["pass"]
        n = h.info.nfields
        ref = HeaderRef("_b", h.info, False)
        return [f"_b = {h.slot(0)}", f"if not F[_b + {n}]:",
                f"    F[_b:_b + {n}] = ZEROS[:{n}]", *("    " + x for x in ref.set_valid()),
                f"    pk.plen += {ref.nbytes()}"]

    def _add_header_fast(self, params: list[Any], ctx: Ctx) -> list[str]:
        return self.expr.header(params[0], ctx).set_valid()

    def _remove_header(self, params: list[Any], ctx: Ctx) -> list[str]:
        h = self.expr.header(params[0], ctx)
        vslot = h.slot(h.info.nfields)
        if h.static and h.info.metadata:
            return [f"pk.plen -= {h.nbytes()}", f"F[{vslot}] = 0"]
        return [f"if F[{vslot}]:", f"    pk.plen -= {h.nbytes()}", f"    F[{vslot}] = 0"]

    def _mark_to_drop(self, params: list[Any], ctx: Ctx) -> list[str]:
        h = self.expr.header(params[0], ctx)
        names = [f.name.split(".", 1)[1] for f in h.info.fields]
        if "egress_spec" not in names:
            raise ProgramError(f"mark_to_drop on '{h.info.name}' (no egress_spec) in {ctx.where}")
        es = h.info.fields[names.index("egress_spec")]
        lines = [f"F[{h.slot(names.index('egress_spec'))}] = DROP_PORT & {es.mask}"]
        if "mcast_grp" in names:
            lines.append(f"F[{h.slot(names.index('mcast_grp'))}] = 0")
        return lines

    def _drop(self, params: list[Any], ctx: Ctx) -> list[str]:
        lines = [f"F[{self.egress_spec.slot}] = DROP_PORT & {self.egress_spec.mask}"]
        if self.mcast is not None:
            lines.append(f"F[{self.mcast.slot}] = 0")
        return lines

    def _noop(self, params: list[Any], ctx: Ctx) -> list[str]:
        return ["pass"]

    def _exit(self, params: list[Any], ctx: Ctx) -> list[str]:
        return ["pk.exit = True"]

    def _count(self, params: list[Any], ctx: Ctx) -> list[str]:
        c = self._named(params[0], "counter_array", self.prog.counters, ctx)
        idx = self.expr.data(params[1], ctx)
        return [f"_i = {idx.code}", f"if 0 <= _i < {c.size}:",
                f"    CP{c.id}[_i] += 1", f"    CB{c.id}[_i] += pk.ilen"]

    def _register_read(self, params: list[Any], ctx: Ctx) -> list[str]:
        lv = self.expr.lvalue(params[0], ctx)
        r = self._named(params[1], "register_array", self.prog.registers, ctx)
        idx = self.expr.data(params[2], ctx)
        val = fit(Data(f"R{r.id}[_i]", r.bitwidth), lv.width, lv.signed)
        return [f"_i = {idx.code}", f"if 0 <= _i < {r.size}:", f"    F[{lv.slot}] = {val}"]

    def _register_write(self, params: list[Any], ctx: Ctx) -> list[str]:
        r = self._named(params[0], "register_array", self.prog.registers, ctx)
        idx = self.expr.data(params[1], ctx)
        val = self.expr.data(params[2], ctx)
        return [f"_i = {idx.code}", f"if 0 <= _i < {r.size}:",
                f"    R{r.id}[_i] = {fit(val, r.bitwidth, False)}"]

    def _rng(self, params: list[Any], ctx: Ctx) -> list[str]:
        lv = self.expr.lvalue(params[0], ctx)
        lo, hi = self.expr.data(params[1], ctx), self.expr.data(params[2], ctx)
        if lo.const == 0 and hi.const is not None and 0 < hi.const < 1 << 64 \
                and hi.const & (hi.const + 1) == 0:  # [0, 2^k): k random bits, same law
            bits = fit(Data(f"_getrandbits({hi.const.bit_length()})"), lv.width, lv.signed)
            return [f"F[{lv.slot}] = {bits}"]
        val = fit(Data("_randint(_lo, _hi)"), lv.width, lv.signed)
        return [f"_lo = ({lo.code}) & {(1 << 64) - 1}", f"_hi = ({hi.code}) & {(1 << 64) - 1}",
                "if _lo <= _hi:", f"    F[{lv.slot}] = {val}"]

    def _hash(self, params: list[Any], ctx: Ctx) -> list[str]:
        lv = self.expr.lvalue(params[0], ctx)
        base = self.expr.data(params[1], ctx)
        calc = params[2]
        if not isinstance(calc, dict) or calc.get("type") != "calculation" \
                or calc.get("value") not in self.calc_ids:
            raise ProgramError(f"unknown calculation {calc!r} in {ctx.where}")
        size = self.expr.data(params[3], ctx)
        h = self.calc_ids[calc["value"]]
        m64 = (1 << 64) - 1
        val = fit(Data(f"(H{h}(F, pk) % (_sz or 1) + (({base.code}) & {m64}))"),
                  lv.width, lv.signed)
        return [f"_sz = ({size.code}) & {m64}", f"F[{lv.slot}] = {val}"]

    def _clone(self, params: list[Any], ctx: Ctx) -> list[str]:
        session = self.expr.data(params[0], ctx)
        fl = self.expr.data(params[1], ctx)
        return [f"pk.clone = (({session.code}) & 0xFFFF) | 0x8000",
                f"pk.clone_fl = ({fl.code}) & 0xFFFF"]

    def _resubmit(self, params: list[Any], ctx: Ctx) -> list[str]:
        return [f"pk.resub = ({self.expr.data(params[0], ctx).code}) & 0xFFFF"]

    def _recirculate(self, params: list[Any], ctx: Ctx) -> list[str]:
        return [f"pk.recirc = ({self.expr.data(params[0], ctx).code}) & 0xFFFF"]

    def _truncate(self, params: list[Any], ctx: Ctx) -> list[str]:
        n = self.expr.data(params[0], ctx)
        return [f"_n = {n.code}", "if _n < pk.trunc:", "    pk.trunc = max(_n, 0)"]

    def _assert(self, params: list[Any], ctx: Ctx) -> list[str]:
        cond = self.expr.value(params[0], ctx)
        test = cond.code if isinstance(cond, Bool) else f"({cond.code}) != 0"
        msg = repr(f"assert/assume failed in {ctx.where}")
        return [f"if not ({test}):", f"    raise PacketError({msg})"]

    def _log_msg(self, params: list[Any], ctx: Ctx) -> list[str]:
        return ["pass"]

    def _named(self, j: Any, kind: str, table: dict[str, Any], ctx: Ctx) -> Any:
        if not isinstance(j, dict) or j.get("type") != kind:
            raise ProgramError(f"expected a {kind} in {ctx.where}, got {j!r}")
        obj = table.get(j.get("value"))
        if obj is None:
            raise ProgramError(f"unknown {kind} '{j.get('value')}' in {ctx.where}")
        return obj


def _binop(op: str) -> Handler:
    def handler(self: PrimitiveCompiler, params: list[Any], ctx: Ctx) -> list[str]:
        dst, a, b = params
        lv = self.expr.lvalue(dst, ctx)
        x, y = self.expr.data(a, ctx), self.expr.data(b, ctx)
        if op in ("<<", ">>"):
            code = f"_{'shl' if op == '<<' else 'shr'}({x.code}, {y.code})"
        else:
            code = f"({x.code} {op} {y.code})"
        return [f"F[{lv.slot}] = {fit(Data(code), lv.width, lv.signed)}"]
    return handler

def _accumulate(op: str) -> Handler:
    def handler(self: PrimitiveCompiler, params: list[Any], ctx: Ctx) -> list[str]:
        dst, d = params
        lv = self.expr.lvalue(dst, ctx)
        x = self.expr.data(d, ctx)
        code = f"(F[{lv.slot}] {op} {x.code})"
        return [f"F[{lv.slot}] = {fit(Data(code), lv.width, lv.signed)}"]
    return handler

def _push_pop(fn: str) -> Handler:
    def handler(self: PrimitiveCompiler, params: list[Any], ctx: Ctx) -> list[str]:
        st = self.expr.stack(params[0], ctx, unions=None).info
        num = self.expr.data(params[1], ctx)
        if st.unions is not None:
            return [f"_union{fn}(F, {st.base}, {st.stride}, {st.depth}, {st.next_slot}, "
                    f"{num.code})"]
        return [f"{fn}(F, {st.base}, {st.stride}, {st.depth}, {st.next_slot}, {num.code}, "
                f"{st.valid_offset})"]
    return handler


_HANDLERS: dict[str, Handler] = {
    "assign": PrimitiveCompiler._assign,
    "modify_field": PrimitiveCompiler._assign,
    "assign_header": PrimitiveCompiler._assign_header,
    "copy_header": PrimitiveCompiler._assign_header,
    "assign_VL": PrimitiveCompiler._assign_vl,
    "assign_union": PrimitiveCompiler._assign_union,
    "assign_union_stack": PrimitiveCompiler._assign_union_stack,
    "assign_header_stack": PrimitiveCompiler._assign_header_stack,
    "push": _push_pop("_push"),
    "pop": _push_pop("_pop"),
    "add_header": PrimitiveCompiler._add_header,
    "add_header_fast": PrimitiveCompiler._add_header_fast,
    "remove_header": PrimitiveCompiler._remove_header,
    "mark_to_drop": PrimitiveCompiler._mark_to_drop,
    "drop": PrimitiveCompiler._drop,
    "no_op": PrimitiveCompiler._noop,
    "exit": PrimitiveCompiler._exit,
    "add_to_field": _accumulate("+"),
    "subtract_from_field": _accumulate("-"),
    "add": _binop("+"),
    "subtract": _binop("-"),
    "bit_xor": _binop("^"),
    "bit_or": _binop("|"),
    "bit_and": _binop("&"),
    "shift_left": _binop("<<"),
    "shift_right": _binop(">>"),
    "count": PrimitiveCompiler._count,
    "register_read": PrimitiveCompiler._register_read,
    "register_write": PrimitiveCompiler._register_write,
    "modify_field_rng_uniform": PrimitiveCompiler._rng,
    "modify_field_with_hash_based_offset": PrimitiveCompiler._hash,
    "clone_ingress_pkt_to_egress": PrimitiveCompiler._clone,
    "clone_egress_pkt_to_egress": PrimitiveCompiler._clone,
    "resubmit": PrimitiveCompiler._resubmit,
    "recirculate": PrimitiveCompiler._recirculate,
    "truncate": PrimitiveCompiler._truncate,
    "assert": PrimitiveCompiler._assert,
    "assume": PrimitiveCompiler._assert,
    "log_msg": PrimitiveCompiler._log_msg,
}


def _push(F: list[int], base: int, stride: int, depth: int, nxt: int, num: int,
          voff: int) -> None:
    """P4_16 push_front(num): shift elements up, the first num become invalid."""
    if num <= 0:
        return
    num = min(num, depth)
    end = base + depth * stride
    F[base + num * stride:end] = F[base:end - num * stride]
    for i in range(num):
        F[base + i * stride + voff] = 0
    F[nxt] = min(depth, F[nxt] + num)


def _pop(F: list[int], base: int, stride: int, depth: int, nxt: int, num: int,
         voff: int) -> None:
    """P4_16 pop_front(num): shift elements down, the last num become invalid."""
    if num <= 0:
        return
    num = min(num, depth)
    end = base + depth * stride
    F[base:end - num * stride] = F[base + num * stride:end]
    for i in range(depth - num, depth):
        F[base + i * stride + voff] = 0
    F[nxt] -= min(F[nxt], num)


def _swap(F: list[int], a: int, b: int, n: int) -> None:
    F[a:a + n], F[b:b + n] = F[b:b + n], F[a:a + n]


def _union_push(F: list[int], base: int, stride: int, depth: int, nxt: int, num: int) -> None:
    """push_front on a union stack as bmv2 does it: swaps only (marking a union invalid is a
    no-op in bmv2, so the elements pushed in keep what was swapped into them)."""
    if num <= 0:
        return
    F[nxt] = min(depth, F[nxt] + num)
    for i in range(depth - 1, num - 1, -1):
        _swap(F, base + i * stride, base + (i - num) * stride, stride)


def _union_pop(F: list[int], base: int, stride: int, depth: int, nxt: int, num: int) -> None:
    """pop_front on a union stack as bmv2 does it: swaps only (see _union_push)."""
    if num <= 0:
        return
    F[nxt] -= min(F[nxt], num)
    for i in range(depth - num):
        _swap(F, base + i * stride, base + (i + num) * stride, stride)


STACK_HELPERS = {"_push": _push, "_pop": _pop, "_union_push": _union_push,
                 "_union_pop": _union_pop}
