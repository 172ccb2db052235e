"""The TorchRL example trains through the switch (the Python switch, and bmv2
where installed): a learner host in its namespace inserts, samples and updates
priorities in the switch's table."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from agent.contract.protocol import REPLAY_UDP_PORT
from agent.orchestration.launch import DEFAULT_CONFIG
from bmv2.testbed.netns_bed import Testbed
from controller import config as cfgmod
from controller.config import AclRule
from controller.inband import InbandChannel
from controller.stats import read_stats
from tests import needs

FRAMES = 1200


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["python", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_example_trains_through_the_switch(kind: str, tmp_path: Path) -> None:
    needs.testbed(kind)
    base = cfgmod.load(DEFAULT_CONFIG)
    cfg = replace(base, hosts=(base.host("learner"),), broadcast=None,
                  tables=tuple(replace(t, min_size=100) for t in base.tables),
                  acl=(AclRule("learner", 0, ("insert", "sample", "update")),))
    with Testbed(cfg, kind, log_dir=tmp_path / "logs") as bed:
        cmd = [*bed.exec_prefix("learner"), sys.executable, "-m",
               "agent.examples.torchrl_cartpole", "--replay", f"{cfg.vip}:{REPLAY_UDP_PORT}",
               "--frames", str(FRAMES), "--learning-starts", "300", "--eval-every", "800",
               "--eval-episodes", "2"]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert bed.session is not None
        stats = read_stats(bed.session, [0], InbandChannel(bed.session, cfg.vip,
                                                           cfg.vip_mac))[0]
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # not solved yet
    lines = proc.stdout.splitlines()
    progress = [ln for ln in lines if ln.startswith("frames=")]
    assert progress and "eval_return=" in progress[0] and "table_size=" in progress[0]
    summary = dict(tok.split("=", 1) for tok in lines[-1].split()[1:5])
    assert summary["solved"] == "False" and summary["backend"] == "switch"
    assert int(summary["frames"]) == FRAMES and int(summary["updates"]) > 0
    assert stats.ok["INSERT"] >= FRAMES           # acknowledged: a lost ACK's resend counts
    assert stats.size == stats.ok["INSERT"]      # fewer than the table's capacity
    updates = int(summary["updates"])
    assert stats.ok["SAMPLE"] >= updates and 0 < stats.ok["UPDATE_BATCH"] <= 64 * updates
