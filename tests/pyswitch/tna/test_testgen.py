"""The TNA model against P4Testgen's Tofino target: every stored P4Testgen test
(testgen/<program>/test_*.stf, made by testgen_corpus.py) passes on the model, with
the packets P4Testgen's Tofino semantics predict on the ports it predicts."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from bmv2.pyswitch.tna import read_ir
from tests.pyswitch.stf import parse_stf

from .testgen_corpus import (
    CORPUS,
    DISAGREEMENTS,
    IR_NAME,
    RECORD,
    disagreement,
    egress_misreads_ingress,
)
from .testgen_stf import run_test

TESTS = sorted(CORPUS.glob("*/test_*.stf"))
IDS = [f"{p.parent.name}/{p.stem}" for p in TESTS]
REASONS = {i: disagreement(i, p.read_text()) for p, i in zip(TESTS, IDS, strict=True)}
# a test where P4Testgen is not Tofino must fail on the model (strict: passing is an error)
PARAMS = [pytest.param(p, id=i, marks=pytest.mark.xfail(strict=True, reason=REASONS[i]))
          if REASONS[i] else pytest.param(p, id=i) for p, i in zip(TESTS, IDS, strict=True)]


@functools.cache
def _program(name: str) -> dict[str, Any]:
    return read_ir(CORPUS / name / IR_NAME)


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
@pytest.mark.parametrize("path", PARAMS)
def test_model_does_what_p4testgen_predicts(path: Path) -> None:
    outcome = run_test(_program(path.parent.name), path.read_text())
    assert outcome.verdict is None, outcome.verdict


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
def test_every_program_of_the_corpus_has_tests_and_a_record() -> None:
    folders = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    assert {"tna_basics", "replay_tna"} <= {p.name for p in folders}
    assert set(DISAGREEMENTS) <= set(IDS)
    for folder in folders:
        record = json.loads((folder / RECORD).read_text())
        assert record["tests"] == len(list(folder.glob("test_*.stf"))) > 0, folder.name
        assert (folder / IR_NAME).is_file(), folder.name


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
def test_a_misread_bridge_shifts_the_expected_packet() -> None:
    """The tests whose traces show P4Testgen's egress parser misreading what its ingress
    deparser emitted, and only those, expect packets that are not whole bytes where they
    expect one (15 bits short: an odd number of hex digits), which no port can send."""
    for path, test_id in zip(TESTS, IDS, strict=True):
        text = path.read_text()
        misread = egress_misreads_ingress(text)
        for st in parse_stf(text):
            if st[0] == "expect" and st[1] is not None:
                digits = len(st[2].rstrip("$"))
                assert (digits % 2 == 1) == misread, (test_id, digits)
