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

from .testgen_corpus import CORPUS, EGRESS_MISREAD, IR_NAME, RECORD, egress_misreads_ingress
from .testgen_stf import run_test

TESTS = sorted(CORPUS.glob("*/test_*.stf"))
IDS = [f"{p.parent.name}/{p.stem}" for p in TESTS]


@functools.cache
def _program(name: str) -> dict[str, Any]:
    return read_ir(CORPUS / name / IR_NAME)


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
@pytest.mark.parametrize("path", TESTS, ids=IDS)
def test_model_does_what_p4testgen_predicts(path: Path) -> None:
    outcome = run_test(_program(path.parent.name), path.read_text())
    assert outcome.verdict is None, outcome.verdict


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
def test_every_program_of_the_corpus_has_tests_and_a_record() -> None:
    folders = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    assert {"tna_basics", "replay_tna"} <= {p.name for p in folders}
    for folder in folders:
        record = json.loads((folder / RECORD).read_text())
        assert record["tests"] == len(list(folder.glob("test_*.stf"))) > 0, folder.name
        assert (folder / IR_NAME).is_file(), folder.name


@pytest.mark.skipif(not TESTS, reason="no P4Testgen tests in tests/pyswitch/tna/testgen")
def test_every_test_was_made_by_a_p4testgen_that_reads_egress_right() -> None:
    """No test's trace shows P4Testgen's egress parser misreading what its ingress deparser
    emitted, and no test expects a packet that is not whole bytes (the misread's 15-bit
    shift shows as an odd number of hex digits)."""
    for path, test_id in zip(TESTS, IDS, strict=True):
        text = path.read_text()
        assert not egress_misreads_ingress(text), (test_id, EGRESS_MISREAD)
        for st in parse_stf(text):
            if st[0] == "expect" and st[1] is not None:
                assert len(st[2].rstrip("$")) % 2 == 0, test_id
