"""replayctl as a user meets it: acl add / remove take the same arguments,
stats --watch redraws in place on a terminal and Ctrl-C ends it quietly. On the
Python switch only: what is tested is replayctl's terminal, not the switch (its
acl and stats on the TNA model are test_controller.py's)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agent.contract.cli_args import REPO
from bmv2.launch import SwitchProcess
from controller import cli
from tests.dataplane.packets import CONFIG
from tests.signals import ctrl_c_as_from_a_terminal


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The dataplane tests' config, deployed on a Python switch with no ports."""
    tmp = tmp_path_factory.mktemp("replayctl")
    with SwitchProcess("python", {}, log_path=tmp / "switch.log") as switch:
        doc = yaml.safe_load(CONFIG.read_text())
        doc["switch"] = {"address": switch.grpc_addr}
        path = tmp / "switch.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert cli.main(["-c", str(path), "deploy"]) == 0
        yield path


def ctl(cfg: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "controller.cli", "-c", str(cfg), *args],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def acl_of(cfg: Path, capsys: pytest.CaptureFixture, host: str) -> list[str]:
    assert cli.main(["-c", str(cfg), "acl", "list"]) == 0
    return [ln.split()[-1] for ln in capsys.readouterr().out.splitlines()
            if ln.split()[:1] == [host] and ln.split()[2] == "0"]


def test_acl_remove_takes_what_acl_add_takes(cfg: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["-c", str(cfg), "acl", "add", "h3", "0", "insert", "sample"]) == 0
    assert acl_of(cfg, capsys, "h3") == ["insert,sample"]
    assert cli.main(["-c", str(cfg), "acl", "remove", "h3", "0", "sample"]) == 0
    assert "h3 may now insert table 0" in capsys.readouterr().out
    assert acl_of(cfg, capsys, "h3") == ["insert"]
    assert cli.main(["-c", str(cfg), "acl", "remove", "h3", "0", "insert"]) == 0
    assert "may no longer use table 0" in capsys.readouterr().out
    assert acl_of(cfg, capsys, "h3") == []
    assert cli.main(["-c", str(cfg), "acl", "add", "h3", "0", "update"]) == 0
    assert cli.main(["-c", str(cfg), "acl", "remove", "h3", "0"]) == 0  # every op
    assert acl_of(cfg, capsys, "h3") == []
    assert cli.main(["-c", str(cfg), "acl", "remove", "h3", "0"]) == cli.EXIT_FAILED
    assert cli.main(["-c", str(cfg), "acl", "remove", "h2", "0", "fly"]) == cli.EXIT_USAGE
    assert "unknown op(s) fly" in capsys.readouterr().err


def read_until(fd: int, wanted: bytes, count: int, timeout: float = 30.0) -> bytes:
    """Bytes from a pty until `wanted` has appeared `count` times."""
    out = b""
    deadline = time.monotonic() + timeout
    while out.count(wanted) < count and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:  # the other side closed
                break
    return out


def test_watch_redraws_in_place_and_ctrl_c_ends_it(cfg: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "-c", str(cfg), "stats",
                             "--watch", "0.2"], cwd=REPO, stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, preexec_fn=ctrl_c_as_from_a_terminal)
    os.close(slave)
    try:
        shown = read_until(master, b"Ctrl-C stops", 3)
        proc.send_signal(signal.SIGINT)
        # keep reading: on a loaded machine the tables written meanwhile can fill
        # the pty, and a writer blocked on it could not finish its last line
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            shown += read_until(master, b"\0", 1, timeout=0.2)
        code = proc.wait(timeout=1)
        shown += read_until(master, b"\0", 1, timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert shown.count(b"Ctrl-C stops") >= 3
    table_lines = shown.split(b"Ctrl-C stops")[1].count(b"\n")  # one table's height
    assert f"\x1b[{table_lines}F\x1b[J".encode() in shown  # up to the last table, clear
    assert b"\x1b[2J" not in shown  # not a full-screen clear each time
    assert code == 0 and b"Traceback" not in shown and b"KeyboardInterrupt" not in shown


def test_watch_into_a_pipe_appends_tables_and_json_lines(cfg: Path) -> None:
    proc = ctl(cfg, "stats", "--watch", "0.1", "--duration", "3", "--table", "0")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.count("Ctrl-C stops") >= 2 and "\x1b[" not in out
    proc = ctl(cfg, "stats", "--watch", "0.1", "--duration", "3", "--json", "--table", "0")
    out, err = proc.communicate(timeout=30)
    lines = out.splitlines()
    assert proc.returncode == 0 and len(lines) >= 2, err
    assert all(json.loads(ln)["tables"]["0"]["table"] == 0 for ln in lines)
