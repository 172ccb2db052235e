"""Snapshots of tables in use, the periodic snapshotter, and a switch crash
recovered from the newest snapshot (Python switch, bmv2 and the TNA model)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from agent.contract import protocol
from agent.contract.cli_args import REPO
from bmv2.testbed.netns_bed import connect_and_deploy
from controller import cli, snapshot
from controller.inband import InbandChannel
from controller.recovery import SnapshotSkipped, Snapshotter
from tests.dataplane.packets import CONFIG, PacketTestbed

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)


def payload(i: int) -> bytes:
    return protocol.words_to_payload([i, 0x5EED, i * 7 + 1])


def fill(dp: PacketTestbed, table: int, start: int, stop: int) -> None:
    """Insert payload(start) .. payload(stop - 1), so experience i gets stamp i + 1."""
    for i in range(start, stop):
        dp.insert(table, payload(i), priority=0.5 + (i % 5))


def test_live_snapshot_of_a_table_being_filled(clean: PacketTestbed) -> None:
    """Every slot taken is the experience its stamp says, the ring state is
    consistent with the slots, and the snapshot restores (verified)."""
    fill(clean, 1, 0, 200)
    inserting = threading.Thread(target=fill, args=(clean, 1, 200, 600))
    inserting.start()
    try:
        snap = snapshot.snapshot_table(clean.inband, 1, 4096, live=True)
    finally:
        inserting.join(timeout=120)
    state = snap["state"]
    assert 200 <= state["sequence"] <= 600 and state["size"] == len(snap["slots"])
    assert state["pointer"] == state["size"]  # a ring not yet wrapped
    for s in snap["slots"]:
        assert 1 <= s["stamp"] <= state["sequence"]
        assert bytes.fromhex(s["payload"]) == payload(s["stamp"] - 1)
    assert state["total"] == sum(s["priority"] for s in snap["slots"])
    snapshot.restore_table(clean.inband, snap)  # verifies slot by slot
    assert clean.state(1).size == state["size"]


def test_snapshotter_rotates_and_never_saves_a_switch_that_lost_its_state(
        clean: PacketTestbed, tmp_path: Path) -> None:
    fill(clean, 0, 0, 10)
    snapper = Snapshotter(tmp_path / "snaps", {0: 64}, keep=2)
    taken = [snapper.take(clean.inband) for _ in range(3)]
    files = snapshot.snapshots(tmp_path / "snaps")
    assert files == [t.path for t in taken[1:]]  # the newest two, oldest first
    assert taken[-1].sequences == {0: 10} and taken[-1].slots == 10
    snapshot.reset_table(clean.inband, 0)  # what a restarted switch looks like
    with pytest.raises(SnapshotSkipped, match="behind the last snapshot"):
        snapper.take(clean.inband)
    assert snapshot.snapshots(tmp_path / "snaps") == files
    snapshot.restore_table(clean.inband, snapshot.read_file(tmp_path / "snaps")[0])
    assert snapper.take(clean.inband).sequences == {0: 10}


def test_snapshot_files_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    for path, message in ((tmp_path / "empty", "no snapshot-*.json"),
                          (tmp_path / "bad.json", "not a p4replay-snapshot/1 file")):
        assert cli.main(["-c", str(CONFIG), "restore", str(path)]) == cli.EXIT_FAILED
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, err
    assert cli.main(["-c", str(CONFIG), "snapshot", str(tmp_path / "bad.json"),
                     "--every", "1"]) == cli.EXIT_USAGE
    assert "--every writes into a directory" in capsys.readouterr().err


def test_switch_crash_recovered_by_replayctl(dp: PacketTestbed, tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    """replayctl snapshot --every rides through the crash without saving the empty
    switch; replayctl restore --deploy brings the newest snapshot back."""
    for t in dp.cfg.tables:
        dp.reset(t.id)
    fill(dp, 0, 0, 20)
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = dp.switch_doc()
    cfg = tmp_path / "switch.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    snaps = tmp_path / "snaps"
    snapper = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "-c", str(cfg), "--timeout", "2", "snapshot",
         str(snaps), "--table", "0", "--every", "0.5", "--count", "6", "--keep", "3"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not snapshot.snapshots(snaps) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert snapshot.snapshots(snaps), "no snapshot was taken"
        dp.bed.crash_switch()
        time.sleep(1.0)
        dp.bed.restart_switch()
        code = cli.main(["-c", str(cfg), "--election-id", "101", "restore", str(snaps),
                         "--deploy"])
        out = capsys.readouterr().out
        assert code == 0 and "pipeline pushed" in out and "restored and verified 20 slots" in out
        out, err = snapper.communicate(timeout=120)
    finally:
        if snapper.poll() is None:
            snapper.kill()
    assert snapper.returncode == 0, err
    assert "snapshot skipped" in err  # while the switch was down or empty
    kept = snapshot.snapshots(snaps)
    assert 1 <= len(kept) <= 3
    for path in kept:  # no snapshot of the empty switch rotated the good ones out
        (table,) = json.loads(path.read_text())["tables"]
        assert table["state"]["sequence"] == 20 and len(table["slots"]) == 20

    dp.bed.session, _ = connect_and_deploy(dp.cfg)
    dp.inband = InbandChannel(dp.session, dp.cfg.vip, dp.cfg.vip_mac, timeout=10)
    assert dp.state(0).size == 20
    assert dp.read_slot(0, 19).payload == payload(19)
    ack = dp.insert(0, payload(20))  # the ring goes on where it was
    assert (ack.slot, ack.stamp) == (20, 21)
