"""What a training run leaves behind, read back for the end-to-end race."""

from __future__ import annotations

import json
from pathlib import Path

from agent.orchestration.benchmarks.training import TrainingResult, read_run


def write_run(run_dir: Path, client: dict) -> None:
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps({"client": client}))
    (run_dir / "metrics.csv").write_text("wall_s,train_return,eval_return\n1.5,20.0,\n"
                                         "3.0,480.5,500\n")


def test_a_run_reports_its_samples_update_requests_and_curve(tmp_path: Path) -> None:
    write_run(tmp_path / "run", {"samples": 640, "updates": 640, "update_requests": 40})
    got = read_run(tmp_path / "run", TrainingResult("switch", 2, 1))
    assert (got.samples, got.update_requests) == (640, 40)
    assert got.curve == [(1.5, 20.0), (3.0, 480.5)]


def test_a_client_of_single_updates_counts_one_request_per_update(tmp_path: Path) -> None:
    write_run(tmp_path / "run", {"samples": 640, "updates": 640})
    got = read_run(tmp_path / "run", TrainingResult("host", 1, 3))
    assert (got.samples, got.update_requests) == (640, 640)


def test_a_run_without_its_files_reports_nothing(tmp_path: Path) -> None:
    got = read_run(tmp_path / "missing", TrainingResult("inprocess", 4, 2))
    assert (got.samples, got.update_requests, got.curve) == (0, 0, [])
