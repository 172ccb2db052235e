"""Where a learner step's CPU goes: what every process of a training run spent, by
role, per learner step, and the pace those costs leave room for on this machine.

`TreeMeter` follows a launcher's process tree through /proc (children found by
their parent's PID) and reads the CPU of each of their threads (cpu.thread_cpu_ns)
at every poll, keeping each thread's last reading: a process that ends before the
run does (the actors at its end) keeps what it had spent at the last poll before.
A process's role comes from its command line (`role_of`). `StepWindow` keeps the
steady part: the CPU spent between the first and the latest learner step count
the run's metrics.csv showed, so start-up (loading the program, building the
testbed) and teardown do not count.

The pace bound: a thread runs on one core at a time, and C cores give at most C
seconds of work a second, so a run is at most

    min(1000 / busiest thread's ms per step, C * 1000 / all roles' ms per step)

steps per second. A run whose measured pace is near that bound is bound by the CPU
its processes need per step, not by waiting on one another.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.orchestration.benchmarks.cpu import PROC, thread_cpu_ns, usable_cores
from agent.orchestration.benchmarks.training import stop_launch

POLL_SECONDS = 0.5
ROLES = ("switch", "host server", "learner", "actors", "launcher", "other")
_ROLE_MARKS = (("simple_switch", "switch"), ("-m bmv2.pyswitch", "switch"),
               ("-m agent.replay.host_server", "host server"), ("-m agent.rl.train", "learner"),
               ("spawn_main", "actors"), ("-m agent.orchestration.launch", "launcher"))


def role_of(cmdline: str) -> str:
    """The role of a process from its command line (arguments joined by spaces)."""
    return next((role for mark, role in _ROLE_MARKS if mark in cmdline), "other")


def children_of(pids: set[int], proc: Path = PROC) -> set[int]:
    """`pids` and every process descending from one of them, as /proc has them now."""
    parent: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, grew = set(pids), True
    while grew:
        new = {pid for pid, ppid in parent.items() if ppid in tree and pid not in tree}
        tree |= new
        grew = bool(new)
    return tree


def cmdline(pid: int, proc: Path = PROC) -> str | None:
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return None


@dataclass
class TreeMeter:
    """The CPU of every thread under `root`, by role, as last read."""

    root: int
    proc: Path = PROC
    threads: dict[tuple[int, int], int] = field(default_factory=dict)   # (pid, tid) -> ns
    roles: dict[int, str] = field(default_factory=dict)

    def poll(self) -> None:
        """Read every thread of the tree once. A process's role is read again each time
        (a launcher's child may exec into another program), but not from an empty
        command line: an ended process not yet reaped keeps the role it had."""
        for pid in children_of({self.root}, self.proc):
            line = cmdline(pid, self.proc)
            if line is None:
                continue
            if line or pid not in self.roles:
                self.roles[pid] = role_of(line)
            for tid, ns in thread_cpu_ns(pid, self.proc).items():
                self.threads[(pid, tid)] = ns

    def by_role(self, since: dict[tuple[int, int], int] | None = None
                ) -> dict[str, dict[str, float]]:
        """Per role that spent anything: CPU seconds in all, and its busiest thread's;
        with `since` (an earlier copy of `threads`), only what was spent after it."""
        since = since or {}
        out: dict[str, dict[str, float]] = {}
        for (pid, tid), ns in self.threads.items():
            spent = (ns - since.get((pid, tid), 0)) / 1e9
            figs = out.setdefault(self.roles.get(pid, "other"), {"cpu_s": 0.0, "busiest_s": 0.0})
            figs["cpu_s"] += spent
            figs["busiest_s"] = max(figs["busiest_s"], spent)
        return out


def learner_steps_logged(metrics: Path) -> int:
    """The learner steps of the last row of a run's metrics.csv (0: none yet)."""
    try:
        rows = metrics.read_text().splitlines()
    except OSError:
        return 0
    if len(rows) < 2:
        return 0
    column = rows[0].split(",").index("learner_steps")
    try:
        return int(rows[-1].split(",")[column])
    except (IndexError, ValueError):
        return 0  # a row being written


@dataclass(frozen=True)
class Mark:
    """The learner steps a run had logged, when, and every thread's CPU until then."""

    steps: int
    at: float
    threads: dict[tuple[int, int], int]


@dataclass
class StepWindow:
    """The steady part of a run, without start-up and teardown: from the first learner
    step count its metrics.csv showed to the latest one."""

    metrics: Path
    first: Mark | None = None
    last: Mark | None = None

    def observe(self, meter: TreeMeter) -> None:
        """After a poll: mark the first count, and each new one."""
        steps = learner_steps_logged(self.metrics)
        latest = self.last or self.first
        if steps <= 0 or (latest is not None and latest.steps == steps):
            return
        mark = Mark(steps, time.monotonic(), dict(meter.threads))
        if self.first is None:
            self.first = mark
        else:
            self.last = mark

    def figures(self, meter: TreeMeter) -> tuple[int, float, dict[str, dict[str, float]]]:
        """Learner steps, seconds and CPU by role (each thread's, the roles as `meter`
        last read them) between the two marks (0 steps: fewer than two counts logged)."""
        if self.first is None or self.last is None:
            return 0, 0.0, {}
        window = TreeMeter(meter.root, meter.proc, self.last.threads, meter.roles)
        return (self.last.steps - self.first.steps, self.last.at - self.first.at,
                window.by_role(since=self.first.threads))


def metered_run(cmd: list[str], log: Path, timeout: float, cwd: Path,
                on_poll: Callable[[TreeMeter], None]) -> tuple[int | None, TreeMeter]:
    """Run `cmd` (output to `log`) under a TreeMeter, calling `on_poll` after each
    poll, until it exits or `timeout` passes (then SIGTERM, so a launcher tears its
    testbed down, and SIGKILL a minute later); its exit status (None: timed out)
    and the meter."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        meter = TreeMeter(proc.pid)
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                meter.poll()
                on_poll(meter)
                time.sleep(POLL_SECONDS)
        finally:
            timed_out = proc.poll() is None
            if timed_out:
                stop_launch(proc)
    return None if timed_out else proc.returncode, meter


def per_step(by_role: dict[str, dict[str, float]], learner_steps: int,
             cores: int | None = None) -> dict:
    """ms per learner step per role (all threads, busiest thread), their total, and the
    learner steps per second they allow on `cores` cores (module docstring)."""
    cores = cores or usable_cores()
    if learner_steps <= 0:
        return {"roles": {}, "total_ms": None, "bound_steps_per_s": None}
    roles = {role: {"ms": f["cpu_s"] * 1e3 / learner_steps,
                    "busiest_ms": f["busiest_s"] * 1e3 / learner_steps}
             for role, f in sorted(by_role.items(), key=lambda kv: ROLES.index(kv[0])
                                   if kv[0] in ROLES else len(ROLES))}
    total = sum(r["ms"] for r in roles.values())
    busiest = max((r["busiest_ms"] for r in roles.values()), default=0.0)
    bound = min(1e3 / busiest if busiest else float("inf"), cores * 1e3 / total if total
                else float("inf"))
    return {"roles": roles, "total_ms": total, "cores": cores,
            "bound_steps_per_s": None if bound == float("inf") else bound}
