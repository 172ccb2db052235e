"""`replayctl shell`: p4runtime-shell on the configured switch, driven by the
lines a user types, and what it shows agrees with replayctl (Python switch, bmv2
and the TNA model)."""

from __future__ import annotations

import ast
import ipaddress
import json
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agent.contract import protocol
from agent.contract.cli_args import REPO
from agent.orchestration.timing import full_table
from bmv2.launch import KIND_TARGETS, SwitchProcess
from controller import cli, snapshot, udp_frame
from controller.program import ACL_TABLE, CONFIG_TABLE
from controller.stats import COUNTER
from tests import needs
from tests.dataplane.packets import CONFIG

PROMPT = re.compile(r"^.*(>>> |\.\.\.: )")  # IPython's prompts before a printed line
LATER = "200"  # replayctl's election id after a shell session (the shell used 100)

# What a user types: Tab on a table name, read the config table and the ACL, add
# an ACL entry and a multicast group, send a GET_STATE request as a PacketOut and
# read the PacketIn, read the request counters. Lines with a tag are parsed by the test.
SESSION_ONE = '''\
line = 'table_entry["$ACL_TABLE'[:-3]  # a table name typed in part, then Tab
print("TAB", get_ipython().complete(None, line, len(line))[1])
n = lambda b: int.from_bytes(b, "big")
ids = lambda e: n(e.match["hdr.replay.table_id"].exact.value)
par = lambda e, name: n(e.action[name].value)
for e in table_entry["$CONFIG_TABLE"].read():
    print("CONFIG", ids(e), par(e, "capacity"), par(e, "min_size"), par(e, "max_batch"))

te = table_entry["$ACL_TABLE"](action="ReplayIngress.replay.allow")
te.match["hdr.ipv4.src_addr"] = "198.18.0.3"
te.match["hdr.replay.table_id"] = "1"
te.action["ops"] = "3"
te.insert()
src = lambda e: n(e.match["hdr.ipv4.src_addr"].exact.value)
for e in table_entry["$ACL_TABLE"].read():
    print("ACL", src(e), ids(e), par(e, "ops"))

MulticastGroupEntry(7).add(11, 1).add(12, 1).insert()
print("MCAST", sorted(r.egress_port for r in next(MulticastGroupEntry(7).read()).replicas))
MulticastGroupEntry(7).delete()
from agent.contract import protocol
from controller import inband, udp_frame
request = protocol.encode(protocol.get_state(0, request_id=4242))
frame = udp_frame.build(udp_frame.UdpFrame(
    inband.CONTROLLER_MAC, "02:00:00:00:00:64", inband.CONTROLLER_IP, "198.18.0.100",
    inband.CONTROLLER_PORT, protocol.REPLAY_UDP_PORT, request))

packet_out(payload=frame).send()
print("PACKET_IN", [m.packet.payload.hex() for m in packet_in.sniff(timeout=3)])
counters = CounterEntry("$COUNTER").read()
print("COUNTERS", [(c.index, c.packet_count) for c in counters if c.packet_count])
'''

SESSION_TWO = '''\
te = table_entry["$ACL_TABLE"]
te.match["hdr.ipv4.src_addr"] = "198.18.0.3"
te.match["hdr.replay.table_id"] = "1"
te.delete()
print("ACL_LEFT", len(list(table_entry["$ACL_TABLE"].read())))
'''


NAMES = {"ACL_TABLE": ACL_TABLE, "CONFIG_TABLE": CONFIG_TABLE, "COUNTER": COUNTER}


