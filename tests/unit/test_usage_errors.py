"""Bad command lines get one line on stderr and exit code 2, before anything
connects: replay-tool, replayctl, the host replay server, the trainer, the soak,
the evaluation, and the argument types they share."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agent.contract.cli_args import (
    REPO,
    doc_parts,
    host_port,
    int_list,
    int_range,
    join_host_port,
    positive_float,
)


def run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("args", "message"), [
    (["sample", "--batch", "300"], "argument --batch: must be 1..255 (got 300)"),
    (["sample", "--batch", "0"], "argument --batch: must be 1..255 (got 0)"),
    (["--replay", "nosuchhost.invalid", "sample"], "cannot resolve host 'nosuchhost.invalid'"),
    (["--replay", "198.18.0.100:0", "sample"], "'0' is not a port number (1..65535)"),
    (["--table", "4", "insert"], "argument --table: must be 0..3 (got 4)"),
    (["insert", "--count", "0"], "argument --count: must be 1..65536 (got 0)"),
    (["--timeout", "-1", "sample"], "argument --timeout: must be more than 0 (got -1)"),
    (["-c", "/nonexistent.yaml", "sample"], "config error: /nonexistent.yaml: cannot read"),
])
def test_replay_tool_usage_errors(args: list[str], message: str) -> None:
    proc = run("agent.orchestration.replay_tool", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--address", "127.0.0.1", "status"], "'127.0.0.1' has no port: expected HOST:PORT"),
    (["--address", "127.0.0.1:x", "status"], "'x' is not a port number"),
    (["--address", "nosuchhost.invalid:9559", "status"], "cannot resolve host"),
    (["--election-id", "0", "status"], "must be 1..2**128-1 (got 0)"),
    (["stats", "--watch", "0"], "argument --watch: must be more than 0 (got 0)"),
    (["acl", "remove"], "the following arguments are required: host, table"),
])
def test_replayctl_usage_errors_come_at_once(args: list[str], message: str) -> None:
    started = time.monotonic()
    proc = run("controller.cli", *args)
    assert time.monotonic() - started < 4.5  # not the 5 s connection timeout
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


HOST_SERVER = "agent.replay.host_server"


@pytest.mark.parametrize(("module", "args", "message"), [
    (HOST_SERVER, ["--port", "99999"], "argument --port: must be 0..65535 (got 99999)"),
    (HOST_SERVER, ["--tables", "0,7"], "argument --tables: must be 0..3 (got 7)"),
    (HOST_SERVER, ["--capacity", "10", "--min-size", "20"],
     "--min-size 20: must be 0..capacity (10)"),
    (HOST_SERVER, ["--max-batch", "0"], "argument --max-batch: must be 1..255 (got 0)"),
    (HOST_SERVER, ["--admin", "foo"], "argument --admin: 'foo' is not an IPv4 address"),
    (HOST_SERVER, ["--bind", "192.0.2.1", "--port", "0"],
     "cannot listen on 192.0.2.1:0: Cannot assign requested address"),
    ("agent.rl.train", ["--actors", "0"], "--actors 0: must be 1..64"),
    ("agent.rl.train", ["--weights-port", "70000"], "argument --weights-port: must be 0..65535"),
    ("agent.orchestration.soak", ["--seconds", "0"], "argument --seconds: must be more than 0"),
    ("agent.orchestration.soak", ["--fuzz", "-1"], "argument --fuzz: must be 0..100000000"),
    ("agent.orchestration.soak", ["--actors", "0"], "argument --actors: must be 1..64 (got 0)"),
    ("agent.rl.evaluate", ["--checkpoint", "/nonexistent.pt"],
     "--checkpoint /nonexistent.pt: cannot read: No such file or directory"),
    ("agent.rl.evaluate", ["--checkpoint", "x.pt", "--episodes", "0"],
     "argument --episodes: must be 1..100000 (got 0)"),
])
def test_server_trainer_soak_and_evaluation_usage_errors(module: str, args: list[str],
                                                         message: str) -> None:
    proc = run(module, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_argument_types() -> None:
    assert int_range(1, 3)("2") == 2
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not an integer"):
        int_range(1, 3)("x")
    assert int_list(0, 3)("0, 2,") == [0, 2]
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be 0\.\.3 \(got 4\)"):
        int_list(0, 3)("1,4")
    with pytest.raises(argparse.ArgumentTypeError, match="',' lists no integer"):
        int_list(0, 3)(",")
    assert positive_float("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match="must be more than 0 \\(got nan\\)"):
        positive_float("nan")
    assert host_port(45000)("127.0.0.1") == ("127.0.0.1", 45000)
    assert host_port()("[::1]:9559") == ("::1", 9559)
    assert join_host_port("::1", 9559) == "[::1]:9559"
    assert join_host_port("127.0.0.1", 9559) == "127.0.0.1:9559"


def test_doc_parts_keep_the_whole_first_paragraph() -> None:
    doc = "\nFirst line of a sentence\nthat goes on.\n\n    usage example\n\nMore.\n"
    assert doc_parts(doc) == ("First line of a sentence\nthat goes on.",
                              "    usage example\n\nMore.")
    assert doc_parts(None) == ("", "")


def test_a_file_that_is_no_learner_checkpoint_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint\n")
    proc = run("agent.rl.evaluate", "--checkpoint", str(junk))
    assert proc.returncode == 2
    assert proc.stderr == f"error: --checkpoint {junk}: not a file torch.load can read\n"
    other = tmp_path / "other.pt"
    torch.save({"weights": 1}, other)
    proc = run("agent.rl.evaluate", "--checkpoint", str(other))
    assert proc.returncode == 2
    assert proc.stderr == (f"error: --checkpoint {other}: not a learner checkpoint (no hparams "
                           "with env_id and hidden)\n")
