"""Fixtures for packet-level tests of the replay program, run unchanged on
every switch present: the Python switch always, bmv2 where installed, and also
the TNA program on the Python switch's TNA model in the modules that say
``ON_TNA = True`` (every test) or name their tests in ``ON_TNA`` (those only:
each table reset between tests takes a second or so on the TNA model)."""

from __future__ import annotations

import pytest

from controller import config
from tests import needs
from tests.dataplane.packets import CONFIG, PacketTestbed

KINDS = ["python", "bmv2"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`dp` (and `clean`, which takes it) once per switch kind, per module."""
    if "dp" in metafunc.fixturenames:
        on_tna = getattr(metafunc.module, "ON_TNA", False)
        if on_tna is not True:
            on_tna = metafunc.function.__name__ in (on_tna or ())
        kinds = KINDS + (["tna"] if on_tna else [])
        metafunc.parametrize("dp", kinds, indirect=True, scope="module")


@pytest.fixture(scope="module")
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
    """The testbed with every replay table reset and frames drained. On the TNA model,
    where a RESET takes a second or so, a table whose state is all zero (nothing
    inserted, restored or written with a priority since its last reset) is left as it
    is."""
    for t in dp.cfg.tables:
        if dp.kind != "tna" or not dp.untouched(t.id):
            dp.reset(t.id)
    dp.drain()
    return dp
