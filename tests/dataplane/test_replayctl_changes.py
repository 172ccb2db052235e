"""replayctl changes what the switch does, or refuses: granting SAMPLE installs
the requester's port's replication groups, revoking the port's last SAMPLE grant
removes them, granting INSERT on a limited table installs the host's limit, and
a grant or a capacity cut the switch cannot carry out is refused with one line
and exit 1, nothing written (Python switch, bmv2 and the TNA model)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

from agent.contract import protocol
from agent.contract.protocol import Status
from controller import cli, program
from controller.deploy import deploy
from controller.replication import COPIES, GROUP_BLOCK
from tests.dataplane.packets import CONFIG, PacketTestbed

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)

BLOCKS = range(1, (1 << 15) // GROUP_BLOCK)  # P4Runtime on bmv2 takes group ids below 2^15
PAYLOAD = bytes(range(protocol.PAYLOAD_BYTES))
LOOP_PORT = 68   # LOOP_PORT in p4src/tna/arch.p4


def write_config(clean: PacketTestbed, tmp_path: Path, doc: dict | None = None) -> Path:
    """The dataplane config (or `doc`) pointed at the testbed's switch."""
    doc = doc or yaml.safe_load(CONFIG.read_text())
    doc["switch"] = clean.switch_doc()
    path = tmp_path / "switch.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def replayctl(clean: PacketTestbed, capsys: pytest.CaptureFixture, cfg: Path,
              *args: str) -> tuple[int, str, str]:
    """Run replayctl on `cfg`: exit code, stdout, stderr."""
    code = cli.main(["-c", str(cfg), *args])
    assert clean.session.wait_primary()  # replayctl was primary while it ran
    out = capsys.readouterr()
    return code, out.out, out.err


def replication_bases(clean: PacketTestbed) -> dict[int, int]:
    """{port: group base} of the switch's sample_replication entries, read over P4Runtime."""
    info = clean.session.p4info
    return {program.match_values(info, e)[program.ORIG_PORT]:
            program.param_values(info, e)["group_base"]
            for e in clean.session.read_table(program.SAMPLE_REPLICATION_TABLE)}


def acl_entries(clean: PacketTestbed) -> dict[tuple[int, int], int]:
    return program.read_acl(clean.session)


def host_key(clean: PacketTestbed, host: str, table: int) -> tuple[int, int]:
    return (int(ipaddress.IPv4Address(clean.cfg.host(host).ip)), table)


def fill(clean: PacketTestbed, table: int, n: int) -> None:
    for i in range(n):
        clean.insert(table, i.to_bytes(4, "big") * protocol.PAYLOAD_WORDS)


def sample_ok(clean: PacketTestbed, host: str, table: int, n: int) -> None:
    """SAMPLE n from `host` gets n OK replies, indices 0 .. n-1."""
    replies = clean.sample(table, n, host=host)
    assert [r.index for r in replies] == list(range(n)), replies
    assert all(r.ok for r in replies), [r.status_name() for r in replies]


def denied(clean: PacketTestbed, host: str, table: int) -> bool:
    (reply,) = clean.sample(table, 1, host=host)
    return reply.status == Status.DENIED


