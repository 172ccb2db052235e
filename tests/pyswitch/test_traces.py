"""Replay packet traces recorded on real bmv2 (simple_switch) against the Python switch.

Traces are made by ``python -m tests.pyswitch.record_traces`` from corpus.py; each
case ran in a fresh simple_switch, so each is replayed on a fresh Python switch.
Outputs are compared per port, in order (bmv2 keeps per-port FIFO order; the
order between ports is not defined).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pytest

from bmv2.pyswitch import Switch

from .corpus import CORPORA, apply_setup
from .util import TRACES

TRACE_FILES = sorted(TRACES.glob("*.json"))


def by_port(outputs: list[list]) -> dict[int, list[str]]:
    ports: dict[int, list[str]] = defaultdict(list)
    for port, data in outputs:
        ports[int(port)].append(data)
    return dict(ports)


@pytest.mark.skipif(not TRACE_FILES, reason="no bmv2 traces recorded in tests/pyswitch/traces")
@pytest.mark.parametrize("path", TRACE_FILES, ids=[p.stem for p in TRACE_FILES])
def test_trace_matches_bmv2(path: Path) -> None:
    trace = json.loads(path.read_text())
    name = trace["program"]
    corpus = CORPORA[name]
    sha = hashlib.sha256(corpus.path.read_bytes()).hexdigest()
    changed = trace["json_sha256"] != sha
    # a test program is fixed; the replay program's JSON may change (a rebuild, a
    # refactoring) and must still answer every case as bmv2 did when recorded
    assert not changed or corpus.json_path is not None, \
        f"{path.name} was recorded for another {name}.json"
    note = (f" ({corpus.path.name} changed since {path.name} was recorded: if the new "
            "answers are intended, record the traces again)") if changed else ""
    assert trace["setup"] == corpus.setup, "corpus setup changed: record the traces again"
    assert [c["input"] for c in trace["cases"]] == [c.data.hex() for c in corpus.cases]
    for case in trace["cases"]:
        sw = Switch.from_json_file(corpus.path)
        apply_setup(sw, trace["setup"])
        out = sw.process(case["port"], bytes.fromhex(case["input"]))
        got = by_port([[p, d.hex()] for p, d in out])
        assert got == by_port(case["outputs"]), f"case {case['name']}{note}"
        assert sw.stats.errors == 0
