"""Unit tests of the P4Runtime conversions: bytestrings, controller headers, match keys."""

from __future__ import annotations

import pytest

from bmv2.pyswitch.p4runtime.p4info import P4InfoIndex, int_to_canonical, to_canonical, to_target
from bmv2.pyswitch.p4runtime.packet_io import PacketIo
from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import P4RuntimeError, WriteErrorReporter, invalid_argument
from bmv2.pyswitch.p4runtime.tables import match_fields_of, match_key
from tests.p4runtime.p4rt_client import Names, exact, load_p4info, lpm, optional, range_, ternary


@pytest.fixture(scope="module")
def index() -> P4InfoIndex:
    return P4InfoIndex.build(load_p4info())


def code_of(fn, *args) -> int:
    with pytest.raises(P4RuntimeError) as info:
        fn(*args)
    return info.value.code


# -- bytestrings (PI's common.cpp rules) ------------------------------------------


@pytest.mark.parametrize(
    ("value", "bits", "expected"),
    [
        (b"\x01", 9, b"\x00\x01"),  # short: left-padded
        (b"", 16, b"\x00\x00"),  # empty is zero, as PI takes it
        (b"\x00\x00\x01\xff", 9, b"\x01\xff"),  # leading zero bytes are allowed
        (b"\x0a\x00\x00\x01", 32, b"\x0a\x00\x00\x01"),
    ],
)
def test_to_target(value: bytes, bits: int, expected: bytes) -> None:
    assert to_target(value, bits) == expected


@pytest.mark.parametrize(("value", "bits"), [(b"\x02\x00", 9), (b"\x01\x00", 8), (b"\xff" * 7, 48)])
def test_to_target_rejects_values_wider_than_the_field(value: bytes, bits: int) -> None:
    assert code_of(to_target, value, bits) == code_pb2.INVALID_ARGUMENT


def test_canonical_form_strips_leading_zeros_but_keeps_one_byte() -> None:
    assert to_canonical(b"\x00\x00\x01\x02") == b"\x01\x02"
    assert to_canonical(b"\x00\x00") == b"\x00"
    assert int_to_canonical(0) == b"\x00"
    assert int_to_canonical(0x1FF) == b"\x01\xff"


# -- controller headers -----------------------------------------------------------


def _reference_pack(fields: list[tuple[int, int]]) -> bytes:
    """Bit-by-bit MSB-first packing of (value, width) pairs, zero-padded to bytes."""
    bits = "".join(format(value, f"0{width}b") for value, width in fields)
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def test_packet_out_header_packs_fields_msb_first(index: P4InfoIndex, names: Names) -> None:
    io = PacketIo.from_index(index)
    md = [
        p4runtime_pb2.PacketMetadata(metadata_id=names.metadata_id("packet_out", "egress_port"),
                                     value=b"\x01\x23"),
        p4runtime_pb2.PacketMetadata(metadata_id=names.metadata_id("packet_out", "tag"),
                                     value=b"\x0a\xbc"),
        p4runtime_pb2.PacketMetadata(metadata_id=names.metadata_id("packet_out", "flags"),
                                     value=b"\x05"),
    ]
    frame = io.frame_out(p4runtime_pb2.PacketOut(payload=b"payload", metadata=md))
    assert frame == _reference_pack([(0x123, 9), (5, 3), (0xABC, 12)]) + b"payload"
    assert io.packet_out is not None and io.packet_out.size == 3


def test_packet_out_missing_fields_are_zero_and_unknown_ids_refused(
    index: P4InfoIndex, names: Names
) -> None:
    io = PacketIo.from_index(index)
    assert io.frame_out(p4runtime_pb2.PacketOut(payload=b"x")) == b"\x00\x00\x00x"
    bad = p4runtime_pb2.PacketOut(payload=b"x")
    bad.metadata.add(metadata_id=99, value=b"\x01")
    assert code_of(io.frame_out, bad) == code_pb2.INVALID_ARGUMENT
    wide = p4runtime_pb2.PacketOut(payload=b"x")
    wide.metadata.add(metadata_id=names.metadata_id("packet_out", "flags"), value=b"\x08")
    assert code_of(io.frame_out, wide) == code_pb2.INVALID_ARGUMENT


def test_packet_in_header_is_decoded_into_canonical_metadata(
    index: P4InfoIndex, names: Names
) -> None:
    io = PacketIo.from_index(index)
    frame = _reference_pack([(0x1FE, 9), (6, 3), (0, 4)]) + b"rest"
    packet = io.packet_in_of(frame)
    assert packet is not None and packet.payload == b"rest"
    values = {m.metadata_id: m.value for m in packet.metadata}
    assert values == {
        names.metadata_id("packet_in", "ingress_port"): b"\x01\xfe",
        names.metadata_id("packet_in", "reason"): b"\x06",
        names.metadata_id("packet_in", "_pad"): b"\x00",
    }
    assert io.packet_in_of(b"\x01") is None  # shorter than the header: dropped


# -- match keys -------------------------------------------------------------------


