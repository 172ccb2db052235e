"""Table entries over P4Runtime: insert / modify / delete / read, defaults, errors."""

from __future__ import annotations

import grpc
import pytest

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from tests.p4runtime.p4rt_client import (
    Client,
    Names,
    exact,
    lpm,
    optional,
    range_,
    table_entity,
    ternary,
    write_errors,
)
from tests.p4runtime.targets import Target

Update = p4runtime_pb2.Update
MAC1 = b"\x00\x00\x00\x00\x00\x01"
MAC2 = b"\x02\x00\x00\x00\x00\x02"


def l2(names: Names, mac: bytes = MAC1, port: bytes = b"\x02", **kw) -> p4runtime_pb2.Entity:
    return table_entity(names.entry("l2_exact", {"hdr.ethernet.dst_addr": exact(mac)},
                                    names.act("set_port", port=port), **kw))


def acl(names: Names, priority: int, action: str = "acl_deny", **fields) -> p4runtime_pb2.Entity:
    return table_entity(names.entry("acl", fields, names.act(action), priority=priority))


def write_error(client: Client, *updates) -> list[tuple[int, str]]:
    """(canonical_code, message) of each update of a Write that must fail."""
    with pytest.raises(grpc.RpcError) as info:
        client.write(*updates)
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    return [(e.canonical_code, e.message) for e in write_errors(info.value)]


def one_error(client: Client, update_type: int, entity: p4runtime_pb2.Entity) -> tuple[int, str]:
    [error] = write_error(client, (update_type, entity))
    return error


def frame(dst: bytes, ether_type: bytes = b"\x88\x88", src: bytes = b"\x00" * 6) -> bytes:
    return dst + src + ether_type + bytes(50)


def test_insert_read_modify_delete(client: Client, names: Names) -> None:
    entity = l2(names)
    entity.table_entry.metadata = b"cookie"
    client.insert(entity)
    [read] = client.read(table_entity(names.entry("l2_exact")))
    assert read.table_entry.match[0].exact.value == b"\x01"  # canonical
    assert read.table_entry.action.action == names.act("set_port", port=b"\x02")
    assert read.table_entry.metadata == b"cookie"
    client.modify(l2(names, port=b"\x00\x03"))  # non-canonical input is fine
    [read] = client.read(l2(names))
    assert read.table_entry.action.action.params[0].value == b"\x03"
    assert read.table_entry.metadata == b""
    client.delete(l2(names))
    assert client.read(table_entity(names.entry("l2_exact"))) == []


def test_duplicate_and_missing_entries(client: Client, names: Names) -> None:
    client.insert(l2(names))
    assert one_error(client, Update.INSERT, l2(names)) == (
        code_pb2.ALREADY_EXISTS, "Match entry exists, use MODIFY if you wish to change action")
    assert one_error(client, Update.MODIFY, l2(names, MAC2)) == (
        code_pb2.NOT_FOUND, "Cannot find match entry")
    assert one_error(client, Update.DELETE, l2(names, MAC2)) == (
        code_pb2.NOT_FOUND, "Cannot find match entry")


def test_batch_reports_each_update(client: Client, names: Names) -> None:
    errors = write_error(client, (Update.INSERT, l2(names)), (Update.INSERT, l2(names)),
                         (Update.INSERT, l2(names, MAC2)), (Update.DELETE, l2(names, b"\x09")))
    assert [code for code, _ in errors] == [
        code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OK, code_pb2.NOT_FOUND]
    assert len(client.read(table_entity(names.entry("l2_exact")))) == 2


