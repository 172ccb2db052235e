"""Multicast groups and clone sessions (PacketReplicationEngineEntry)."""

from __future__ import annotations

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from tests.p4runtime.p4rt_client import Client, Names, exact, table_entity, write_errors
from tests.p4runtime.targets import Target

Update = p4runtime_pb2.Update
MAC = b"\x00\x00\x00\x00\x00\x05"


def group(group_id: int, *replicas: tuple[int, int]) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    mc = entity.packet_replication_engine_entry.multicast_group_entry
    mc.multicast_group_id = group_id
    for port, instance in replicas:
        mc.replicas.add(egress_port=port, instance=instance)
    return entity


def session(session_id: int, *replicas: tuple[int, int], length: int = 0,
            cos: int = 0) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    cs = entity.packet_replication_engine_entry.clone_session_entry
    cs.session_id = session_id
    cs.packet_length_bytes = length
    cs.class_of_service = cos
    for port, instance in replicas:
        cs.replicas.add(egress_port=port, instance=instance)
    return entity


def one_error(client: Client, update_type: int, entity: p4runtime_pb2.Entity) -> tuple[int, str]:
    with pytest.raises(grpc.RpcError) as info:
        client.write((update_type, entity))
    [error] = write_errors(info.value)
    return error.canonical_code, error.message


def replicas_of(entity: p4runtime_pb2.Entity) -> list[tuple[int, int]]:
    pre = entity.packet_replication_engine_entry
    kind = pre.WhichOneof("type")
    return [(r.egress_port, r.instance) for r in getattr(pre, kind).replicas]


def frame() -> bytes:
    return MAC + b"\x00" * 6 + b"\x88\x88" + bytes(50)


def test_multicast_group_crud(client: Client) -> None:
    client.insert(group(1, (3, 2), (1, 1), (2, 1)))
    [read] = client.read(group(1))
    assert replicas_of(read) == [(1, 1), (2, 1), (3, 2)]  # by instance, then port
    client.modify(group(1, (4, 0)))
    [read] = client.read(group(1))
    assert replicas_of(read) == [(4, 0)]
    client.insert(group(7))
    assert sorted(e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id
                  for e in client.read(group(0))) == [1, 7]
    client.delete(group(1))
    with pytest.raises(grpc.RpcError) as info:
        client.read(group(1))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_multicast_group_errors(client: Client) -> None:
    client.insert(group(2, (1, 0)))
    assert one_error(client, Update.INSERT, group(2)) == (
        code_pb2.ALREADY_EXISTS, "Multicast group already exists")
    assert one_error(client, Update.MODIFY, group(3)) == (
        code_pb2.NOT_FOUND, "Multicast group does not exist")
    assert one_error(client, Update.DELETE, group(3)) == (
        code_pb2.NOT_FOUND, "Multicast group does not exist")
    assert one_error(client, Update.INSERT, group(0)) == (
        code_pb2.INVALID_ARGUMENT, "0 is not a valid group id")
    assert one_error(client, Update.INSERT, group(40000)) == (
        code_pb2.OUT_OF_RANGE, "Group id value is too high")
    assert one_error(client, Update.INSERT, group(4, (1, 0), (1, 0))) == (
        code_pb2.INVALID_ARGUMENT, "Duplicate replica in multicast group")
    no_port = group(5)
    no_port.packet_replication_engine_entry.multicast_group_entry.replicas.add(instance=1)
    assert one_error(client, Update.INSERT, no_port) == (
        code_pb2.INVALID_ARGUMENT, "Missing port in multicast group replica")
    with pytest.raises(grpc.RpcError) as info:
        client.read(group(40000))
    assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE


def test_replica_port_bytes_read_back_as_written(client: Client) -> None:
    entity = group(6)
    entity.packet_replication_engine_entry.multicast_group_entry.replicas.add(
        port=b"\x00\x03", instance=1)
    client.insert(entity)
    [read] = client.read(group(6))
    [replica] = read.packet_replication_engine_entry.multicast_group_entry.replicas
    assert replica.WhichOneof("port_kind") == "port" and replica.port == b"\x00\x03"


def test_clone_session_crud_and_errors(client: Client) -> None:
    client.insert(session(10, (2, 1)))
    [read] = client.read(session(10))
    cs = read.packet_replication_engine_entry.clone_session_entry
    assert (cs.session_id, cs.packet_length_bytes, replicas_of(read)) == (10, 0, [(2, 1)])
    client.modify(session(10, (3, 0), (1, 0)))
    [read] = client.read(session(10))
    assert replicas_of(read) == [(1, 0), (3, 0)]
    client.insert(session(11, (1, 0)))
    assert len(client.read(session(0))) == 2
    assert one_error(client, Update.INSERT, session(10, (1, 0))) == (
        code_pb2.ALREADY_EXISTS, "Clone session id already exists")
    assert one_error(client, Update.MODIFY, session(12, (1, 0))) == (
        code_pb2.NOT_FOUND, "Clone session id does not exist")
    assert one_error(client, Update.INSERT, session(0, (1, 0))) == (
        code_pb2.INVALID_ARGUMENT, "0 is not a valid session id")
    assert one_error(client, Update.INSERT, session(40000, (1, 0))) == (
        code_pb2.INVALID_ARGUMENT, "Clone session id out-of-range")
    assert one_error(client, Update.INSERT, session(13, (1, 0), cos=1)) == (
        code_pb2.UNIMPLEMENTED, "COS for clone sessions not supported yet")
    # bmv2 does not truncate clones: a session with a packet length is refused.
    code, message = one_error(client, Update.INSERT, session(13, (1, 0), length=128))
    assert code == code_pb2.UNKNOWN
    assert message.startswith("Error when creating clone session in target")
    # (PI has already changed the replicas when bmv2 refuses; the Python switch has not.)
    assert one_error(client, Update.MODIFY, session(10, (1, 0), length=64))[0] == code_pb2.UNKNOWN
    client.delete(session(10))
    assert one_error(client, Update.DELETE, session(10)) == (
        code_pb2.NOT_FOUND, "Clone session id does not exist")
    client.insert(session(14))  # no replicas: a session that copies nowhere
    client.modify(session(14, (1, 0)))
    client.modify(session(14))
    assert replicas_of(client.read(session(14))[0]) == []
    client.delete(session(14))


def test_multicast_replicates(target: Target, client: Client, names: Names) -> None:
    client.insert(group(9, (1, 1), (2, 1), (3, 2)))
    client.insert(table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(MAC)},
        names.act("set_mcast", group=b"\x09"))))
    out = target.inject(4, frame())
    assert sorted(port for port, _ in out) == [1, 2, 3]


def test_clone_session_copies(target: Target, client: Client, names: Names) -> None:
    client.insert(session(20, (3, 0)))
    client.insert(table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(MAC)},
        names.act("clone_and_forward", session=b"\x14", port=b"\x01"))))
    out = target.inject(4, frame())
    assert sorted(port for port, _ in out) == [1, 3]
