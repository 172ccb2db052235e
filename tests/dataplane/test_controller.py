"""The controller and replayctl against a running switch (Python switch, bmv2
and the TNA model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from agent.contract import protocol
from agent.contract.protocol import Mode, Op, Status
from bmv2.launch import KIND_TARGETS, SwitchProcess
from controller import cli, snapshot
from controller.deploy import deploy
from controller.p4runtime_session import NotPrimary, P4RuntimeSession
from controller.stats import read_stats
from tests import needs
from tests.dataplane.packets import CONFIG, PacketTestbed

pytestmark = pytest.mark.netns
# also on the TNA program (tests/dataplane/conftest.py), but for the two tests of
# P4Runtime arbitration, which the TNA model serves as the Python switch does
ON_TNA = {"test_second_deploy_changes_nothing",
          "test_changed_config_applies_only_the_difference",
          "test_stats_move_as_traffic_flows",
          "test_snapshot_reset_restore_gives_back_identical_slots",
          "test_replayctl_walkthrough",
          "test_replayctl_table_set_and_acl",
          "test_replayctl_errors_are_one_line_with_exit_codes"}
CONFIG_TABLE = "ReplayIngress.replay.replay_table_config"


def payload(i: int) -> bytes:
    return protocol.words_to_payload([i, 2 * i + 1, 0xA5A5A5A5 ^ i])


def fill(dp: PacketTestbed, table: int, n: int) -> None:
    for i in range(n):
        dp.insert(table, payload(i), priority=0.25 * (i % 9) + 0.5)


def test_second_deploy_changes_nothing(clean: PacketTestbed) -> None:
    report = deploy(clean.session, clean.cfg)
    assert not report.changed, report.summary()
    assert report.summary() == "switch already matches the config: nothing changed"


def test_changed_config_applies_only_the_difference(clean: PacketTestbed) -> None:
    t3 = clean.cfg.table(3)
    changed = replace(clean.cfg, tables=tuple(replace(t, max_batch=3) if t.id == 3 else t
                                             for t in clean.cfg.tables))
    try:
        report = deploy(clean.session, changed)
        assert not report.pipeline_pushed
        assert (len(report.inserted), len(report.modified), len(report.deleted)) == (0, 1, 0)
        (reply,) = clean.sample(3, 4)
        assert reply.status == Status.BATCH_TOO_LARGE  # 4 > 3 now
    finally:
        deploy(clean.session, clean.cfg)
    assert t3.max_batch == 4


def test_stats_move_as_traffic_flows(clean: PacketTestbed) -> None:
    before = read_stats(clean.session, [0, 1], clean.inband)
    fill(clean, 0, 5)
    clean.sample(0, 8)
    clean.one("h3", protocol.insert(0, payload(0), ack=True))  # denied
    after = read_stats(clean.session, [0, 1], clean.inband)
    assert after[0].ok.get("INSERT", 0) == before[0].ok.get("INSERT", 0) + 5
    assert after[0].ok.get("SAMPLE", 0) == before[0].ok.get("SAMPLE", 0) + 1
    assert after[0].refused.get("DENIED", 0) == before[0].refused.get("DENIED", 0) + 1
    assert after[0].size == 5
    host_ops = ("INSERT", "SAMPLE", "UPDATE")
    assert [after[1].ok.get(op) for op in host_ops] == [before[1].ok.get(op) for op in host_ops]


def test_snapshot_reset_restore_gives_back_identical_slots(clean: PacketTestbed,
                                                         tmp_path: Path) -> None:
    capacity = clean.cfg.table(0).capacity
    fill(clean, 0, capacity + 9)  # wrapped ring: pointer 9
    slot = clean.read_slot(0, 4)
    clean.one("h1", protocol.update(0, 4, slot.stamp, 11.0, ack=True))
    snap = snapshot.snapshot_table(clean.inband, 0, capacity)
    snapshot.write_file(tmp_path / "snap.json", [snap])
    original = [clean.read_slot(0, s) for s in range(capacity)]
    state = clean.state(0)

    snapshot.reset_table(clean.inband, 0)
    assert clean.state(0).size == 0
    snapshot.restore_table(clean.inband, snapshot.read_file(tmp_path / "snap.json")[0])

    restored = [clean.read_slot(0, s) for s in range(capacity)]
    key = [(m.slot, m.stamp, m.priority, m.payload) for m in original]
    assert [(m.slot, m.stamp, m.priority, m.payload) for m in restored] == key
    after = clean.state(0)
    assert (after.slot, after.stamp, after.priority, after.size, after.total) == (
        state.slot, state.stamp, state.priority, state.size, state.total)
    ack = clean.insert(0, payload(999))  # the ring continues where it was
    assert (ack.slot, ack.stamp) == (9, capacity + 10)
    replies = clean.sample(0, 16, mode=Mode.PRIORITIZED)
    assert all(r.ok for r in replies) and len(replies) == 16


def test_backup_controller_cannot_write(clean: PacketTestbed) -> None:
    backup = P4RuntimeSession(clean.cfg.switch.address, clean.cfg.switch.device_id,
                              election_id=5).connect()
    try:
        assert not backup.is_primary
        backup.p4info = clean.session.p4info
        with pytest.raises(NotPrimary):
            backup.modify_entry(CONFIG_TABLE, {"hdr.replay.table_id": 3},
                                "ReplayIngress.replay.configure",
                                {"enabled": 0, "capacity": 16, "min_size": 8, "max_batch": 4,
                                 "default_mode": 2})
        assert len(backup.read_table(CONFIG_TABLE)) == len(clean.cfg.tables)  # reads are fine
    finally:
        backup.close()
    assert deploy(clean.session, clean.cfg).changed is False


def test_restarted_controller_keeps_the_running_state(clean: PacketTestbed) -> None:
    fill(clean, 1, 7)
    other = P4RuntimeSession(clean.cfg.switch.address, clean.cfg.switch.device_id,
                             election_id=50).connect()
    try:
        report = deploy(other, clean.cfg)
        assert not report.pipeline_pushed and not report.changed
    finally:
        other.close()
    assert clean.session.wait_primary()  # primary again once the other one left
    assert clean.state(1).size == 7
    assert clean.read_slot(1, 6).payload == payload(6)


# --- replayctl ------------------------------------------------------------------


def write_config(clean: PacketTestbed, tmp_path: Path, **changes: object) -> Path:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = {**clean.switch_doc(), **changes}
    path = tmp_path / "switch.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_cli(clean: PacketTestbed, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = cli.main(list(args))
    assert clean.session.wait_primary()  # replayctl was primary while it ran
    out = capsys.readouterr()
    return code, out.out + out.err


def test_replayctl_walkthrough(clean: PacketTestbed, tmp_path: Path,
                               capsys: pytest.CaptureFixture) -> None:
    cfg = str(write_config(clean, tmp_path))
    code, out = run_cli(clean, capsys, "-c", cfg, "deploy")
    assert code == 0 and "nothing changed" in out
    fill(clean, 0, 12)
    code, out = run_cli(clean, capsys, "-c", cfg, "stats", "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["0"]["ok"]["INSERT"] >= 12 and stats["0"]["size"] == 12
    snap = tmp_path / "snap.json"
    code, out = run_cli(clean, capsys, "-c", cfg, "snapshot", str(snap), "--table", "0")
    assert code == 0 and "12 slots" in out
    code, _ = run_cli(clean, capsys, "-c", cfg, "reset", "--table", "0")
    assert code == 0 and clean.state(0).size == 0
    code, out = run_cli(clean, capsys, "-c", cfg, "restore", str(snap))
    assert code == 0 and "restored and verified 12 slots" in out
    code, out = run_cli(clean, capsys, "-c", cfg, "stats", "--json")
    assert json.loads(out)["0"]["size"] == 12
    assert clean.read_slot(0, 11).payload == payload(11)
    code, out = run_cli(clean, capsys, "-c", cfg, "status")
    row = next(ln.split() for ln in out.splitlines() if ln.split()[:1] == ["0"])
    assert code == 0 and row[-1] == "12/64", out  # occupancy / capacity of table 0


def test_replayctl_table_set_and_acl(clean: PacketTestbed, tmp_path: Path,
                                     capsys: pytest.CaptureFixture) -> None:
    cfg = str(write_config(clean, tmp_path))
    try:
        code, out = run_cli(clean, capsys, "-c", cfg, "table", "set", "1", "--disable")
        assert code == 0, out
        (reply,) = clean.sample(1, 1)
        assert reply.status == Status.DISABLED
        code, out = run_cli(clean, capsys, "-c", cfg, "table", "set", "1", "--capacity", "9999")
        assert code == cli.EXIT_USAGE and "capacity: must be 1..4096" in out
        code, out = run_cli(clean, capsys, "-c", cfg, "acl", "add", "h3", "0", "insert")
        assert code == 0, out
        assert clean.one("h3", protocol.insert(0, payload(1), ack=True)).ok
        code, out = run_cli(clean, capsys, "-c", cfg, "acl", "list")
        assert code == 0 and "h3" in out
        code, out = run_cli(clean, capsys, "-c", cfg, "acl", "remove", "h3", "0")
        assert code == 0
        assert clean.one("h3", protocol.insert(0, payload(1), ack=True)).status == Status.DENIED
    finally:
        deploy(clean.session, clean.cfg)
    assert clean.counter(0, Op.INSERT, Status.DENIED) >= 1


def test_replayctl_errors_are_one_line_with_exit_codes(clean: PacketTestbed, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    unreachable = str(write_config(clean, tmp_path))
    code, out = run_cli(clean, capsys, "-c", unreachable, "--address", "127.0.0.1:1",
                        "--timeout", "1", "status")
    assert code == cli.EXIT_UNREACHABLE and "switch unreachable" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG.read_text().replace("capacity: 64", "capacity: -1"))
    code, out = run_cli(clean, capsys, "-c", str(bad), "status")
    assert code == cli.EXIT_USAGE and "tables[0].capacity" in out
    code, out = run_cli(clean, capsys, "-c", unreachable, "--election-id", "1", "reset")
    assert code == cli.EXIT_NOT_PRIMARY and "not primary" in out


@pytest.mark.parametrize("kind", ["python", "bmv2", "tna"])
def test_replayctl_on_a_switch_without_pipeline(kind: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    """A switch just started (no pipeline pushed): commands that need the pipeline
    exit 4 with a one-line hint; deploy pushes it and then they work."""
    needs.switch(kind)
    doc = yaml.safe_load(CONFIG.read_text())
    with SwitchProcess(kind, {}, log_path=tmp_path / "switch.log") as switch:
        doc["switch"] = {"address": switch.grpc_addr, "target": KIND_TARGETS[kind].name}
        cfg = tmp_path / "switch.yaml"
        cfg.write_text(yaml.safe_dump(doc))
        for command in (["status"], ["stats"], ["snapshot", str(tmp_path / "s.json")]):
            assert cli.main(["-c", str(cfg), *command]) == cli.EXIT_NO_PIPELINE, command
            err = capsys.readouterr().err.strip()
            assert err.count("\n") == 0 and "runs no pipeline" in err and "deploy" in err
        assert cli.main(["-c", str(cfg), "deploy"]) == 0
        assert "pipeline pushed" in capsys.readouterr().out
        assert cli.main(["-c", str(cfg), "status"]) == 0
        assert "pipeline loaded" in capsys.readouterr().out
