"""Helpers shared by the Python switch tests."""

from __future__ import annotations

import json
from pathlib import Path

PROGRAMS = Path(__file__).parent / "programs"
TRACES = Path(__file__).parent / "traces"
PROGRAM_NAMES = ("basic_fwd", "parser_features", "match_kinds", "arith", "checksum",
                 "v1model_flow", "actions_misc", "replicate_egress",
                 "unions_varbit")


def program_json(name: str) -> dict:
    """The committed bmv2 JSON of test program ``name``."""
    return json.loads((PROGRAMS / f"{name}.json").read_text())
