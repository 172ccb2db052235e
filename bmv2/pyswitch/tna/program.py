"""A TNA program (p4test's IR of it) compiled to Python: its six blocks, tables,
actions, RegisterActions and extern objects, and what the control plane sees.

The pipeline is the one ``Switch(Pipeline(...))`` instantiates: ingress parser,
ingress, ingress deparser, egress parser, egress, egress deparser. Each gress has
a PHV of its own (``layout.Phv``): nothing but bytes crosses from ingress to
egress, as on Tofino, where metadata travels only as bridged headers.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProgramError, UnsupportedConstruct
from ..tables import (
    ActionInfo,
    ActionParam,
    Table,
    noop,
)
from .codegen import RUNTIME, CodeGen, Const, Lines, Named, Param, Scope
from .externs import (
    HASH_ALGORITHMS,
    RegisterArray,
    checksum16,
    make_hash_fn,
)
from .ir import (
    Node,
    annotation_strings,
    annotations,
    control_plane_name,
    kind,
    member_name,
    name_of,
    path_name,
    unsupported,
    walk,
)
from .layout import Header, Obj, Phv, Scalar, Struct, Types, const_value
from .parsers import PARSER_STATE_LIMIT, ParserCompiler
from .passes import Exit, NoMatch, PassState, Reject, TooShort
from .tables import TableCompiler

ROLES = ("ingress_parser", "ingress", "ingress_deparser",
         "egress_parser", "egress", "egress_deparser")
INTRINSIC = {
    "ingress": ("ingress_intrinsic_metadata_t", "ingress_intrinsic_metadata_from_parser_t",
                "ingress_intrinsic_metadata_for_deparser_t",
                "ingress_intrinsic_metadata_for_tm_t"),
    "egress": ("egress_intrinsic_metadata_t", "egress_intrinsic_metadata_from_parser_t",
               "egress_intrinsic_metadata_for_deparser_t",
               "egress_intrinsic_metadata_for_output_port_t"),
}
CORE_ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument")


@dataclass
class GressCode:
    """One gress compiled: its PHV, entry points and the intrinsic fields the
    traffic manager reads and writes."""

    phv: Phv
    roots: dict[str, Obj]
    parse: Any = None
    control: Any = None
    deparse: Any = None
    ucast_written: int = -1      # slot set when ingress writes ucast_egress_port

    def field(self, root: str, name: str) -> Scalar | None:
        """A scalar member of an intrinsic struct or header, e.g. ('..._for_tm_t', 'rid')."""
        obj = self.roots.get(root)
        if isinstance(obj, Struct):
            m = obj.members.get(name)
            return m if isinstance(m, Scalar) else None
        if isinstance(obj, Header):
            return obj.fields.get(name)
        return None

    def slot(self, root: str, name: str) -> int:
        f = self.field(root, name)
        return -1 if f is None else f.slot


@dataclass
class TnaCompiled:
    """The loaded TNA program."""

    name: str
    ingress: GressCode
    egress: GressCode
    tables: dict[str, Table]
    registers: dict[str, RegisterArray]
    counters: dict[str, tuple[list[int], list[int]]]
    direct_counters: dict[str, str]
    actions: dict[str, ActionInfo]
    source: str
    ingress_controls: frozenset[str] = frozenset()
    keeps_short_packets: bool = False   # ingress reads parser_err (pipeline.py)
    # register arrays some pass touched twice (a Tofino stateful ALU cannot): label -> passes
    register_conflicts: Counter[str] = field(default_factory=Counter)


def _type_args(t: Node) -> list[Node]:
    return t.get("arguments") or []


def _extern_type(decl: Node, types: Types) -> tuple[str, list[Node]]:
    """(extern name, type arguments) of a Declaration_Instance."""
    t = decl["type"]
    if kind(t) in ("Type_Specialized", "Type_SpecializedCanonical"):
        base = t["baseType"]
        name = path_name(base) if kind(base) == "Type_Name" else name_of(base)
        return name, _type_args(t)
    if kind(t) == "Type_Name":
        return path_name(t), []
    return name_of(t), []


def _enum_member(e: Node) -> str:
    """IDENTITY for HashAlgorithm_t.IDENTITY."""
    if kind(e) == "Member":
        return member_name(e)
    if kind(e) == "Constant":
        return HASH_ALGORITHMS[int(e["value"])]
    raise unsupported("an enum constant was expected", e)


class ProgramCompiler(TableCompiler, ParserCompiler):
    """Compiles one P4Program (the TNA architecture's Switch of one Pipeline)."""

    def __init__(self, program: Node, rng: random.Random) -> None:
        self.program = program
        self.types = Types(program)
        self.rng = rng
        self.decls = {name_of(o): o for o in program["objects"] if name_of(o)}
        self.errors = self._error_codes()
        self.out = Lines()
        self.ns: dict[str, Any] = {**RUNTIME, "_TooShort": TooShort, "_NoMatch": NoMatch,
                                   "_Reject": Reject, "_Exit": Exit, "_noop": noop,
                                   "_csum": checksum16, "_rng": rng}
        self.tables: dict[str, Table] = {}
        self.table_specs: list[tuple[str, dict[str, Node], Scope]] = []
        self.registers: dict[str, RegisterArray] = {}
        self.counters: dict[str, tuple[list[int], list[int]]] = {}
        self.actions: dict[str, ActionInfo] = {}          # the control plane's, by name
        self.action_infos: dict[int, ActionInfo] = {}     # each declaration's own
        self.action_fns: dict[int, str] = {}
        self.conflicts: Counter[str] = Counter()
        self.shared_slots: frozenset[int] = frozenset()
        self._pending_actions: list[tuple[Node, str, Any]] = []
        self._ids = 0

    def _id(self, stem: str) -> str:
        self._ids += 1
        return f"{stem}{self._ids}"

    def _error_codes(self) -> dict[str, int]:
        names = list(CORE_ERRORS)
        for o in self.program["objects"]:
            if kind(o) == "Type_Error":
                for m in o["members"]:
                    n = name_of(m)
                    if n not in names:
                        names.append(n)
        return {n: i for i, n in enumerate(names)}

    # ---- the pipeline ----------------------------------------------------------

    def pipeline_blocks(self) -> dict[str, Node]:
        """Role -> P4Parser / P4Control of the one Pipeline ``main`` runs."""
        main = self.decls.get("main")
        if main is None or kind(main) != "Declaration_Instance":
            raise ProgramError("no 'main' instance: not a TNA program")
        args = [a["expression"] for a in main["arguments"]]
        if len(args) != 1:
            raise UnsupportedConstruct("TNA model: one pipe only (Switch(pipe))")
        pipe = args[0]
        if kind(pipe) == "PathExpression":
            pipe = self.decls[path_name(pipe)]
            parts = [a["expression"] for a in pipe["arguments"]]
        elif kind(pipe) == "ConstructorCallExpression":
            parts = [a["expression"] for a in pipe["arguments"]]
        else:
            raise unsupported("the Switch's argument", pipe)
        if len(parts) != 6:
            raise UnsupportedConstruct("TNA model: a Pipeline of six blocks (no ghost thread)")
        blocks = {}
        for role, p in zip(ROLES, parts, strict=True):
            if kind(p) == "ConstructorCallExpression":
                t = p["constructedType"]
                name = path_name(t) if kind(t) == "Type_Name" else name_of(t)
            elif kind(p) == "PathExpression":
                inst = self.decls[path_name(p)]
                name = path_name(inst["type"])
            else:
                raise unsupported("a pipeline block", p)
            blocks[role] = self.decls[name]
        return blocks

    def compile(self) -> TnaCompiled:
        blocks = self.pipeline_blocks()
        self.globals = self._global_scope()
        self._emit_actions(self._gen(GressCode(Phv(self.types), {})), self.globals)
        gresses = {}
        for gress in ("ingress", "egress"):
            code = GressCode(Phv(self.types), {})
            for tname in INTRINSIC[gress]:
                t = self.types.decls.get(tname)
                if t is not None:
                    code.roots[tname] = code.phv.alloc({"Node_Type": "Type_Name",
                                                        "path": {"name": tname}}, tname)
            gresses[gress] = code
            parser, control, deparser = (blocks[f"{gress}_parser"], blocks[gress],
                                         blocks[f"{gress}_deparser"])
            for block in (parser, control, deparser):
                self._bind_roots(code, block)
            if gress == "ingress":
                code.ucast_written = code.phv._slot("$ucast_egress_port_written")
            self._aliases(code, gress, (parser, control, deparser))
            code.parse = self._parser(code, gress, parser)
            code.control = self._control(code, gress, control, f"C_{gress}")
            code.deparse = self._control(code, gress, deparser, f"D_{gress}")
        source = "\n".join(self.out.lines) + "\n"
        try:
            exec(compile(source, "<tna program>", "exec"), self.ns)
        except SyntaxError as exc:   # a bug of the model, not of the program
            raise ProgramError(f"TNA model generated bad code: {exc}") from exc
        for gress, code in gresses.items():
            code.parse = self.ns[code.parse]
            code.control = self.ns[code.control]
            code.deparse = self.ns[code.deparse]
            del gress
        self._build_tables()
        return TnaCompiled(
            name=str(self.decls.get("main", {}).get("name", "")),
            ingress=gresses["ingress"], egress=gresses["egress"], tables=self.tables,
            registers=self.registers, counters=self.counters, direct_counters={},
            actions=self.actions, source=source,
            ingress_controls=frozenset(name_of(blocks[r]) for r in ROLES[:3]),
            keeps_short_packets=reads_parser_err(blocks["ingress"]),
            register_conflicts=self.conflicts)

    # ---- roots, aliases --------------------------------------------------------

    def _param_type_name(self, p: Node) -> str:
        t = p["type"]
        if kind(t) == "Type_Name":
            return path_name(t)
        return name_of(self.types.resolve(t))

    def _bind_roots(self, code: GressCode, block: Node) -> None:
        """Allocate the gress's header and metadata structs the first time a block names them."""
        for p in block["type"]["applyParams"]["parameters"]:
            tname = self._param_type_name(p)
            if tname in ("packet_in", "packet_out") or tname in code.roots:
                continue
            code.roots[tname] = code.phv.alloc(p["type"], name_of(p))

    def _block_scope(self, code: GressCode, block: Node) -> Scope:
        scope = Scope(self.globals)
        for p in block["type"]["applyParams"]["parameters"]:
            tname = self._param_type_name(p)
            if tname in ("packet_in", "packet_out"):
                scope.bind(name_of(p), Named("packet", p, "pk"))
            else:
                scope.bind(name_of(p), code.roots[tname])
        return scope

    def _global_scope(self) -> Scope:
        scope = Scope()
        for o in self.program["objects"]:
            k = kind(o)
            if k == "Declaration_Constant":
                init = o["initializer"]
                if kind(init) in ("Constant", "BoolLiteral"):
                    scope.bind(name_of(o), Const(int(const_value(init))))
            elif k == "P4Action":
                scope.bind(name_of(o), self._action_binding(o, None))
            elif k == "Declaration_Instance" and _extern_type(o, self.types)[0] == "Register":
                scope.bind(name_of(o), self._register(o, name_of(o)))
        scope.bind("verify", Named("builtin", None, "verify"))
        return scope

    def _aliases(self, code: GressCode, gress: str, blocks: tuple[Node, ...]) -> None:
        """@pa_alias(gress, a, b): the two fields share one PHV container, so a write
        to either is seen through both (the program relies on it, e.g. replay_tna.p4's
        egress writes meta.verdict and emits hdr.loop.verdict)."""
        for block in blocks:
            scope = self._block_scope(code, block)
            for a in annotations(block) + annotations(block["type"]):
                args = annotation_strings(a) if name_of(a) == "pa_alias" else []
                if len(args) < 3 or args[0] != gress:
                    continue
                fields = [self._named_field(scope, n) for n in args[1:]]
                keep = fields[0]
                for f in fields[1:]:
                    f.slot = keep.slot
                    self.shared_slots = self.shared_slots | {keep.slot}

    def _named_field(self, scope: Scope, dotted: str) -> Scalar:
        """A field by its source name (``hdr.loop.phase``), through the struct
        p4c's mid end flattened (``hdr._loop1.phase``)."""
        parts = dotted.split(".")
        obj: Any = scope.look(parts[0])
        rest = parts[1:]
        while rest:
            members = obj.members if isinstance(obj, Struct) else obj.fields
            for n in range(len(rest), 0, -1):
                joined = "_".join(rest[:n])
                flat = re.compile(rf"_{re.escape(joined)}\d+$")
                found = members.get(joined) or next(
                    (m for k, m in members.items() if flat.match(k)), None)
                if found is not None:
                    obj, rest = found, rest[n:]
                    break
            else:
                raise unsupported(f"@pa_alias field {dotted} not found")
        if not isinstance(obj, Scalar):
            raise unsupported(f"@pa_alias of a non-scalar {dotted}")
        return obj

    # ---- locals, externs -------------------------------------------------------

    def _locals(self, code: GressCode, gen: CodeGen, scope: Scope, local_decls: list[Node],
                prefix: str) -> None:
        for d in local_decls:
            k = kind(d)
            n = name_of(d)
            if k == "Declaration_Variable":
                obj = code.phv.alloc(d["type"], f"{prefix}.{n}")
                scope.bind(n, obj)
            elif k == "Declaration_Constant":
                scope.bind(n, Const(int(const_value(d["initializer"]))))
            elif k == "Declaration_Instance":
                scope.bind(n, self._instance(code, gen, scope, d, prefix))
            elif k == "P4Action":
                scope.bind(n, self._action_binding(d, (gen, scope, prefix)))
            elif k == "P4Table":
                ident = self._id("TA")
                label = control_plane_name(d, f"{prefix}.{n}")
                scope.bind(n, Named("table", d, ident, label, self._inline(d, scope)))
            elif k == "P4ValueSet":
                raise unsupported("parser value sets", d)
            else:
                raise unsupported(f"local {k}", d)

    def _instance(self, code: GressCode, gen: CodeGen, scope: Scope, d: Node,
                  prefix: str) -> Named:
        ext, targs = _extern_type(d, self.types)
        args = [a["expression"] for a in d["arguments"]]
        label = control_plane_name(d, f"{prefix}.{name_of(d)}")
        ident = self._id(ext[:2].upper())
        if ext == "Register":
            return self._register(d, f"{prefix}.{name_of(d)}")
        if ext == "RegisterAction":
            reg = scope.look(path_name(args[0]))
            if not (isinstance(reg, Named) and reg.what == "extern"):
                raise unsupported("a RegisterAction of no Register", d)
            self._register_action(code, gen, scope, d, ident, reg, targs, prefix)
        elif ext == "Hash":
            algo = _enum_member(args[0])
            self.ns[ident] = make_hash_fn(algo, self.types.width(targs[0]), label)
        elif ext == "Random":
            self.ns[ident] = self.types.width(targs[0])
        elif ext == "Counter":
            size = int(const_value(args[0]))
            self.counters[label] = ([0] * size, [0] * size)
            self.ns[ident] = self.counters[label]
        elif ext == "Checksum":
            pass
        else:
            raise UnsupportedConstruct(f"TNA model: extern {ext} ({label})")
        return Named("extern", d, ident, label)

    def _register(self, d: Node, default_label: str) -> Named:
        """A Register<T, I>(size[, initial]): its array, named as P4Info names it (a
        control's or, declared at the top level, the program's)."""
        _, targs = _extern_type(d, self.types)
        args = [a["expression"] for a in d["arguments"]]
        label = control_plane_name(d, default_label)
        ident = self._id("RE")
        t = self.types.resolve(targs[0])
        fields: tuple[tuple[str, int], ...] = ()
        if kind(t) == "Type_Struct":
            fields = tuple((name_of(f), self.types.width(f["type"])) for f in t["fields"])
        initial: Any = 0
        if len(args) > 1:
            init = args[1]
            if kind(init) == "StructExpression":
                initial = tuple(int(const_value(c["expression"])) for c in init["components"])
            else:
                initial = int(const_value(init))
        elif fields:
            initial = tuple(0 for _ in fields)
        reg = RegisterArray(label, int(const_value(args[0])), self.types.width(targs[0]),
                            fields, initial)
        self.registers[label] = reg
        self.ns[ident] = reg
        return Named("extern", d, ident, label)

    def _register_action(self, code: GressCode, gen: CodeGen, scope: Scope, d: Node,
                         ident: str, reg: Named, targs: list[Node], prefix: str) -> None:
        """RegisterAction.execute(index): read the cell, run apply(value, rv), write
        the cell back, return rv; a second touch of the array in the pass is a
        conflict the hardware cannot run."""
        fn = next((c for c in (d.get("initializer") or {}).get("components", [])
                   if kind(c) == "Function" and name_of(c) == "apply"), None)
        if fn is None:
            raise unsupported("a RegisterAction without apply", d)
        params = fn["type"]["parameters"]["parameters"]
        fscope = Scope(scope)
        value = code.phv.alloc(params[0]["type"], f"{prefix}.{name_of(d)}.value")
        fscope.bind(name_of(params[0]), value)
        rv: Obj | None = None
        if len(params) > 1:
            rv = code.phv.alloc(params[1]["type"], f"{prefix}.{name_of(d)}.rv")
            fscope.bind(name_of(params[1]), rv)
        out = Lines()
        out.add(f"def {ident}(pk, F, index):")
        with out.block():
            out.add(f"if {reg.ident!r} in pk.touched:")
            out.add(f"    _conflict(({reg.label!r},))")
            out.add(f"pk.touched.add({reg.ident!r})")
            out.add(f"R = {reg.ident}")
            out.add("i = index % R.size")
            vslots = value.slots() if not isinstance(value, Scalar) else [value.slot]
            vslots = [s for s in vslots if s not in self._valid_slots(value)]
            if len(vslots) == 1:
                out.add(f"F[{vslots[0]}] = R.cells[i]")
            else:
                out.add(f"{', '.join(f'F[{s}]' for s in vslots)}, = R.cells[i]")
            if isinstance(rv, Scalar):
                out.add(f"F[{rv.slot}] = 0")
            gen.stmt(fn["body"], fscope, out)
            if len(vslots) == 1:
                out.add(f"R.cells[i] = F[{vslots[0]}]")
            else:
                out.add(f"R.cells[i] = ({', '.join(f'F[{s}]' for s in vslots)},)")
            out.add(f"return F[{rv.slot}]" if isinstance(rv, Scalar) else "return 0")
        self.out.lines += out.lines
        self.ns["_conflict"] = self.conflicts.update

    @staticmethod
    def _valid_slots(obj: Obj) -> set[int]:
        return {obj.valid} if isinstance(obj, Header) else set()

    def call_extern(self, gen: CodeGen, target: Named, method: str, args: list[Node],
                    e: Node, scope: Scope, out: Lines) -> str:
        """Source for a call of an extern method, a packet method or a builtin."""
        if target.what == "packet":
            return self._packet_call(gen, method, args, e, scope, out)
        if target.what == "builtin" and method == "verify":
            cond = gen.expr(args[0], scope, out)
            err = gen.expr(args[1], scope, out)
            out.add(f"if not ({cond}):")
            out.add(f"    raise _Verify({err})")
            return "None"
        ext, _ = _extern_type(target.decl, self.types)
        if ext == "RegisterAction" and method == "execute":
            return f"{target.ident}(pk, F, {gen.expr(args[0], scope, out)})"
        if ext == "Hash" and method == "get":
            v, w = gen.bits_of(args[0], scope, out)
            return f"{target.ident}({v}, {w})"
        if ext == "Random" and method == "get":
            return f"_rng.getrandbits({target.ident})"
        if ext == "Counter" and method == "count":
            idx = gen.expr(args[0], scope, out)
            c = out.tmp("c")
            out.add(f"{c} = {idx}")
            out.add(f"if {c} < len({target.ident}[0]):")
            out.add(f"    {target.ident}[0][{c}] += 1")
            out.add(f"    {target.ident}[1][{c}] += pk.ilen")
            return "None"
        if ext == "Checksum" and method == "update":
            v, w = gen.bits_of(args[0], scope, out)
            return f"_csum({v}, {w})"
        if ext == "Register" and method in ("read", "write"):
            idx = gen.expr(args[0], scope, out)
            if method == "read":
                return f"{target.ident}.read_int({idx})"
            out.add(f"{target.ident}.write_int({idx}, {gen.expr(args[1], scope, out)})")
            return "None"
        raise UnsupportedConstruct(f"TNA model: {ext}.{method} ({target.label})")

    # ---- actions, tables -------------------------------------------------------

    def _action_binding(self, a: Node, ctx: tuple[CodeGen, Scope, str] | None) -> Named:
        """The action's function (one per declaration: p4c's inliner makes a copy of an
        action per call with constant arguments, all under the action's @name). The
        control plane's action is the copy that kept its parameters (a table's)."""
        label = control_plane_name(a, name_of(a))
        ident = self.action_fns.get(id(a))
        if ident is None:
            ident = self._id("A")
            self.action_fns[id(a)] = ident
            params = tuple(ActionParam(control_plane_name(p, name_of(p)),
                                       self.types.width(p["type"]))
                           for p in a["parameters"]["parameters"])
            known = self.actions.get(label)
            info = ActionInfo(label, known.id if known else len(self.actions) + 1, params)
            self.action_infos[id(a)] = info
            if known is None or len(known.params) < len(params):
                self.actions[label] = info
            self._pending_actions.append((a, ident, ctx))
        return Named("action", a, ident, label)

    def _emit_actions(self, gen: CodeGen, scope: Scope) -> None:
        while self._pending_actions:
            a, ident, ctx = self._pending_actions.pop(0)
            ascope = Scope(ctx[1] if ctx else scope)
            for i, p in enumerate(a["parameters"]["parameters"]):
                if p.get("direction") not in (None, "", "none"):
                    raise unsupported("an action parameter with a direction", a)
                ascope.bind(name_of(p), Param(i, self.types.width(p["type"])))
            out = Lines()
            out.add(f"def {ident}(pk, F, P):")
            with out.block():
                (ctx[0] if ctx else gen).stmt(a["body"], ascope, out)
            self.out.lines += out.lines

    def _gen(self, code: GressCode) -> CodeGen:
        watch = {}
        slot = code.slot("ingress_intrinsic_metadata_for_tm_t", "ucast_egress_port")
        if slot >= 0 and code.ucast_written >= 0:
            watch[slot] = code.ucast_written
        return CodeGen(self.types, code.phv, self.errors, self.call_extern, watch)

    def _control(self, code: GressCode, gress: str, block: Node, ident: str) -> str:
        gen = self._gen(code)
        self._pending_actions = []
        scope = Scope(self._block_scope(code, block))
        self._locals(code, gen, scope, block.get("controlLocals") or [], name_of(block))
        for d in block.get("controlLocals") or []:
            if kind(d) == "P4Table":
                self._table_fn(gen, scope, scope.look(name_of(d)))
        out = Lines()
        out.add(f"def {ident}(pk, F):")
        with out.block():
            for d in block.get("controlLocals") or []:
                if kind(d) == "Declaration_Variable" and d.get("initializer") is not None:
                    gen._store(scope.look(name_of(d)), d["initializer"], scope, out)
            out.add("try:")
            with out.block():
                gen.stmt(block["body"], scope, out)
            out.add("except _Exit:")
            out.add("    pass")
        self._emit_actions(gen, scope)
        self.out.lines += out.lines
        return ident

    def _parser(self, code: GressCode, gress: str, block: Node) -> str:
        gen = self._gen(code)
        self._pending_actions = []
        scope = Scope(self._block_scope(code, block))
        self._locals(code, gen, scope, block.get("parserLocals") or [], name_of(block))
        idents = {name_of(s): f"S_{gress}_{name_of(s)}" for s in block["states"]}
        for s in block["states"]:
            out = Lines()
            out.add(f"def {idents[name_of(s)]}(pk, F):")
            with out.block():
                for c in s.get("components") or []:
                    gen.stmt(c, scope, out)
                self._transition(gen, scope, s.get("selectExpression"), idents, out)
            self.out.lines += out.lines
        self._emit_actions(gen, scope)
        ident = f"P_{gress}"
        self.out.add(f"def {ident}(pk, F):")
        with self.out.block():
            self.out.add(f"st = {idents['start']}")
            self.out.add(f"for _ in range({PARSER_STATE_LIMIT}):")
            self.out.add("    st = st(pk, F)")
            self.out.add("    if st is None:")
            self.out.add("        return")
            self.out.add("raise _Reject")
        return ident


def reads_parser_err(control: Node) -> bool:
    """Whether a control reads parser_err: then Tofino's ingress parser hands a packet
    it ran out of to the control instead of dropping it."""
    return any(kind(n) == "Member" and member_name(n) == "parser_err"
               for n in walk(control.get("body")))


def _reject_state(pk: PassState, F: list[int]) -> None:
    raise Reject


def compile_tna(program: Node, rng: random.Random | None = None) -> TnaCompiled:
    """Compile a p4test IR of a TNA program."""
    c = ProgramCompiler(program, rng or random.Random())
    c.ns["_reject_state"] = _reject_state
    c.ns["_Verify"] = Reject
    return c.compile()
