"""The benchmark harness end to end on a tiny budget: it runs, and writes
results.json, results.md and the plots with the expected keys. Timings are
never asserted (they are measurements, not test outcomes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.orchestration import bench
from agent.orchestration.benchmarks import report
from agent.orchestration.benchmarks.cpu import thread_cpu_ns
from agent.orchestration.benchmarks.harness import Budget, medians, ratios, run_rounds
from agent.orchestration.benchmarks.pacing import LADDER
from agent.orchestration.benchmarks.replay_ops import MODES
from agent.orchestration.benchmarks.tna_passes import EXPECTED
from agent.orchestration.benchmarks.training import (
    TrainingJob,
    TrainingResult,
    parse_summary,
    read_curve,
)
from tests import needs
from tests.bench.budgets import TINY

TRAINING = ["--training", "--training-switch", "python,bmv2", "--training-actors", "1,2",
            "--training-seeds", "1", "--training-seconds", "1"]
PNG_MAGIC = b"\x89PNG"


def fake_hook(job: TrainingJob) -> TrainingResult:
    """A training run that 'solves' at once, so the training plumbing is exercised: the
    in-network one in half the host server's time, 64 samples and 4 UPDATE requests
    per learner step."""
    wall = 1.0 if job.backend == "switch" else 2.0
    return TrainingResult(job.backend, job.actors, job.seed, solved=True, env_steps=1000,
                          learner_steps=100, wall_s=wall, eval_return=500.0, samples=6400,
                          update_requests=400, curve=[(0.5, 20.0), (wall, 480.0)])


def op_keys(batch_sizes: tuple[int, ...]) -> set[str]:
    keys = {"insert.p50_us", "insert.p99_us", "insert_rate.per_s", "update_rate.per_s",
            "client.retries", "client.timeouts", "client.lost_replies"}
    ops = ["insert", "insert_rate", "update_rate"]
    for mode in MODES:
        keys.add(f"sample.{mode}.us_per_reply")
        for n in batch_sizes:
            keys |= {f"sample.{mode}.{n}.{k}"
                     for k in ("p50_us", "p99_us", "exp_per_s", "inflight_exp_per_s")}
            ops += [f"sample.{mode}.{n}", f"sample.{mode}.{n}.inflight"]
    return keys | {f"{op}.{k}" for op in ops for k in ("retries", "lost", "late")}


def run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out"
    bench.main([*TINY, *TRAINING, *args, "--out", str(out), "--log-dir", str(tmp_path / "log")],
               training_hook=fake_hook)
    return json.loads((out / "results.json").read_text())


def check_common(tmp_path: Path, results: dict) -> None:
    out = tmp_path / "out"
    assert {"schema", "started_utc", "duration_s", "machine", "settings", "testbeds",
            "training", "files"} <= set(results)
    assert {"cpu", "cores", "kernel", "python", "p4c", "bmv2"} <= set(results["machine"])
    md = (out / "results.md").read_text()
    assert "| INSERT+ACK latency p50 (µs) |" in md and "## Training" in md
    assert results["tna_passes"]["status"] == "counted"
    assert {r["op"] for r in results["tna_passes"]["ops"]} == set(EXPECTED)
    assert "## Passes per op through the Tofino program" in md
    for name in ("latency_by_batch.png", "training_return.png"):
        assert name in results["files"]
        assert (out / name).read_bytes()[:4] == PNG_MAGIC
    training = results["training"]
    assert training["status"].startswith("ran")
    assert training["switches"] == ["python", "bmv2"]
    assert [r["switch"] for r in training["runs"]] == ["python"] * 6 + ["bmv2"] * 6
    assert {(r["switch"], r["backend"], r["actors"]) for r in training["summary"]} == {
        (k, b, n) for k in ("python", "bmv2") for b in ("switch", "host", "inprocess")
        for n in (1, 2)}
    assert all(r["solved"] == r["runs"] == 1 for r in training["summary"])
    for r in training["summary"]:
        wall = 1.0 if r["backend"] == "switch" else 2.0
        assert r["median_env_steps_per_s"] == 1000 / wall
        assert r["median_learner_steps_per_s"] == 100 / wall
        assert r["median_samples_per_s"] == 6400 / wall
        assert r["median_update_requests_per_step"] == 4.0
    assert training["wall_ratios"] == [
        {"switch": k, "actors": n, "in_network_over_host": 0.5, "per_env_step": 0.5,
         "threshold": 0.7, "pass": True}
        for k in ("python", "bmv2") for n in (1, 2)]
    assert "| learner steps/s | sampled/s | UPDATE requests/step |" in md
    assert "| Python switch | 2 | 0.50 | **pass** | 0.5 |" in md
    assert "| bmv2 simple_switch_grpc | 1 | 0.50 | **pass** | 0.5 |" in md


def test_inprocess_only(tmp_path: Path) -> None:
    results = run(tmp_path, "--switch", "none")
    check_common(tmp_path, results)
    tb = results["testbeds"]["none"]
    assert tb["backends"] == ["inprocess"] and len(tb["rounds"]) == 1
    assert op_keys((1, 4)) <= set(tb["median"]["inprocess"])
    assert "host_pacing" not in tb and "targets" not in tb


@pytest.mark.netns
def test_python_switch_testbed(tmp_path: Path) -> None:
    needs.netns()
    results = run(tmp_path, "--switch", "python")
    check_common(tmp_path, results)
    tb = results["testbeds"]["python"]
    assert "error" not in tb, tb.get("error")
    assert tb["backends"] == ["switch", "host", "inprocess"]
    for backend in tb["backends"]:
        assert op_keys((1, 4)) <= set(tb["median"][backend]), backend
    assert {"forward.pps", "forward.sent", "forward.received", "forward.loss",
            "forward.latency.p50_us", "forward.latency.p99_us"} <= set(
        tb["median"]["forwarding"])
    assert "insert.p50_us" in tb["ratio_in_network_over_host"]
    assert "forwarding_pps.png" in results["files"]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "in-network / host" in md and "one packet in flight" in md
    # SAMPLE 32 per payload size, by reference beyond the slot, nothing missing.
    payloads = tb["payloads"]
    for backend in ("switch", "host"):
        for size in ("64B_slot", "1KB_ref", "atari_ref"):
            key = f"payload.{backend}.{size}"
            assert payloads[f"{key}.p50_ms"] > 0 and payloads[f"{key}.experiences_per_s"] > 0
            assert payloads[f"{key}.missing"] == 0
    assert "| Atari transition (56 448 B) by reference |" in md

    # The host server's pacing was calibrated before the rounds and is recorded.
    pacing = tb["host_pacing"]
    assert pacing["source"] == "calibrated" and 1 <= len(pacing["tries"]) <= len(LADDER)
    assert [t["label"] for t in pacing["tries"]] == [str(p) for p in
                                                     LADDER[: len(pacing["tries"])]]
    if pacing["clean"]:
        assert pacing["chosen"] == {k: pacing["tries"][-1][k] for k in pacing["chosen"]}
    assert f"Host server pacing: **{pacing['chosen']['label']}**" in md
    # Loss per operation and backend, totals over rounds.
    for backend in tb["backends"]:
        assert {"insert.retries", "sample.uniform.4.inflight.lost"} <= set(
            tb["loss_totals"][backend])
    assert "| SAMPLE 4 uniform, 2 sent ahead |" in md
    # CPU per reply of the largest batch: the switch for both networked backends,
    # the host server only for 'host', none of it in-process (its switch is this
    # process). Where the kernel keeps no schedstat there are no such rows at all.
    cpu = {b: {k for k in tb["median"][b] if ".cpu." in k} for b in tb["backends"]}
    if thread_cpu_ns(os.getpid()):
        assert {"sample.prioritized.4.cpu.switch", "sample.prioritized.4.cpu.switch_busiest",
                "sample.prioritized.4.cpu.client"} <= cpu["switch"]
        assert "sample.uniform.4.cpu.server" in cpu["host"] - cpu["switch"]
        switch = tb["median"]["switch"]
        busiest, total = (switch[f"sample.uniform.4.cpu.{w}"] for w in ("switch_busiest", "switch"))
        assert 0 < busiest <= total
        floor = switch["sample.uniform.4.cpu.floor"]
        assert max(busiest, switch["sample.uniform.4.cpu.client"]) <= floor
        assert floor <= total + switch["sample.uniform.4.cpu.client"]
        assert "| SAMPLE 4 uniform: CPU µs per reply, the switch's busiest thread |" in md
    else:
        assert cpu["switch"] <= {f"sample.{m}.4.cpu.{w}" for m in ("uniform", "prioritized")
                                 for w in ("client", "floor")}
    assert cpu["inprocess"] == set()
    # Targets: SAMPLE 32 / 128 were not measured in this tiny run.
    tgt = tb["targets"]
    assert [r["target"] for r in tgt["rows"]][:2] == ["SAMPLE 32 uniform p50",
                                                      "SAMPLE 32 prioritized p50"]
    assert tgt["not_measured"] == 4 and tgt["passed"] + tgt["failed"] == 3
    insert = next(r for r in tgt["rows"] if r["key"] == "insert.p50_us")
    assert insert["ratio"] == pytest.approx(tb["ratio_in_network_over_host"]["insert.p50_us"])
    assert insert["pass"] == (insert["ratio"] <= 0.65)
    assert "| INSERT+ACK p50 |" in md and "| ≤ 0.65 |" in md

    # With a second switch measured, the report sets the two side by side.
    results["testbeds"]["bmv2"] = results["testbeds"]["python"]
    table = report.markdown(results)
    assert "## The switches side by side" in table
    pps = report._fmt(tb["median"]["forwarding"]["forward.pps"])
    assert f"| forwarding (packets/s) | {pps} | {pps} |" in table


def test_rounds_rotate_record_errors_and_take_medians() -> None:
    order: list[str] = []

    def job(name: str, value: float):
        def run_job() -> dict[str, float]:
            order.append(name)
            if name == "bad":
                raise RuntimeError("boom")
            return {"x.p50_us": value + len(order), "x.n": 1.0}
        return run_job

    rounds = run_rounds(3, {"a": job("a", 0), "b": job("b", 100), "bad": job("bad", 0)},
                        Budget(60.0))
    assert order[:3] == ["a", "b", "bad"] and order[3:6] == ["b", "bad", "a"]
    assert all(r["bad"] == "RuntimeError: boom" for r in rounds)
    med = medians(rounds)
    assert set(med) == {"a", "b", "bad"} and med["bad"] == {}
    assert med["a"]["x.p50_us"] == sorted(r["a"]["x.p50_us"] for r in rounds)[1]
    assert set(ratios(med["a"], med["b"])) == {"x.p50_us"}


def test_training_summary_line_and_curve(tmp_path: Path) -> None:
    line = ("SUMMARY solved=True backend=switch actors=2 env=CartPole-v1 seed=1 "
            "learner_steps=900 env_steps=12000 wall_s=80.5 eval_return=492.3")
    fields = parse_summary(f"noise\n{line}\n")
    assert fields is not None and fields["env_steps"] == "12000" and fields["solved"] == "True"
    assert parse_summary("no summary here") is None
    csv_path = tmp_path / "metrics.csv"
    csv_path.write_text("wall_s,train_return,eval_return\n1.0,,\n2.0,35.5,\n3.0,80,120\n")
    assert read_curve(csv_path) == [(2.0, 35.5), (3.0, 80.0)]
    assert read_curve(tmp_path / "missing.csv") == []
