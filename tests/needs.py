"""What a test needs of this machine: each check skips the test, with the reason,
where it is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.orchestration.cluster.placement import ray_missing
from bmv2 import tofino_artifacts
from bmv2.launch import find_bmv2
from bmv2.testbed.netns import have_netns, have_packet_loss


def netns() -> None:
    """Skip unless network namespaces can be made here (root, iproute2)."""
    ok, why = have_netns()
    if not ok:
        pytest.skip(why)


def packet_loss() -> None:
    """Skip unless links can drop packets here (tc netem or nftables, as --loss needs)."""
    ok, why = have_packet_loss()
    if not ok:
        pytest.skip(why)


def switch(kind: str) -> None:
    """Skip a test of a `kind` switch ('python' or 'bmv2') that cannot start here."""
    if kind == "bmv2" and find_bmv2() is None:
        pytest.skip("simple_switch_grpc is not installed (see README, 'Installing p4c and bmv2')")


def testbed(kind: str) -> None:
    """Skip unless a namespace testbed around a `kind` switch can run here."""
    netns()
    switch(kind)


def ray() -> None:
    """Skip unless Ray, the cluster extra, is installed."""
    why = ray_missing()
    if why:
        pytest.skip(why)


def bf_p4c() -> Path:
    """p4c's Tofino driver (bmv2.tofino_artifacts.find_bf_p4c); skip without one."""
    found = tofino_artifacts.find_bf_p4c()
    if found is None:
        pytest.skip("needs bf-p4c (p4c built with -DENABLE_TOFINO=ON); set BF_P4C")
    return found
