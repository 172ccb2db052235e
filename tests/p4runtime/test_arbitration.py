"""Client arbitration over StreamChannel, and who may write."""

from __future__ import annotations

import time
from collections.abc import Callable

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from tests.p4runtime.p4rt_client import Client, Names, Stream, exact, table_entity
from tests.p4runtime.targets import Target

Update = p4runtime_pb2.Update


def election(update: p4runtime_pb2.MasterArbitrationUpdate) -> int:
    return (update.election_id.high << 64) | update.election_id.low


def l2_entity(names: Names, mac: bytes) -> p4runtime_pb2.Entity:
    return table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(mac)},
        names.act("set_port", port=b"\x02")))


def rpc_code(fn: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        fn()
    return info.value.code()


def eventually(fn: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.05)
    return fn()


def test_capabilities_reports_pis_api_version(target: Target) -> None:
    c = Client(target.address)
    try:
        response = c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
        assert response.p4runtime_api_version == "1.3.0"
    finally:
        c.close()


def test_primary_then_backup_then_takeover(target: Target, election_base: int) -> None:
    a = Client(target.address, target.device_id, election_base + 2)
    b = Client(target.address, target.device_id, election_base + 1)
    c = Client(target.address, target.device_id, election_base + 3)
    try:
        first = a.arbitrate()
        assert first.status.code == code_pb2.OK
        assert first.status.message == "Is primary"
        assert first.device_id == target.device_id
        assert election(first) == election_base + 2

        second = b.arbitrate()
        assert second.status.code == code_pb2.ALREADY_EXISTS
        assert second.status.message == "Is backup"
        assert election(second) == election_base + 2  # the primary's id

        third = c.arbitrate()  # higher: takes over, and everyone hears of it
        assert third.status.code == code_pb2.OK
        assert a.stream is not None and b.stream is not None
        for old in (a.stream.next("arbitration"), b.stream.next("arbitration")):
            assert old.arbitration.status.code == code_pb2.ALREADY_EXISTS
            assert election(old.arbitration) == election_base + 3
    finally:
        for client in (a, b, c):
            client.close()


def test_backup_writes_are_denied_and_reads_allowed(
    target: Target, client: Client, names: Names, election_base: int
) -> None:
    backup = Client(target.address, target.device_id, election_base + 1)
    try:
        assert backup.arbitrate().status.code == code_pb2.ALREADY_EXISTS
        entity = l2_entity(names, b"\x00\x00\x00\x00\x00\x01")
        assert rpc_code(lambda: backup.insert(entity)) == grpc.StatusCode.PERMISSION_DENIED
        assert rpc_code(backup.set_pipeline) == grpc.StatusCode.PERMISSION_DENIED
        client.insert(entity)
        assert len(backup.read(entity)) == 1
        no_id = Client(target.address, target.device_id, election_id=None)
        try:
            assert rpc_code(lambda: no_id.insert(entity)) == grpc.StatusCode.PERMISSION_DENIED
        finally:
            no_id.close()
    finally:
        backup.close()


def test_backup_becomes_primary_when_primary_leaves(
    target: Target, names: Names, election_base: int
) -> None:
    primary = Client(target.address, target.device_id, election_base + 2)
    backup = Client(target.address, target.device_id, election_base + 1)
    try:
        primary.arbitrate()
        primary.set_pipeline()
        assert backup.arbitrate().status.code == code_pb2.ALREADY_EXISTS
        primary.close()
        assert backup.stream is not None
        update = backup.stream.next("arbitration").arbitration
        assert update.status.code == code_pb2.OK
        assert election(update) == election_base + 1
        backup.insert(l2_entity(names, b"\x00\x00\x00\x00\x00\x02"))
    finally:
        backup.close()


def test_raising_own_election_id_keeps_primary(target: Target, election_base: int) -> None:
    a = Client(target.address, target.device_id, election_base + 1)
    try:
        a.arbitrate()
        again = a.arbitrate(election_base + 5)
        assert again.status.code == code_pb2.OK
        assert election(again) == election_base + 5
    finally:
        a.close()


def test_duplicate_election_id_ends_the_stream(target: Target, election_base: int) -> None:
    a = Client(target.address, target.device_id, election_base + 1)
    b = Client(target.address, target.device_id, election_base + 1)
    try:
        a.arbitrate()
        b.stream = Stream(b.stub)
        b.stream.arbitrate(target.device_id, election_base + 1)
        b.stream.wait_closed()
        assert b.stream.error is not None
        assert b.stream.error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert b.stream.error.details() == "Election id already exists"
    finally:
        a.close()
        b.close()


def test_changing_device_id_on_a_stream_is_refused(target: Target, election_base: int) -> None:
    a = Client(target.address, target.device_id, election_base + 1)
    try:
        a.arbitrate()
        assert a.stream is not None
        a.stream.arbitrate(target.device_id + 7, election_base + 1)
        a.stream.wait_closed()
        assert a.stream.error is not None
        assert a.stream.error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert a.stream.error.details() == "Invalid device id"
    finally:
        a.close()


def test_other_device_ids(target: Target, client: Client, names: Names,
                          election_base: int) -> None:
    """PI keeps arbitration per device id; only the switch's own id has a pipeline."""
    other = target.device_id + 1
    stranger = Client(target.address, other, election_base + 1)
    try:
        entity = l2_entity(names, b"\x00\x00\x00\x00\x00\x03")
        # A stream for another device id is accepted (it is primary there)...
        assert stranger.arbitrate().status.code == code_pb2.OK
        # ...but that device has no pipeline.
        assert rpc_code(lambda: stranger.insert(entity)) == grpc.StatusCode.FAILED_PRECONDITION
        assert rpc_code(lambda: stranger.read(entity)) == grpc.StatusCode.FAILED_PRECONDITION
        assert rpc_code(stranger.get_pipeline) == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.RpcError) as info:
            stranger.set_pipeline()
        assert info.value.code() == grpc.StatusCode.UNKNOWN
        assert info.value.details().startswith("Error when trying to assign device")
        # Having tried, the device exists: an empty config is returned.
        assert stranger.get_pipeline() == p4runtime_pb2.ForwardingPipelineConfig()
    finally:
        stranger.close()


def test_no_stream_means_no_election_id_needed(target: Target, names: Names) -> None:
    """With no stream open, PI accepts writes without election id and refuses others."""
    anonymous = Client(target.address, target.device_id, election_id=None)
    with_id = Client(target.address, target.device_id, election_id=3)
    try:
        entity = l2_entity(names, b"\x00\x00\x00\x00\x00\x04")

        def write_ok() -> bool:
            try:
                anonymous.set_pipeline()
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.PERMISSION_DENIED  # streams still closing
                return False
            return True

        assert eventually(write_ok)
        anonymous.insert(entity)
        assert rpc_code(lambda: with_id.delete(entity)) == grpc.StatusCode.PERMISSION_DENIED
        anonymous.delete(entity)
    finally:
        anonymous.close()
        with_id.close()
