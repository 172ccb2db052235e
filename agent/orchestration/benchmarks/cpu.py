"""CPU time per reply: who worked for a batch, thread by thread.

A latency says how long a SAMPLE took; this says where the machine's time went.
Around a measurement, `CpuMeter` reads the CPU time of every thread of each
watched process (the switch: bmv2's ingress, egress, transmit ... threads, or the
Python switch; the host replay server) from /proc/<pid>/task/<tid>/schedstat
(nanoseconds on the CPU), and the calling thread's own (the client), and
`per_reply` divides what each spent by the replies received:

    cpu.<name>          µs per reply, all threads of that process
    cpu.<name>_busiest  µs per reply of its busiest thread (bmv2 serves a port's
                        egress on one thread: the bound on a batch's pace)
    cpu.client          µs per reply of the client thread
    cpu.floor           the least time per reply these CPU costs allow: no thread
                        runs on two cores at once, and C cores do at most C
                        seconds of work a second, so the larger of the busiest
                        thread's (the client's included) and the sum of all of
                        them divided by C

A process whose /proc entries cannot be read (gone, or no schedstat in this
kernel) is left out, and so is what a thread that ended during the measurement
spent (the switches' threads live as long as they do).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.orchestration.benchmarks.harness import Figures

PROC = Path("/proc")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_cpu_ns(pid: int, proc: Path = PROC) -> dict[int, int]:
    """Nanoseconds on the CPU of each thread of process `pid` ({} if unreadable)."""
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return {}
    out: dict[int, int] = {}
    for task in tasks:
        try:
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return out


@dataclass(frozen=True)
class CpuSnapshot:
    """Per-thread CPU of each watched process, and the calling thread's, at one moment."""

    threads: dict[str, dict[int, int]]
    client_ns: int


@dataclass(frozen=True)
class CpuMeter:
    """Watches processes by name -> PID, on a machine with `cores` usable cores."""

    pids: Mapping[str, int]
    proc: Path = PROC
    cores: int = field(default_factory=usable_cores)

    def snapshot(self) -> CpuSnapshot:
        """Every watched thread's CPU, and the calling thread's, now."""
        return CpuSnapshot({name: thread_cpu_ns(pid, self.proc) for name, pid in self.pids.items()},
                           time.thread_time_ns())


def per_reply(before: CpuSnapshot, after: CpuSnapshot, replies: int, cores: int) -> Figures:
    """µs of CPU per reply between two snapshots, and their floor on `cores` cores
    (module docstring); {} for no replies."""
    if replies <= 0:
        return {}
    client = (after.client_ns - before.client_ns) / 1e3 / replies
    figs: Figures = {"cpu.client": client}
    total, busiest = client, client
    for name, now in after.threads.items():
        then = before.threads.get(name, {})
        if not now or not then:
            continue
        spent = [ns - then.get(tid, 0) for tid, ns in now.items()]
        figs[f"cpu.{name}"] = sum(spent) / 1e3 / replies
        figs[f"cpu.{name}_busiest"] = max(spent) / 1e3 / replies
        total += figs[f"cpu.{name}"]
        busiest = max(busiest, figs[f"cpu.{name}_busiest"])
    figs["cpu.floor"] = max(busiest, total / max(cores, 1))
    return figs
