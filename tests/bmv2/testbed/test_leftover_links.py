"""A testbed brought up where a killed one left its links behind still comes up,
and a veth pair that fails half-way leaves nothing behind."""

from __future__ import annotations

import os

import pytest

from agent.contract.cli_args import REPO
from bmv2.testbed.netns import NetnsError, VethPair, delete_links, ip, link_names
from bmv2.testbed.netns_bed import Testbed
from controller import config
from tests import needs


@pytest.fixture(autouse=True)
def _root() -> None:
    needs.netns()


def test_a_pair_that_cannot_be_placed_is_deleted() -> None:
    tag = f"p4rt{os.getpid() % 10000:04d}"
    pair = VethPair(f"{tag}a", f"{tag}b", None, f"{tag}-no-such-namespace")
    with pytest.raises(NetnsError):
        pair.create()
    assert not {f"{tag}a", f"{tag}b"} & link_names()


def test_a_bed_comes_up_over_the_links_a_killed_bed_left() -> None:
    cfg = config.load(REPO / "controller" / "testbed.yaml")
    bed = Testbed(cfg, switch_kind="python", deploy_config=False)
    stale = bed._link_names()[:2]                  # one host's pair, both ends in this namespace
    ip("link", "add", stale[0], "type", "veth", "peer", "name", stale[1])
    try:
        with bed:
            # the switch end is back, the host end moved into its namespace
            assert set(stale) & link_names() == {stale[0]}
        assert not set(bed._link_names()) & link_names()
    finally:
        delete_links(stale)
