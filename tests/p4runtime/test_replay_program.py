"""The project's own data plane (p4src/build/replay.*) through the P4Runtime server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bmv2.pyswitch.p4runtime.proto import p4runtime_pb2
from controller.program import DEFAULT
from tests.p4runtime.p4rt_client import Client, Names, load_p4info, pipeline_config
from tests.p4runtime.targets import Target

pytestmark = pytest.mark.skipif(
    not (DEFAULT.bmv2_json.is_file() and DEFAULT.p4info.is_file()),
    reason="p4src/build/replay.json / replay.p4info.txtpb are not built yet (make p4)")


@pytest.fixture
def replay(target: Target, election_base: int) -> Iterator[Client]:
    c = Client(target.address, target.device_id, election_id=election_base + 1)
    c.arbitrate()
    c.set_pipeline(pipeline_config(DEFAULT.bmv2_json, DEFAULT.p4info))
    yield c
    c.close()


def test_pipeline_loads_and_reads_back(replay: Client) -> None:
    names = Names(load_p4info(DEFAULT.p4info))
    defaults = replay.read(p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(is_default_action=True)))
    assert len(defaults) == len(names.p4info.tables)
    cells = replay.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()))
    assert len(cells) == sum(c.size for c in names.p4info.counters)


def test_packet_out_to_a_port(target: Target, replay: Client) -> None:
    if target.dataplane is None:
        pytest.skip("frames leaving data ports are captured in-process only")
    target.sent.clear()
    frame = b"\x02" * 6 + b"\x04" * 6 + b"\x88\x88" + bytes(46)
    replay.packet_out(frame, egress_port=b"\x01")
    deadline = time.monotonic() + 5
    while not target.sent and time.monotonic() < deadline:
        time.sleep(0.02)
    assert target.sent == [(1, frame)]
