"""Optimize the generated Python module before it is exec'd (same semantics, less work).

The code generator emits one expression per JSON expression, and p4c's bmv2
JSON recomputes an expression at every use: a register index is rebuilt for
each access (through a temporary field per access), casts and slices become
masks on values that already fit, and a ``(bit<1>)(a < b)`` is re-evaluated
wherever it is used. This pass rewrites the Python AST of every generated
function:

1. Scratch fields become Python locals. A metadata field whose every read, in
   every generated function, comes after a store of it in the same function
   (with no call in between that could store it) never carries a value from one
   function to another, and nothing else reads it (the engine's fields and the
   field-list fields are excluded): it is a local variable of each function.
2. One forward pass per function: constants and copies are propagated (action
   data of inlined entries, ``DROP_PORT``, ``pk.exit = True``), masks are
   dropped where the value's width is known to fit (unsigned fields and
   registers always hold values of their width: every store truncates; a metadata
   field every store fills from a narrower value holds that narrower width), range
   checks the width settles fold (``0 <= i < n`` is ``i < n`` for an unsigned
   ``i``), so are masks on a subtraction its test keeps in range
   (``a if a < b else (a - b) & M``), ``(1 if c else 0) == 1`` becomes ``c``,
   constants fold, and an expression already held by a local whose inputs have
   not changed since is read from it; so is a field stored or read before (the
   value stays in a local). An expression evaluated unconditionally that is
   evaluated again before its inputs change is computed into a temporary just
   before the statement that first needs it; only unconditional occurrences are
   hoisted, never past their own statement, so what runs and what raises is
   unchanged. A call to a table's entry (``e<k>.fn(...)``) forgets only what
   the table's actions may write.
3. Stores to locals that are never read, whose value can neither raise nor have
   an effect, are dropped (so are the scratch fields' stores nobody reads), and
   so are stores to fields stored again before anything reads them (the end of
   the function and every call taking F read them all). Consecutive if/elif
   chains testing the same unchanged locals (one const table after another,
   keyed on the same field) become one chain, and step 2 runs again on it;
   consecutive ``if``s on the same unchanged test are merged.
4. A register read into a field (``if i < n: F[a] = R[i]``, range-checked) that
   is read later in the block is stored through a local set in both
   branches (the else keeps the field's value), and steps 2 and 3 run again: the
   reads take the local, and a store the next one overwrites goes.
5. Assignments in a row that choose on the same test (``x if a < b else y``, as p4c
   writes a conditional for each value it sets: a sum-tree step sets the next index
   and the remaining mass on one comparison) become one if/else holding each chosen
   branch, and step 2 runs again on the function.
6. Locals whose lives do not overlap share one name: a call sets up and clears every
   local of its frame, and the egress function holds well over a hundred temporaries,
   few of them at once.

Functions with loops or ``try`` (the parser, actions with jumps) are analysed
for step 1 but not rewritten. ``tests/pyswitch/test_optimize.py`` runs every
corpus program and a replay.p4 workload with and without this pass.

The package, one module per pass:

    facts           the program's facts and each expression's (Keys)
    nodes           AST helpers every pass uses
    scratch         step 1
    forward_state   step 2's state and expression rewrites
    forward         step 2
    dead_stores     step 3
    register_reads  step 4
    unswitch        step 5
    share_locals    step 6
    driver          the passes in order, program_facts, optimized_code
"""

from .driver import OptimizedCode, optimize_source, optimized_code, program_facts
from .facts import Facts

__all__ = ["Facts", "OptimizedCode", "optimize_source", "optimized_code", "program_facts"]
