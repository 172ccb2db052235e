"""Indirect counters over P4Runtime, and registers (which bmv2's P4Runtime refuses)."""

from __future__ import annotations

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from tests.p4runtime.p4rt_client import Client, Names, write_errors
from tests.p4runtime.targets import Target

Update = p4runtime_pb2.Update
PUNT = b"\x88\xb5"


def counter(names: Names, name: str, index: int | None = None, packets: int = 0,
            octets: int = 0) -> p4runtime_pb2.Entity:
    entry = p4runtime_pb2.CounterEntry(counter_id=names.counter_id(name))
    if index is not None:
        entry.index.index = index
    entry.data.packet_count = packets
    entry.data.byte_count = octets
    return p4runtime_pb2.Entity(counter_entry=entry)


def data(entity: p4runtime_pb2.Entity) -> tuple[int, int]:
    d = entity.counter_entry.data
    return d.packet_count, d.byte_count


def rpc_error(fn, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args)
    return info.value


def one_error(client: Client, update_type: int, entity: p4runtime_pb2.Entity) -> tuple[int, str]:
    [error] = write_errors(rpc_error(client.write, (update_type, entity)))
    return error.canonical_code, error.message


def test_counts_injected_traffic(target: Target, client: Client, names: Names) -> None:
    frame = b"\xff" * 6 + b"\x00" * 6 + b"\x88\x88" + bytes(46)
    for _ in range(3):
        target.inject(7, frame)
    [read] = client.read(counter(names, "port_counter", 7))
    assert data(read) == (3, 3 * len(frame))
    assert read.counter_entry.index.index == 7


def test_counts_packet_outs_through_the_pipeline(client: Client, names: Names) -> None:
    """Runs on bmv2 too: a PacketOut to port 0 goes through ingress from the CPU port."""
    client.write((Update.DELETE, counter(names, "port_counter", 255)))
    frame = b"\x00" * 12 + PUNT + bytes(46)
    client.packet_out(frame, egress_port=b"\x00")
    assert client.stream is not None
    client.stream.next("packet")
    [read] = client.read(counter(names, "port_counter", 255))
    assert read.counter_entry.data.packet_count == 1


def test_read_all_indices_and_all_counters(client: Client, names: Names) -> None:
    cells = client.read(counter(names, "port_counter"))
    assert [c.counter_entry.index.index for c in cells] == list(range(512))
    everything = client.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()))
    assert len(everything) == 512 + 16


def test_write_modify_and_delete(client: Client, names: Names) -> None:
    client.modify(counter(names, "port_counter", 3, packets=10, octets=1000))
    [read] = client.read(counter(names, "port_counter", 3))
    assert data(read) == (10, 1000)
    client.delete(counter(names, "port_counter", 3))
    [read] = client.read(counter(names, "port_counter", 3))
    assert data(read) == (0, 0)


def test_packets_only_counter_keeps_bytes(client: Client, names: Names) -> None:
    client.modify(counter(names, "drop_counter", 0, packets=4, octets=99))
    [read] = client.read(counter(names, "drop_counter", 0))
    assert read.counter_entry.data.packet_count == 4


def test_counter_errors(client: Client, names: Names) -> None:
    assert one_error(client, Update.INSERT, counter(names, "port_counter", 1)) == (
        code_pb2.INVALID_ARGUMENT, "INSERT update type not supported for counters")
    assert one_error(client, Update.MODIFY, counter(names, "port_counter")) == (
        code_pb2.UNIMPLEMENTED, "Wildcard write is not supported for indirect counters yet")
    assert one_error(client, Update.MODIFY, counter(names, "port_counter", -1)) == (
        code_pb2.INVALID_ARGUMENT, "A negative number is not a valid index value")
    direct_id = names.p4info.direct_counters[0].preamble.id
    as_indirect = p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(
        counter_id=direct_id))
    error = rpc_error(client.read, as_indirect)
    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "Invalid P4 id")
    error = rpc_error(client.read, counter(names, "port_counter", 512))
    assert error.code() == grpc.StatusCode.UNKNOWN
    assert error.details().startswith("Error when reading counter from target")


def test_registers_are_unimplemented_as_in_bmv2(client: Client, names: Names) -> None:
    entity = p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
        register_id=names.register_id("scratch"), index=p4runtime_pb2.Index(index=0)))
    error = rpc_error(client.read, entity)
    assert (error.code(), error.details()) == (
        grpc.StatusCode.UNIMPLEMENTED, "Register reads are not supported yet")
    assert one_error(client, Update.MODIFY, entity) == (
        code_pb2.UNIMPLEMENTED, "Register writes are not supported yet")
