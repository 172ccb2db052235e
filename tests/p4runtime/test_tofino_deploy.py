"""`replayctl deploy` to a Tofino switch, as far as it goes without one: the
config names the target and bf-p4c's output folder, and the controller pushes
P4Info plus Stratum's BfPipelineConfig (or, `device_config: pi`, the chunks
bf_switchd's own P4Runtime server reads), the entries by the TNA program's names
and the multicast groups through the loop port, by the same code as for bmv2
(tests/p4runtime/stratum_stub.py stands in for Stratum and bf_switchd)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agent.contract.protocol import RESET_GROUP
from controller import cli, config
from controller.p4info import P4InfoIndex
from controller.program import (
    CONFIG_TABLE,
    DEFAULT,
    MANAGED_TABLES,
    ORIG_PORT,
    SAMPLE_REPLICATION_TABLE,
    match_values,
    param_values,
)
from controller.replication import COPIES, wanted_groups
from controller.target import TOFINO
from tests.dataplane.packets import CONFIG
from tests.p4runtime.stratum_stub import (
    PIPE_SCOPE,
    PROGRAM,
    BfSwitchdStub,
    StratumStubServer,
    fake_tofino_build,
)


@pytest.fixture
def stub() -> Iterator[StratumStubServer]:
    with StratumStubServer() as server:
        yield server


def tofino_config(tmp_path: Path, address: str, build: str = "build", **switch: str) -> Path:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = {"address": address, "target": "tofino", "pipeline": build, **switch}
    path = tmp_path / "switch.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_replayctl_deploys_the_tna_build_the_way_stratum_takes_it(
        tmp_path: Path, stub: StratumStubServer, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "build").mkdir()
    files = fake_tofino_build(tmp_path / "build", P4InfoIndex.from_file(DEFAULT.p4info).p4info)
    cfg_path = tofino_config(tmp_path, stub.address)

    assert cli.main(["-c", str(cfg_path), "deploy"]) == 0
    assert "pipeline pushed" in capsys.readouterr().out
    state = stub.stub.state
    pushed = state.device_config
    assert pushed.p4_name == PROGRAM
    assert pushed.bfruntime_info == files["bfrt.json"]
    [profile] = pushed.profiles
    assert (profile.profile_name, list(profile.pipe_scope)) == ("pipe", PIPE_SCOPE)
    assert (profile.context, profile.binary) == (files["pipe/context.json"],
                                                 files["pipe/tofino.bin"])

    info = P4InfoIndex(state.p4info)
    assert state.p4info.tables[0].preamble.name.startswith("pipe.")
    tables = {info.name_of(e.table_id) for e in state.entries.values()}
    assert CONFIG_TABLE in tables and tables <= set(MANAGED_TABLES)

    cfg = config.load(cfg_path)
    groups = {gid: sorted((r.egress_port, r.instance) for r in g.replicas)
              for gid, g in state.groups.items()}
    assert groups == wanted_groups(cfg)
    assert {port for port, _ in groups[RESET_GROUP]} == {TOFINO.loop_port}

    writes = state.writes
    assert cli.main(["-c", str(cfg_path), "deploy"]) == 0
    assert "nothing changed" in capsys.readouterr().out
    assert state.writes == writes        # the second deploy wrote nothing


def test_replayctl_deploys_the_tna_build_the_way_bf_switchd_takes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`device_config: pi`: the pipeline in the five chunks, then the same entries
    and groups. The stand-in for bf_switchd refuses Stratum's form, Stratum's this one."""
    (tmp_path / "build").mkdir()
    files = fake_tofino_build(tmp_path / "build", P4InfoIndex.from_file(DEFAULT.p4info).p4info)
    with StratumStubServer(BfSwitchdStub) as server:
        assert cli.main(["-c", str(tofino_config(tmp_path, server.address)), "deploy"]) != 0
        assert "chunk" in capsys.readouterr().err and server.stub.state.p4info is None
        cfg_path = tofino_config(tmp_path, server.address, device_config="pi")
        assert cli.main(["-c", str(cfg_path), "deploy"]) == 0
        assert "pipeline pushed" in capsys.readouterr().out
        state = server.stub.state
        assert state.device_config == [PROGRAM.encode(), files["pipe/tofino.bin"],
                                       files["pipe/context.json"], b"pipe", files["bfrt.json"]]
        info = P4InfoIndex(state.p4info)
        assert CONFIG_TABLE in {info.name_of(e.table_id) for e in state.entries.values()}
        assert {gid: sorted((r.egress_port, r.instance) for r in g.replicas)
                for gid, g in state.groups.items()} == wanted_groups(config.load(cfg_path))
    with StratumStubServer() as stratum:
        cfg_path = tofino_config(tmp_path, stratum.address, device_config="pi")
        assert cli.main(["-c", str(cfg_path), "deploy"]) != 0
        assert "not a BfPipelineConfig" in capsys.readouterr().err
        assert stratum.stub.state.p4info is None


def test_a_tofino_config_without_a_compiled_program_is_one_clear_line(
        tmp_path: Path, stub: StratumStubServer, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "build").mkdir()
    cfg_path = tofino_config(tmp_path, stub.address)
    assert cli.main(["-c", str(cfg_path), "deploy"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err == (f"replayctl: config error: no compiled program to push: "
                   f"{tmp_path / 'build' / PROGRAM}.p4info.txtpb is missing "
                   "(compile p4src/replay_tna.p4 with bf-p4c: docs/hardware.md)")
    (tmp_path / "build" / f"{PROGRAM}.p4info.txtpb").write_text(
        (DEFAULT.p4info).read_text())
    assert cli.main(["-c", str(cfg_path), "deploy"]) == cli.EXIT_USAGE
    assert "no bf-p4c output here" in capsys.readouterr().err
    assert stub.stub.state.p4info is None    # nothing was pushed


def test_granting_sample_on_tofino_replicates_through_the_loop_port(
        tmp_path: Path, stub: StratumStubServer, capsys: pytest.CaptureFixture) -> None:
    """`acl add` gives the host's port a block whose groups replicate to the loop
    port, where the replay state is (controller/target.py); `acl remove` takes it away."""
    (tmp_path / "build").mkdir()
    fake_tofino_build(tmp_path / "build", P4InfoIndex.from_file(DEFAULT.p4info).p4info)
    cfg_path = tofino_config(tmp_path, stub.address)
    assert cli.main(["-c", str(cfg_path), "deploy"]) == 0
    capsys.readouterr()
    state = stub.stub.state
    deployed = set(state.groups)

    assert cli.main(["-c", str(cfg_path), "acl", "add", "h3", "0", "sample"]) == 0
    assert capsys.readouterr().out.startswith("h3 may now sample table 0; installed port 3's")
    info = P4InfoIndex(state.p4info)
    bases = {match_values(info, e)[ORIG_PORT]: param_values(info, e)["group_base"]
             for e in state.entries.values()
             if info.name_of(e.table_id) == SAMPLE_REPLICATION_TABLE}
    base = bases[3]
    new = {gid: sorted((r.egress_port, r.instance) for r in state.groups[gid].replicas)
           for gid in set(state.groups) - deployed}
    assert new == {base + c: [(TOFINO.loop_port, rid) for rid in range(c)] for c in COPIES}

    assert cli.main(["-c", str(cfg_path), "acl", "remove", "h3", "0"]) == 0
    assert set(state.groups) == deployed
    assert 3 not in {match_values(info, e)[ORIG_PORT] for e in state.entries.values()
                     if info.name_of(e.table_id) == SAMPLE_REPLICATION_TABLE}
