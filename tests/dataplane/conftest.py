"""Fixtures for packet-level tests of the replay program, run unchanged on
every switch present: the Python switch always, bmv2 where installed."""

from __future__ import annotations

import pytest

from controller import config
from tests import needs
from tests.dataplane.packets import CONFIG, PacketTestbed


@pytest.fixture(scope="module", params=["python", "bmv2", "tna"])
def dp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A started testbed: raw-frame hosts h1..h3 around the switch under test."""
    kind = request.param
    needs.testbed(kind)
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
