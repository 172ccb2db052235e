"""PacketOut into the switch and PacketIn out of it, over StreamChannel."""

from __future__ import annotations

import queue
import time

import pytest

from tests.p4runtime.p4rt_client import Client, Names
from tests.p4runtime.targets import Target

PUNT = b"\x88\xb5"
DST = b"\x00\x00\x00\x00\x00\x01"
SRC = b"\x02\x00\x00\x00\x0f\xff"


def metadata(names: Names, packet) -> dict[str, bytes]:
    by_id = {m.id: m.name for m in next(
        c for c in names.p4info.controller_packet_metadata
        if c.preamble.name == "packet_in").metadata}
    return {by_id[m.metadata_id]: m.value for m in packet.metadata}


def test_packet_out_to_a_port_leaves_without_header(target: Target, client: Client) -> None:
    if target.dataplane is None:
        pytest.skip("frames leaving data ports are captured in-process only")
    target.sent.clear()
    frame = DST + SRC + b"\x88\x88" + bytes(46)
    client.packet_out(frame, egress_port=b"\x02")
    deadline = time.monotonic() + 5
    while not target.sent and time.monotonic() < deadline:
        time.sleep(0.02)
    assert target.sent == [(2, frame)]


def test_packet_out_through_pipeline_comes_back_as_packet_in(
    client: Client, names: Names
) -> None:
    frame = DST + SRC + PUNT + bytes(46)
    client.packet_out(frame, egress_port=b"\x00", flags=b"\x05", tag=b"\x0a\xbc")
    assert client.stream is not None
    packet = client.stream.next("packet").packet
    assert metadata(names, packet) == {
        "ingress_port": b"\xff", "reason": b"\x05", "_pad": b"\x00"}
    # The pipeline wrote the 12-bit tag into the low bits of the source MAC.
    assert packet.payload == DST + b"\x02\x00\x00\x00\x0a\xbc" + PUNT + bytes(46)


def test_punted_frames_reach_the_primary_only(
    target: Target, client: Client, names: Names, election_base: int
) -> None:
    backup = Client(target.address, target.device_id, election_base + 1)
    try:
        backup.arbitrate()
        frame = DST + SRC + PUNT + bytes(46)
        target.inject(3, frame)
        assert client.stream is not None and backup.stream is not None
        packet = client.stream.next("packet").packet
        assert metadata(names, packet)["ingress_port"] == b"\x03"
        assert metadata(names, packet)["reason"] == b"\x01"
        assert packet.payload == frame
        with pytest.raises(queue.Empty):
            backup.stream.next("packet", timeout=0.3)
    finally:
        backup.close()


def test_backup_packet_outs_are_ignored(
    target: Target, client: Client, election_base: int
) -> None:
    backup = Client(target.address, target.device_id, election_base + 1)
    try:
        backup.arbitrate()
        backup.packet_out(DST + SRC + PUNT + bytes(46), egress_port=b"\x00")
        assert client.stream is not None
        with pytest.raises(queue.Empty):
            client.stream.next("packet", timeout=0.5)
    finally:
        backup.close()


def test_bad_packet_out_is_dropped(client: Client) -> None:
    client.packet_out(DST + SRC + PUNT + bytes(46), egress_port=b"\x00", flags=b"\x08")
    assert client.stream is not None
    with pytest.raises(queue.Empty):
        client.stream.next("packet", timeout=0.5)
