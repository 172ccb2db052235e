"""The TNA execution model: the Python switch running a TNA program (p4test's IR
of it) with the Tofino Native Architecture's pipeline, traffic manager and
externs, beside the v1model engine and sharing its PRE, tables and P4Runtime
server."""

from __future__ import annotations

from typing import Any

from .info import tna_program_info
from .ir import load_ir, read_ir
from .pipeline import TnaEngine
from .program import TnaCompiled, compile_tna


def is_tna_program(program: Any) -> bool:
    """Whether a loaded device config is p4test's IR (a TNA program), not a bmv2 JSON."""
    return isinstance(program, dict) and program.get("Node_Type") == "P4Program"


__all__ = ["TnaCompiled", "TnaEngine", "compile_tna", "is_tna_program", "load_ir", "read_ir",
           "tna_program_info"]
