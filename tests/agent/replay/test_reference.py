"""The reference header in a slot payload and the FETCH protocol's codec."""

from __future__ import annotations

import pytest

from agent.contract import protocol
from agent.contract.protocol import ProtocolError
from agent.replay import fetch
from agent.replay.fetch import FetchEntry, FetchRequest, FetchStatus
from agent.replay.reference import (
    INLINE_BYTES,
    Reference,
    decode_reference,
    encode_reference,
    payloads_to_words,
    rows_to_payloads,
)

REF = Reference("198.18.1.2", 40123, 3, 0xDEADBEEF, 77, 56448, 0x12345678, bytes(range(36)))


def test_a_reference_round_trips_through_its_64_bytes() -> None:
    data = encode_reference(REF)
    assert len(data) == protocol.PAYLOAD_BYTES
    assert data[:4] == b"REF1"
    assert decode_reference(data) == REF


def test_an_in_slot_payload_is_not_taken_for_a_reference() -> None:
    with pytest.raises(ProtocolError, match="not a reference"):
        decode_reference(protocol.floats_to_payload([1.0, 2.0]))


@pytest.mark.parametrize("change, message", [
    ({"epoch": 0}, "epoch"), ({"port": 1 << 16}, "16 bits"), ({"seq": 1 << 32}, "seq"),
    ({"inline": b"x"}, f"{INLINE_BYTES} bytes")])
def test_out_of_range_fields_are_refused(change: dict, message: str) -> None:
    from dataclasses import replace
    with pytest.raises(ProtocolError, match=message):
        encode_reference(replace(REF, **change))


def test_sampled_rows_give_back_the_exact_bytes_even_where_words_read_as_nan() -> None:
    """SampleBatch rows are float32; a reference's words (127.0.0.1 is a signalling NaN
    as a float) must come back bit for bit."""
    refs = [Reference("127.0.0.1", 1, 0, 0x7F800001, 1, 1, 0xFFFFFFFF),
            Reference("255.255.255.255", 65535, 65535, 0xFFC00001, 2, 2, 0x7FC00000)]
    payloads = [encode_reference(r) for r in refs]
    rows = protocol.payloads_to_rows(b"".join(payloads))  # as decode_batch makes them
    assert rows_to_payloads(rows) == payloads
    assert rows_to_payloads(payloads_to_words(payloads)) == payloads
    assert [decode_reference(p) for p in rows_to_payloads(rows)] == refs


def test_a_fetch_request_round_trips() -> None:
    req = FetchRequest(5, 9, (1, 2, 4096))
    assert fetch.decode_request(fetch.encode_request(req)) == req
    with pytest.raises(ProtocolError):
        fetch.encode_request(FetchRequest(5, 9, ()))
    with pytest.raises(ProtocolError):
        fetch.decode_request(fetch.encode_request(req)[:-1])


def test_small_entries_share_a_datagram_and_a_large_one_goes_alone() -> None:
    entries = [FetchEntry(0, FetchStatus.OK, 10, b"a" * 48),
               FetchEntry(1, FetchStatus.MISSING, 11),
               FetchEntry(2, FetchStatus.OK, 12, b"b" * 30000),
               FetchEntry(3, FetchStatus.OK, 13, b"c" * 48)]
    datagrams = fetch.encode_replies(7, 9, entries)
    assert len(datagrams) == 3
    replies = [fetch.decode_reply(d) for d in datagrams]
    assert [e for r in replies for e in r.entries] == entries
    assert {(r.request_id, r.epoch) for r in replies} == {(7, 9)}
    with pytest.raises(ProtocolError, match="truncated"):
        fetch.decode_reply(datagrams[1][:-1])