def test_bad_ids_and_actions(client: Client, names: Names) -> None:
    bad_table = l2(names)
    bad_table.table_entry.table_id = names.action_id("set_port")  # an action's id
    assert one_error(client, Update.INSERT, bad_table) == (
        code_pb2.INVALID_ARGUMENT, "Invalid P4 id")
    not_in_table = table_entity(names.entry("l2_exact", {"hdr.ethernet.dst_addr": exact(MAC1)},
                                            names.act("acl_permit")))
    assert one_error(client, Update.INSERT, not_in_table) == (
        code_pb2.INVALID_ARGUMENT, "Invalid action for table")
    missing_param = table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(MAC1)}, names.act("set_port")))
    assert one_error(client, Update.INSERT, missing_param) == (
        code_pb2.INVALID_ARGUMENT, "Unexpected number of action parameters")
    assert one_error(client, Update.INSERT, l2(names, port=b"\x02\x00")) == (
        code_pb2.INVALID_ARGUMENT, "Bytestring provided does not fit within 9 bits")
    default_only = table_entity(names.entry(
        "l2_exact", {"hdr.ethernet.dst_addr": exact(MAC1)}, names.act("miss", code=b"\x01")))
    assert one_error(client, Update.INSERT, default_only) == (
        code_pb2.PERMISSION_DENIED, "Cannot use DEFAULT_ONLY action in table entry")
    no_action = table_entity(names.entry("l2_exact", {"hdr.ethernet.dst_addr": exact(MAC1)}))
    assert one_error(client, Update.INSERT, no_action) == (
        code_pb2.INVALID_ARGUMENT, "'action' field must be set")
    assert one_error(client, Update.UNSPECIFIED, l2(names)) == (
        code_pb2.INVALID_ARGUMENT, "Update type is not set")


def test_default_entries(client: Client, names: Names) -> None:
    default = table_entity(names.entry("l2_exact", is_default=True))
    [read] = client.read(default)
    assert read.table_entry.is_default_action
    assert read.table_entry.action.action.action_id == names.action_id("NoAction")
    miss = table_entity(names.entry("l2_exact", action=names.act("miss", code=b"\x07"),
                                    is_default=True))
    client.modify(miss)
    [read] = client.read(default)
    assert read.table_entry.action.action == names.act("miss", code=b"\x07")
    client.modify(default)  # MODIFY without action: back to the program's default
    [read] = client.read(default)
    assert read.table_entry.action.action.action_id == names.action_id("NoAction")
    assert one_error(client, Update.INSERT, miss) == (
        code_pb2.INVALID_ARGUMENT, "Cannot use INSERT for default entry")
    assert one_error(client, Update.DELETE, default) == (
        code_pb2.INVALID_ARGUMENT, "Cannot use DELETE for default entry")
    table_only = table_entity(names.entry(
        "l2_exact", action=names.act("set_port_and_mac", port=b"\x01", mac=MAC1),
        is_default=True))
    assert one_error(client, Update.MODIFY, table_only) == (
        code_pb2.PERMISSION_DENIED, "Cannot use TABLE_ONLY action as default action")
    const = table_entity(names.entry("ipv4_lpm", action=names.act("set_port", port=b"\x01"),
                                     is_default=True))
    code, message = one_error(client, Update.MODIFY, const)
    assert code == code_pb2.PERMISSION_DENIED
    assert message.endswith("which has a const default action")
    [read] = client.read(table_entity(names.entry("ipv4_lpm", is_default=True)))
    assert read.table_entry.action.action.action_id == names.action_id("drop")


def test_wildcard_reads(client: Client, names: Names) -> None:
    client.insert(l2(names))
    client.insert(table_entity(names.entry(
        "ipv4_lpm", {"hdr.ipv4.dst_addr": lpm(b"\x0a\x00\x00\x00", 8)},
        names.act("set_port", port=b"\x01"))))
    every = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert {e.table_entry.table_id for e in every} == {
        names.table_id("l2_exact"), names.table_id("ipv4_lpm")}
    defaults = client.read(p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(is_default_action=True)))
    assert len(defaults) == len(names.p4info.tables)
    assert all(e.table_entry.is_default_action for e in defaults)
    assert client.read(l2(names, MAC2)) == []  # a key that is not there: nothing


def test_lpm_read_back(client: Client, names: Names) -> None:
    entity = table_entity(names.entry(
        "ipv4_lpm", {"hdr.ipv4.dst_addr": lpm(b"\x0a\x01\x00\x00", 16)},
        names.act("set_port", port=b"\x01")))
    client.insert(entity)
    [read] = client.read(table_entity(names.entry("ipv4_lpm")))
    assert read.table_entry.match[0].lpm.value == b"\x0a\x01\x00\x00"
    assert read.table_entry.match[0].lpm.prefix_len == 16


