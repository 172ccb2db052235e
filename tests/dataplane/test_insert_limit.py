"""A flood cannot wipe the memory: each table's per-host INSERT limit
(p4src/include/insert_limit.p4), on every switch present."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from agent.contract import protocol
from agent.contract.protocol import INSERT_WINDOW_US, Message, Op, Status
from controller import cli, config
from controller.deploy import deploy
from controller.stats import read_guard_drops
from tests.dataplane.packets import CONFIG, PacketTestbed, payload

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)

LIMIT = 10
WINDOW_S = INSERT_WINDOW_US / 1e6


def limited_doc(clean: PacketTestbed, limit: int) -> dict:
    """The dataplane config with `limit` on table 0 (h1 and h2 may insert into it)."""
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = clean.switch_doc()
    for t in doc["tables"]:
        if t["id"] == 0:
            t["insert_limit"] = limit
    return doc


def deploy_limit(clean: PacketTestbed, tmp_path: Path, limit: int) -> Path:
    path = tmp_path / "limited.yaml"
    path.write_text(yaml.safe_dump(limited_doc(clean, limit)))
    assert cli.main(["-c", str(path), "deploy"]) == 0
    assert clean.session.wait_primary()  # replayctl was primary while it ran
    return path


def flood(clean: PacketTestbed, host: str, n: int, base: int) -> list[Message]:
    """`n` INSERTs with ACK from `host`, sent back to back; their replies by request id."""
    ids = []
    for i in range(n):
        msg = protocol.insert(0, payload(base + i), ack=True, request_id=base + i + 1)
        ids.append(msg.request_id)
        clean.send(host, clean.replay_frame(host, protocol.encode(msg)))
    got: dict[int, Message] = {}
    deadline = time.monotonic() + 10
    while len(got) < n and time.monotonic() < deadline:
        frame = clean.recv(host, 1.0)
        msg = frame.replay() if frame is not None else None
        if msg is not None and msg.request_id in ids:
            got[msg.request_id] = msg
    return [got[i] for i in ids if i in got]



def test_a_flooding_host_is_limited_while_another_keeps_inserting(
        clean: PacketTestbed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = deploy_limit(clean, tmp_path, LIMIT)
    try:
        drops = read_guard_drops(clean.session).rate_limited
        limited_before = clean.counter(0, Op.INSERT, Status.RATE_LIMITED)
        size_before = clean.state(0).size
        started = time.monotonic()
        replies = flood(clean, "h2", 4 * LIMIT, 1000)
        h1 = [clean.insert(0, payload(i), priority=1.0) for i in range(LIMIT // 2)]
        elapsed = time.monotonic() - started
        assert len(replies) == 4 * LIMIT
        ok = [m for m in replies if m.ok]
        refused = [m for m in replies if not m.ok]
        assert {m.status for m in refused} == {Status.RATE_LIMITED}
        # the budget of the window(s) the flood spanned, and no more
        windows = 1 + int(elapsed // WINDOW_S) + 1
        assert LIMIT <= len(ok) <= LIMIT * windows, (len(ok), elapsed)
        if elapsed < WINDOW_S / 2:   # within at most two windows
            assert len(ok) <= 2 * LIMIT and len(refused) >= 2 * LIMIT
        assert all(m.size == 0 and m.total == 0 for m in refused)  # refused at admission
        assert all(a.ok for a in h1)   # the other host inserts on
        assert clean.state(0).size == size_before + len(ok) + len(h1)
        assert clean.counter(0, Op.INSERT, Status.RATE_LIMITED) == limited_before + len(refused)
        h2_limiter = next(lim.index for lim in config.load(path).insert_limiters()
                          if lim.host == "h2" and lim.table == 0)
        after = read_guard_drops(clean.session).rate_limited
        assert after.get(h2_limiter, 0) == drops.get(h2_limiter, 0) + len(refused)
        capsys.readouterr()
        assert cli.main(["-c", str(path), "stats"]) == 0
        assert clean.session.wait_primary()
        out = capsys.readouterr().out
        assert "inserts rate-limited: table 0 h2 " in out and "RATE_LIMITED=" in out, out
    finally:
        deploy(clean.session, clean.cfg)


def test_a_zero_limit_refuses_every_insert_and_stores_nothing(clean: PacketTestbed,
                                                              tmp_path: Path) -> None:
    deploy_limit(clean, tmp_path, 0)
    try:
        before = clean.state(0)
        reply = clean.one("h2", protocol.insert(0, payload(1), ack=True))
        assert reply.status == Status.RATE_LIMITED
        # refused requests are answered even without ACK, as every refusal is
        reply = clean.one("h2", protocol.insert(0, payload(2)))
        assert reply.status == Status.RATE_LIMITED
        after = clean.state(0)
        assert (after.size, after.stamp) == (before.size, before.stamp)
        # SAMPLE and UPDATE are not limited; the CPU port is not either
        assert clean.cpu(protocol.write(0, 0, 77, protocol.PRIORITY_ONE, payload(3))).ok
    finally:
        deploy(clean.session, clean.cfg)
    assert clean.one("h2", protocol.insert(0, payload(4), ack=True)).ok  # limit removed
