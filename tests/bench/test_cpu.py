"""CPU per reply (agent/orchestration/benchmarks/cpu.py): read from /proc, divided right."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from agent.orchestration.benchmarks.cpu import (
    CpuMeter,
    CpuSnapshot,
    per_reply,
    thread_cpu_ns,
    usable_cores,
)


def _fake_proc(root: Path, pid: int, threads: dict[int, int]) -> None:
    for tid, ns in threads.items():
        task = root / str(pid) / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "schedstat").write_text(f"{ns} 12345 7\n")


def test_thread_cpu_reads_each_threads_schedstat(tmp_path: Path) -> None:
    _fake_proc(tmp_path, 42, {42: 5_000, 43: 7_000})
    assert thread_cpu_ns(42, tmp_path) == {42: 5_000, 43: 7_000}
    assert thread_cpu_ns(99, tmp_path) == {}        # gone: nothing, no error


def test_per_reply_divides_each_process_and_its_busiest_thread() -> None:
    before = CpuSnapshot({"switch": {1: 1_000, 2: 0}, "server": {9: 0}}, client_ns=0)
    after = CpuSnapshot({"switch": {1: 41_000, 2: 20_000, 3: 4_000}, "server": {9: 8_000}},
                        client_ns=12_000)
    figs = per_reply(before, after, replies=4, cores=2)
    # switch: (40 + 20 + 4) µs over 4 replies; busiest thread 40 µs; thread 3 is new.
    # floor: all of it, (3 + 16 + 2) µs per reply, on 2 cores beats the busiest thread's 10.
    assert figs == {"cpu.client": 3.0, "cpu.switch": 16.0, "cpu.switch_busiest": 10.0,
                    "cpu.server": 2.0, "cpu.server_busiest": 2.0, "cpu.floor": 10.5}
    assert per_reply(before, after, replies=0, cores=2) == {}


def test_the_floor_is_the_busiest_thread_when_cores_are_plenty() -> None:
    before = CpuSnapshot({"switch": {1: 0, 2: 0}}, client_ns=0)
    after = CpuSnapshot({"switch": {1: 30_000, 2: 6_000}}, client_ns=12_000)
    assert per_reply(before, after, replies=1, cores=8)["cpu.floor"] == 30.0
    assert per_reply(before, after, replies=1, cores=1)["cpu.floor"] == 48.0
    # the client alone can be the busiest thread
    quiet = CpuSnapshot({"switch": {1: 2_000}}, client_ns=12_000)
    assert per_reply(before, quiet, replies=2, cores=8)["cpu.floor"] == 6.0


def test_a_process_unreadable_at_either_end_is_left_out() -> None:
    before = CpuSnapshot({"switch": {}, "server": {9: 0}}, client_ns=0)
    after = CpuSnapshot({"switch": {1: 5_000}, "server": {}}, client_ns=0)
    assert set(per_reply(before, after, 1, cores=2)) == {"cpu.client", "cpu.floor"}


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task").exists(), reason="needs Linux /proc")
def test_the_meter_sees_a_busy_thread_of_a_watched_process() -> None:
    meter = CpuMeter({"me": os.getpid()})
    if not thread_cpu_ns(os.getpid()):
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/schedstat")
    before = meter.snapshot()
    spun, measured = threading.Event(), threading.Event()

    def spin() -> None:   # a thread that has ended is no longer in /proc: it waits
        end = time.thread_time() + 0.05
        while time.thread_time() < end:
            pass
        spun.set()
        measured.wait(10)

    worker = threading.Thread(target=spin)
    worker.start()
    done = time.thread_time() + 0.05
    while time.thread_time() < done:   # the client (this thread) spins too
        pass
    spun.wait(10)
    figs = per_reply(before, meter.snapshot(), replies=1, cores=meter.cores)
    measured.set()
    worker.join()
    assert figs["cpu.client"] >= 50_000 * 0.9
    assert figs["cpu.me_busiest"] >= 50_000 * 0.9      # one of the two spinners
    assert figs["cpu.me"] >= 2 * 50_000 * 0.9          # both, and whatever else ran


def test_usable_cores_follow_the_affinity_mask() -> None:
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity on this platform")
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1
    assert CpuMeter({}).cores == usable_cores()
