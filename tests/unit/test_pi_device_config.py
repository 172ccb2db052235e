"""The device config bf_switchd's own P4Runtime server takes (`device_config: pi`),
byte for byte: the five length-prefixed chunks bf-drivers' _pi_update_device_start
reads, built here from the chunk rule alone, and split back the way the driver
reads them (tests/p4runtime/stratum_stub.py's split_pi_chunks)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from controller import config, pi_device_config
from controller.bf_pipeline import BfPipelineConfig, BfPipelineError
from controller.p4info import P4InfoIndex
from controller.program import DEFAULT, TOFINO_BUILD, TofinoArtifacts, artifacts_for
from tests.p4runtime.stratum_stub import PROGRAM, fake_tofino_build, split_pi_chunks
from tests.unit.configs import GOOD


def _chunk(data: bytes) -> bytes:
    """The rule: a 4-byte little-endian length, then the bytes."""
    return bytes([len(data) & 0xFF, len(data) >> 8 & 0xFF, len(data) >> 16 & 0xFF,
                  len(data) >> 24]) + data


@pytest.mark.parametrize("layout", ["conf", "manifest", "manifest, context gzipped"])
def test_the_device_config_is_five_chunks(tmp_path: Path, layout: str) -> None:
    files = fake_tofino_build(tmp_path, P4InfoIndex.from_file(DEFAULT.p4info).p4info, layout)
    expected = (_chunk(PROGRAM.encode()) + _chunk(files["pipe/tofino.bin"])
                + _chunk(files["pipe/context.json"]) + _chunk(b"pipe") + _chunk(files["bfrt.json"]))
    data = pi_device_config.device_config(tmp_path)
    assert data == expected
    assert data[:4] == b"\x0a\x00\x00\x00" and data[4:14] == b"replay_tna"
    assert data[14:18] == b"\x00\x04\x00\x00"   # tofino.bin's 1024 bytes follow


def test_the_committed_build_splits_back_as_the_driver_reads_it() -> None:
    """Every byte of p4src/build/tofino's device config is in one of the five chunks
    the driver reads (none left over, none read past the end)."""
    data = TofinoArtifacts(TOFINO_BUILD, config.PI).device_config()
    chunks = split_pi_chunks(data)
    assert sum(4 + len(c) for c in chunks) == len(data)
    program, binary, context, pipeline, bfrt = chunks
    assert (program, pipeline) == (b"replay_tna", b"pipe")
    assert binary == (TOFINO_BUILD / "pipe" / "tofino.bin").read_bytes()
    assert context == gzip.decompress((TOFINO_BUILD / "pipe" / "context.json.gz").read_bytes())
    assert bfrt == (TOFINO_BUILD / "bfrt.json").read_bytes()


def test_three_chunks_would_make_the_driver_read_past_the_buffer() -> None:
    """Why chunk 4 is always sent: without it the driver reads a length from
    beyond the end (what a three-chunk config does to _pi_update_device_start)."""
    three = _chunk(b"p") + _chunk(b"bin") + _chunk(b"{}")
    with pytest.raises(ValueError, match="chunk 4's length lies past the end"):
        split_pi_chunks(three)
    assert split_pi_chunks(three + _chunk(b"")) == [b"p", b"bin", b"{}", b""]


def _config(name: str = PROGRAM, pipeline: str = "pipe", parts: bytes = b"{}") -> BfPipelineConfig:
    out = BfPipelineConfig(p4_name=name, bfruntime_info=parts)
    out.profiles.add(profile_name=pipeline, context=parts, binary=parts)
    return out


def test_what_the_driver_cannot_take_is_refused() -> None:
    two = _config()
    two.profiles.add(profile_name="pipe1", context=b"{}", binary=b"")
    with pytest.raises(BfPipelineError, match=r"loads one pipeline, the program has 2 \(use "
                                              r"device_config: stratum\)"):
        pi_device_config.pack(two)
    with pytest.raises(BfPipelineError,
                       match=r"program name 'x{101}': bf_switchd takes 1\.\.100 bytes"):
        pi_device_config.pack(_config(name="x" * 101))
    with pytest.raises(BfPipelineError, match=r"pipeline name '': bf_switchd takes 1\.\.100 bytes"):
        pi_device_config.pack(_config(pipeline=""))
    assert split_pi_chunks(pi_device_config.pack(_config(name="x" * 100)))[0] == b"x" * 100


def test_chunks_that_pi_would_take_for_its_deprecated_wrapper_are_refused() -> None:
    """PI's server parses p4_device_config as p4.tmp.P4DeviceConfig first. A 9-byte
    name (0x09: field 1, fixed64) followed by chunks whose 13-byte lengths (0x0d:
    fixed32) swallow their zero bytes makes the whole buffer parse as that message."""
    crafted = b"x" + b"H1" * 6
    lookalike = _config(name="abcdeH1H1", pipeline="p" + "H1" * 6, parts=crafted)
    pi_device_config.LegacyDeviceConfig.FromString(b"".join(
        _chunk(p) for p in (b"abcdeH1H1", crafted, crafted, b"p" + b"H1" * 6, crafted)))
    with pytest.raises(BfPipelineError, match="parses as PI's deprecated P4DeviceConfig"):
        pi_device_config.pack(lookalike)
    lookalike.p4_name = "abcdeH1H1x"
    assert split_pi_chunks(pi_device_config.pack(lookalike))[0] == b"abcdeH1H1x"


def test_the_config_chooses_the_form(tmp_path: Path) -> None:
    tofino = GOOD.replace("cpu_port: 255", "target: tofino")
    assert config.parse(tofino).switch.device_config == config.STRATUM
    cfg = config.parse(tofino.replace("target: tofino", "target: tofino, device_config: pi"))
    artifacts = artifacts_for(cfg)
    assert isinstance(artifacts, TofinoArtifacts) and artifacts.form == config.PI
    assert artifacts.device_config() == pi_device_config.device_config(TOFINO_BUILD)
    stratum = artifacts_for(config.parse(tofino))
    assert split_pi_chunks(artifacts.device_config())[1] == BfPipelineConfig.FromString(
        stratum.device_config()).profiles[0].binary
