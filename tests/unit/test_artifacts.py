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


def test_the_digest_covers_only_the_files_the_program_includes(tmp_path: Path) -> None:
    copy = tmp_path / "p4src"
    shutil.copytree(artifacts.P4SRC, copy)
    sources = {p.relative_to(copy).as_posix() for p in artifacts.p4_sources(copy)}
    assert {"replay.p4", "include/replay_service.p4", "v1model/sum_tree.p4"} <= sources
    assert not any(s.startswith("tna/") or s == "replay_tna.p4" for s in sources)
    before = artifacts.source_digest(copy)
    tna = copy / "tna" / "sum_tree.p4"
    tna.write_text(tna.read_text() + "\n// edited\n")
    assert artifacts.source_digest(copy) == before      # another architecture's file
    shared = copy / "include" / "replay_service.p4"
    shared.write_text(shared.read_text() + "\n// edited\n")
    assert artifacts.source_digest(copy) != before      # a shared one


@pytest.mark.p4c
def test_recompiling_gives_the_committed_artifacts() -> None:
    try:
        artifacts.find_p4c()
    except artifacts.ToolchainMissing as exc:
        pytest.skip(str(exc))
    assert artifacts.recompile_matches() == []
