"""Fixtures for packet-level tests of the replay program, run unchanged on
every switch present: the Python switch always, bmv2 where installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bmv2.launch import find_bmv2
from bmv2.netns import have_netns
from controller import config
from tests.dataplane.packets import PacketTestbed

CONFIG = Path(__file__).with_name("testbed.yaml")


@pytest.fixture(scope="module", params=["python", "bmv2"])
def dp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A started testbed: raw-frame hosts h1..h3 around the switch under test."""
    kind = request.param
    ok, why = have_netns()
    if not ok:
        pytest.skip(why)
    if kind == "bmv2" and find_bmv2() is None:
        pytest.skip("simple_switch_grpc is not installed (see README, 'Installing p4c and bmv2')")
    bed = PacketTestbed(config.load(CONFIG), kind, tmp_path_factory.mktemp(f"dp-{kind}"))
    bed.start()
    yield bed
    bed.stop()


@pytest.fixture
def clean(dp: PacketTestbed) -> PacketTestbed:
    """The testbed with every replay table reset and frames drained."""
    for t in dp.cfg.tables:
        dp.reset(t.id)
    dp.drain()
    return dp