def test_ternary_range_optional_and_priorities(client: Client, names: Names) -> None:
    fields = {"hdr.ethernet.ether_type": ternary(b"\x08\x00", b"\xff\xff"),
              "hdr.ipv4.src_addr": range_(b"\x0a\x00\x00\x00", b"\x0a\x00\x00\xff"),
              "std.ingress_port": optional(b"\x01")}
    client.insert(acl(names, 10, **fields))
    client.insert(acl(names, 20, **fields))  # same key, other priority: another entry
    client.insert(acl(names, 5, "acl_permit"))  # every field omitted
    read = client.read(table_entity(names.entry("acl")))
    by_priority = {e.table_entry.priority: e.table_entry for e in read}
    assert sorted(by_priority) == [5, 10, 20]
    assert list(by_priority[5].match) == []
    kinds = [fm.WhichOneof("field_match_type") for fm in by_priority[10].match]
    assert kinds == ["ternary", "range", "optional"]
    assert by_priority[10].match[1].range.low == b"\x0a\x00\x00\x00"
    [one] = client.read(acl(names, 20, **fields))
    assert one.table_entry.priority == 20
    assert one_error(client, Update.INSERT, acl(names, 0, **fields)) == (
        code_pb2.INVALID_ARGUMENT, "Zero priority for ternary match")


def test_full_table(client: Client, names: Names) -> None:
    size = names.table("acl").size
    for priority in range(1, size + 1):
        client.insert(acl(names, priority))
    code, message = one_error(client, Update.INSERT, acl(names, size + 1))
    assert code == code_pb2.UNKNOWN
    assert message.startswith("Error when adding match entry to target")


def test_entries_forward_traffic(target: Target, client: Client, names: Names) -> None:
    # A miss leaves egress_spec at 0: out of port 0, as on bmv2.
    assert target.inject(1, frame(MAC1)) == [(0, frame(MAC1))]
    client.insert(l2(names, port=b"\x03"))
    [(port, out)] = target.inject(1, frame(MAC1))
    assert port == 3 and out == frame(MAC1)


def test_direct_counters(target: Target, client: Client, names: Names) -> None:
    entity = acl(names, 1, "acl_permit")
    entity.table_entry.counter_data.packet_count = 5
    entity.table_entry.counter_data.byte_count = 500
    client.insert(entity)
    direct = p4runtime_pb2.Entity(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(
        table_entry=entity.table_entry))
    [read] = client.read(direct)
    data = read.direct_counter_entry.data
    assert (data.packet_count, data.byte_count) == (5, 500)
    if target.dataplane is not None:
        client.insert(l2(names, port=b"\x02"))
        target.inject(1, frame(MAC1))
        [read] = client.read(direct)
        assert read.direct_counter_entry.data.packet_count == 6
    direct.direct_counter_entry.data.packet_count = 1
    direct.direct_counter_entry.data.byte_count = 2
    client.modify(direct)
    asked = p4runtime_pb2.Entity()
    asked.table_entry.CopyFrom(names.entry("acl"))
    asked.table_entry.counter_data.SetInParent()
    [read] = client.read(asked)
    assert read.table_entry.counter_data.packet_count == 1
    client.delete(direct)
    everything = p4runtime_pb2.Entity(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(
        table_entry=names.entry("acl")))
    [read] = client.read(everything)
    assert read.direct_counter_entry.data == p4runtime_pb2.CounterData()
    assert read.direct_counter_entry.table_entry.priority == 1
    no_counter = p4runtime_pb2.Entity(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(
        table_entry=names.entry("l2_exact")))
    with pytest.raises(grpc.RpcError) as info:
        client.read(no_counter)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "Table has no direct counters"


def test_read_stops_at_first_error(client: Client, names: Names) -> None:
    client.insert(l2(names))
    bad = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=1))
    request = p4runtime_pb2.ReadRequest(device_id=client.device_id,
                                        entities=[l2(names), bad])
    responses = client.stub.Read(request)
    first = next(responses)
    assert len(first.entities) == 1  # what was read before the error
    with pytest.raises(grpc.RpcError) as info:
        next(responses)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "Invalid P4 id"
