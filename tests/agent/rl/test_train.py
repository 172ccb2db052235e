"""The training runner end to end on tiny budgets (not a solve: that takes minutes)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from agent.rl.train import Run, parse_args

TINY = ["--set", "learning_starts=200", "--set", "eval_every=100", "--set", "eval_episodes=2",
        "--set", "log_every=50", "--set", "checkpoint_every=100", "--set", "batch_size=32"]


def run(tmp: Path, *extra: str) -> dict:
    return Run(parse_args(["--actors", "2", "--seed", "3", "--run-dir", str(tmp), *TINY,
                           *extra])).run()


def test_inprocess_run_writes_metrics_checkpoint_and_summary(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    summary = run(tmp_path, "--max-env-steps", "1500")
    assert summary["env_steps"] >= 1500 and summary["learner_steps"] > 0
    assert summary["client"]["samples"] == 32 * summary["learner_steps"]
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    losses = [float(r["loss"]) for r in rows if r["loss"]]
    assert len(rows) >= 2 and losses and all(math.isfinite(v) and v > 0 for v in losses)
    # every evaluation shows in its row while training, even one that gave up early
    during = [r for r in rows[:-1] if int(r["learner_steps"]) % 100 == 0 and r["loss"]]
    assert during and all(r["eval_return"] and 1 <= int(r["eval_episodes"]) <= 2
                          for r in during)
    assert (tmp_path / "checkpoint.pt").exists()
    assert json.loads((tmp_path / "summary.json").read_text())["backend"] == "inprocess"
    out = capsys.readouterr().out
    assert "SUMMARY solved=" in out and "wall_s=" in out and "eval_return=" in out

    resumed = run(tmp_path, "--max-env-steps", str(summary["env_steps"] + 600),
                  "--resume", str(tmp_path / "checkpoint.pt"))
    assert resumed["learner_steps"] > summary["learner_steps"]
    assert resumed["env_steps"] >= summary["env_steps"] + 600


@pytest.mark.slow
def test_host_backend_with_actor_processes(tmp_path: Path) -> None:
    summary = run(tmp_path, "--backend", "host", "--max-env-steps", "1200",
                  "--max-seconds", "120")
    assert summary["env_steps"] >= 1200 and summary["learner_steps"] > 0
    assert summary["client"]["timeouts"] == 0


def test_inprocess_needs_thread_actors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="the inprocess backend needs --actor-mode thread"):
        run(tmp_path, "--actor-mode", "process", "--max-env-steps", "10")


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "NoSuchEnv-v0"], "error: --env NoSuchEnv-v0: Environment `NoSuchEnv` doesn't"),
    (["--set", "gamma=2"], "error: hyperparameter gamma=2.0: must be in (0, 1]"),
])
def test_bad_environment_or_settings_are_one_line_before_anything_starts(
        tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "agent.rl.train", "--run-dir",
                           str(tmp_path / "run"), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "run").exists()
