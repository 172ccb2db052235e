"""Payloads by reference: the 64-byte reference an experience's slot holds when its
bytes stay with the Actor that produced them (docs/protocol.md, "Payloads by reference").

A reference is an ordinary slot payload to the switch (16 opaque words). It names
the payload store that holds the bytes (IPv4 address and UDP port), the store's
epoch (a random number drawn when the store starts, so a restarted Actor's sequence
numbers never match an old reference), the payload's sequence number in that store,
its length and CRC-32, and 36 bytes of inline fields the producer chooses (a
transition's action, return, done flag, discount).

    word 0     tag        0x52454631 ("REF1")
    word 1     owner      IPv4 address of the payload store
    word 2     port << 16 | actor index
    word 3     epoch      the store's epoch (never 0)
    word 4     seq        the payload's sequence number in the store (1, 2, ...)
    word 5     length     payload bytes
    word 6     crc32      zlib.crc32 of the payload bytes
    words 7-15 inline     36 bytes, opaque here

All words big-endian, like every other payload word.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

import numpy as np

from agent.contract.protocol import PAYLOAD_BYTES, PAYLOAD_WORDS, ProtocolError

REFERENCE_TAG = 0x52454631  # "REF1"
INLINE_BYTES = 36
_REFERENCE = struct.Struct(f"!7I{INLINE_BYTES}s")
assert _REFERENCE.size == PAYLOAD_BYTES

@dataclass(frozen=True)
class Reference:
    """Where an experience's bytes are, and how to know them when they come back."""

    owner: str          # IPv4 address of the payload store
    port: int           # its UDP port
    actor: int          # the producing actor's index (0..65535)
    epoch: int          # the store's epoch (1..2^32-1)
    seq: int            # the payload's sequence number in the store
    length: int         # payload bytes
    crc: int            # zlib.crc32 of the payload
    inline: bytes = bytes(INLINE_BYTES)

    @property
    def store(self) -> tuple[str, int]:
        """The payload store's UDP address."""
        return self.owner, self.port


def encode_reference(ref: Reference) -> bytes:
    """The 64-byte slot payload of a reference (ProtocolError for out-of-range fields)."""
    if not 0 <= ref.port < 1 << 16 or not 0 <= ref.actor < 1 << 16:
        raise ProtocolError(f"reference port {ref.port} / actor {ref.actor}: 16 bits each")
    if not 0 < ref.epoch < 1 << 32:
        raise ProtocolError(f"reference epoch {ref.epoch}: must be 1..2^32-1")
    for name in ("seq", "length", "crc"):
        if not 0 <= getattr(ref, name) < 1 << 32:
            raise ProtocolError(f"reference {name}={getattr(ref, name)} does not fit 32 bits")
    if len(ref.inline) != INLINE_BYTES:
        raise ProtocolError(f"reference inline fields must be {INLINE_BYTES} bytes, "
                            f"got {len(ref.inline)}")
    owner = int(ipaddress.IPv4Address(ref.owner))
    return _REFERENCE.pack(REFERENCE_TAG, owner, ref.port << 16 | ref.actor, ref.epoch,
                           ref.seq, ref.length, ref.crc, ref.inline)


def decode_reference(payload: bytes) -> Reference:
    """The reference in a 64-byte slot payload; ProtocolError if it holds none."""
    if len(payload) != PAYLOAD_BYTES:
        raise ProtocolError(f"a reference is {PAYLOAD_BYTES} bytes, got {len(payload)}")
    tag, owner, port_actor, epoch, seq, length, crc, inline = _REFERENCE.unpack(payload)
    if tag != REFERENCE_TAG:
        raise ProtocolError(f"slot payload is not a reference (tag 0x{tag:08x})")
    if epoch == 0:
        raise ProtocolError("reference with epoch 0")
    return Reference(str(ipaddress.IPv4Address(owner)), port_actor >> 16, port_actor & 0xFFFF,
                     epoch, seq, length, crc, inline)


def rows_to_payloads(rows: np.ndarray) -> list[bytes]:
    """The wire bytes of (B, PAYLOAD_WORDS) float32 rows (SampleBatch.payload), bit for
    bit: a word is a bit pattern here, whatever float it reads as (NaNs included)."""
    words = np.ascontiguousarray(rows, dtype=np.float32).view(np.uint32).astype(">u4")
    raw = words.reshape(-1, PAYLOAD_WORDS).tobytes()
    return [raw[i:i + PAYLOAD_BYTES] for i in range(0, len(raw), PAYLOAD_BYTES)]


def payloads_to_words(payloads: list[bytes]) -> np.ndarray:
    """Slot payloads as (B, PAYLOAD_WORDS) float32 rows, bit for bit (rows_to_payloads'
    inverse), for code that hands payloads on as SampleBatch rows."""
    raw = np.frombuffer(b"".join(payloads), dtype=">u4").astype(np.uint32)
    return raw.view(np.float32).reshape(-1, PAYLOAD_WORDS)

