"""The payload fetch protocol: how a Learner gets the bytes of sampled references from
the Actors' payload stores (docs/protocol.md, "Fetching payloads"). UDP, host to host
(the switch forwards it like any traffic); all fields big-endian.

Request (one per store per batch):

    0   1  version      1
    1   1  kind         1 = FETCH
    2   2  count        entries, 1..MAX_ENTRIES
    4   4  request_id
    8   4  epoch        the epoch the references name
    12  4n seq          count sequence numbers

Reply: one or more datagrams, each a header and entries, packed in request order
until the next would pass REPLY_PACK_BYTES (an entry larger than that goes alone;
the IP layer fragments it):

    0   1  version      1
    1   1  kind         2 = FETCH reply
    2   2  count        entries in this datagram
    4   4  request_id   the request's
    8   4  epoch        the store's own epoch
  entries:
    0   2  index        the entry's position in the request
    2   1  status       0 OK, 1 MISSING (evicted, or never stored), 2 STALE (another epoch)
    3   1  reserved     0
    4   4  seq
    8   4  length       payload bytes that follow (0 unless OK)
    12  .. payload
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from agent.contract.protocol import MAX_BATCH, ProtocolError

FETCH_VERSION = 1
KIND_FETCH, KIND_REPLY = 1, 2
MAX_ENTRIES = MAX_BATCH
MAX_DATAGRAM = 65507             # the largest UDP payload over IPv4
_HEADER = struct.Struct("!BBHII")
_ENTRY = struct.Struct("!HBxII")
HEADER_BYTES = _HEADER.size      # 12
ENTRY_BYTES = _ENTRY.size        # 12
MAX_PAYLOAD_BYTES = MAX_DATAGRAM - HEADER_BYTES - ENTRY_BYTES
REPLY_PACK_BYTES = 1472          # an Ethernet frame's UDP payload: small entries share one


class FetchStatus(IntEnum):
    """An entry's status in a FETCH reply."""

    OK = 0
    MISSING = 1
    STALE = 2


@dataclass(frozen=True)
class FetchRequest:
    request_id: int
    epoch: int
    seqs: tuple[int, ...]


@dataclass(frozen=True)
class FetchEntry:
    index: int
    status: int
    seq: int
    payload: bytes = b""


@dataclass(frozen=True)
class FetchReply:
    request_id: int
    epoch: int
    entries: tuple[FetchEntry, ...]


def encode_request(req: FetchRequest) -> bytes:
    if not 1 <= len(req.seqs) <= MAX_ENTRIES:
        raise ProtocolError(f"a FETCH names 1..{MAX_ENTRIES} payloads, got {len(req.seqs)}")
    return (_HEADER.pack(FETCH_VERSION, KIND_FETCH, len(req.seqs), req.request_id, req.epoch)
            + struct.pack(f"!{len(req.seqs)}I", *req.seqs))


def decode_request(data: bytes) -> FetchRequest:
    _, _, count, rid, epoch = _header(data, KIND_FETCH)
    if not 1 <= count <= MAX_ENTRIES or len(data) != HEADER_BYTES + 4 * count:
        raise ProtocolError(f"FETCH of {count} entries in {len(data)} bytes")
    return FetchRequest(rid, epoch, struct.unpack_from(f"!{count}I", data, HEADER_BYTES))


def encode_replies(request_id: int, epoch: int, entries: list[FetchEntry],
                   pack_bytes: int = REPLY_PACK_BYTES) -> list[bytes]:
    """The datagrams answering a request: entries in order, packed up to pack_bytes."""
    out: list[bytes] = []
    chunk: list[bytes] = []
    size = HEADER_BYTES

    def flush() -> None:
        out.append(_HEADER.pack(FETCH_VERSION, KIND_REPLY, len(chunk), request_id, epoch)
                   + b"".join(chunk))

    for e in entries:
        if len(e.payload) > MAX_PAYLOAD_BYTES:
            raise ProtocolError(f"a fetched payload is at most {MAX_PAYLOAD_BYTES} bytes")
        part = _ENTRY.pack(e.index, e.status, e.seq, len(e.payload)) + e.payload
        if chunk and size + len(part) > pack_bytes:
            flush()
            chunk, size = [], HEADER_BYTES
        chunk.append(part)
        size += len(part)
    if chunk:
        flush()
    return out


def decode_reply(data: bytes) -> FetchReply:
    _, _, count, rid, epoch = _header(data, KIND_REPLY)
    entries, at = [], HEADER_BYTES
    for _ in range(count):
        if at + ENTRY_BYTES > len(data):
            raise ProtocolError("FETCH reply: truncated entry")
        index, status, seq, length = _ENTRY.unpack_from(data, at)
        at += ENTRY_BYTES
        if at + length > len(data):
            raise ProtocolError("FETCH reply: truncated payload")
        entries.append(FetchEntry(index, status, seq, bytes(data[at:at + length])))
        at += length
    if at != len(data):
        raise ProtocolError("FETCH reply: trailing bytes")
    return FetchReply(rid, epoch, tuple(entries))


def _header(data: bytes, kind: int) -> tuple[int, int, int, int, int]:
    if len(data) < HEADER_BYTES:
        raise ProtocolError(f"FETCH message of {len(data)} bytes")
    fields = _HEADER.unpack_from(data)
    if fields[0] != FETCH_VERSION or fields[1] != kind:
        raise ProtocolError(f"not a FETCH message of kind {kind} (version {fields[0]}, "
                            f"kind {fields[1]})")
    return fields
