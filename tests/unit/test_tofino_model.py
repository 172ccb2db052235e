"""SWITCH=tofino-model without the SDE: where the launcher looks for it and the
one line it gives when it is not there, the port map that attaches the
testbed's links to the model, the driver's conf, and the command lines of
tofino-model and bf_switchd (as the SDE's run_tofino_model.sh and
run_switchd.sh give them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from bmv2 import tofino_model
from bmv2.launch import KIND_DEVICE_CONFIGS, KIND_TARGETS, SwitchStartError, resolve_kind
from bmv2.sde import Sde, SdeMissing, find_sde
from bmv2.testbed.netns_bed import Testbed
from controller import config
from controller.config import DEFAULT_CONFIG
from controller.target import TOFINO
from tests import needs

INSTALL = Path("/opt/sde/install")


def fake_install(root: Path, p4rt: bool = True) -> Path:
    """An SDE install folder as find_sde checks it: the two programs (empty
    scripts) and, for a P4RT build, PI's P4Runtime front end."""
    for name in ("tofino-model", "bf_switchd"):
        (root / "bin").mkdir(parents=True, exist_ok=True)
        (root / "bin" / name).write_text("#!/bin/sh\n")
        (root / "bin" / name).chmod(0o755)
    (root / "lib").mkdir(exist_ok=True)
    if p4rt:
        (root / "lib" / "libpifeproto.so.0").write_bytes(b"")
    return root


def test_the_sde_is_where_sde_install_or_sde_says(tmp_path: Path) -> None:
    install = fake_install(tmp_path / "sde" / "install")
    assert find_sde({"SDE_INSTALL": str(install)}) == Sde(install)
    assert find_sde({"SDE": str(tmp_path / "sde")}) == Sde(install, tmp_path / "sde")
    assert find_sde({"SDE": "/elsewhere", "SDE_INSTALL": str(install)}).install == install


@pytest.mark.parametrize(("environ", "message"), [
    ({}, "$SDE_INSTALL and $SDE are not set: point $SDE_INSTALL at an open-p4studio install "
         "with bin/tofino-model and bin/bf_switchd"),
    ({"SDE": "{tmp}/nowhere"}, "$SDE/install ({tmp}/nowhere/install) is not a folder"),
    ({"SDE_INSTALL": "{tmp}/empty"}, "missing {tmp}/empty/bin/tofino-model and "
                                     "{tmp}/empty/bin/bf_switchd (not installed, or not "
                                     "executable)"),
    ({"SDE_INSTALL": "{tmp}/no_p4rt"}, "{tmp}/no_p4rt/bin/bf_switchd has no P4Runtime server "
                                       "(no {tmp}/no_p4rt/lib/libpifeproto.so: build the SDE "
                                       "with P4RT on)"),
])
def test_what_is_missing_is_one_line(tmp_path: Path, environ: dict, message: str) -> None:
    (tmp_path / "empty").mkdir()
    fake_install(tmp_path / "no_p4rt", p4rt=False)
    with pytest.raises(SdeMissing) as err:
        find_sde({k: v.format(tmp=tmp_path) for k, v in environ.items()})
    assert str(err.value) == message.format(tmp=tmp_path)


def test_a_program_that_cannot_run_is_missing(tmp_path: Path) -> None:
    install = fake_install(tmp_path)
    (install / "bin" / "tofino-model").chmod(0o644)
    with pytest.raises(SdeMissing, match=r"^missing \S+/bin/tofino-model \(not installed"):
        find_sde({"SDE_INSTALL": str(install)})


def test_the_programs_run_with_the_sdes_libraries(tmp_path: Path) -> None:
    install = fake_install(tmp_path / "install")
    (install / "share").mkdir()
    (install / "share" / "environment").write_text("SDE_DEPENDENCIES=../deps\nOTHER=1\n")
    env = Sde(install, tmp_path).env({"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/x"})
    assert env["PATH"] == f"{install}/bin:/usr/bin"
    assert env["LD_LIBRARY_PATH"] == f"{install}/lib:{tmp_path}/deps/lib:/x"
    assert (env["SDE_INSTALL"], env["SDE"]) == (str(install), str(tmp_path))
    assert Sde(INSTALL).env({})["LD_LIBRARY_PATH"] == f"{INSTALL}/lib"


def test_resolve_kind_says_what_is_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SDE", raising=False)
    monkeypatch.delenv("SDE_INSTALL", raising=False)
    with pytest.raises(SwitchStartError) as err:
        resolve_kind("tofino-model")
    assert str(err.value) == ("SWITCH=tofino-model needs Intel's SDE (docs/hardware.md): "
                              "$SDE_INSTALL and $SDE are not set: point $SDE_INSTALL at an "
                              "open-p4studio install with bin/tofino-model and bin/bf_switchd")
    monkeypatch.setenv("SDE_INSTALL", str(fake_install(tmp_path)))
    assert resolve_kind("tofino-model") == "tofino-model"
    assert resolve_kind("auto") != "tofino-model"       # auto never picks it
    assert (KIND_TARGETS["tofino-model"], KIND_DEVICE_CONFIGS["tofino-model"]) == (TOFINO,
                                                                                  config.PI)


