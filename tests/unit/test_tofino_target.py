"""The controller's Tofino target without a Tofino: the ports it takes from the
TNA program, the multicast groups it derives, the P4Info names it resolves, and
the device config it hands Stratum, byte for byte (bf_switchd's:
tests/unit/test_pi_device_config.py)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from agent.contract.protocol import RESET_FANOUT, RESET_GROUP
from bmv2.artifacts import P4SRC
from bmv2.launch import SwitchProcess
from controller import bf_pipeline, config, pi_device_config
from controller import program as names
from controller.bf_pipeline import BfPipelineError
from controller.p4info import P4InfoIndex
from controller.program import (
    DEFAULT,
    IPV4_TABLE,
    REPLICATE,
    SAMPLE_REPLICATION_TABLE,
    TOFINO_BUILD,
    TofinoArtifacts,
)
from controller.replication import COPIES, wanted_groups
from controller.target import TARGETS
from tests import needs
from tests.p4runtime.stratum_stub import (
    PIPE_SCOPE,
    PROGRAM,
    fake_tofino_build,
    split_pi_chunks,
    tna_p4info,
)
from tests.unit.configs import GOOD

TOFINO = GOOD.replace("cpu_port: 255", "target: tofino")
TNA_FORWARD = REPO / "tests" / "p4runtime" / "programs" / "tna_forward.p4"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_targets_ports_are_its_p4_programs(name: str) -> None:
    target = TARGETS[name]
    arch = (P4SRC / target.arch / "arch.p4").read_text()
    consts = {m[1]: int(m[2]) for m in re.finditer(r"const bit<9> (\w+)\s*=\s*(\d+);", arch)}
    assert consts["CPU_PORT"] == target.cpu_port
    assert consts.get("LOOP_PORT") == target.loop_port


def test_tofino_groups_put_every_replay_copy_on_the_loop_port() -> None:
    bmv2_groups = wanted_groups(config.parse(GOOD))
    groups = wanted_groups(config.parse(TOFINO))
    assert groups.keys() == bmv2_groups.keys()
    loop = TARGETS["tofino"].loop_port
    assert groups[RESET_GROUP] == [(loop, rid) for rid in range(RESET_FANOUT)]
    broadcast = config.parse(TOFINO).broadcast.group
    assert groups[broadcast] == bmv2_groups[broadcast]      # broadcast copies: member ports
    sample = {g: r for g, r in groups.items() if g not in (RESET_GROUP, broadcast)}
    assert len(sample) == 2 * len(COPIES)                   # the learner's port, the CPU's
    for gid, replicas in sample.items():
        assert replicas == [(loop, rid) for rid in range(len(replicas))]
        assert [rid for _, rid in bmv2_groups[gid]] == [rid for _, rid in replicas]
        assert {port for port, _ in bmv2_groups[gid]} != {loop}


CONTROLLER_ACTIONS = (names.FORWARD, names.BROADCAST, names.MAY_BROADCAST, names.ARP_ANSWER,
                      names.VIP_HIT, names.CONFIGURE, names.ALLOW, names.REPLICATE,
                      names.SOURCE_BOUND, names.LIMIT, names.READDRESS)
CONTROLLER_COUNTERS = (names.REQUESTS_COUNTER, names.SAMPLED_COUNTER, names.NOT_READY_COUNTER,
                       names.FORGED_COUNTER, names.BROADCAST_COUNTER, names.RATE_LIMITED_COUNTER)


def test_the_committed_tna_build_has_every_name_the_controller_uses() -> None:
    """The P4Info bf-p4c wrote for the TNA program (p4src/build/tofino) has each
    table, action and counter the controller writes or reads, with the v1model
    program's match fields, parameters and sizes: deploy and stats run unchanged."""
    tna = P4InfoIndex.from_file(TofinoArtifacts(TOFINO_BUILD).p4info)
    bmv2 = P4InfoIndex.from_file(DEFAULT.p4info)
    assert tna.p4info.pkg_info.arch == "tna"

    def fields(table) -> list[tuple]:
        return [(f.name, f.bitwidth, f.match_type) for f in table.match_fields]

    def params(action) -> list[tuple]:
        return [(p.name, p.bitwidth) for p in action.params]

    for table in names.MANAGED_TABLES:
        assert fields(tna.table(table)) == fields(bmv2.table(table)), table
    for action in CONTROLLER_ACTIONS:
        assert params(tna.action(action)) == params(bmv2.action(action)), action
    for counter in CONTROLLER_COUNTERS:
        ours, theirs = tna.counter(counter), bmv2.counter(counter)
        assert (ours.size, ours.spec.unit) == (theirs.size, theirs.spec.unit), counter


def test_the_committed_tna_build_is_the_device_config_stratum_gets() -> None:
    """replayctl deploy's device config for p4src/build/tofino: bf-p4c's files, as
    its manifest lists them, every pipe running the one pipeline."""
    build = TofinoArtifacts(TOFINO_BUILD)
    assert build.missing() is None
    decoded = bf_pipeline.BfPipelineConfig.FromString(build.device_config())
    assert decoded.p4_name == "replay_tna"
    assert decoded.bfruntime_info == (TOFINO_BUILD / "bfrt.json").read_bytes()
    [profile] = decoded.profiles
    assert profile.profile_name == "pipe"
    assert list(profile.pipe_scope) == [0, 1, 2, 3]
    assert profile.context == gzip.decompress(
        (TOFINO_BUILD / "pipe" / "context.json.gz").read_bytes())
    assert profile.binary == (TOFINO_BUILD / "pipe" / "tofino.bin").read_bytes()


