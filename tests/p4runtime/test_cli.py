"""The command line of ``python -m bmv2.pyswitch`` (simple_switch_grpc's layout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from bmv2.launch import SwitchProcess, free_tcp_port
from bmv2.pyswitch.cli import UsageError, parse_args
from bmv2.pyswitch.p4runtime.proto import p4runtime_pb2
from tests.p4runtime.p4rt_client import TEST_JSON, Client


def test_simple_switch_grpc_layout() -> None:
    args = parse_args(["-i", "1@veth1", "-i", "2@veth2", "--device-id", "3", "--no-p4",
                       "--", "--grpc-server-addr", "127.0.0.1:9999", "--cpu-port", "255"])
    assert args.ports == {1: "veth1", 2: "veth2"}
    assert (args.device_id, args.grpc_server_addr, args.cpu_port) == (3, "127.0.0.1:9999", 255)
    assert args.no_p4 and args.json is None


def test_json_and_defaults() -> None:
    args = parse_args([str(TEST_JSON), "--thrift-port", "9090", "-L", "debug"])
    assert args.json == str(TEST_JSON)
    assert (args.grpc_server_addr, args.cpu_port, args.device_id) == ("0.0.0.0:9559", None, 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give a bmv2 JSON to run, or --no-p4"),
        (["x.json", "--no-p4"], "either a bmv2 JSON or --no-p4"),
        (["--no-p4", "-i", "veth1"], "PORT@IFACE"),
        (["--no-p4", "-i", "x@veth1"], "is not a number"),
        (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 is given twice"),
        (["--no-p4", "-i", "1@a", "-i", "2@a"], "interface a is bound to two ports"),
        (["--no-p4", "--", "--cpu-port", "0"], "--cpu-port 0 is not valid"),
        (["--no-p4", "-i", "255@a", "--", "--cpu-port", "255"], "used as a data port"),
    ],
)
def test_bad_arguments_are_explained(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_args(argv)


@pytest.mark.parametrize("argv", [["--no-p4", "--grpc-server-addr", "nowhere"],
                                  ["--no-p4", "--cpu-port", "600"],
                                  ["--no-p4", "--device-id", "-1"],
                                  ["--no-p4", "--thrift-port", "99999"]])
def test_bad_values_exit_with_usage(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(argv)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_missing_json_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bmv2.pyswitch", str(missing), "--",
         "--grpc-server-addr", f"127.0.0.1:{free_tcp_port()}"],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"cannot read {missing}" in proc.stderr


def test_process_serves_p4runtime_and_stops_on_sigterm(tmp_path: Path) -> None:
    switch = SwitchProcess("python", {}, log_path=tmp_path / "pyswitch.log")
    with switch:
        client = Client(switch.grpc_addr, switch.device_id)
        try:
            reply = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
            assert reply.p4runtime_api_version == "1.3.0"
            client.arbitrate()
            client.set_pipeline()
        finally:
            client.close()
        switch.stop()
        assert switch.proc is not None and switch.proc.returncode == 0
    assert "Server listening on" in (tmp_path / "pyswitch.log").read_text()