def test_granting_sample_installs_the_ports_groups_and_revoking_removes_them(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = write_config(clean, tmp_path)
    port = clean.cfg.host("h3").port
    others = replication_bases(clean)
    assert port not in others and denied(clean, "h3", 0)  # h3 may not sample: no groups
    fill(clean, 0, 4)
    try:
        code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h3", "0", "sample")
        assert code == 0 and out.startswith("h3 may now sample table 0"), out + err
        for n in (1, 5, 64):
            sample_ok(clean, "h3", 0, n)
        bases = replication_bases(clean)
        base = bases.pop(port)
        assert bases == others   # the other ports' groups stay where they were
        groups = clean.session.read_multicast_groups()
        # on TNA the copies go through the loop port, where the replay state is
        # (docs/protocol.md), and are answered to h3's port from there
        replica_port = LOOP_PORT if clean.kind == "tna" else port
        for c in COPIES:
            assert groups[base + c] == [(replica_port, rid) for rid in range(c)], c

        code, out, err = replayctl(clean, capsys, cfg, "acl", "remove", "h3", "0", "sample")
        assert code == 0 and out.startswith("h3 may no longer use table 0"), out + err
        assert denied(clean, "h3", 0)
        assert replication_bases(clean) == others
        groups = clean.session.read_multicast_groups()
        assert not [g for g in groups if base <= g < base + GROUP_BLOCK]
        assert not [g for g, replicas in groups.items() if (port, 0) in replicas]
        sample_ok(clean, "h1", 0, 5)   # the config's sampler is untouched
    finally:
        deploy(clean.session, clean.cfg)


def test_revoking_one_of_a_ports_sample_grants_keeps_its_groups(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = write_config(clean, tmp_path)
    port = clean.cfg.host("h3").port
    fill(clean, 0, 2)
    fill(clean, 1, 2)
    try:
        for table in ("0", "1"):
            code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h3", table, "sample",
                                       "update")
            assert code == 0, out + err
        sample_ok(clean, "h3", 0, 8)
        base = replication_bases(clean)[port]
        code, out, err = replayctl(clean, capsys, cfg, "acl", "remove", "h3", "0")
        assert code == 0, out + err
        assert denied(clean, "h3", 0)
        assert replication_bases(clean)[port] == base   # table 1's grant still needs them
        sample_ok(clean, "h3", 1, 8)
        code, out, err = replayctl(clean, capsys, cfg, "acl", "remove", "h3", "1", "sample")
        assert code == 0 and out.startswith("h3 may now update table 1"), out + err
        assert denied(clean, "h3", 1)
        assert replication_bases(clean)[port] == base   # its UPDATE_BATCHes still need them
        code, out, err = replayctl(clean, capsys, cfg, "acl", "remove", "h3", "1")
        assert code == 0, out + err
        assert port not in replication_bases(clean)
    finally:
        deploy(clean.session, clean.cfg)


def test_a_sample_grant_without_free_group_ids_is_refused(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Every block of group ids holds a group the controller did not make: the grant
    is refused in one line, exit 1, and nothing changes."""
    cfg = write_config(clean, tmp_path)
    used = set(replication_bases(clean).values())
    foreign = {b * GROUP_BLOCK + 1: [(clean.cfg.host("h2").port, 7)]
               for b in BLOCKS if b * GROUP_BLOCK not in used}
    s = clean.session
    s.write([s.update("insert", s.multicast_group_entity(g, r)) for g, r in foreign.items()])
    try:
        before = (acl_entries(clean), replication_bases(clean), s.read_multicast_groups())
        code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h3", "0", "insert", "sample")
        assert code == cli.EXIT_FAILED and out == "", out
        assert err.count("\n") == 1 and "h3" in err and "no free" in err, err
        assert (acl_entries(clean), replication_bases(clean), s.read_multicast_groups()) == before
        assert clean.one("h3", protocol.insert(0, PAYLOAD, ack=True)).status == Status.DENIED
    finally:
        deploy(clean.session, clean.cfg)


def test_a_grant_to_an_unbound_host_or_unconfigured_table_is_refused(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["hosts"].append({"name": "h4", "ip": "198.18.0.4", "mac": "02:00:00:00:00:04",
                         "port": 4})
    cfg = write_config(clean, tmp_path, doc)   # h4 is in the file, not deployed
    before = acl_entries(clean)
    code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h4", "0", "insert")
    assert code == cli.EXIT_FAILED and out == "" and err.count("\n") == 1, out + err
    assert "h4" in err and "not bound" in err and "deploy" in err, err
    assert acl_entries(clean) == before

    clean.session.delete_entry(program.CONFIG_TABLE, program.config_match(2))
    try:
        code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h3", "2", "insert")
        assert code == cli.EXIT_FAILED and out == "" and err.count("\n") == 1, out + err
        assert "table 2" in err and "not configured" in err, err
        assert acl_entries(clean) == before
    finally:
        deploy(clean.session, clean.cfg)


def test_granting_insert_on_a_limited_table_installs_the_hosts_limit(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = yaml.safe_load(CONFIG.read_text())
    next(t for t in doc["tables"] if t["id"] == 0)["insert_limit"] = 0   # no INSERT passes
    cfg = write_config(clean, tmp_path, doc)
    try:
        code, out, err = replayctl(clean, capsys, cfg, "deploy")
        assert code == 0, out + err
        code, out, err = replayctl(clean, capsys, cfg, "acl", "add", "h3", "0", "insert")
        assert code == 0 and out.startswith("h3 may now insert table 0"), out + err
        reply = clean.one("h3", protocol.insert(0, PAYLOAD, ack=True))
        assert reply.status == Status.RATE_LIMITED
        limits = [program.match_values(clean.session.p4info, e)
                  for e in clean.session.read_table(program.INSERT_LIMIT_TABLE)]
        assert host_key(clean, "h3", 0) in {(m[program.SRC_ADDR], m[program.TABLE_ID])
                                            for m in limits}
        code, out, err = replayctl(clean, capsys, cfg, "acl", "remove", "h3", "0")
        assert code == 0, out + err
        limits = [program.match_values(clean.session.p4info, e)
                  for e in clean.session.read_table(program.INSERT_LIMIT_TABLE)]
        assert host_key(clean, "h3", 0) not in {(m[program.SRC_ADDR], m[program.TABLE_ID])
                                                for m in limits}
    finally:
        deploy(clean.session, clean.cfg)



def test_a_capacity_cut_below_what_the_table_holds_is_refused(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Lowering table 0's capacity (64) to 8 while it holds 20 experiences would leave
    slots 8..19 sampled for good: `table set` and `deploy` refuse it; after a reset,
    or down to what it holds, the cut is carried out."""
    cfg = write_config(clean, tmp_path)
    fill(clean, 0, 20)
    doc = yaml.safe_load(CONFIG.read_text())
    next(t for t in doc["tables"] if t["id"] == 0)["capacity"] = 8
    cut = tmp_path / "cut.yaml"
    cut.write_text(yaml.safe_dump({**doc, "switch": clean.switch_doc()}))
    try:
        for args in ((cfg, "table", "set", "0", "--capacity", "8"), (cut, "deploy")):
            code, out, err = replayctl(clean, capsys, *args)
            assert code == cli.EXIT_FAILED and out == "" and err.count("\n") == 1, out + err
            assert "holds 20 experiences" in err and "reset --table 0" in err, err
            assert program.read_configs(clean.session)[0].capacity == 64
        assert {r.slot for r in clean.sample(0, 64)} - set(range(20)) == set()

        code, out, err = replayctl(clean, capsys, cfg, "table", "set", "0", "--capacity", "20")
        assert code == 0 and out == "table 0: capacity=20\n", out + err
        clean.reset(0)
        code, out, err = replayctl(clean, capsys, cut, "deploy")
        assert code == 0 and "1 modified" in out, out + err
        fill(clean, 0, 12)
        assert clean.state(0).size == 8
        replies = clean.sample(0, 64)
        assert len(replies) == 64 and {r.slot for r in replies} <= set(range(8))
    finally:
        deploy(clean.session, clean.cfg)