def test_a_tna_p4info_is_addressed_by_the_v1model_programs_names() -> None:
    bmv2 = P4InfoIndex.from_file(DEFAULT.p4info)
    tna = P4InfoIndex(tna_p4info(bmv2.p4info))
    assert tna.prefix == "pipe." and bmv2.prefix == ""
    table = tna.table(IPV4_TABLE)
    assert table.preamble.name == f"pipe.{IPV4_TABLE}"
    assert tna.name_of(table.preamble.id) == IPV4_TABLE
    assert tna.table(f"pipe.{IPV4_TABLE}") is table
    assert REPLICATE in tna.table_actions(SAMPLE_REPLICATION_TABLE)
    # only bf-p4c's architectures have a pipeline prefix to leave out
    other = tna_p4info(bmv2.p4info)
    other.pkg_info.arch = "v1model"
    assert P4InfoIndex(other).prefix == ""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field, encoded by hand."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


@pytest.mark.parametrize("layout", ["conf", "manifest", "manifest, context gzipped"])
def test_the_device_config_is_stratums_bf_pipeline_config(tmp_path: Path, layout: str) -> None:
    files = fake_tofino_build(tmp_path, P4InfoIndex.from_file(DEFAULT.p4info).p4info, layout)
    profile = (_field(1, b"pipe") + _field(2, files["pipe/context.json"])
               + _field(3, files["pipe/tofino.bin"])
               + _field(4, b"".join(_varint(p) for p in PIPE_SCOPE)))
    expected = _field(1, PROGRAM.encode()) + _field(2, files["bfrt.json"]) + _field(3, profile)
    assert bf_pipeline.device_config(tmp_path) == expected


def _conf(tmp_path: Path) -> dict:
    fake_tofino_build(tmp_path, P4InfoIndex.from_file(DEFAULT.p4info).p4info)
    return json.loads((tmp_path / f"{PROGRAM}.conf").read_text())


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["p4_devices"].append(c["p4_devices"][0]), "Stratum takes one device, the "
                                                          "file has 2"),
    (lambda c: c["p4_devices"][0]["p4_programs"][0]["p4_pipelines"].clear(),
     "the program lists no pipeline"),
    (lambda c: c["p4_devices"][0]["p4_programs"][0].pop("bfrt-config"),
     "not a bf-p4c .conf (KeyError: 'bfrt-config')"),
    (lambda c: c["p4_devices"][0]["p4_programs"][0]["p4_pipelines"][0].update(
        context="pipe/nothing.json"), "pipeline pipe context 'pipe/nothing.json' not found"),
])
def test_bad_compiler_output_is_one_clear_line(tmp_path: Path, edit, message: str) -> None:
    conf = _conf(tmp_path)
    edit(conf)
    (tmp_path / f"{PROGRAM}.conf").write_text(json.dumps(conf))
    with pytest.raises(BfPipelineError) as err:
        bf_pipeline.device_config(tmp_path)
    assert str(err.value) == f"{tmp_path / PROGRAM}.conf: {message}"


def test_a_folder_without_compiler_output_or_with_a_broken_one_is_refused(
        tmp_path: Path) -> None:
    with pytest.raises(BfPipelineError, match=r"no bf-p4c output here \(neither a "
                                              r"<program>\.conf nor bf-p4c's manifest\.json\)"):
        bf_pipeline.device_config(tmp_path)
    (tmp_path / "manifest.json").write_text('{"compilation_succeeded": false}')
    with pytest.raises(BfPipelineError, match="bf-p4c did not compile the program"):
        bf_pipeline.device_config(tmp_path)
    (tmp_path / "a.conf").write_text("{")
    with pytest.raises(BfPipelineError, match=r"a\.conf: not JSON"):
        bf_pipeline.device_config(tmp_path)
    (tmp_path / "b.conf").write_text("{}")
    with pytest.raises(BfPipelineError, match=r"more than one <program>\.conf: a\.conf, b\.conf"):
        bf_pipeline.device_config(tmp_path)


@pytest.mark.tofino
def test_the_device_config_of_a_real_bf_p4c_build(tmp_path: Path) -> None:
    compiler = needs.bf_p4c()
    out = tmp_path / "out"
    proc = subprocess.run([str(compiler), "--target", "tofino", "--arch", "tna", "-o", str(out),
                           str(TNA_FORWARD)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    config = bf_pipeline.BfPipelineConfig.FromString(bf_pipeline.device_config(out))
    assert config.p4_name == "tna_forward"
    assert config.bfruntime_info == (out / "bfrt.json").read_bytes()
    [profile] = config.profiles
    assert (profile.profile_name, list(profile.pipe_scope)) == ("pipe", [0, 1, 2, 3])
    assert profile.context == (out / "pipe" / "context.json").read_bytes()
    assert profile.binary == (out / "pipe" / "tofino.bin").read_bytes()
    assert len(profile.binary) > 100_000
    assert split_pi_chunks(pi_device_config.device_config(out)) == [
        b"tna_forward", profile.binary, profile.context, b"pipe", config.bfruntime_info]


@pytest.mark.parametrize(("kind", "port"), [("python", "255"), ("tna", "64")])
def test_a_switch_process_takes_the_cpu_port_of_the_program_its_kind_runs(
        kind: str, port: str) -> None:
    """The TNA model answers the controller on Tofino's CPU port (p4src/tna/arch.p4)."""
    cmd = SwitchProcess(kind, {}, grpc_addr="127.0.0.1:1").command()
    assert cmd[cmd.index("--cpu-port") + 1] == port
