"""The replication floor tool: the reply template it sends, its rows and table, its
usage errors, and a tiny run on each switch (timings are never asserted)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from agent.contract import protocol
from agent.orchestration import floor as floor_cli
from agent.orchestration.benchmarks import replication_floor
from bmv2 import artifacts
from tests import needs


def test_a_sample_request_leaves_as_the_reply_the_switch_replicates() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(2)
        transport = replication_floor.ReplyTemplateTransport(peer.getsockname(), ("127.0.0.1", 0))
        try:
            transport.send(protocol.sample(3, 32, mode=protocol.Mode.PRIORITIZED,
                                           request_id=77))
            reply = protocol.decode(peer.recv(4096))
            transport.send(protocol.update(3, 5, 9, 1.5, request_id=78))
            other = protocol.decode(peer.recv(4096))
        finally:
            transport.close()
    assert reply.is_reply and reply.ok and reply.op == protocol.Op.SAMPLE
    assert (reply.request_id, reply.count, reply.table, reply.index) == (77, 32, 3, 0)
    assert reply.mode == protocol.Mode.PRIORITIZED
    assert reply.payload == replication_floor.TEMPLATE_PAYLOAD
    assert len(protocol.decode_batch([reply])) == 1      # a batch the client accepts
    # Anything else goes out as it is.
    assert other == protocol.update(3, 5, 9, 1.5, request_id=78)


def test_rows_pair_each_batch_size_with_both_host_modes() -> None:
    median = {"floor": {"floor.8.p50_us": 100.0, "floor.8.cpu.switch": 5.0},
              "host": {"host.uniform.8.p50_us": 400.0, "host.prioritized.8.p50_us": 500.0,
                       "host.uniform.8.cpu.server": 9.0}}
    rows = replication_floor.floor_rows(median, (8, 16))
    assert [(r["n"], r["host_mode"]) for r in rows] == [
        (8, "uniform"), (8, "prioritized"), (16, "uniform"), (16, "prioritized")]
    assert rows[0]["ratio"] == 0.25 and rows[1]["ratio"] == 0.2
    assert rows[0]["floor_switch"] == 5.0 and rows[0]["host_server"] == 9.0
    assert rows[1]["host_server"] is None
    assert rows[2]["ratio"] is None and rows[2]["floor_p50_us"] is None


def test_the_table_marks_what_is_missing_and_any_loss() -> None:
    rows = replication_floor.floor_rows({"floor": {"floor.8.p50_us": 100.0},
                             "host": {"host.uniform.8.p50_us": 400.0}}, (8,))
    md = "\n".join(floor_cli.rows_markdown("bmv2", {"rows": rows,
                                                    "totals": {"floor.8.retries": 2.0,
                                                               "floor.8.lost": 0.0}}))
    assert "| 8 | uniform | 100 | 400 | 0.25 |" in md
    assert "| 8 | prioritized | 100 | – | – |" in md
    assert "totals over rounds: floor.8.retries 2" in md and "floor.8.lost" not in md
    assert "not measured: no netns" in "\n".join(
        floor_cli.rows_markdown("python", {"error": "no netns"}))


@pytest.mark.parametrize("argv, message", [
    (["--batch-sizes", "0"], "--batch-sizes: must be 1..255"),
    (["--rounds", "0"], "--rounds: must be 1..1000"),
    (["--switch", "tofino"], "invalid choice"),
])
def test_bad_options_are_one_line_and_exit_2(argv: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        floor_cli.cli(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_batch_above_the_table_and_a_missing_p4c_are_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert floor_cli.cli(["--batch-sizes", "32,200", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"error: --batch-sizes 200: table 0 of {floor_cli.DEFAULT_CONFIG} allows SAMPLEs of "
        "at most 128 (max_batch)\n")
    monkeypatch.setenv(artifacts.P4C_ENV, str(tmp_path / "no-p4c"))
    assert floor_cli.cli(["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: $P4C=") and err.count("\n") == 1
    assert not (tmp_path / "results.json").exists()


@pytest.mark.p4c
@pytest.mark.netns
@pytest.mark.parametrize("kind", ["python", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_a_tiny_floor_run(kind: str, tmp_path: Path) -> None:
    needs.testbed(kind)
    try:
        artifacts.find_p4c()
    except artifacts.ToolchainMissing as exc:
        pytest.skip(str(exc))
    out = tmp_path / "out"
    assert floor_cli.cli(["--switch", kind, "--rounds", "1", "--requests", "3",
                          "--batch-sizes", "1,16", "--out", str(out),
                          "--log-dir", str(tmp_path / "log")]) == 0
    results = json.loads((out / "results.json").read_text())
    section = results["switches"][kind]
    assert "error" not in section, section.get("error")
    figs = section["rounds"][0]
    for n in (1, 16):
        # Every copy came with its own index (the client keys replies by it), at once.
        assert figs["floor"][f"floor.{n}.n"] == 3
        assert figs["floor"][f"floor.{n}.retries"] == 0 == figs["floor"][f"floor.{n}.lost"]
        assert figs["floor"][f"floor.{n}.cpu.switch"] > 0
        assert figs["host"][f"host.prioritized.{n}.n"] == 3
        assert figs["host"][f"host.uniform.{n}.cpu.server"] > 0
    assert all(r["ratio"] is not None for r in section["rows"])
    assert f"## {kind}" in (out / "results.md").read_text()
