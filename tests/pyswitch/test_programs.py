"""The committed JSONs match their P4 sources, and the project's program loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bmv2.pyswitch import Switch
from controller.program import DEFAULT

from .util import PROGRAM_NAMES, PROGRAMS

REPLAY_JSON = DEFAULT.bmv2_json
ALL = (*PROGRAM_NAMES, "unsupported_meter", "unsupported_selector")


def p4c() -> str | None:
    for candidate in (os.environ.get("P4C_BM2_SS"), shutil.which("p4c-bm2-ss"),
                      "/opt/p4/install/bin/p4c-bm2-ss"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.mark.p4c
@pytest.mark.parametrize("name", ALL)
def test_committed_json_is_up_to_date(name: str, tmp_path: Path) -> None:
    compiler = p4c()
    if compiler is None:
        pytest.skip("p4c-bm2-ss is not installed")
    out = tmp_path / f"{name}.json"
    subprocess.run([compiler, "-o", str(out), f"{name}.p4"], cwd=PROGRAMS, check=True,
                   capture_output=True)
    assert json.loads(out.read_text()) == json.loads((PROGRAMS / f"{name}.json").read_text())


@pytest.mark.skipif(not REPLAY_JSON.exists(), reason="p4src/build/replay.json not built")
def test_replay_program_loads() -> None:
    sw = Switch.from_json_file(REPLAY_JSON)
    info = sw.info
    cfg = info.tables["ReplayIngress.replay.replay_table_config"]
    assert [k.name for k in cfg.keys] == ["hdr.replay.table_id"]
    assert "ReplayIngress.replay.configure" in cfg.actions
    params = info.actions["ReplayIngress.replay.configure"].params
    assert [(p.name, p.bitwidth) for p in params] == [
        ("enabled", 1), ("capacity", 32), ("min_size", 32), ("max_batch", 8),
        ("default_mode", 8)]
    assert info.counters["ReplayEgress.replay.replay_requests"].size == 1280
    assert info.counters["ReplayEgress.replay.replay_sampled"].size == 4
    assert info.counters["ReplayEgress.replay.replay_not_ready"].size == 4
    assert info.header_types["packet_in_h"].fields[0] == ("ingress_port", 9, False)
