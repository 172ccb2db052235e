"""SetForwardingPipelineConfig and GetForwardingPipelineConfig."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import p4runtime_pb2
from tests.p4runtime.p4rt_client import (
    TEST_JSON,
    Client,
    Names,
    exact,
    load_p4info,
    pipeline_config,
    table_entity,
)
from tests.p4runtime.targets import Target, start_bmv2_target, start_python_target

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
Update = p4runtime_pb2.Update


@pytest.fixture(params=["python", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def fresh(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A switch that never had a pipeline pushed."""
    if request.param == "python":
        yield from start_python_target()
    else:
        yield from start_bmv2_target(tmp_path_factory)


def rpc_error(fn, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args)
    return info.value


def l2(names: Names) -> p4runtime_pb2.Entity:
    return table_entity(names.entry("l2_exact", {"hdr.ethernet.dst_addr": exact(b"\x0a")},
                                    names.act("set_port", port=b"\x01")))


def test_everything_waits_for_a_pipeline(fresh: Target, names: Names) -> None:
    c = Client(fresh.address, fresh.device_id, election_id=1)
    try:
        c.arbitrate()
        for call in (lambda: c.insert(l2(names)), lambda: c.read(l2(names)), c.get_pipeline):
            error = rpc_error(call)
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert error.details() == "No forwarding pipeline config set for this device"
    finally:
        c.close()


def test_verify_only_checks(fresh: Target) -> None:
    c = Client(fresh.address, fresh.device_id, election_id=1)
    try:
        c.arbitrate()
        c.set_pipeline(action=Set.VERIFY)
        # PI made a device manager but set no config: an empty config.
        assert c.get_pipeline() == p4runtime_pb2.ForwardingPipelineConfig()
    finally:
        c.close()


def test_push_and_get_every_response_type(client: Client) -> None:
    config = pipeline_config(cookie=0xC0FFEE)
    client.set_pipeline(config)
    everything = client.get_pipeline(Get.ALL)
    assert everything.p4info == load_p4info()
    assert everything.p4_device_config == TEST_JSON.read_bytes()
    assert everything.cookie.cookie == 0xC0FFEE
    cookie = client.get_pipeline(Get.COOKIE_ONLY)
    assert not cookie.HasField("p4info") and cookie.p4_device_config == b""
    assert cookie.cookie.cookie == 0xC0FFEE
    p4info = client.get_pipeline(Get.P4INFO_AND_COOKIE)
    assert p4info.p4info == load_p4info() and p4info.p4_device_config == b""
    device = client.get_pipeline(Get.DEVICE_CONFIG_AND_COOKIE)
    assert not device.HasField("p4info") and device.p4_device_config == TEST_JSON.read_bytes()
    client.set_pipeline(pipeline_config())  # no cookie now
    assert not client.get_pipeline(Get.COOKIE_ONLY).HasField("cookie")


def test_verify_keeps_the_running_pipeline(client: Client) -> None:
    client.set_pipeline(pipeline_config(cookie=1))
    client.set_pipeline(pipeline_config(cookie=2), action=Set.VERIFY)
    assert client.get_pipeline(Get.COOKIE_ONLY).cookie.cookie == 1


def test_save_then_commit(client: Client, names: Names) -> None:
    client.set_pipeline(pipeline_config(cookie=1))
    client.set_pipeline(pipeline_config(cookie=2), action=Set.VERIFY_AND_SAVE)
    assert client.get_pipeline(Get.COOKIE_ONLY).cookie.cookie == 2
    client.insert(l2(names))  # goes to the saved pipeline
    client.set_pipeline(p4runtime_pb2.ForwardingPipelineConfig(), action=Set.COMMIT)
    assert len(client.read(l2(names))) == 1


def test_commit_without_save_fails(client: Client) -> None:
    error = rpc_error(client.set_pipeline, p4runtime_pb2.ForwardingPipelineConfig(), Set.COMMIT)
    assert error.code() == grpc.StatusCode.UNKNOWN
    assert error.details().startswith("Error in second phase of device update")


def test_unspecified_action(client: Client) -> None:
    error = rpc_error(client.set_pipeline, pipeline_config(), Set.UNSPECIFIED)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "Invalid SetForwardingPipeline action"


@pytest.mark.parametrize("device_config", [b"{not json", b"[]"])
def test_bad_device_config(fresh: Target, device_config: bytes) -> None:
    c = Client(fresh.address, fresh.device_id, election_id=1)
    try:
        c.arbitrate()
        c.set_pipeline()
        broken = pipeline_config()
        broken.p4_device_config = device_config
        error = rpc_error(c.set_pipeline, broken)
        assert error.code() == grpc.StatusCode.UNKNOWN
        if fresh.kind == "bmv2":
            # bmv2 throws on malformed JSON ("Unexpected error in RPC handling") and
            # then refuses every later config: only the Python switch goes on.
            return
        assert error.details().startswith("Error in first phase of device update")
        c.set_pipeline()
    finally:
        c.close()


def test_new_pipeline_starts_empty(client: Client, names: Names) -> None:
    client.insert(l2(names))
    client.set_pipeline()
    assert client.read(l2(names)) == []


def test_reconcile_keeps_forwarding_state(target: Target, client: Client, names: Names) -> None:
    client.insert(l2(names))
    group = p4runtime_pb2.Entity()
    mc = group.packet_replication_engine_entry.multicast_group_entry
    mc.multicast_group_id = 5
    mc.replicas.add(egress_port=1, instance=1)
    client.insert(group)
    if target.kind == "bmv2":
        # PI replays the counters it saved as INSERTs, which it refuses itself.
        error = rpc_error(client.set_pipeline, pipeline_config(cookie=9),
                          Set.RECONCILE_AND_COMMIT)
        assert error.code() == grpc.StatusCode.UNKNOWN
        assert error.details() == "Error when reconciling config"
        return
    client.set_pipeline(pipeline_config(cookie=9), action=Set.RECONCILE_AND_COMMIT)
    assert client.get_pipeline(Get.COOKIE_ONLY).cookie.cookie == 9
    assert len(client.read(l2(names))) == 1
    assert len(client.read(group)) == 1


def test_json_given_at_start_runs_but_p4runtime_needs_a_push(python_target: Target) -> None:
    """As simple_switch_grpc: a JSON on the command line has no P4Info for P4Runtime."""
    dataplane = python_target.dataplane
    assert dataplane is not None
    dataplane.run(dataplane.build(json.loads(TEST_JSON.read_text())))
    c = Client(python_target.address, python_target.device_id, election_id=1)
    try:
        c.arbitrate()
        assert rpc_error(c.get_pipeline).code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        c.close()
