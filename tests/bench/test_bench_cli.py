"""The benchmark's command line: a bad option or config is one line and exit 2
before anything starts (no testbed, nothing written); a run whose testbed or
training run failed exits 1, a clean one 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.orchestration import bench
from tests.bench.budgets import TINY

CONFIG = """switch:
  address: "127.0.0.1:9559"
  device_id: 0
replay:
  vip: 198.18.0.100
  vip_mac: "02:00:00:00:00:64"
hosts:
  - {name: learner, ip: 198.18.0.1, mac: "02:00:00:00:00:01", port: 1, role: learner}
  - {name: replay, ip: 198.18.0.2, mac: "02:00:00:00:00:02", port: 2, role: replay_server}
  - {name: actor1, ip: 198.18.1.1, mac: "02:00:00:00:01:01", port: 11, role: actor}
tables:
  - {id: 0, capacity: 4096, min_size: 1, max_batch: 32, mode: prioritized}
acl:
  - {host: learner, table: 0, ops: [sample, update]}
  - {host: actor1, table: 0, ops: [insert]}
"""

def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """cli()'s exit code (argparse's SystemExit included) and its stderr."""
    out = tmp_path / "out"
    try:
        code = bench.cli([*args, "--out", str(out), "--log-dir", str(tmp_path / "log")])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("args, says", [
    (["--rounds", "0"], "--rounds: must be 1..1000 (got 0)"),
    (["--rounds", "-1"], "--rounds: must be 1..1000 (got -1)"),
    (["--batch-sizes", "0"], "--batch-sizes: must be 1..255 (got 0)"),
    (["--batch-sizes", "1,300"], "--batch-sizes: must be 1..255 (got 300)"),
    (["--batch-sizes", "1,x"], "--batch-sizes: 'x' is not an integer"),
    (["--batch-sizes", ","], "--batch-sizes: ',' lists no integer"),
    (["--op-seconds", "0"], "--op-seconds: must be more than 0"),
    (["--budget-seconds", "-5"], "--budget-seconds: must be more than 0"),
    (["--sample-reps", "0"], "--sample-reps: must be 1.."),
    (["--pacing-tries", "99"], "--pacing-tries: must be 1..6 (got 99)"),
    (["--forward-window", "0"], "--forward-window: must be 1..4096 (got 0)"),
    (["--training-seeds", "-3"], "--training-seeds: must be 0..4294967295 (got -3)"),
    (["--backends", "switch,foo"], "--backends: backends from switch,host,inprocess"),
    (["--training-switch", "tofino"],
     "--training-switch: 'tofino' is not auto or a comma list of python,bmv2 without repeats"),
    (["--training-switch", "bmv2,bmv2"], "'bmv2,bmv2' is not auto or a comma list"),
    (["--training-switch", "python,auto"], "'python,auto' is not auto or a comma list"),
])
def test_a_bad_option_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            args: list[str], says: str) -> None:
    code, err = run_cli(tmp_path, capsys, "--switch", "none", *args)
    assert code == 2
    assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_the_options_are_checked_against_the_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "one_actor.yaml"
    config.write_text(CONFIG)
    code, err = run_cli(tmp_path, capsys, "--switch", "none", "--config", str(config),
                        "--batch-sizes", "1,32,64")
    assert code == 2
    assert err == (f"error: --batch-sizes 64: table 0 of {config} allows SAMPLEs of at "
                   "most 32 (max_batch)\n")
    code, err = run_cli(tmp_path, capsys, "--switch", "none", "--config", str(config),
                        "--training", "--training-actors", "1,2")   # default sizes: up to 32
    assert code == 2
    assert err == f"error: --training-actors 2: {config} has 1 actor hosts\n"
    assert not (tmp_path / "out").exists()
    args = bench.parse_args(["--config", str(config)])
    bench.check_against_config(args)
    assert args.batch_sizes == [1, 8, 32]


def test_a_config_that_cannot_be_read_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yaml"
    code, err = run_cli(tmp_path, capsys, "--switch", "none", "--config", str(missing))
    assert code == 2
    assert err == f"error: {missing}: cannot read: No such file or directory\n"


def test_failures_are_broken_testbeds_and_training_errors_not_skips_or_unsolved() -> None:
    results = {
        "testbeds": {
            "python": {"switch": "python", "error": "RuntimeError: no route", "failed": True},
            "bmv2": {"switch": "bmv2", "error": "simple_switch_grpc is not installed"},
        },
        "training": {"runs": [
            {"backend": "switch", "actors": 1, "seed": 1, "solved": False, "error": None},
            {"backend": "host", "actors": 2, "seed": 3, "solved": False,
             "error": "exit 2, no SUMMARY line"},
        ]},
    }
    assert bench.failures(results) == [
        "python: RuntimeError: no route",
        "training host actors=2 seed=3: exit 2, no SUMMARY line",
    ]
    results["testbeds"]["python"].pop("failed")
    results["training"]["runs"].pop()
    assert bench.failures(results) == []


def test_a_failed_testbed_exits_1_after_writing_the_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(kind: str, *_args: object) -> dict:
        return {"switch": kind, "backends": ["inprocess"], "error": "RuntimeError: boom",
                "failed": True}
    monkeypatch.setattr(bench, "bench_switch", broken)
    code, err = run_cli(tmp_path, capsys, "--switch", "none", *TINY)
    assert code == 1
    assert err.splitlines()[-1] == "failed: none: RuntimeError: boom"
    assert (tmp_path / "out" / "results.json").exists()


def test_a_clean_in_process_run_exits_0(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(tmp_path, capsys, "--switch", "none", *TINY)
    assert code == 0, err
    assert (tmp_path / "out" / "results.json").exists()


def test_training_switch_auto_is_every_switch_this_machine_has(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "find_bmv2", lambda: None)
    assert bench.training_switches(["auto"]) == ["python"]
    monkeypatch.setattr(bench, "find_bmv2", lambda: Path("/opt/bin/simple_switch_grpc"))
    assert bench.training_switches(["auto"]) == ["python", "bmv2"]
    assert bench.training_switches(["bmv2"]) == ["bmv2"]
