"""The namespace testbed with SWITCH=tofino-model, end to end but for Intel's
binaries: an SDE install whose tofino-model records its command line and
checks that the interfaces its port map names exist, and whose bf_switchd
records its command line and serves P4Runtime as the stand-in for bf_switchd's
server (tests/p4runtime/stratum_stub.py). The testbed starts both, the
controller pushes the committed Tofino build in bf_switchd's form, and the
teardown leaves no process or link behind."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from bmv2.testbed.netns import ip, link_names
from bmv2.testbed.netns_bed import Testbed
from controller import config, pi_device_config
from controller.program import TOFINO_BUILD
from controller.target import TOFINO
from tests import needs
from tests.p4runtime.stratum_stub import split_pi_chunks

MODEL = """\
import json, os, sys, time
ports = json.load(open(sys.argv[sys.argv.index("-f") + 1]))["PortToVeth"]
json.dump({"argv": sys.argv, "cwd": os.getcwd(),
           "attached": {p["device_port"]: os.path.exists(f"/sys/class/net/veth{p['veth1']}")
                        for p in ports}}, open("model.json", "w"))
while True:
    time.sleep(1)
"""

SWITCHD = """\
import hashlib, json, os, sys, time
from tests.p4runtime.stratum_stub import BfSwitchdStub, StratumStubServer

class Recording(BfSwitchdStub):
    @staticmethod
    def parse_device_config(data):
        chunks = BfSwitchdStub.parse_device_config(data)
        json.dump([hashlib.sha256(c).hexdigest() for c in chunks], open("pushed.json", "w"))
        return chunks

json.dump({"argv": sys.argv, "cwd": os.getcwd(), "SDE_INSTALL": os.environ["SDE_INSTALL"]},
          open("bf_switchd.json", "w"))
with StratumStubServer(Recording, sys.argv[sys.argv.index("--p4rt-server") + 1]):
    while True:
        time.sleep(1)
"""


def fake_sde(install: Path) -> Path:
    for name, source in (("tofino-model", MODEL), ("bf_switchd", SWITCHD)):
        (install / "bin").mkdir(parents=True, exist_ok=True)
        (install / "bin" / name).write_text(f"#!{sys.executable}\n{source}")
        (install / "bin" / name).chmod(0o755)
    (install / "lib").mkdir()
    (install / "lib" / "libpifeproto.so").write_bytes(b"")
    return install


@pytest.mark.netns
def test_the_testbed_runs_the_model_and_its_driver_and_pushes_bf_switchds_form(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs.netns()
    install = fake_sde(tmp_path / "install")
    monkeypatch.setenv("SDE_INSTALL", str(install))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    cfg = config.load(config.DEFAULT_CONFIG)
    bed = Testbed(cfg, switch_kind="tofino-model", log_dir=tmp_path / "logs")
    with bed:
        switch = bed.switch
        run = switch.run_dir
        model = json.loads((run / "model.json").read_text())
        assert model["argv"] == switch.model_command() and model["cwd"] == str(run)
        assert model["attached"] == {str(h.port): True for h in cfg.hosts}
        switchd = json.loads((run / "bf_switchd.json").read_text())
        assert switchd["argv"] == switch.switchd_command()
        assert (switchd["cwd"], switchd["SDE_INSTALL"]) == (str(run), str(install))
        assert switch.grpc_addr == bed.config.switch.address

        assert (bed.config.switch.target, bed.config.switch.device_config) == (TOFINO,
                                                                               config.PI)
        assert bed.deploy_report is not None and bed.deploy_report.pipeline_pushed
        assert bed.deploy_report.inserted        # then the entries and groups
        chunks = [hashlib.sha256(c).hexdigest() for c in
                  split_pi_chunks(pi_device_config.device_config(TOFINO_BUILD))]
        assert json.loads((run / "pushed.json").read_text()) == chunks

        learner = cfg.host("learner")
        assert "veth1002" in link_names()
        assert "veth1003" in ip("link", "show", ns=bed.ns_name(learner.name))
        procs = [switch.proc, switch.model]
    assert all(p.poll() is not None for p in procs)
    assert not {bed.switch_iface(h.port) for h in cfg.hosts} & link_names()

