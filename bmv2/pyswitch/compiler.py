"""Generate and load the Python code of one program: parser, actions, controls, deparser.

Everything the JSON describes becomes Python source that is exec'd once per
program load; tables, registers and counters are objects the generated code
reads through module globals (``T3``, ``D3``, ``R5``, ``CP0``/``CB0``, ``H2``).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any

from .controls import ControlGen
from .errors import PacketError, ParserError, ProgramError, UnsupportedConstruct
from .expressions import RUNTIME_HELPERS, Ctx, Data, ExprCompiler, fit, hexint
from .hashes import csum16_of_int, make_hash
from .optimize import optimized_code, program_facts
from .parsergen import ParserGen, sign_extend
from .primitives import STACK_HELPERS, PrimitiveCompiler
from .program import HeaderInfo, Program
from .tablebuild import build_tables
from .tables import Table, noop

CORE_ERRORS = {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
               "HeaderTooShort": 4, "ParserTimeout": 5, "ParserInvalidArgument": 6}


@dataclass
class Compiled:
    """The loaded program: entry points and the state objects they use."""

    parse: Any
    verify: Any
    deparse: Any
    ingress: Any
    egress: Any
    tables: dict[str, Table]
    registers: dict[str, list[int]]
    counters: dict[str, tuple[list[int], list[int]]]
    direct_counters: dict[str, str]
    generated: Any  # the source (str), or an OptimizedCode

    @property
    def source(self) -> str:
        """The Python source the program runs as."""
        return self.generated if isinstance(self.generated, str) else self.generated.source

    @property
    def field_reads(self) -> frozenset[int] | None:
        """PHV slots the generated code may read (None: any of them)."""
        return None if isinstance(self.generated, str) else self.generated.field_reads


def _indent(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + s for s in lines]


_PACK_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _field_value(code: str, width: int, signed: bool) -> str:
    return f"({code} & {(1 << width) - 1})" if signed else code


class Generator:
    """Builds the source of one program."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.err = dict(CORE_ERRORS)
        self.err.update(prog.errors)
        self.expr = ExprCompiler(prog, self.err)
        self.calc_ids = {name: i for i, name in enumerate(prog.calculations)}
        self.prims = PrimitiveCompiler(prog, self.expr, self.calc_ids)
        self.controls = ControlGen(prog, self.expr, self.prims)
        self.lines: list[str] = []
        self.calc_algos: dict[int, str] = {}
        self.calc_bodies: dict[str, list[str]] = {}  # H<k>'s call -> body (ends in a return)
        self.structs: list[str] = []  # struct formats of the deparser, _PK<k>

    # ---- actions ----------------------------------------------------------

    def actions(self) -> None:
        """A<id> for every action; those the pipelines only run inline (const entries,
        const default entries) are never called and stay stubs."""
        called = self.controls.called_actions
        for a in self.prog.actions.values():
            ctx = Ctx(f"action '{a.name}'", [w for _n, w in a.params])
            body = self.prims.body(a.primitives, ctx)
            if a.id not in called:
                body = [f"raise PacketError({f'action {a.name!r} runs inline only'!r})"]
            self.lines += [f"def A{a.id}(pk, F, P):", *_indent(body), ""]

    # ---- calculations and checksums --------------------------------------

    def calculations(self) -> None:
        for name, calc in self.prog.calculations.items():
            k = self.calc_ids[name]
            algo = calc.get("algo")
            where = f"calculation '{name}'"
            make_hash(str(algo), where)
            self.calc_algos[k] = str(algo)
            csum = algo in ("csum16", "cksum16")
            body, payload, pad = self._calc_input(calc.get("input", []), where, csum)
            if csum and not payload:
                shift = "(-_n % 16)" if pad is None else str(pad) if pad else ""
                body.append(f"return _csum_int(_v << {shift})" if shift else
                            "return _csum_int(_v)")
            else:
                tail = " + pk.payload" if payload else ""
                body.append(f"return HASH{k}((_v << (-_n % 8)).to_bytes((_n + 7) // 8, 'big')"
                            f"{tail})")
            self.calc_bodies[f"H{k}(F, pk)"] = body
            self.lines += [f"def H{k}(F, pk):", *_indent(body), ""]

    def _calc_input(self, inputs: list[Any], where: str,
                    csum: bool = False) -> tuple[list[str], bool, int | None]:
        """Code leaving the concatenated inputs in ``_v`` (``_n`` bits), whether the
        payload follows, and ``-_n % 16`` when it is the same in every run (then ``_n``
        is not computed: every input that may be absent is a multiple of 16 bits long).
        With ``csum`` (a 16-bit one's complement sum follows, unless the
        payload does) ``_v`` is only congruent to the concatenation modulo 0xFFFF, and
        zero exactly when it is: as 2**16 = 1 (mod 0xFFFF), a field at bit offset o
        counts as ``field << (o % 16)``, and small sums are cheaper than a wide
        concatenation. A varbit input (its width only known at run time) is concatenated
        on its own, and then the whole calculation is an exact concatenation."""
        lines, payload, groups = self._calc_groups(inputs, where)
        fixed = all(isinstance(w, int) for _h, parts in groups for _c, w in parts)
        pad = None
        if csum and fixed and not payload and all(
                h is None or sum(int(w) for _c, w in parts) % 16 == 0 for h, parts in groups):
            pad = -sum(int(w) for _h, parts in groups for _c, w in parts) % 16
            lines.remove("_n = 0")
        for h, parts in groups:
            stmt: list[str] = []
            if not all(isinstance(w, int) for _c, w in parts):
                for c, w in parts:
                    stmt += [f"_v = (_v << {w}) | {c}", f"_n += {w}"]
            elif csum and fixed and not payload:
                width = sum(int(w) for _c, w in parts)
                terms = []
                for i, (c, _w) in enumerate(parts):
                    off = sum(int(w) for _c, w in parts[i + 1:]) % 16
                    terms.append(f"({c} << {off})" if off else c)
                stmt = [f"_v = (_v << {width % 16}) + {' + '.join(terms)}"]
                if pad is None:
                    stmt.append(f"_n += {width}")
            else:
                width = sum(int(w) for _c, w in parts)
                concat = " | ".join(f"({c} << {sum(int(w) for _c, w in parts[i + 1:])})"
                                    for i, (c, _w) in enumerate(parts))
                stmt = [f"_v = (_v << {width}) | {concat}", f"_n += {width}"]
            if h is None:
                lines += stmt
            else:
                lines += [f"if F[{h.valid_slot}]:", *_indent(stmt)]
        return lines, payload, pad

    def _calc_groups(self, inputs: list[Any], where: str
                     ) -> tuple[list[str], bool, list[tuple[HeaderInfo | None,
                                                         list[tuple[str, int | str]]]]]:
        lines = ["_v = 0", "_n = 0"]
        payload = False
        groups: list[tuple[HeaderInfo | None, list[tuple[str, int | str]]]] = []
        for item in inputs:
            t = item.get("type")
            if payload:
                raise UnsupportedConstruct(f"calculation input after 'payload' in {where}")
            part: tuple[str, int | str]
            if t == "field":
                fs = self.prog.field_slot(item["value"][0], item["value"][1], where)
                h = self.prog.headers[fs.header]
                if fs.varbit:
                    part = (f"F[{fs.slot}]", f"F[{h.valid_slot + 1}]")
                else:
                    part = (_field_value(f"F[{fs.slot}]", fs.width, fs.signed), fs.width)
            elif t == "header":
                h = self.prog.header(item["value"], where)
                if h.varbit is not None:  # its bits, of a width known at run time
                    part = self._header_bits(h)
                else:  # its fields, concatenated
                    fields: list[tuple[str, int | str]] = [
                        (_field_value(f"F[{fs.slot}]", fs.width, fs.signed), fs.width)
                        for fs in h.fields]
                    if not fields:
                        continue
                    part, more = fields[-1], fields[:-1]
                    key = None if h.metadata else h
                    if more:
                        if groups and groups[-1][0] is key:
                            groups[-1][1].extend(more)
                        else:
                            groups.append((key, more))
            elif t == "hexstr":
                h = None
                width = int(item["bitwidth"])
                part = (str(hexint(item["value"], where) & ((1 << width) - 1)), width)
            elif t == "payload":
                payload = True
                continue
            else:
                raise UnsupportedConstruct(f"calculation input type '{t}' in {where}")
            if h is not None and h.metadata:
                h = None
            if groups and groups[-1][0] is h:
                groups[-1][1].append(part)
            else:
                groups.append((h, [part]))
        return lines, payload, groups

    def _header_int(self, h: HeaderInfo) -> str:
        parts = []
        shift = h.nbits
        for fs in h.fields:
            shift -= fs.width
            v = _field_value(f"F[{fs.slot}]", fs.width, fs.signed)
            parts.append(f"({v} << {shift})" if shift else v)
        return "(" + " | ".join(parts) + ")"

    def _header_bytes(self, h: HeaderInfo) -> str:
        """Code for the wire bytes of header ``h``: one struct.pack of its fields, taken
        as 8/16/32/64-bit pieces (sub-byte fields combined, wider ones split)."""
        fmt: list[str] = []
        vals: list[str] = []
        chunk: list[tuple[str, int]] = []
        width = 0
        for fs in h.fields:
            chunk.append((_field_value(f"F[{fs.slot}]", fs.width, fs.signed), fs.width))
            width += fs.width
            if width % 8:
                continue
            if len(chunk) == 1 and width in _PACK_CODES:
                code = _PACK_CODES[width]
                fmt.append(code.lower() if fs.signed else code)
                vals.append(f"F[{fs.slot}]")
            else:
                value = " | ".join(f"{c} << {sum(w for _c, w in chunk[i + 1:])}"
                                   for i, (c, _w) in enumerate(chunk[:-1]))
                value = f"{value} | {chunk[-1][0]}" if value else chunk[-1][0]
                if width in _PACK_CODES:
                    fmt.append(_PACK_CODES[width])
                    vals.append(value)
                elif len(chunk) == 1 and width < 128:  # e.g. a 48-bit address: 32 + 16
                    rest = width
                    for piece in (64, 32, 16, 8):
                        while rest >= piece:
                            rest -= piece
                            fmt.append(_PACK_CODES[piece])
                            vals.append(f"{value} >> {rest} & {(1 << piece) - 1}" if rest
                                        else f"{value} & {(1 << piece) - 1}")
                else:
                    fmt.append(f"{width // 8}s")
                    vals.append(f"({value}).to_bytes({width // 8}, 'big')")
            chunk, width = [], 0
        k = len(self.structs)
        self.structs.append("!" + "".join(fmt))
        return f"_PK{k}.pack({', '.join(vals)})"

    def _header_bits(self, h: HeaderInfo) -> tuple[str, int | str]:
        """Code for the header's bits as one int, and its width (code when it has a varbit)."""
        if h.varbit is None:
            return self._header_int(h), h.nbits
        width = f"F[{h.valid_slot + 1}]"
        parts = []
        shift = h.nbits
        for i, fs in enumerate(h.fields):
            shift -= fs.width
            v = _field_value(f"F[{fs.slot}]", fs.width, fs.signed)
            parts.append(f"({v} << ({shift} + {width}))" if i < h.varbit else
                         (f"({v} << {shift})" if shift else v))
        return "(" + " | ".join(parts) + ")", f"({h.nbits} + {width})"

    def _checksum_calc(self, ck: dict[str, Any]) -> Data:
        """Call computing checksum ``ck`` (a generic calculation or bmv2's 'ipv4'); a
        one's complement sum is known to fit 16 bits."""
        kind = ck.get("type", "generic")
        if kind == "generic":
            name = ck.get("calculation")
            if name not in self.calc_ids:
                raise ProgramError(f"checksum '{ck.get('name')}' uses unknown calculation {name!r}")
            k = self.calc_ids[name]
            csum = self.calc_algos[k] in ("csum16", "cksum16")
            return Data(f"H{k}(F, pk)", 16 if csum else None)
        if kind == "ipv4":
            h = self.prog.header(ck["target"][0], f"checksum '{ck.get('name')}'")
            if h.varbit is not None:
                raise UnsupportedConstruct(f"ipv4 checksum on header '{h.name}' with a varbit "
                                           "field")
            if h.nbits < 96:
                raise ProgramError(f"ipv4 checksum on short header '{h.name}'")
            clear = ~(0xFFFF << (h.nbits - 96))
            return Data(f"_csum_int(({self._header_int(h)}) & {clear})", 16)
        raise UnsupportedConstruct(f"checksum type '{kind}' in checksum '{ck.get('name')}'")

    def _checksums(self, update: bool) -> list[str]:
        lines: list[str] = []
        for ck in self.prog.checksums:
            if not ck.get("update" if update else "verify", True):
                continue
            where = f"checksum '{ck.get('name')}'"
            target = self.prog.field_slot(ck["target"][0], ck["target"][1], where)
            th = self.prog.headers[target.header]
            cond = ck.get("if_cond")
            test = self.expr.boolean(cond, Ctx(where)).code if cond is not None else "True"
            calc = self._checksum_calc(ck)
            if update:
                # a calculation's body inline: the deparser makes no call for it
                body = self.calc_bodies.get(calc.code, [f"return {calc.code}"])
                calc = Data(body[-1].removeprefix("return "), calc.bits)
                lines += [f"if {test}:", *_indent(body[:-1]),
                          f"    F[{target.slot}] = {fit(calc, target.width, target.signed)}"]
            else:
                valid = "True" if th.metadata else f"F[{th.valid_slot}]"
                lines += [f"if {valid} and {test} and {calc.code} != "
                          f"{_field_value(f'F[{target.slot}]', target.width, target.signed)}:",
                          "    pk.cksum_err = True"]
        return lines

    # ---- deparser ---------------------------------------------------------

    def deparser(self) -> None:
        d = self.prog.deparser
        body = self._checksums(update=True)
        if d.get("primitives"):
            body += self.prims.body(d["primitives"], Ctx("deparser"))
        parts = []  # one expression per header (b'' when invalid), then the payload
        for name in d.get("order", []):
            h = self.prog.header(name, "deparser")
            if h.varbit is None:
                emit = self._header_bytes(h)
            else:
                bits, width = self._header_bits(h)
                emit = f"{bits}.to_bytes({width} >> 3, 'big')"
            parts.append(emit if h.metadata else f"({emit} if F[{h.valid_slot}] else b'')")
        body.append(f"return b''.join(({''.join(p + ', ' for p in parts)}pk.payload,))")
        self.lines += ["def deparse(pk, F):", *_indent(body), ""]
        verify = self._checksums(update=False) or ["pass"]
        self.lines += ["def verify(pk, F):", *_indent(verify), ""]

    def source(self) -> str:
        controls = self.controls.source()
        self.actions()
        self.calculations()
        self.lines += ParserGen(self.prog, self.expr, self.prims, self.err).source()
        self.deparser()
        self.lines += [f"_PK{k} = _Struct({f!r})" for k, f in enumerate(self.structs)]
        self.lines += controls
        return "\n".join(self.lines) + "\n"