def test_match_key_round_trip_is_canonical(index: P4InfoIndex, names: Names) -> None:
    acl = index.table(names.table_id("acl"))
    entry = names.entry("acl", {
        "hdr.ethernet.ether_type": ternary(b"\x00\x08\x00", b"\xff\x00"),
        "hdr.ipv4.src_addr": range_(b"\x0a\x00\x00\x00", b"\x0a\x00\x00\xff"),
        "std.ingress_port": optional(b"\x00\x03"),
    }, priority=10)
    key = match_key(acl, entry)
    back = names.entry("acl", priority=10)
    back.match.extend(match_fields_of(acl, key))
    assert [fm.ternary.value for fm in back.match if fm.HasField("ternary")] == [b"\x08\x00"]
    assert [fm.optional.value for fm in back.match if fm.HasField("optional")] == [b"\x03"]
    assert match_key(acl, back) == key


def test_omitted_fields_are_dont_care_and_read_back_omitted(
    index: P4InfoIndex, names: Names
) -> None:
    acl = index.table(names.table_id("acl"))
    key = match_key(acl, names.entry("acl", priority=1))
    assert match_fields_of(acl, key) == []


@pytest.mark.parametrize(
    ("table", "match", "priority", "message"),
    [
        ("l2_exact", {}, 0, "Missing non-ternary field in match key"),
        ("l2_exact", {"hdr.ethernet.dst_addr": lpm(b"\x01", 8)}, 0, "Invalid match type"),
        ("l2_exact", {"hdr.ethernet.dst_addr": exact(b"\x01" * 7)}, 0,
         "Bytestring provided does not fit within 48 bits"),
        ("l2_exact", {"hdr.ethernet.dst_addr": exact(b"\x01")}, 3,
         "Non-zero priority for non-ternary match"),
        ("ipv4_lpm", {"hdr.ipv4.dst_addr": lpm(b"\x0a\x00\x00\x01", 24)}, 0,
         "Invalid LPM value, incorrect number of trailing zeros"),
        ("ipv4_lpm", {"hdr.ipv4.dst_addr": lpm(b"\x0a\x00\x00\x00", 33)}, 0,
         "Prefix length cannot be > bitwidth"),
        ("ipv4_lpm", {"hdr.ipv4.dst_addr": lpm(b"\x0a\x00\x00\x00", 0)}, 0,
         "Invalid reprsentation of 'don't care' LPM match, "
         "omit match field instead of using a prefix length of 0"),
        ("acl", {"hdr.ethernet.ether_type": ternary(b"\x08\x01", b"\xff\x00")}, 1,
         "Invalid ternary value, make sure value & mask == value"),
        ("acl", {"hdr.ethernet.ether_type": ternary(b"\x00", b"\x00")}, 1,
         "Invalid representation of 'don't care' ternary match, "
         "omit match field instead of using 0 mask"),
        ("acl", {"hdr.ipv4.src_addr": range_(b"\x02", b"\x01")}, 1,
         "Invalid range value, make sure low <= high"),
        ("acl", {"hdr.ipv4.src_addr": range_(b"\x00", b"\xff\xff\xff\xff")}, 1,
         "Invalid representation of 'don't care' range match, "
         "omit match field instead of using low=0 and high=2**bitwidth-1"),
        ("acl", {}, 0, "Zero priority for ternary match"),
    ],
)
def test_match_key_errors_are_pis(
    index: P4InfoIndex, names: Names, table: str, match: dict, priority: int, message: str
) -> None:
    info = index.table(names.table_id(table))
    with pytest.raises(P4RuntimeError) as err:
        match_key(info, names.entry(table, match, priority=priority))
    assert (err.value.code, err.value.message) == (code_pb2.INVALID_ARGUMENT, message)


def test_unknown_and_extra_fields(index: P4InfoIndex, names: Names) -> None:
    info = index.table(names.table_id("l2_exact"))
    entry = names.entry("l2_exact", {"hdr.ethernet.dst_addr": exact(b"\x01")})
    entry.match.add(field_id=7, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01"))
    with pytest.raises(P4RuntimeError, match="Too many fields in match key"):
        match_key(info, entry)
    acl = index.table(names.table_id("acl"))
    entry = names.entry("acl", priority=1)
    entry.match.add(field_id=9, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01"))
    with pytest.raises(P4RuntimeError, match="Unknown field in match key"):
        match_key(acl, entry)


# -- batched write status -----------------------------------------------------------


def test_write_status_has_one_detail_per_update_when_any_fails() -> None:
    reporter = WriteErrorReporter()
    assert reporter.status().code == code_pb2.OK
    reporter.push(None)
    reporter.push(invalid_argument("bad"))
    reporter.push(None)
    status = reporter.status()
    assert status.code == code_pb2.UNKNOWN
    details = []
    for any_ in status.details:
        error = p4runtime_pb2.Error()
        any_.Unpack(error)
        details.append((error.canonical_code, error.code, error.message))
    assert details == [(0, 0, ""), (code_pb2.INVALID_ARGUMENT, 0, "bad"), (0, 0, "")]
