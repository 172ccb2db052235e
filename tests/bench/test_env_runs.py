"""env_runs keeps a training run as results: metrics, summary, return plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.orchestration.benchmarks import env_runs

PNG_MAGIC = b"\x89PNG"


def test_a_run_is_kept_with_its_summary_and_plot(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text(
        "wall_s,learner_steps,env_steps,train_return,eval_return,samples_per_s\n"
        "1,10,100,-500,,50\n2,20,200,-300,-250,70\n3,30,300,-100,,90\n")
    (run / "summary.json").write_text(json.dumps(
        {"env": "Acrobot-v1", "solved": True, "eval_return": -95.0, "env_steps": 300,
         "storage": "reference", "payloads": {"missing": 0}, "hparams": {"lr": 1}}))
    kept = env_runs.keep("acro", run, tmp_path / "out")
    assert kept["solved"] is True and kept["samples_per_s_median"] == 70.0
    assert "hparams" not in kept
    assert (tmp_path / "out" / "acro.png").read_bytes().startswith(PNG_MAGIC)
    assert json.loads((tmp_path / "out" / "acro.summary.json").read_text()) == kept
    assert (tmp_path / "out" / "acro.metrics.csv").read_text() == (run / "metrics.csv").read_text()


def test_a_run_without_a_summary_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        env_runs.main(["--out", str(tmp_path), f"x={tmp_path}"])
    assert exc.value.code == 2


def test_the_committed_table_is_what_the_committed_summaries_say(tmp_path: Path) -> None:
    committed = env_runs.REPO_RESULTS
    assert sorted(committed.glob("*.summary.json")), "no kept runs"
    for path in committed.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert env_runs.render_index(tmp_path).read_text() == (committed / "README.md").read_text()
    for summary in committed.glob("*.summary.json"):
        name = summary.name.removesuffix(".summary.json")
        assert (committed / f"{name}.png").exists() and (committed / f"{name}.metrics.csv").exists()