def shell(cfg: Path, script: str, *extra: str) -> dict[str, object]:
    """Run `replayctl shell` with `script` (P4Info names filled in) on its standard
    input; the tagged lines it printed, by tag."""
    script = string.Template(script).substitute(NAMES)
    proc = subprocess.run([sys.executable, "-m", "controller.cli", "-c", str(cfg), "shell",
                           *extra], input=script, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not any(word in proc.stdout for word in ("Traceback", "UserError", "Error(s)")), \
        proc.stdout
    out: dict[str, object] = {}
    for line in proc.stdout.splitlines():
        tag, _, rest = PROMPT.sub("", line).partition(" ")
        if tag in ("CONFIG", "ACL"):
            out.setdefault(tag, []).append([int(x) for x in rest.split()])  # type: ignore
        elif tag.isupper() and tag.replace("_", "").isalpha() and rest:
            out[tag] = ast.literal_eval(rest)
    return out


def replayctl(capsys: pytest.CaptureFixture, cfg: Path, *args: str) -> str:
    code = cli.main(["-c", str(cfg), "--election-id", LATER, *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


@pytest.fixture(params=["python", pytest.param("bmv2", marks=pytest.mark.bmv2), "tna"])
def switch_config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """The dataplane tests' config, pointing at a freshly started switch with no pipeline."""
    needs.switch(request.param)
    with SwitchProcess(request.param, {}, log_path=tmp_path / "switch.log") as switch:
        doc = yaml.safe_load(CONFIG.read_text())
        doc["switch"] = {"address": switch.grpc_addr,
                         "target": KIND_TARGETS[request.param].name}
        cfg = tmp_path / "switch.yaml"
        cfg.write_text(yaml.safe_dump(doc))
        yield cfg


def test_scripted_shell_session_agrees_with_replayctl(switch_config: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    cfg = switch_config
    assert cli.main(["-c", str(cfg), "deploy"]) == 0
    snap = tmp_path / "full.json"
    snapshot.write_file(snap, [full_table(0, 64)])  # table 0 holds 64 experiences
    assert cli.main(["-c", str(cfg), "restore", str(snap)]) == 0
    capsys.readouterr()

    seen = shell(cfg, SESSION_ONE)
    # first, before replayctl's own GET_STATE requests move the counters
    stats = json.loads(replayctl(capsys, cfg, "stats", "--json", "--table", "0"))["0"]

    status = replayctl(capsys, cfg, "status")
    rows = {int(ln.split()[0]): ln.split() for ln in status.splitlines()
            if ln.split()[:1] and ln.split()[0].isdigit()}
    assert sorted(seen["CONFIG"]) == [[t, int(r[2]), int(r[3]), int(r[4])]  # type: ignore
                                      for t, r in sorted(rows.items())]
    acl = replayctl(capsys, cfg, "acl", "list")
    assert any(ln.split()[:4] == ["h3", "198.18.0.3", "1", "insert,sample"]
               for ln in acl.splitlines()), acl
    assert [int(ipaddress.IPv4Address("198.18.0.3")), 1, 3] in seen["ACL"]
    assert seen["MCAST"] == [11, 12]
    assert any(ACL_TABLE in c for c in seen["TAB"])  # type: ignore

    (reply_hex,) = seen["PACKET_IN"]  # type: ignore
    frame = udp_frame.parse(bytes.fromhex(reply_hex))
    assert frame is not None
    reply = protocol.decode(frame.payload)
    assert reply.request_id == 4242 and reply.ok and reply.size == stats["size"] == 64
    ops = {}
    for index, packets in seen["COUNTERS"]:  # type: ignore
        table, op, status_code = index >> 8, (index >> 4) & 0xF, index & 0xF
        if table == 0 and status_code == protocol.Status.OK:
            ops[protocol.Op(op).name] = packets
    assert ops == stats["ok"]
    assert ops["GET_STATE"] >= 1 and ops["WRITE"] == 64

    seen = shell(cfg, SESSION_TWO)
    acl = replayctl(capsys, cfg, "acl", "list")
    assert "h3" not in acl and seen["ACL_LEFT"] == len(acl.splitlines()) - 2  # header lines


def test_shell_without_pipeline_says_deploy_or_push(switch_config: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["-c", str(switch_config), "shell"]) == cli.EXIT_NO_PIPELINE
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "replayctl deploy" in err and "--push" in err
    seen = shell(switch_config, 'print("TABLES", len(p4info.tables))\n', "--push")
    assert seen["TABLES"] >= 5  # type: ignore


def test_shell_command_line_comes_from_the_config(tmp_path: Path) -> None:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = {"address": "127.0.0.1:50123", "device_id": 3}
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    args = cli.build_parser().parse_args(["-c", str(cfg), "--election-id", str((1 << 64) + 9),
                                          "shell"])
    cmd = cli.shell_command(cli.Context(args), push=True)
    assert cmd[1:3] == ["-m", "p4runtime_sh"]
    assert cmd[cmd.index("--grpc-addr") + 1] == "127.0.0.1:50123"
    assert cmd[cmd.index("--device-id") + 1] == "3"
    assert cmd[cmd.index("--election-id") + 1] == "1,9"
    assert cmd[cmd.index("--config") + 1].endswith("replay.p4info.txtpb,"
                                                   f"{REPO}/p4src/build/replay.json")
