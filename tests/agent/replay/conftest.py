"""Fixtures of the replay tests: a host replay server on loopback and a raw UDP peer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.contract import protocol
from agent.contract.protocol import ALLOW_ALL
from agent.replay.host_server import HostServer, build_service
from agent.replay.memory import TableConfig
from tests.agent.replay.raw_peer import LOOPBACK, RawPeer


@pytest.fixture
def server() -> Iterator[HostServer]:
    """A host server: table 0 prioritized (capacity 8), table 1 uniform, table 2 disabled,
    table 3 unconfigured; 127.0.0.1 may do everything on tables 0-2."""
    service = build_service([0], TableConfig(capacity=8, min_size=2, max_batch=16),
                            [(LOOPBACK, ALLOW_ALL)], seed=7)
    service.configure(1, TableConfig(capacity=64, default_mode=protocol.Mode.UNIFORM))
    service.configure(2, TableConfig(enabled=False))
    for table in (1, 2):
        service.allow(LOOPBACK, table, ALLOW_ALL)
    srv = HostServer(service, (LOOPBACK, 0)).start()
    yield srv
    srv.stop()


@pytest.fixture
def peer(server: HostServer) -> Iterator[RawPeer]:
    p = RawPeer(server.address)
    yield p
    p.close()
