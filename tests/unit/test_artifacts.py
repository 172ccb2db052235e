"""The committed compiled artifacts match the P4 sources they came from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bmv2 import artifacts


def test_committed_artifacts_match_the_p4_sources() -> None:
    assert artifacts.check() == []


def test_editing_a_p4_source_is_detected(tmp_path: Path) -> None:
    copy = tmp_path / "p4src"
    shutil.copytree(artifacts.P4SRC, copy)
    before = artifacts.source_digest(copy)
    (copy / "include" / "constants.p4").write_text(
        (copy / "include" / "constants.p4").read_text() + "\n// edited\n")
    assert artifacts.source_digest(copy) != before
    assert before == artifacts.source_digest()


@pytest.mark.p4c
def test_recompiling_gives_the_committed_artifacts() -> None:
    try:
        artifacts.find_p4c()
    except artifacts.ToolchainMissing as exc:
        pytest.skip(str(exc))
    assert artifacts.recompile_matches() == []
