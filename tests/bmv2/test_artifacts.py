"""The committed compiled artifacts (bmv2's and the Tofino build) match the P4
sources they came from."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from bmv2 import artifacts, tna_artifacts, tofino_artifacts
from tests import needs


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


def test_the_tna_digest_covers_the_tna_program_and_the_shared_files(tmp_path: Path) -> None:
    copy = tmp_path / "p4src"
    shutil.copytree(artifacts.P4SRC, copy)
    main = artifacts.TNA_P4.name
    sources = {p.relative_to(copy).as_posix() for p in artifacts.p4_sources(copy, main)}
    assert {"replay_tna.p4", "include/replay_service.p4", "tna/sum_tree.p4"} <= sources
    assert not any(s.startswith("v1model/") for s in sources)
    before = artifacts.source_digest(copy, main)
    v1model = copy / "v1model" / "sum_tree.p4"
    v1model.write_text(v1model.read_text() + "\n// edited\n")
    assert artifacts.source_digest(copy, main) == before
    tna = copy / "tna" / "sum_tree.p4"
    tna.write_text(tna.read_text() + "\n// edited\n")
    assert artifacts.source_digest(copy, main) != before


def test_an_ir_compiled_with_other_mid_end_passes_is_detected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An IR p4test compiled with the pass the model's IR leaves out (it folded the
    INSERT limiter's index to 0) is not taken for the committed one: `make p4` redoes it."""
    digest = artifacts.source_digest(main=artifacts.TNA_P4.name)
    record = json.loads(tna_artifacts.RECORD.read_text())
    assert tna_artifacts.check(digest) == []
    del record["excluded_midend_passes"]
    (tmp_path / "sources.json").write_text(json.dumps(record))
    monkeypatch.setattr(tna_artifacts, "RECORD", tmp_path / "sources.json")
    [problem] = tna_artifacts.check(digest)
    assert "mid-end passes" in problem and "make p4" in problem


def _tofino_build(into: Path, run_id: str, snapshot_order: tuple[str, ...],
                  committed: bool = True) -> Path:
    """A folder shaped like bf-p4c's output, stamped with `run_id`: as
    p4src/build/tofino keeps it (its context gzipped), or as bf-p4c wrote it."""
    files = {
        "manifest.json": json.dumps({"run_id": run_id, "compiler_version": "9.13.4"}),
        "bfrt.json": json.dumps({"schema_version": "1", "learn_filters": [], "tables": [
            {"name": "pipe.ReplayEgress.replay.verdict.replay_verdict", "id": 1},
            *({"name": f"pipe.snapshot.{name}", "id": hash(name + run_id)}
              for name in snapshot_order)]}),
        "pipe/context.json": json.dumps({"build_date": run_id, "run_id": run_id,
                                         "tables": ["replay_verdict"]}),
        "pipe/tofino.bin": f"binary {run_id} pipe".encode(),
        tofino_artifacts.P4INFO_NAME: "tables { preamble { name: \"replay_verdict\" } }\n",
        tofino_artifacts.RESOURCES:
            f"|  Created on: {run_id} |\n|  Run ID: {run_id} |\n| 0 | 39 |\n",
    }
    for name, content in files.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        data = content if isinstance(content, bytes) else content.encode()
        if committed and name in tofino_artifacts.KEPT_GZIPPED:
            name, data = name + ".gz", gzip.compress(data)
        (into / name).write_bytes(data)
    return into


def test_the_tofino_build_is_checked_against_its_sources_and_files(tmp_path: Path) -> None:
    into = _tofino_build(tmp_path / "tofino", "aaaa", ())
    tofino_artifacts.write_record(into, "a" * 64, "9.13.4")
    assert tofino_artifacts.check("a" * 64, into) == []
    assert tofino_artifacts.check("b" * 64, into) == [
        f"the TNA program's P4 sources changed since {into} was compiled: "
        "run `make p4` where bf-p4c is installed"]
    (into / "pipe" / "tofino.bin").write_bytes(b"edited")
    assert tofino_artifacts.check("a" * 64, into) == [
        f"{into}/pipe/tofino.bin was edited after compilation"]
    (into / "bfrt.json").unlink()
    assert f"{into}/bfrt.json is missing: run `make p4` where bf-p4c is installed" in \
        tofino_artifacts.check("a" * 64, into)
    (into / "sources.json").unlink()
    assert tofino_artifacts.check("a" * 64, into) == [
        f"{into}/sources.json is missing: run `make p4` where bf-p4c is installed"]


def test_two_compiles_differ_only_in_their_stamps(tmp_path: Path) -> None:
    """The date, the run id and the order of bf-p4c's snapshot tables change with
    every compile; any other change is a difference."""
    one = _tofino_build(tmp_path / "one", "84f6e5609ccd4de7", ("ingress", "egress"))
    two = _tofino_build(tmp_path / "two", "6b70ef4f53584bd2", ("egress", "ingress"),
                        committed=False)
    assert tofino_artifacts.differences(two, one) == []
    context = two / "pipe" / "context.json"
    context.write_text(context.read_text().replace("replay_verdict", "replay_plan"))
    binary = two / "pipe" / "tofino.bin"
    binary.write_bytes(binary.read_bytes() + b"\x00")
    assert tofino_artifacts.differences(two, one) == [
        f"recompiled pipe/context.json differs from {one}",
        f"recompiled pipe/tofino.bin differs from {one}"]


@pytest.mark.tofino
def test_recompiling_the_tna_program_gives_the_committed_tofino_build() -> None:
    """bf-p4c compiles the TNA program for Tofino 1 (so it fits its 12 stages) into
    what p4src/build/tofino holds, bar what every compile stamps."""
    compiler = needs.bf_p4c()
    assert tofino_artifacts.recompile_matches(artifacts.TNA_P4, compiler) == []
