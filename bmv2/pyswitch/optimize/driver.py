"""The optimizer's entry points: the passes in order over every simple function
of a generated module, the facts of a program, and the optimized code of a
module (compiled, its source unparsed on demand, the last few remembered)."""

from __future__ import annotations

import ast
import warnings

from ..program import Program
from .dead_stores import dce, dse, merge_chains, merge_ifs
from .facts import Facts, Keys
from .forward import ForwardPass
from .forward_state import State
from .nodes import located, simple
from .register_reads import StoreSplitter
from .scratch import local_slots, narrow_metadata
from .share_locals import share_locals
from .unswitch import unswitch_block


def optimize_function(fn: ast.FunctionDef, keys: Keys, slots: set[int]) -> None:
    """Steps 2 and 3 on one function (only assignments, ifs, returns, expressions)."""
    f = ForwardPass(fn, keys, slots)
    body, _ = f.block(fn.body, State())
    body, _ = dce(keys, body, set())
    body, merged = merge_chains(keys, body)
    if merged:  # once more: values now flow further
        f, body = _propagate_again(f, fn, keys, slots, body)
    body, _ = dse(keys, body, set())
    body = merge_ifs(keys, body)
    body, split = StoreSplitter(keys).block(body)
    if split:  # once more: the split fields' values now flow to their reads
        f, body = _propagate_again(f, fn, keys, slots, body)
        body, _ = dse(keys, body, set())
        body = merge_ifs(keys, body)
    body, unswitched = unswitch_block(keys, body)
    if unswitched:  # once more: the chosen branches simplify
        f, body = _propagate_again(f, fn, keys, slots, body)
    fn.body = body or [located(ast.Pass(), fn)]

def _propagate_again(f: ForwardPass, fn: ast.FunctionDef, keys: Keys, slots: set[int],
                     body: list[ast.stmt]) -> tuple[ForwardPass, list[ast.stmt]]:
    """Step 2 once more over `body` (temporaries numbered on from `f`'s), then DCE."""
    again = ForwardPass(located(ast.FunctionDef(fn.name, fn.args, body, [], None, None), fn),
                        keys, slots)
    again.ntemps = f.ntemps
    body, _ = again.block(body, State())
    body, _ = dce(keys, body, set())
    return again, body

def optimize_source(src: str, facts: Facts) -> ast.Module:
    """The optimized module of generated source ``src``."""
    return _optimize(src, facts)[0]

def _optimize(src: str, facts: Facts) -> tuple[ast.Module, set[int] | None]:
    """The optimized module and the fields its code may read (None: any)."""
    tree = ast.parse(src)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    facts = narrow_metadata(funcs, facts)
    keys = Keys(facts)
    keys.check_entries(funcs)
    slots = local_slots(funcs, keys)
    for fn in funcs:
        if fn.name[:1] == "A":
            keys.summarize(fn)
    for fn in funcs:
        if simple(fn.body):
            optimize_function(fn, keys, slots)
            share_locals(fn)
    return tree, keys.field_reads

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
