"""Recovering a switch that restarted: periodic live snapshots of the replay
tables while they are in use, and the redeploy-then-restore that brings the
newest one back.

    snapper = Snapshotter(directory, tables={0: 4096}, keep=5)
    snapper.take(channel)          # every few seconds; SnapshotSkipped if the switch lost state
    ...the switch restarts (empty, no pipeline)...
    redeploy_and_restore(session, cfg, snapshot.read_file(directory))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from controller import snapshot
from controller.config import Config
from controller.deploy import DeployReport, deploy
from controller.inband import InbandChannel
from controller.p4runtime_session import P4RuntimeSession


class SnapshotSkipped(snapshot.SnapshotError):
    """The switch holds less than the last snapshot: it restarted or was reset,
    so saving now would rotate the good snapshots out."""


@dataclass
class Taken:
    """One saved snapshot: its file, each table's insert sequence number, the
    slots it holds and when it was taken (time.monotonic())."""

    path: Path
    sequences: dict[int, int]
    slots: int
    at: float


class Snapshotter:
    """Live snapshots of `tables` ({table id: capacity}) into `directory`, newest `keep` kept."""

    def __init__(self, directory: str | Path, tables: dict[int, int], keep: int = 5) -> None:
        if keep < 1:
            raise ValueError("keep at least one snapshot")
        self.directory = Path(directory)
        self.tables = dict(tables)
        self.keep = keep
        self.last: Taken | None = None

    def take(self, channel: InbandChannel) -> Taken:
        """Snapshot every table (live) and save it; SnapshotSkipped when a table's
        insert sequence went back below the last snapshot's."""
        at = time.monotonic()
        snaps = [snapshot.snapshot_table(channel, t, cap, live=True)
                 for t, cap in sorted(self.tables.items())]
        sequences = {s["table"]: s["state"]["sequence"] for s in snaps}
        if self.last is not None:
            behind = [t for t, seq in sequences.items() if seq < self.last.sequences.get(t, 0)]
            if behind:
                raise SnapshotSkipped(
                    f"table {behind[0]} is behind the last snapshot (insert sequence "
                    f"{sequences[behind[0]]} < {self.last.sequences[behind[0]]}): the switch "
                    f"restarted or was reset; not saved, restore {self.directory} first")
        path = snapshot.save_rotated(self.directory, snaps, self.keep)
        self.last = Taken(path, sequences, sum(len(s["slots"]) for s in snaps), at)
        return self.last


def redeploy_and_restore(session: P4RuntimeSession, cfg: Config,
                         snaps: list[dict]) -> DeployReport:
    """Deploy `cfg` with the snapshot's tables disabled, restore them (verified),
    then enable them. Requests that arrive meanwhile are refused as DISABLED
    rather than mixed into the restore."""
    ids = {s["table"] for s in snaps}
    held = replace(cfg, tables=tuple(replace(t, enabled=False) if t.id in ids else t
                                     for t in cfg.tables))
    report = deploy(session, held)
    channel = InbandChannel(session, cfg.vip, cfg.vip_mac, timeout=session.timeout)
    for snap in snaps:
        snapshot.restore_table(channel, snap)
    deploy(session, cfg)
    return report