def test_make_run_without_the_sde_is_one_line_and_exit_2() -> None:
    """The launcher refuses before it makes anything (make adds its own last line)."""
    needs.netns()    # without root the launcher says that first
    env = {k: v for k, v in os.environ.items() if k not in ("SDE", "SDE_INSTALL")}
    proc = subprocess.run([sys.executable, "-m", "agent.orchestration.launch", "--switch",
                           "tofino-model"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == ("error: SWITCH=tofino-model needs Intel's SDE (docs/hardware.md): "
                           "$SDE_INSTALL and $SDE are not set: point $SDE_INSTALL at an "
                           "open-p4studio install with bin/tofino-model and bin/bf_switchd\n")


def test_the_port_map_attaches_each_hosts_link() -> None:
    """Device port N is veth(1000 + 2N) to the model; the host's end is the next one."""
    ports = [h.port for h in config.load(DEFAULT_CONFIG).hosts]
    assert ports == [1, 2, 11, 12, 13, 14]
    assert tofino_model.port_map(list(reversed(ports))) == {"PortToVeth": [
        {"device_port": 1, "veth1": 1002, "veth2": 1003},
        {"device_port": 2, "veth1": 1004, "veth2": 1005},
        {"device_port": 11, "veth1": 1022, "veth2": 1023},
        {"device_port": 12, "veth1": 1024, "veth2": 1025},
        {"device_port": 13, "veth1": 1026, "veth2": 1027},
        {"device_port": 14, "veth1": 1028, "veth2": 1029}]}
    assert (tofino_model.switch_veth(12), tofino_model.host_veth(12)) == ("veth1024", "veth1025")
    assert len(tofino_model.host_veth(config.MAX_PORT)) <= 15    # IFNAMSIZ - 1
    # clear of the SDE's own veth_setup.sh pairs (veth0 .. veth127, veth250/251)
    assert tofino_model.veth_numbers(0)[0] > 251


def test_the_testbed_names_its_links_as_the_port_map_does() -> None:
    cfg = config.load(DEFAULT_CONFIG)
    bed = Testbed(cfg, switch_kind="tofino-model")
    assert bed.switch_iface(11) == "veth1022" and bed.host_iface("actor1") == "veth1023"
    python = Testbed(cfg, switch_kind="python", tag="00042")
    assert (python.switch_iface(11), python.host_iface("actor1")) == ("p4r00042s11",
                                                                      "p4r00042h11")


def test_the_drivers_conf_has_one_tofino_and_no_program() -> None:
    assert tofino_model.switchd_conf(0) == {
        "chip_list": [{"instance": 0, "chip_family": "tofino"}],
        "p4_devices": [{"device-id": 0, "p4_programs": []}]}


def test_the_command_lines(tmp_path: Path) -> None:
    switch = tofino_model.TofinoModelSwitch(
        Sde(INSTALL), {1: "veth1002", 2: "veth1004"}, tmp_path / "run",
        grpc_addr="127.0.0.1:50001")
    assert switch.model_command() == [
        f"{INSTALL}/bin/tofino-model", "--port-monitor", "-d", "1", "-k", "1",
        "-f", f"{tmp_path}/run/ports.json", "--install-dir", str(INSTALL), "--chip-type", "2",
        "--logs-disable"]
    assert switch.switchd_command() == [
        f"{INSTALL}/bin/bf_switchd", "--install-dir", str(INSTALL),
        "--conf-file", f"{tmp_path}/run/bf_switchd.conf", "--init-mode=cold", "--skip-p4",
        "--background", "--p4rt-server", "127.0.0.1:50001"]
    switch.write_files()
    assert (tmp_path / "run" / "ports.json").read_text() == (
        '{\n "PortToVeth": [\n  {\n   "device_port": 1,\n   "veth1": 1002,\n   "veth2": 1003\n'
        '  },\n  {\n   "device_port": 2,\n   "veth1": 1004,\n   "veth2": 1005\n  }\n ]\n}\n')
    assert (tmp_path / "run" / "bf_switchd.conf").is_file()


def test_links_named_otherwise_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"veth\(1000 \+ 2N\); these are named otherwise: "
                                         r"\{3: 'p4r1s3'\}"):
        tofino_model.TofinoModelSwitch(Sde(INSTALL), {1: "veth1002", 3: "p4r1s3"}, tmp_path)
