"""The Python codec: round trips, validation, batch decode, and agreement with
the compiled data plane."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from agent.contract import protocol
from agent.contract.cli_args import REPO
from agent.contract.protocol import Message, Mode, Op, ProtocolError, Status
from bmv2.artifacts import BMV2_JSON

CONSTANTS_P4 = REPO / "p4src" / "include" / "constants.p4"


def test_header_is_36_bytes_and_round_trips() -> None:
    msg = Message(op=Op.UPDATE, table=3, flags=protocol.Flag.ACK | protocol.Flag.HAS_PRIORITY,
                  request_id=0xDEADBEEF, slot=4095, stamp=2**32 - 1, priority=65536, size=7,
                  total=2**40 + 5)
    data = protocol.encode(msg)
    assert len(data) == protocol.HEADER_BYTES == 36
    assert protocol.decode(data) == msg


def test_payload_round_trips_and_floats_survive() -> None:
    values = np.array([0.5, -1.25, 3.0, 1e-3], dtype=np.float32)
    msg = protocol.insert(1, protocol.floats_to_payload(values), priority=2.0, ack=True)
    back = protocol.decode(protocol.encode(msg))
    assert back.payload == msg.payload
    np.testing.assert_array_equal(protocol.payload_to_floats(back.payload)[:4], values)
    assert back.flags == protocol.Flag.ACK | protocol.Flag.HAS_PRIORITY
    assert back.priority == 2 * protocol.PRIORITY_ONE


@pytest.mark.parametrize(("data", "problem"), [
    (b"\x01\x02", "truncated header"),
    (bytes([1]) + bytes(35), "unsupported protocol version 1"),
    (bytes([2, 2, 0x08]) + bytes(33), "reserved bits"),
    (protocol.encode(protocol.update_batch(0, [1, 2], [3, 4], [1.0, 1.0]))[:-4],
     "truncated entries: 20 of 24 bytes"),
    (protocol.encode(protocol.insert(0, bytes(64)))[:60], "truncated payload"),
])
def test_decode_names_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        protocol.decode(data)


def test_encode_refuses_out_of_range_fields() -> None:
    with pytest.raises(ProtocolError, match="slot"):
        protocol.encode(Message(op=Op.READ, slot=2**32))
    with pytest.raises(ProtocolError, match="payload must be 64 bytes"):
        protocol.encode(Message(op=Op.INSERT, payload=b"abc"))
    with pytest.raises(ProtocolError, match="sample count"):
        protocol.sample(0, 0)
    with pytest.raises(ProtocolError, match="priority"):
        protocol.priority_to_fixed(float("nan"))


def test_priority_fixed_point_rounds_and_clamps() -> None:
    assert protocol.priority_to_fixed(1.0) == 65536
    assert protocol.priority_to_fixed(0.5) == 32768
    assert protocol.priority_to_fixed(1e9) == protocol.PRIORITY_MAX
    assert protocol.fixed_to_priority(98304) == 1.5


def test_error_replies_carry_no_payload() -> None:
    reply = Message(op=Op.SAMPLE, flags=protocol.Flag.REPLY, status=Status.BELOW_MIN_SIZE)
    assert protocol.decode(protocol.encode(reply)).payload is None


def test_decode_batch_orders_by_index() -> None:
    replies = [Message(op=Op.SAMPLE, flags=protocol.Flag.REPLY | (Mode.PRIORITIZED << 4), index=i,
                       slot=10 - i, stamp=100 + i, priority=65536 * (i + 1), total=65536 * 10,
                       size=5, payload=protocol.floats_to_payload([float(i)]))
               for i in (2, 0, 1)]
    batch = protocol.decode_batch(replies)
    assert len(batch) == 3
    assert batch.index.tolist() == [0, 1, 2]
    assert batch.slot.tolist() == [10, 9, 8]
    assert batch.priority.tolist() == [1.0, 2.0, 3.0]
    assert batch.total.tolist() == [10.0] * 3
    assert batch.payload[:, 0].tolist() == [0.0, 1.0, 2.0]


def test_constants_match_the_compiled_data_plane() -> None:
    program = json.loads(BMV2_JSON.read_text())
    types = {t["name"]: t for t in program["header_types"]}
    replay = {f[0]: f[1] for f in types["replay_h"]["fields"]}
    assert sum(replay.values()) == 8 * protocol.HEADER_BYTES
    assert list(replay) == ["version", "op", "flags", "status", "table_id", "count", "index",
                            "reserved", "request_id", "slot", "stamp", "priority", "size", "total"]
    pairs = types["replay_payload_h"]["fields"]
    assert len(pairs) * 2 == protocol.PAYLOAD_WORDS and all(f[1] == 64 for f in pairs)
    registers = {r["name"].rsplit(".", 1)[1]: r for r in program["register_arrays"]}
    assert registers["tree_leaf"]["size"] == protocol.NUM_TABLES * protocol.NUM_SLOTS
    assert registers["ring_ptr"]["size"] == protocol.NUM_TABLES
    assert registers["insert_window"]["size"] == protocol.NUM_INSERT_LIMITERS
    limit = next(a for a in program["actions"] if a["name"].endswith("limiter.limit"))
    assert {q["name"]: q["bitwidth"] for q in limit["runtime_data"]} == {
        "index": 16, "max_inserts": 16}  # MAX_INSERT_LIMIT = 0xFFFF
    refuse = next(a for a in program["actions"] if a["name"].endswith("limiter.refuse"))
    status = refuse["primitives"][0]["parameters"][1]["value"]
    assert int(status, 16) == protocol.Status.RATE_LIMITED
    inner = [n for n in registers if n.startswith("tree_l") and n.endswith("_hi")]
    assert len(inner) == protocol.SLOT_BITS - 1
    # hardware-legal state: 32-bit cells (wider sums are _hi/_lo arrays), or pairs
    # of 32-bit words in one 64-bit cell (the payload, as TNA's word_pair_t)
    wide = {n for n, r in registers.items() if r["bitwidth"] > 32}
    assert wide == {f"payload_p{i}" for i in range(protocol.PAYLOAD_WORDS // 2)}
    assert all(r["bitwidth"] in (32, 64) for r in program["register_arrays"])


def test_statuses_and_redraws_match_the_p4_constants() -> None:
    text = CONSTANTS_P4.read_text()
    statuses = {name: int(value) for name, value in
                re.findall(r"const bit<8> STATUS_(\w+)\s*=\s*(\d+);", text)}
    assert statuses == {s.name: s.value for s in Status}
    ops = {name: int(value) for name, value in
           re.findall(r"const bit<8> OP_(\w+)\s*=\s*(\d+);", text) if name != "LAST"}
    assert ops == {o.name: o.value for o in Op}
    scalars = {name: int(value) for name, value in
               re.findall(r"const bit<8> (REPLAY_VERSION|MAX_UPDATE_BATCH) = (\d+);", text)}
    assert scalars == {"REPLAY_VERSION": protocol.VERSION,
                       "MAX_UPDATE_BATCH": protocol.MAX_UPDATE_BATCH}
    entry_bytes = re.search(r"#define ENTRY_BYTES (\d+)", text)
    assert entry_bytes is not None and int(entry_bytes.group(1)) == protocol.ENTRY_BYTES
    redraws = re.search(r"const bit<8> EMPTY_SLOT_REDRAWS = (\d+);", text)
    assert redraws is not None and int(redraws.group(1)) == protocol.EMPTY_SLOT_REDRAWS


def test_a_not_ready_sample_reply_is_not_data() -> None:
    reply = Message(op=Op.SAMPLE, flags=protocol.Flag.REPLY, status=Status.NOT_READY, index=3,
                    slot=7, size=4)
    back = protocol.decode(protocol.encode(reply))
    assert back.payload is None and not back.ok and back.status_name() == "NOT_READY"
    with pytest.raises(ProtocolError, match="only OK replies"):
        protocol.decode_batch([back])


def test_update_batch_round_trips_its_entries() -> None:
    msg = protocol.update_batch(2, [4095, 0, 7], [2**32 - 1, 1, 9], [0.5, 3.0, 0.0], ack=True,
                                request_id=11)
    data = protocol.encode(msg)
    assert len(data) == protocol.HEADER_BYTES + 3 * protocol.ENTRY_BYTES
    back = protocol.decode(data)
    assert back == msg and back.count == 3 and back.flags == protocol.Flag.ACK
    assert back.entries == (protocol.Entry(4095, 2**32 - 1, 32768),
                            protocol.Entry(0, 1, 3 * 65536), protocol.Entry(7, 9, 0))
    with pytest.raises(ProtocolError, match=r"1\.\.16 entries"):
        protocol.update_batch(0, range(17), range(17), [1.0] * 17)
    with pytest.raises(ProtocolError, match=r"1\.\.16 entries"):
        protocol.update_batch(0, [], [], [])


def test_parse_request_keeps_what_the_switch_parser_extracts() -> None:
    many = Message(op=Op.UPDATE_BATCH, count=20, entries=tuple(
        protocol.Entry(i, i + 1, 65536) for i in range(20)))
    data = protocol.encode(many)
    parsed = protocol.parse_request(data)
    assert parsed is not None and parsed.count == 20
    assert parsed.entries == many.entries[:protocol.MAX_UPDATE_BATCH]
    first16 = protocol.HEADER_BYTES + protocol.MAX_UPDATE_BATCH * protocol.ENTRY_BYTES
    kept = protocol.parse_request(data[:first16])   # the 16 read are there: too large
    assert kept is not None and kept.entries == parsed.entries
    cut = protocol.parse_request(data[:first16 - 1])
    assert cut is not None and cut.entries is None  # not all 16 there: truncated


def test_a_batch_ack_carries_its_counts_in_the_header_alone() -> None:
    reply = Message(op=Op.UPDATE_BATCH, flags=protocol.Flag.REPLY | protocol.Flag.ACK, count=5,
                    slot=3, index=1)
    data = protocol.encode(reply)
    assert len(data) == protocol.HEADER_BYTES
    ack = protocol.BatchAck.of(protocol.decode(data + bytes(24)))  # trailing bytes ignored
    assert (ack.entries, ack.applied, ack.stale, ack.bad_slot) == (5, 3, 1, 1)
