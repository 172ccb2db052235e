"""bench --make-run: `make run` through the Python switch and bmv2 per seed, the
ratio of their wall times against issue #10's 1.5, in results.json and
results.md. The runs here are a fake hook's; timings are never asserted."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agent.orchestration import bench
from agent.orchestration.benchmarks import report
from agent.orchestration.benchmarks.run_ratio import RUN_ACTORS, run_ratio, run_ratio_jobs
from agent.orchestration.benchmarks.training import TrainingJob, TrainingResult
from tests.bench.budgets import TINY


def result(job: TrainingJob, wall_s: float, steps: int, solved: bool = True,
           error: str | None = None) -> dict:
    return {"backend": job.backend, "actors": job.actors, "seed": job.seed, "solved": solved,
            "env_steps": 4 * steps, "learner_steps": steps, "wall_s": wall_s,
            "eval_return": 480.0, "curve": [], "error": error}


def test_jobs_are_make_runs_python_then_bmv2_per_seed(tmp_path: Path) -> None:
    jobs = run_ratio_jobs([3, 1], 60.0, 1000, tmp_path, 7)
    assert [(j.seed, j.switch) for j in jobs] == [(3, "python"), (3, "bmv2"),
                                                  (1, "python"), (1, "bmv2")]
    assert {(j.backend, j.actors, j.max_seconds, j.max_env_steps) for j in jobs} == {
        ("switch", RUN_ACTORS, 60.0, 1000)}
    assert jobs[1].run_dir == tmp_path / "make-run-bmv2-s3-7"


def test_ratios_count_seeds_where_both_solved(tmp_path: Path) -> None:
    jobs = run_ratio_jobs([1, 2, 3, 4], 60.0, 1000, tmp_path, 7)
    runs = [result(jobs[0], 30.0, 10_000), result(jobs[1], 60.0, 8_000),
            result(jobs[2], 20.0, 6_000), result(jobs[3], 60.0, 9_000, solved=False),
            result(jobs[4], 20.0, 5_000), result(jobs[5], 25.0, 5_000),
            result(jobs[6], 10.0, 3_000)]             # seed 4's bmv2 run: budget spent
    out = run_ratio(jobs, runs)
    rows = {r["seed"]: r for r in out["rows"]}
    assert rows[1]["wall_ratio"] == 2.0
    assert math.isclose(rows[1]["step_ratio"], (60 / 8000) / (30 / 10_000))
    assert rows[2]["wall_ratio"] is None and rows[2]["bmv2_solved"] is False
    assert rows[3]["wall_ratio"] == 1.25 and rows[3]["step_ratio"] == 1.25
    assert rows[4]["bmv2_solved"] is None and rows[4]["wall_ratio"] is None
    assert out["median_wall_ratio"] == pytest.approx(1.625)        # of 2.0 and 1.25
    assert out["threshold"] == 1.5 and out["pass"] is False
    assert [r["switch"] for r in out["runs"]] == ["python", "bmv2"] * 3 + ["python"]
    out = run_ratio(jobs[4:6], runs[4:6])
    assert out["median_wall_ratio"] == 1.25 and out["pass"] is True
    assert run_ratio(jobs[:4], runs[:1])["pass"] is None         # nothing to compare


def test_bench_records_and_reports_the_make_run_ratio(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "find_bmv2", lambda: Path("/usr/bin/true"))
    monkeypatch.setattr(bench, "have_netns", lambda: (True, ""))
    walls = {"python": 20.0, "bmv2": 50.0}

    def hook(job: TrainingJob) -> TrainingResult:
        return TrainingResult(job.backend, job.actors, job.seed, solved=True, env_steps=4000,
                              learner_steps=1000, wall_s=walls[job.switch], eval_return=480.0)

    out = tmp_path / "out"
    bench.main([*TINY, "--switch", "none", "--make-run", "--make-run-seeds", "1,2",
                "--training-seconds", "5", "--out", str(out),
                "--log-dir", str(tmp_path / "log")], training_hook=hook)
    make_run = json.loads((out / "results.json").read_text())["make_run"]
    assert make_run["status"] == "ran 4 of 4 runs"
    assert [(r["switch"], r["seed"]) for r in make_run["runs"]] == [
        ("python", 1), ("bmv2", 1), ("python", 2), ("bmv2", 2)]
    assert make_run["median_wall_ratio"] == 2.5 and make_run["pass"] is False
    md = (out / "results.md").read_text()
    assert "## make run: bmv2 against the Python switch" in md
    assert "| 1 | 20.0 (1,000) | 50.0 (1,000) | 2.5 | 2.5 |" in md


def test_without_the_option_the_report_says_why(tmp_path: Path) -> None:
    out = tmp_path / "out"
    results = bench.main([*TINY, "--switch", "none", "--out", str(out),
                          "--log-dir", str(tmp_path / "log")])
    assert results["make_run"] == {"status": "skipped (run with --make-run)"}
    assert "Not run: skipped (run with --make-run)." in (out / "results.md").read_text()


def test_a_run_that_broke_shows_its_error_in_its_cell(tmp_path: Path) -> None:
    jobs = run_ratio_jobs([1], 60.0, 1000, tmp_path, 7)
    runs = [result(jobs[0], 30.0, 10_000),
            result(jobs[1], math.nan, 0, solved=False, error="exit 1, no SUMMARY line: a | b")]
    make_run = {"status": "ran 2 of 2 runs", "max_seconds": 60.0,
                "max_env_steps": 1000} | run_ratio(jobs, runs)
    md = report._make_run_markdown(make_run)
    assert "| 1 | 30.0 (10,000) | error: exit 1, no SUMMARY line: a \\| b | – | – |" in md
    assert "target ≤ 1.5: not measured" in md[2]


def test_a_make_run_that_broke_is_a_failure() -> None:
    results = {"testbeds": {}, "training": {"runs": []},
               "make_run": {"runs": [{"switch": "bmv2", "seed": 2,
                                      "error": "no summary within 720 s"}]}}
    assert bench.failures(results) == ["make run on bmv2 seed=2: no summary within 720 s"]
