"""Parsers of a TNA program, and the packet methods: extract, advance, lookahead
(parsers) and emit (deparsers)."""

from __future__ import annotations

from .codegen import CodeGen, Lines, Scope, pack_code, unpack_lines
from .ir import Node, kind, path_name, unsupported
from .layout import Header, Types

PARSER_STATE_LIMIT = 256     # states one parse may visit (Tofino's parser has no loops)


class ParserCompiler:
    """The parser half of ``program.ProgramCompiler``."""

    types: Types
    out: Lines
    shared_slots: frozenset[int]

    def _packet_call(self, gen: CodeGen, method: str, args: list[Node], e: Node,
                     scope: Scope, out: Lines) -> str:
        if method == "extract":
            h = gen.resolve(args[0], scope)
            if not isinstance(h, Header):
                raise unsupported("extract of a non-header", e)
            n = h.nbytes
            out.add(f"if pk.pos + {n} > pk.end:")
            out.add("    raise _TooShort")
            v = out.tmp("x")
            out.add(f"{v} = int.from_bytes(pk.data[pk.pos:pk.pos + {n}], 'big')")
            out.add(f"pk.pos += {n}")
            unpack_lines(h, v, out)
            return "None"
        if method == "advance":
            n = gen.expr(args[0], scope, out)
            out.add(f"if pk.pos + ({n}) // 8 > pk.end:")
            out.add("    raise _TooShort")
            out.add(f"pk.pos += ({n}) // 8")
            return "None"
        if method == "lookahead":
            w = self.types.width(e["typeArguments"][0]) if e.get("typeArguments") \
                else gen.width(e)
            nb = (w + 7) // 8
            out.add(f"if pk.pos + {nb} > pk.end:")
            out.add("    raise _TooShort")
            return (f"(int.from_bytes(pk.data[pk.pos:pk.pos + {nb}], 'big') >> {nb * 8 - w})")
        if method == "emit":
            h = gen.resolve(args[0], scope)
            if isinstance(h, Header):
                out.add(f"if F[{h.valid}]:")
                value = pack_code(h, self.shared_slots)
                out.add(f"    pk.out += ({value}).to_bytes({h.nbytes}, 'big')")
                return "None"
            raise unsupported("emit of a non-header", e)
        raise unsupported(f"packet.{method}", e)
    def _transition(self, gen: CodeGen, scope: Scope, sel: Node | None,
                    idents: dict[str, str], out: Lines) -> None:
        def target(name: str) -> str:
            if name == "accept":
                return "None"
            if name == "reject":
                return "_reject_state"
            return idents[name]

        if sel is None:
            out.add("return None")
            return
        if kind(sel) == "PathExpression":
            out.add(f"return {target(path_name(sel))}")
            return
        keys = sel["select"]["components"]
        kv = [out.tmp("k") for _ in keys]
        for v, k in zip(kv, keys, strict=True):
            out.add(f"{v} = {gen.expr(k, scope, out)}")
        for case in sel["selectCases"]:
            cond = self._keyset(gen, scope, case["keyset"], kv, out)
            out.add(f"if {cond}:")
            out.add(f"    return {target(path_name(case['state']))}")
        out.add("raise _NoMatch")

    def _keyset(self, gen: CodeGen, scope: Scope, ks: Node, kv: list[str], out: Lines) -> str:
        k = kind(ks)
        if k == "DefaultExpression":
            return "True"
        if k == "ListExpression" and len(kv) > 1:
            parts = [self._keyset(gen, scope, c, [v], out)
                     for c, v in zip(ks["components"], kv, strict=True)]
            return " and ".join(parts) or "True"
        if k == "ListExpression":
            return self._keyset(gen, scope, ks["components"][0], kv, out)
        v = kv[0]
        if k == "Mask":
            a, m = gen.expr(ks["left"], scope, out), gen.expr(ks["right"], scope, out)
            return f"({v} & ({m})) == (({a}) & ({m}))"
        if k == "Range":
            lo, hi = gen.expr(ks["left"], scope, out), gen.expr(ks["right"], scope, out)
            return f"({lo}) <= {v} <= ({hi})"
        return f"{v} == ({gen.expr(ks, scope, out)})"


