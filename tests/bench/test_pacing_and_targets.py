"""The bench's pure logic, deterministic: pacing calibration, the loss probe, the
per-reply slope, loss totals, the target table and the training runs' pacing.
No timings are asserted."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.contract import protocol
from agent.contract.protocol import ALLOW_ALL, HEADER, Mode
from agent.orchestration import bench
from agent.orchestration.benchmarks.harness import loss_totals, ratios
from agent.orchestration.benchmarks.pacing import LADDER, ProbeResult, calibrate, probe
from agent.orchestration.benchmarks.replay_ops import inflight_rate, us_per_reply
from agent.orchestration.benchmarks.targets import SAMPLE_TARGET, SINGLE_TARGET, targets
from agent.orchestration.benchmarks.training import TrainingJob, launch_command
from agent.replay.client import ReplayClient, RetryPolicy, make_client
from agent.replay.host_server import HostServer, Pacing, build_service
from agent.replay.memory import ReplayService, TableConfig
from tests.agent.replay.lossy_proxy import LossyProxy

LOOPBACK = "127.0.0.1"


def result(lost: int = 0, retries: int = 0, failed: bool = False) -> ProbeResult:
    return {"requests": 10, "retries": retries, "lost": lost, "failed": failed,
            "seconds": 0.1, "stopped_at": None}


def test_calibration_takes_the_first_clean_setting_fastest_first() -> None:
    outcomes = {LADDER[0]: result(lost=90, retries=2), LADDER[1]: result(lost=3, retries=1),
                LADDER[2]: result()}
    tried: list[Pacing] = []

    def fake_probe(p: Pacing) -> ProbeResult:
        tried.append(p)
        return outcomes.get(p, result())

    chosen, record = calibrate(fake_probe)
    assert chosen == LADDER[2] and tried == list(LADDER[:3])
    assert record["clean"] is True and record["chosen"]["label"] == str(LADDER[2])
    assert [t["lost"] for t in record["tries"]] == [90, 3, 0]
    assert record["chosen"]["server_args"] == LADDER[2].args()


def test_calibration_without_a_clean_setting_takes_the_least_lossy() -> None:
    lost = {LADDER[0]: result(lost=50), LADDER[1]: result(lost=0, failed=True),
            LADDER[2]: result(lost=4, retries=2), LADDER[3]: result(lost=4, retries=1)}
    chosen, record = calibrate(lambda p: lost[p], tries=4)
    assert len(record["tries"]) == 4  # bounded by `tries`
    assert chosen == LADDER[3] and record["clean"] is False  # fewest lost, then retries
    chosen, record = calibrate(lambda p: result(lost=1), tries=0)
    assert chosen == LADDER[0] and len(record["tries"]) == 1  # at least one try


def test_ladder_runs_from_unpaced_to_slower_and_slower() -> None:
    assert not LADDER[0].paced
    rates = [p.rate for p in LADDER[1:]]
    assert rates == sorted(rates, reverse=True) and len(set(rates)) == len(rates)
    assert all(p.burst < 64 for p in LADDER[1:])  # below bmv2's egress queue


@pytest.fixture
def server() -> Iterator[HostServer]:
    service = build_service([0], TableConfig(capacity=64, min_size=1, max_batch=64),
                            [(LOOPBACK, ALLOW_ALL)], seed=3)
    srv = HostServer(service, (LOOPBACK, 0)).start()
    yield srv
    srv.stop()


def filled(service: ReplayService) -> None:
    make_client("inprocess", service=service).insert_many(
        [protocol.floats_to_payload([i]) for i in range(16)])


def inprocess(service: ReplayService) -> ReplayClient:
    return make_client("inprocess", service=service)


def test_probe_covers_every_size_and_mode_when_nothing_is_lost(server: HostServer) -> None:
    filled(server.service)
    # a retry stops the probe: the timeout is far past a stall of a busy test machine
    c = make_client("host", address=server.address, policy=RetryPolicy(timeout=10.0))
    try:
        got = probe(c, [4, 16], reps=3, seconds=60.0)
    finally:
        c.close()
    assert got["requests"] == 2 * 2 * 2 * 3  # sizes x modes x (in flight, one at a time) x reps
    assert (got["retries"], got["lost"], got["failed"], got["stopped_at"]) == (0, 0, False, None)


def test_probe_stops_at_the_first_lost_reply(server: HostServer) -> None:
    filled(server.service)
    dropped = {"done": False}

    def drop_one(direction: str, data: bytes) -> bool:
        if direction == "down" and HEADER.unpack_from(data)[6] == 5 and not dropped["done"]:
            dropped["done"] = True
            return True
        return False

    proxy = LossyProxy(server.address, drop=drop_one)
    c = make_client("host", address=proxy.address,
                    policy=RetryPolicy(timeout=0.2, retries=2, adaptive=False))
    try:
        got = probe(c, [4, 16], reps=3, seconds=30.0)
    finally:
        c.close()
        proxy.close()
    assert got["stopped_at"] == "SAMPLE 16 uniform, 3 sent ahead"  # largest size first
    assert got["requests"] == 3 and got["lost"] == 1 and got["retries"] == 1
    assert not got["failed"]


def test_probe_records_a_refused_request_as_failed() -> None:
    service = ReplayService()
    service.configure(0, TableConfig(min_size=100))
    service.allow(LOOPBACK, 0, ALLOW_ALL)
    got = probe(inprocess(service), [4], reps=2)
    assert got["failed"] and got["requests"] == 0
    assert "BELOW_MIN_SIZE" in str(got["stopped_at"])


def test_inflight_rate_collects_every_request_it_sent() -> None:
    service = ReplayService()
    service.configure(0, TableConfig(min_size=1))
    service.allow(LOOPBACK, 0, ALLOW_ALL)
    c = inprocess(service)
    filled(service)
    assert inflight_rate(c, 8, Mode.UNIFORM, reps=7, seconds=30.0, depth=2) > 0
    stats = c.stats()
    assert stats["sample_batches"] == 7 and stats["samples"] == 7 * 8
    assert inflight_rate(c, 8, Mode.UNIFORM, reps=5, seconds=0.0) == 0.0  # none sent


def test_us_per_reply_is_the_least_squares_slope() -> None:
    assert us_per_reply({1: 110.0, 8: 180.0, 32: 420.0, 128: 1380.0}) == pytest.approx(10.0)
    noisy = {1: 100.0, 8: 190.0, 32: 400.0, 128: 1400.0}
    assert us_per_reply(noisy) == pytest.approx(105317.5 / 10332.75)  # Sxy / Sxx
    assert us_per_reply({1: 100.0, 32: None}) is None
    assert us_per_reply({32: 100.0}) is None


def test_loss_totals_sum_over_rounds_and_ratios_skip_counts() -> None:
    rounds = [{"host": {"insert.retries": 1.0, "insert.lost": 1.0, "insert.p50_us": 9.0,
                        "client.retries": 1.0}},
              {"host": "ReplayTimeout: gone"},
              {"host": {"insert.retries": 0.0, "insert.lost": 0.0, "insert.p50_us": 7.0,
                        "client.retries": 0.0}},
              {"host": {"insert.retries": 2.0, "insert.lost": 5.0, "insert.late": 4.0,
                        "insert.p50_us": 8.0}}]
    assert loss_totals(rounds) == {"host": {"insert.retries": 3.0, "insert.lost": 6.0,
                                            "insert.late": 4.0}}
    a = {"insert.p50_us": 4.0, "insert.retries": 1.0, "insert.lost": 2.0, "client.retries": 1.0}
    assert ratios(a, {k: 2.0 for k in a}) == {"insert.p50_us": 2.0}


def test_targets_give_ratio_threshold_and_verdict_per_row() -> None:
    median = {"switch": {"sample.uniform.32.p50_us": 400.0, "sample.prioritized.32.p50_us": 900.0,
                         "insert.p50_us": 130.0, "sample.uniform.1.p50_us": 300.0,
                         "sample.prioritized.1.p50_us": 100.0},
              "host": {"sample.uniform.32.p50_us": 1000.0, "sample.prioritized.32.p50_us": 1000.0,
                       "insert.p50_us": 200.0, "sample.uniform.1.p50_us": 400.0,
                       "sample.prioritized.1.p50_us": 200.0}}
    loss = {"host": {"sample.uniform.1.retries": 0.0, "sample.uniform.1.lost": 2.0}}
    tgt = targets(median, loss)
    rows = {r["target"]: r for r in tgt["rows"]}
    assert len(rows) == 7
    assert rows["SAMPLE 32 uniform p50"]["ratio"] == pytest.approx(0.4)
    assert rows["SAMPLE 32 uniform p50"]["pass"] is True
    assert rows["SAMPLE 32 prioritized p50"]["pass"] is False  # 0.9 > 0.5
    assert rows["SAMPLE 128 uniform p50"]["pass"] is None  # not measured
    assert rows["INSERT+ACK p50"]["ratio"] == pytest.approx(0.65)
    assert rows["INSERT+ACK p50"]["pass"] is True  # at the threshold
    assert rows["INSERT+ACK p50"]["threshold"] == SINGLE_TARGET
    assert rows["SAMPLE 32 uniform p50"]["threshold"] == SAMPLE_TARGET
    assert rows["SAMPLE 1 uniform p50"]["pass"] is False and not rows["SAMPLE 1 uniform p50"][
        "clean"]
    assert rows["SAMPLE 1 prioritized p50"]["clean"]
    assert (tgt["passed"], tgt["failed"], tgt["not_measured"]) == (3, 2, 2)
    assert all(r["cpu_bound"] is None for r in tgt["rows"])   # no CPU metered


def test_a_metered_batch_gets_the_ratio_its_cpu_floor_allows() -> None:
    median = {"switch": {"sample.prioritized.128.p50_us": 5000.0,
                         "sample.prioritized.128.cpu.floor": 30.0},
              "host": {"sample.prioritized.128.p50_us": 4000.0,
                       "sample.prioritized.128.cpu.floor": 20.0}}
    rows = {r["target"]: r for r in targets(median, {})["rows"]}
    row = rows["SAMPLE 128 prioritized p50"]
    assert row["ratio"] == pytest.approx(1.25)
    assert row["cpu_bound"] == pytest.approx(128 * 30.0 / 4000.0)   # 0.96
    assert rows["INSERT+ACK p50"]["cpu_bound"] is None


def test_training_runs_use_the_pacing_calibrated_on_their_switch(tmp_path: Path) -> None:
    args = argparse.Namespace(host_pacing=None)
    beds = {"bmv2": {"host_pacing": {"chosen": {"rate": 10000.0, "burst": 32}}}}
    assert bench.training_pacing("bmv2", args, beds) == Pacing(10000.0, 32)
    assert bench.training_pacing("python", args, beds) == Pacing()
    fixed = argparse.Namespace(host_pacing=Pacing(5000.0, 16))
    assert bench.training_pacing("python", fixed, beds) == Pacing(5000.0, 16)
    job = TrainingJob("host", "bmv2", 1, 1, 60.0, 1000, tmp_path, Pacing(10000.0, 32))
    assert launch_command(job)[-2:] == ["--host-pacing", "10000:32"]
    job = TrainingJob("switch", "bmv2", 1, 1, 60.0, 1000, tmp_path, Pacing(10000.0, 32))
    assert "--host-pacing" not in launch_command(job)


def test_results_go_outside_docs_unless_asked() -> None:
    args = bench.parse_args([])
    assert args.out is None and args.host_pacing is None and args.batch_sizes is None
    bench.check_against_config(args)   # the testbed's table 0 takes batches up to 128
    assert args.batch_sizes == [1, 8, 32, 128]
    out = bench.default_out(datetime(2026, 12, 3, 16, 5, 9, tzinfo=UTC))
    assert out == bench.REPO / "runs" / "bench-20261203-160509"
    assert bench.parse_args(["--out", "docs/benchmarks"]).out == Path("docs/benchmarks")
    assert bench.parse_args(["--host-pacing", "off"]).host_pacing == Pacing()
    assert bench.parse_args(["--host-pacing", "8000:16"]).host_pacing == Pacing(8000.0, 16)
