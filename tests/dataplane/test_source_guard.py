"""A host's address is bound to its switch port: forged sources gain nothing.
Only the Learner may broadcast weights. On every switch present."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from agent.contract import protocol
from controller import cli
from controller.stats import read_guard_drops
from tests.dataplane.packets import CONFIG, PacketTestbed, fields, payload

pytestmark = pytest.mark.netns
ON_TNA = True   # also on the TNA program (tests/dataplane/conftest.py)


def forged(bed: PacketTestbed, sender: str, victim: str, data: bytes) -> Ether:
    """A replay request sent from `sender`'s port in the name of `victim`."""
    s, v = bed.cfg.host(sender), bed.cfg.host(victim)
    return (Ether(src=s.mac, dst=bed.cfg.vip_mac) / IP(src=v.ip, dst=bed.cfg.vip)
            / UDP(sport=40000, dport=protocol.REPLAY_UDP_PORT) / Raw(data))


@pytest.mark.parametrize("op", ["insert", "sample", "update"])
def test_forging_the_learners_address_gets_nothing(clean: PacketTestbed, op: str) -> None:
    ack = clean.insert(0, payload(1), priority=1.0)
    before = fields(clean.state(0))
    port = clean.cfg.host("h3").port
    dropped = read_guard_drops(clean.session).forged.get(port, 0)
    msg = {"insert": protocol.insert(0, payload(2), ack=True),
           "sample": protocol.sample(0, 4),
           "update": protocol.update(0, ack.slot, ack.stamp, 50.0, ack=True)}[op]
    clean.send("h3", forged(clean, "h3", "h1", protocol.encode(msg)))
    assert clean.silent("h3") and clean.silent("h1")
    assert fields(clean.state(0)) == before
    assert read_guard_drops(clean.session).forged.get(port, 0) == dropped + 1


def test_forged_attempts_show_in_replayctl_stats(clean: PacketTestbed, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = clean.switch_doc()
    path = tmp_path / "switch.yaml"
    path.write_text(yaml.safe_dump(doc))
    clean.send("h3", forged(clean, "h3", "h1", protocol.encode(protocol.sample(0, 4))))
    assert clean.silent("h3")
    port = clean.cfg.host("h3").port
    dropped = read_guard_drops(clean.session).forged[port]
    assert dropped >= 1
    # a backup controller (election id below the testbed's): it only reads
    assert cli.main(["-c", str(path), "--election-id", "5", "stats", "--table", "0"]) == 0
    assert f"forged sources dropped: port {port} (h3) {dropped}" in capsys.readouterr().out


def test_a_forged_mac_is_dropped_too(clean: PacketTestbed) -> None:
    h1, h3 = clean.cfg.host("h1"), clean.cfg.host("h3")
    frame = (Ether(src=h1.mac, dst=h1.mac) / IP(src=h3.ip, dst=h1.ip)
             / UDP(sport=1, dport=2) / Raw(b"not h1"))
    clean.send("h3", frame)
    assert clean.silent("h1")


def test_an_actor_cannot_broadcast_weights(clean: PacketTestbed) -> None:
    h2 = clean.cfg.host("h2")
    bcast = clean.cfg.broadcast
    assert bcast is not None and "h2" not in bcast.senders
    refused = read_guard_drops(clean.session).broadcasts.get(h2.port, 0)
    clean.send("h2", Ether(src=h2.mac, dst="ff:ff:ff:ff:ff:ff") / IP(src=h2.ip, dst=bcast.address)
               / UDP(sport=7000, dport=7001) / Raw(b"forged weights"))
    assert clean.silent("h3") and clean.silent("h2")
    assert read_guard_drops(clean.session).broadcasts.get(h2.port, 0) == refused + 1
