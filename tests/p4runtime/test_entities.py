"""Entities the test program has none of, and request-level refusals, answered as PI does."""

from __future__ import annotations

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from tests.p4runtime.p4rt_client import Client, Names, exact, table_entity, uint128, write_errors

Update = p4runtime_pb2.Update
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def read_error(client: Client, entity: p4runtime_pb2.Entity) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        client.read(entity)
    return info.value.code(), info.value.details()


def write_error(client: Client, update_type: int,
                entity: p4runtime_pb2.Entity) -> tuple[int, str]:
    with pytest.raises(grpc.RpcError) as info:
        client.write((update_type, entity))
    [error] = write_errors(info.value)
    return error.canonical_code, error.message


def test_wildcard_reads_of_kinds_the_program_lacks_are_empty(client: Client) -> None:
    assert client.read(p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry())) == []
    assert client.read(p4runtime_pb2.Entity(
        action_profile_member=p4runtime_pb2.ActionProfileMember())) == []
    assert client.read(p4runtime_pb2.Entity(
        action_profile_group=p4runtime_pb2.ActionProfileGroup())) == []


def test_unknown_ids_of_missing_kinds(client: Client, names: Names) -> None:
    meter = p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry(
        meter_id=names.counter_id("port_counter"), index=p4runtime_pb2.Index(index=0)))
    assert read_error(client, meter) == (grpc.StatusCode.INVALID_ARGUMENT, "Invalid P4 id")
    assert write_error(client, Update.MODIFY, meter) == (
        code_pb2.INVALID_ARGUMENT, "Invalid P4 id")
    direct_meter = p4runtime_pb2.Entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry(
        table_entry=names.entry("acl", priority=1)))
    assert read_error(client, direct_meter) == (
        grpc.StatusCode.INVALID_ARGUMENT, "Table has no direct meters")
    digest = p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry())
    assert read_error(client, digest) == (
        grpc.StatusCode.UNIMPLEMENTED, "digest_id must be set when reading DigestEntry")


def test_value_sets_and_empty_entities(client: Client) -> None:
    value_set = p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry())
    assert read_error(client, value_set) == (
        grpc.StatusCode.UNIMPLEMENTED, "ValueSet reads are not supported yet")
    assert write_error(client, Update.MODIFY, value_set) == (
        code_pb2.UNIMPLEMENTED, "ValueSet writes are not supported yet")
    assert read_error(client, p4runtime_pb2.Entity()) == (
        grpc.StatusCode.UNKNOWN, "Incorrect entity type")
    assert write_error(client, Update.INSERT, p4runtime_pb2.Entity()) == (
        code_pb2.UNKNOWN, "Incorrect entity type")


def test_atomic_writes_are_unimplemented(client: Client, names: Names) -> None:
    request = p4runtime_pb2.WriteRequest(
        device_id=client.device_id, election_id=uint128(client.election_id or 0),
        atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    request.updates.add(type=Update.INSERT, entity=table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(b"\x01")},
        names.act("set_port", port=b"\x01"))))
    with pytest.raises(grpc.RpcError) as info:
        client.stub.Write(request)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert info.value.details() == "Support for atomic write modes has not been implemented yet"


def test_bad_response_type(client: Client) -> None:
    with pytest.raises(grpc.RpcError) as info:
        client.get_pipeline(response_type=9)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert client.get_pipeline(Get.COOKIE_ONLY) is not None
