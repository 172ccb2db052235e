"""Faults injected into a training run on the namespace testbed (agent.orchestration.launch's
fault options), and the figures of how the run rode through them.

  --loss P               P % of the frames dropped at random each way on every link
  --snapshot-every S     a live snapshot of the training table every S seconds
                         (run-dir/snapshots, the newest --keep-snapshots kept)
  --restart-switch-at T  T seconds into training the switch is killed (SIGKILL),
                         stays down --switch-down seconds, is started again,
                         redeployed with the table disabled, restored from the
                         newest snapshot and enabled (not before the Learner is
                         stepping and a snapshot holds experiences: the crash
                         comes mid-training and its restore is not of nothing)
  --kill-learner-at T    the trainer (the Learner) is killed once it is T seconds
                         in and has written a checkpoint; the launcher resumes it
                         from that checkpoint (its actors stop with it and
                         are started anew), the replay memory stays in the switch
  --kill-actor-at T      actor 0 is killed; the trainer reports it and goes on

Times count from when the trainer has started its actors (its pids.json).

The injector runs in a thread of the launcher and is the only user of the
testbed's P4Runtime session while training runs. What it did is written to
run-dir/faults.json: snapshots taken, and for the switch restart the insert
sequence at the crash and in the snapshot restored (their difference: the
experiences lost), the outage (kill to table enabled again) and the slots restored.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bmv2.testbed.netns_bed import TESTBED_ELECTION_ID, Testbed
from controller import snapshot
from controller.inband import InbandChannel, InbandTimeout
from controller.p4runtime_session import P4RuntimeError, P4RuntimeSession
from controller.recovery import Snapshotter, redeploy_and_restore

TICK = 0.05
DEFAULT_SNAPSHOT_EVERY = 5.0   # when a restart is asked for without --snapshot-every


def say(text: str) -> None:
    print(f"[faults] {text}", flush=True)


@dataclass(frozen=True)
class FaultPlan:
    """Which faults a run gets, and when (seconds after training starts)."""

    loss: float = 0.0
    snapshot_every: float = 0.0
    keep_snapshots: int = 5
    restart_switch_at: float | None = None
    switch_down: float = 2.0
    kill_learner_at: float | None = None
    kill_actor_at: float | None = None

    def problems(self) -> list[str]:
        """What is wrong with these options, as usage errors."""
        out = []
        if not 0 <= self.loss < 100:
            out.append("--loss must be a percentage in [0, 100)")
        for name, value in (("--snapshot-every", self.snapshot_every),
                            ("--switch-down", self.switch_down),
                            ("--restart-switch-at", self.restart_switch_at),
                            ("--kill-learner-at", self.kill_learner_at),
                            ("--kill-actor-at", self.kill_actor_at)):
            if value is not None and value < 0:
                out.append(f"{name} must not be negative")
        if self.keep_snapshots < 1:
            out.append("--keep-snapshots must be at least 1")
        return out

    @property
    def timed(self) -> bool:
        """Whether the injector thread has anything to do."""
        return bool(self.snapshot_every) or any(
            t is not None for t in (self.restart_switch_at, self.kill_learner_at,
                                    self.kill_actor_at))


class FaultInjector(threading.Thread):
    """Takes the snapshots and injects the timed faults of a plan into a run (once
    started, its clock starts when the trainer has started its actors)."""

    def __init__(self, plan: FaultPlan, bed: Testbed, table: int, run_dir: Path) -> None:
        super().__init__(name="faults", daemon=True)
        self.plan = plan
        self.bed = bed
        self.table = table
        self.run_dir = run_dir
        every = plan.snapshot_every or (DEFAULT_SNAPSHOT_EVERY if plan.restart_switch_at
                                        is not None else 0.0)
        self.every = every
        self.snapper = Snapshotter(run_dir / "snapshots",
                                   {table: bed.config.table(table).capacity},
                                   plan.keep_snapshots) if every else None
        self.halt = threading.Event()
        self.learner_killed = threading.Event()
        self.report: dict[str, Any] = {"snapshots": 0, "snapshot_failures": 0,
                                       "snapshot_s": []}
        self.t0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def finish(self) -> dict[str, Any]:
        """Stop the thread; write and return what it did."""
        self.halt.set()
        if self.is_alive():
            self.join(timeout=60)
        times = self.report.pop("snapshot_s")
        if times:
            self.report["snapshot_s_mean"] = round(sum(times) / len(times), 3)
        (self.run_dir / "faults.json").write_text(json.dumps(self.report, indent=1))
        return self.report

    def _fail(self, what: str, exc: Exception) -> None:
        self.report.setdefault("errors", []).append(f"{what}: {type(exc).__name__}: {exc}")
        say(f"{what} failed: {exc}")

    # --- the schedule -------------------------------------------------------------

    def run(self) -> None:
        p = self.plan
        due = {"snapshot": 0.0 if self.snapper else None, "restart": p.restart_switch_at,
               "learner": p.kill_learner_at, "actor": p.kill_actor_at}
        while not (self.run_dir / "pids.json").exists():  # the trainer is still starting
            if self.halt.wait(TICK):
                return
        self.t0 = time.monotonic()
        # each fault: (whether it can be injected now, asked only once it is due; the action)
        actions = {"restart": (self._restart_ready, self._restart_switch),
                   "learner": (lambda: (self.run_dir / "checkpoint.pt").exists(),
                               self._kill_learner),
                   "actor": (lambda: True, self._kill_actor)}
        while not self.halt.wait(TICK):
            now = self.elapsed()
            if due["snapshot"] is not None and now >= due["snapshot"]:
                self._snapshot()
                due["snapshot"] = self.elapsed() + self.every
            for name, (ready, action) in actions.items():
                at = due[name]
                if at is not None and now >= at and ready():
                    due[name] = None
                    try:
                        action()
                    except Exception as exc:  # a fault not injected or not recovered from
                        self._fail(name, exc)

    def _restart_ready(self) -> bool:
        """A snapshot holds experiences and the trainer has logged a learner step (its
        metrics.csv has a row below the header)."""
        if self.snapper is None or self.snapper.last is None or self.snapper.last.slots == 0:
            return False
        try:
            with (self.run_dir / "metrics.csv").open() as f:
                return bool(f.readline()) and bool(f.readline())
        except FileNotFoundError:
            return False

    def _channel(self) -> InbandChannel:
        assert self.bed.session is not None
        cfg = self.bed.config
        return InbandChannel(self.bed.session, cfg.vip, cfg.vip_mac, timeout=5.0)

    def _snapshot(self) -> None:
        assert self.snapper is not None
        began = time.monotonic()
        try:
            self.snapper.take(self._channel())
        except (snapshot.SnapshotError, InbandTimeout, P4RuntimeError) as exc:
            self.report["snapshot_failures"] += 1
            say(f"snapshot failed: {exc}")
            return
        except Exception as exc:  # the session is gone (e.g. a restart that failed)
            self._fail("snapshot", exc)
            return
        self.report["snapshots"] += 1
        self.report["snapshot_s"].append(time.monotonic() - began)

    def _restart_switch(self) -> None:
        assert self.snapper is not None and self.snapper.last is not None
        cfg = self.bed.config
        at_crash = snapshot.read_state(self._channel(), self.table)
        taken = self.snapper.last
        killed = time.monotonic()
        self.bed.crash_switch()
        say(f"switch killed at {self.elapsed():.1f} s (insert sequence {at_crash.sequence}; "
            f"newest snapshot at {taken.sequences[self.table]}, "
            f"{killed - taken.at:.1f} s old)")
        time.sleep(self.plan.switch_down)
        self.bed.restart_switch()
        session = P4RuntimeSession(cfg.switch.address, cfg.switch.device_id,
                                   election_id=TESTBED_ELECTION_ID, timeout=10,
                                   tls=cfg.switch.tls).connect()
        self.bed.session = session
        snaps = snapshot.read_file(self.snapper.directory)
        redeploy_and_restore(session, cfg, snaps)
        outage = time.monotonic() - killed
        restored = snaps[0]["state"]["sequence"]
        lost = at_crash.sequence - restored
        self.report["switch_restart"] = {
            "killed_at_s": round(killed - self.t0, 1),
            "sequence_at_crash": at_crash.sequence, "sequence_restored": restored,
            "experiences_lost": lost, "snapshot_age_s": round(killed - taken.at, 2),
            "slots_restored": len(snaps[0]["slots"]), "outage_s": round(outage, 2)}
        say(f"switch restarted, redeployed and restored ({len(snaps[0]['slots'])} slots, "
            f"insert sequence {restored}): {lost} experiences lost, table back after "
            f"{outage:.1f} s")

    def _pids(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "pids.json").read_text())

    def _kill_learner(self) -> None:
        pid = self._pids()["trainer"]
        self.learner_killed.set()
        os.kill(pid, signal.SIGKILL)
        self.report["learner_killed_at_s"] = round(self.elapsed(), 1)
        say(f"learner (pid {pid}) killed at {self.elapsed():.1f} s")

    def _kill_actor(self) -> None:
        pid = self._pids()["actors"][0]
        os.kill(pid, signal.SIGKILL)
        self.report["actor_killed"] = {"index": 0, "pid": pid, "at_s": round(self.elapsed(), 1)}
        say(f"actor 0 (pid {pid}) killed at {self.elapsed():.1f} s")
