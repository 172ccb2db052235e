"""A burst of requests sent back to back, as a Learner sends a batch's UPDATEs,
reaches the switch whole: none is dropped on its way into the switch. bmv2 reads
its ports through a libpcap ring, which held 32 frames while the switch ports
kept their segmentation offloads on and holds 256 now (a burst of 512 on a
loaded machine: exactly 256 counted); the Python switch's port sockets have an
8 MB receive buffer (with the default, 256 of 512 under load)."""

from __future__ import annotations

import time

import pytest

from agent.contract import protocol
from agent.contract.cli_args import REPO
from agent.replay.udp import udp_socket
from bmv2.testbed.netns import inside
from bmv2.testbed.netns_bed import Testbed
from controller import config
from controller.stats import read_stats
from tests import needs

BURST = 192      # UPDATEs sent back to back, no ACK asked: three batches' worth
SETTLE = 10.0    # seconds the switch gets to count them


@pytest.mark.netns
@pytest.mark.parametrize("kind", ["python", "bmv2"])
def test_a_burst_of_updates_is_counted_whole_by_the_switch(kind: str, tmp_path) -> None:
    needs.testbed(kind)
    cfg = config.load(REPO / "controller" / "testbed.yaml")
    learner = cfg.host("learner")
    with Testbed(cfg, switch_kind=kind, log_dir=tmp_path) as bed:
        with inside(bed.ns_name("learner")):
            sock = udp_socket((learner.ip, 0))
        try:
            sock.connect((cfg.vip, protocol.REPLAY_UDP_PORT))
            for i in range(BURST):  # slot i of an empty table: each one is STALE
                sock.send(protocol.encode(protocol.update(0, i, 1, 1.0, request_id=i + 1)))
        finally:
            sock.close()
        assert bed.session is not None
        deadline = time.monotonic() + SETTLE
        while True:
            stats = read_stats(bed.session, [0])[0]
            counted = stats.ok.get("UPDATE", 0) + stats.refused.get("STALE", 0)
            if counted >= BURST or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert counted == BURST, (stats.ok, stats.refused)
