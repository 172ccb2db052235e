"""The README's replayctl walkthrough, run as a user runs it: a standalone
testbed, replayctl and replay-tool as separate processes (Python switch, bmv2 and
the TNA model, whose config names its target)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agent.contract.cli_args import REPO
from bmv2.launch import KIND_TARGETS, free_tcp_port
from bmv2.testbed.netns import NETNS_DIR, ip
from bmv2.testbed.standalone import DEFAULT_CONFIG
from controller import cli
from tests import needs

pytestmark = [pytest.mark.netns, pytest.mark.slow]
READY = "Ctrl-C tears it down."


def _config(tmp_path: Path, kind: str) -> Path:
    """The default config on a free gRPC port (a user's own switch may hold 9559), for
    the program the `kind` switch runs."""
    doc = yaml.safe_load(DEFAULT_CONFIG.read_text())
    doc["switch"]["address"] = f"127.0.0.1:{free_tcp_port()}"
    target = KIND_TARGETS[kind]
    doc["switch"].update(target=target.name, cpu_port=target.cpu_port)
    path = tmp_path / "testbed.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _py(*args: str, ns: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", *args]
    if ns:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["python", "bmv2", "tna"])
def test_replayctl_walkthrough_from_the_readme(kind: str, tmp_path: Path) -> None:
    needs.testbed(kind)
    if (NETNS_DIR / "p4r-learner").exists():
        pytest.skip("a standalone testbed (p4r-*) is already up on this machine")
    cfg = _config(tmp_path, kind)
    up = subprocess.Popen([sys.executable, "-m", "bmv2.testbed.standalone", "--switch", kind, "-c",
                           str(cfg), "--log-dir", str(tmp_path / "logs")], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 30
        banner = []
        for line in up.stdout:
            banner.append(line)
            if READY in line or time.monotonic() > deadline:
                break
        assert READY in "".join(banner), "".join(banner)

        def ctl(*args: str) -> subprocess.CompletedProcess:
            return _py("controller.cli", "-c", str(cfg), *args)

        assert ctl("status").returncode == cli.EXIT_NO_PIPELINE
        assert "pipeline pushed" in ctl("deploy").stdout
        assert "nothing changed" in ctl("deploy").stdout
        assert ctl("table", "set", "0", "--min-size", "1").returncode == 0
        sent = _py("agent.orchestration.replay_tool", "-c", str(cfg), "insert", "--count", "40",
                   ns="p4r-actor1")
        assert sent.returncode == 0 and "40 inserted" in sent.stdout, sent.stderr
        drawn = _py("agent.orchestration.replay_tool", "-c", str(cfg), "sample", "--batch", "4",
                    ns="p4r-learner")
        assert drawn.returncode == 0 and "4 of 4 sampled" in drawn.stdout, drawn.stderr
        before = json.loads(ctl("stats", "--table", "0", "--json").stdout)["0"]
        assert before["size"] == before["ok"]["INSERT"] == 40

        snap = tmp_path / "snap.json"
        assert ctl("snapshot", str(snap), "--table", "0").returncode == 0
        assert ctl("reset", "--table", "0").returncode == 0
        assert json.loads(ctl("stats", "--table", "0", "--json").stdout)["0"]["size"] == 0
        restored = ctl("restore", str(snap))
        assert "restored and verified 40 slots" in restored.stdout, restored.stderr
        after = json.loads(ctl("stats", "--table", "0", "--json").stdout)["0"]
        for key in ("size", "total_priority", "max_priority", "inserted"):
            assert after[key] == before[key], key
        assert "40/4096" in ctl("status").stdout
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=30)
    assert up.returncode == 0 and "torn down" in rest
    assert not [ln for ln in ip("netns", "list").splitlines() if ln.startswith("p4r-")]