def compile_program(prog: Program, drop_port: int, rng: random.Random,
                    optimize: bool = True) -> Compiled:
    """Generate, exec and wire up the code of ``prog`` (``optimize``: see the optimize package)."""
    gen = Generator(prog)
    src = gen.source()
    filename = f"<p4 program {prog.json.get('program', '')}>"
    opt = None
    if optimize:
        tables = {f"T{gen.controls.table_ids[t['name']]}":
                  [f"A{i}" for i in gen.controls.action_ids(t)]
                  for p in prog.pipelines.values() for t in p.get("tables", [])}
        opt = optimized_code(src, program_facts(prog, drop_port, tables), filename)
    ns: dict[str, Any] = {
        "__builtins__": __builtins__,
        "ParserError": ParserError,
        "PacketError": PacketError,
        "DROP_PORT": drop_port,
        "ZEROS": [0] * (max((h.nfields for h in prog.headers.values()), default=0) + 1),
        "_randint": rng.randint,
        "_getrandbits": rng.getrandbits,
        "_sx": sign_extend,
        "_csum_int": csum16_of_int,
        "_Struct": struct.Struct,
        "_noop": noop,
        **RUNTIME_HELPERS,
        **STACK_HELPERS,
    }
    registers: dict[str, list[int]] = {}
    for r in prog.registers.values():
        registers[r.name] = ns[f"R{r.id}"] = [0] * r.size
    counters: dict[str, tuple[list[int], list[int]]] = {}
    direct: dict[str, str] = {}
    for c in prog.counters.values():
        if c.is_direct:
            if c.binding is None:
                raise ProgramError(f"direct counter '{c.name}' without a table")
            direct[c.name] = c.binding
            continue
        cp, cb = [0] * c.size, [0] * c.size
        ns[f"CP{c.id}"], ns[f"CB{c.id}"] = cp, cb
        counters[c.name] = (cp, cb)
    for name, k in gen.calc_ids.items():
        ns[f"HASH{k}"] = make_hash(gen.calc_algos[k], f"calculation '{name}'")
    try:
        exec(compile(src, filename, "exec") if opt is None else opt.code, ns)
    except SyntaxError as e:  # a bug of the generator, never of the user
        raise ProgramError(f"internal code generation error: {e}") from e
    tables = build_tables(prog, gen.controls, ns)
    for cname, tname in direct.items():
        if tname not in tables:
            raise ProgramError(f"direct counter '{cname}' bound to unknown table '{tname}'")
    return Compiled(ns["parse"], ns["verify"], ns["deparse"], ns["INGRESS"], ns["EGRESS"],
                    tables, registers, counters, direct, src if opt is None else opt)
