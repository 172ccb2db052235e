"""p4c's v1model STF samples on the Python switch, against what bmv2 did with them.

``stf_samples/*.json`` hold, per sample, the program compiled by p4c-bm2-ss, the
STF as bmv2stf.py drives it, and the outputs and verdict recorded on
simple_switch (``python -m tests.pyswitch.stf_corpus build|record``). Every
sample bmv2 passes must pass here with the same packets on every port; samples
bmv2 fails are skipped with bmv2's reason. With ``STF_LIVE=1``, where p4c and bmv2
are installed, the ``slow`` tests also check the stored programs against a fresh
compile (about 2 s a sample) and the stored outputs against a fresh bmv2 run (about
4 s a sample, bmv2stf's pauses).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .record_traces import tool
from .stf_corpus import (
    P4C_SRC,
    SAMPLES,
    compile_sample,
    discover,
    load_sample,
    p4c_compiler,
    run_bmv2,
    run_python,
    script_of,
    strip_source_info,
)

PATHS = sorted(SAMPLES.glob("*.json"))
LIVE = os.environ.get("STF_LIVE") == "1"
live = pytest.mark.skipif(not LIVE, reason="live runs of the STF corpus need STF_LIVE=1")
IDS = [p.stem.replace("__", "/") for p in PATHS]


def _hex(outputs: dict[int, list[bytes]]) -> dict[str, list[str]]:
    return {str(p): [d.hex() for d in v] for p, v in outputs.items()}


def _recorded(path: Path) -> dict[str, Any]:
    sample = load_sample(path)
    if "program" not in sample:
        pytest.skip(f"p4c-bm2-ss rejects it: {sample['compile_error']}")
    if "bmv2" not in sample:
        pytest.skip("not recorded on bmv2")
    if sample["bmv2"]["verdict"] is not None:
        pytest.skip(f"bmv2 fails it too: {sample['bmv2']['verdict']}")
    return sample


@pytest.mark.skipif(not PATHS, reason="no STF samples in tests/pyswitch/stf_samples")
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_sample_passes_like_on_bmv2(path: Path) -> None:
    sample = _recorded(path)
    verdict, outputs = run_python(sample)
    assert verdict is None
    assert _hex(outputs) == sample["bmv2"]["outputs"]


@live
@pytest.mark.slow
@pytest.mark.p4c
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_stored_program_is_what_p4c_compiles(path: Path) -> None:
    if p4c_compiler() is None or not P4C_SRC.is_dir():
        pytest.skip("needs p4c-bm2-ss and p4c's source tree (P4C_SRC)")
    sample = load_sample(path)
    p4, options = discover()[sample["sample"]]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prog.json"
        err = compile_sample(p4, options, out)
        if "program" not in sample:
            assert err is not None
            return
        assert err is None
        assert strip_source_info(json.loads(out.read_text())) == sample["program"]


@live
@pytest.mark.slow
@pytest.mark.bmv2
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_bmv2_still_does_what_was_recorded(path: Path) -> None:
    if not Path(tool("SIMPLE_SWITCH", "simple_switch")).is_file():
        pytest.skip("simple_switch is not installed")
    sample = _recorded(path)
    assert _hex(run_bmv2(sample["program"], script_of(sample), 0)) == sample["bmv2"]["outputs"]
