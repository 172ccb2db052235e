"""CPU per learner step: roles from command lines, a process tree followed through a
/proc, the steady window from metrics.csv, the pace bound, and one real run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.orchestration import step_cpu as cli
from agent.orchestration.benchmarks.step_cpu import (
    StepWindow,
    TreeMeter,
    children_of,
    learner_steps_logged,
    metered_run,
    per_step,
    role_of,
)
from agent.orchestration.benchmarks.training import TrainingJob, launch_command
from tests import needs


@pytest.mark.parametrize("line, role", [
    ("/opt/p4/bin/simple_switch_grpc -i 1@p4r1s1 --no-p4", "switch"),
    ("/venv/bin/python -m bmv2.pyswitch --json replay.json", "switch"),
    ("/venv/bin/python -m agent.replay.host_server --bind 198.18.0.2", "host server"),
    ("/venv/bin/python -m agent.rl.train --backend switch", "learner"),
    ("/venv/bin/python -B -c from multiprocessing.spawn import spawn_main; spawn_main()", "actors"),
    ("/venv/bin/python -m agent.orchestration.launch --switch bmv2", "launcher"),
    ("/venv/bin/python -c from multiprocessing.resource_tracker import main", "other"),
])
def test_a_role_from_its_command_line(line: str, role: str) -> None:
    assert role_of(line) == role


def fake_proc(root: Path, procs: dict[int, tuple[int, str, dict[int, int]]]) -> Path:
    """A /proc with pid -> (parent, command line, {tid: ns on the CPU})."""
    for pid, (ppid, line, threads) in procs.items():
        d = root / str(pid)
        (d / "task").mkdir(parents=True)
        (d / "stat").write_text(f"{pid} (py thon) S {ppid} 1 1 0\n")
        (d / "cmdline").write_bytes(line.replace(" ", "\0").encode() + b"\0")
        for tid, ns in threads.items():
            (d / "task" / str(tid)).mkdir()
            (d / "task" / str(tid) / "schedstat").write_text(f"{ns} 0 0\n")
    (root / "self").mkdir()
    return root


def test_the_meter_follows_the_tree_and_keeps_what_ended_processes_spent(
        tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {
        10: (1, "python -m agent.orchestration.launch", {10: 1_000_000_000}),
        11: (10, "simple_switch_grpc -i 1@a", {11: 2_000_000_000, 12: 6_000_000_000}),
        13: (10, "python -m agent.rl.train", {13: 3_000_000_000}),
        14: (13, "python -c spawn_main()", {14: 500_000_000}),
        20: (1, "simple_switch_grpc another run", {20: 9_000_000_000})})
    assert children_of({10}, proc) == {10, 11, 13, 14}
    meter = TreeMeter(10, proc)
    meter.poll()
    (proc / "14" / "task" / "14" / "schedstat").write_text("700000000 0 0\n")
    (proc / "13" / "cmdline").write_bytes(b"")      # the learner ends, not reaped yet
    meter.poll()
    for path in sorted((proc / "14").rglob("*"), reverse=True):   # the actor ends
        path.rmdir() if path.is_dir() else path.unlink()
    (proc / "14").rmdir()
    meter.poll()
    assert meter.by_role() == {"launcher": {"cpu_s": 1.0, "busiest_s": 1.0},
                               "switch": {"cpu_s": 8.0, "busiest_s": 6.0},
                               "learner": {"cpu_s": 3.0, "busiest_s": 3.0},
                               "actors": {"cpu_s": 0.7, "busiest_s": 0.7}}


def test_the_window_spans_the_first_and_the_latest_logged_step_count(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.csv"
    window = StepWindow(metrics)
    meter = TreeMeter(0, tmp_path)
    meter.roles = {1: "switch", 2: "learner"}

    def at(steps: int | None, switch_ns: int, learner_ns: int) -> None:
        if steps is not None:
            rows = metrics.read_text() if metrics.exists() else "wall_s,learner_steps\n"
            metrics.write_text(rows + f"1.0,{steps}\n")
        meter.threads = {(1, 1): switch_ns, (2, 2): learner_ns}
        window.observe(meter)

    at(None, 5 * 10**9, 1 * 10**9)       # start-up: nothing logged yet
    assert learner_steps_logged(metrics) == 0 and window.figures(meter) == (0, 0.0, {})
    at(250, 6 * 10**9, 2 * 10**9)        # the first count: the window opens
    at(250, 7 * 10**9, 3 * 10**9)        # no new count: nothing marked
    at(750, 8 * 10**9, 4 * 10**9)        # the latest count: the window closes here
    steps, seconds, spent = window.figures(meter)
    assert steps == 500 and seconds >= 0.0
    assert spent == {"switch": {"cpu_s": 2.0, "busiest_s": 2.0},
                     "learner": {"cpu_s": 2.0, "busiest_s": 2.0}}


def test_the_busiest_thread_is_the_one_that_spent_most_in_the_window(tmp_path: Path) -> None:
    """Not the one with the most CPU since it started: an idle old thread does not count."""
    meter = TreeMeter(0, tmp_path, {(1, 1): 50 * 10**9, (1, 2): 1 * 10**9}, {1: "switch"})
    spent = meter.by_role(since={(1, 1): 50 * 10**9, (1, 2): 0})
    assert spent == {"switch": {"cpu_s": 1.0, "busiest_s": 1.0}}


def test_the_bound_is_the_busiest_thread_or_the_cores_whichever_is_tighter() -> None:
    spent = {"switch": {"cpu_s": 8.0, "busiest_s": 4.0},
             "learner": {"cpu_s": 3.0, "busiest_s": 3.0}}
    figs = per_step(spent, 1000, cores=2)
    assert figs["roles"]["switch"] == {"ms": 8.0, "busiest_ms": 4.0}
    assert figs["total_ms"] == 11.0
    assert figs["bound_steps_per_s"] == pytest.approx(2000 / 11)    # the cores bind
    assert per_step(spent, 1000, cores=8)["bound_steps_per_s"] == 250.0   # the busiest thread
    assert per_step({}, 0)["bound_steps_per_s"] is None


def test_a_run_past_its_timeout_is_stopped(tmp_path: Path) -> None:
    polls: list[int] = []
    status, meter = metered_run([sys.executable, "-c", "import time; time.sleep(30)"],
                                tmp_path / "log", 1.0, tmp_path, lambda m: polls.append(1))
    assert status is None and polls
    assert set(meter.by_role()) == {"other"}   # the sleeper was seen while it ran


@pytest.mark.parametrize("args, says", [
    (["--backends", "switch,inprocess"], "--backends: 'switch,inprocess' is not a comma list"),
    (["--switch", "tofino"], "--switch: invalid choice: 'tofino'"),
    (["--actors", "9"], "--actors: must be 1..4 (got 9)"),
])
def test_a_bad_option_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                            args: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.cli(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_a_short_run_through_the_python_switch(tmp_path: Path) -> None:
    """A real run: the switch, the Learner and the Actors each spent CPU in the window,
    and the bound is at least the pace measured."""
    needs.testbed("python")
    out = tmp_path / "out"
    results = cli.main(["--switch", "python", "--backends", "switch", "--seeds", "1",
                        "--env-steps", "4000", "--max-seconds", "60", "--out", str(out),
                        "--log-dir", str(tmp_path / "log")])
    (run,) = results["runs"]
    assert run["error"] is None, run
    assert run["window_steps"] > 0
    assert all(run["roles"][role]["ms"] > 0 for role in ("switch", "learner", "actors"))
    assert run["steps_per_s"] <= run["bound_steps_per_s"] * 1.05
    assert json.loads((out / "results.json").read_text())["runs"][0]["window_steps"] > 0
    assert "| python | in-network | 1 |" in (out / "results.md").read_text()


def test_every_run_takes_its_env_steps_instead_of_stopping_at_solving(tmp_path: Path) -> None:
    job = TrainingJob("switch", "python", 2, 3, 300.0, 40_000, tmp_path, settings=(
        cli.NEVER_SOLVED,))
    cmd = launch_command(job)
    assert cmd[cmd.index("--max-env-steps") + 1] == "40000"
    assert cmd[-2:] == ["--set", "solve_return=1000000"]
