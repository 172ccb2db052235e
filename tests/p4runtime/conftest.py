"""Fixtures: the P4Runtime server under test, in-process (Python switch) or bmv2.

Tests that go through gRPC only run on both, so that the Python switch's
answers are checked against simple_switch_grpc's wherever bmv2 is installed.
"""

from __future__ import annotations

import os

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import itertools
from collections.abc import Iterator

import pytest

from tests.p4runtime.p4rt_client import Client, Names, load_p4info
from tests.p4runtime.targets import Target, start_bmv2_target, start_python_target

# Streams of earlier tests may still be closing on the server: each test takes
# election ids above all earlier ones, so that leftovers never win or collide.
_ELECTION_BASES = itertools.count(1000, 1000)


@pytest.fixture(scope="module", params=["python", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def target(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The switch under test, shared by a module's tests."""
    if request.param == "python":
        yield from start_python_target()
    else:
        yield from start_bmv2_target(tmp_path_factory)


@pytest.fixture
def python_target() -> Iterator[Target]:
    """A fresh in-process Python switch, for tests of its own behaviour."""
    yield from start_python_target()


@pytest.fixture
def election_base() -> int:
    """An election id above every id earlier tests used (use base + 1, base + 2, ...)."""
    return next(_ELECTION_BASES)


@pytest.fixture
def client(target: Target, election_base: int) -> Iterator[Client]:
    """The primary client (election id base + 500) with the test program pushed."""
    c = Client(target.address, target.device_id, election_id=election_base + 500)
    c.arbitrate()
    c.set_pipeline()
    yield c
    c.close()


@pytest.fixture(scope="session")
def names() -> Names:
    """Name lookups in the test program's P4Info."""
    return Names(load_p4info())
