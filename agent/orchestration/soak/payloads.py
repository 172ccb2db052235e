"""What the soak writes and how it recognises it: table 0 is soaked, table 1 is a
witness nobody may write; every payload is signed with a key made for the run
(HMAC-SHA256 of the payload's first 56 bytes in its last 8) and every priority
is k/64 (k = 1..255)."""

from __future__ import annotations

import hashlib
import hmac
import random
import struct

from agent.contract import protocol
from agent.contract.protocol import Message

SOAK_TABLE, WITNESS_TABLE = 0, 1
MAGIC = 0x50345253                     # "P4RS": a soak payload
PRIORITY_STEP = 1 << 10                # priorities k/64 in Q16.16
BATCH = 32                             # experiences per INSERT batch, SAMPLE and UPDATE


def sign(key: bytes, actor: int, counter: int, filler: bytes) -> bytes:
    """A 64-byte payload: MAGIC, actor, counter, 40 filler bytes, 8 bytes of HMAC."""
    body = struct.pack("!IIQ", MAGIC, actor, counter) + filler[:40].ljust(40, b"\0")
    return body + hmac.new(key, body, hashlib.sha256).digest()[:8]


def signer(key: bytes, payload: bytes) -> tuple[int, int] | None:
    """(actor, counter) of a payload this run signed, else None."""
    if len(payload) != protocol.PAYLOAD_BYTES:
        return None
    body, mac = payload[:56], payload[56:]
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest()[:8], mac):
        return None
    magic, actor, counter = struct.unpack_from("!IIQ", body)
    return (actor, counter) if magic == MAGIC else None


def soak_priority(rng: random.Random) -> float:
    return rng.randrange(1, 256) * PRIORITY_STEP / protocol.PRIORITY_ONE


def is_soak_priority(fixed: int) -> bool:
    return fixed % PRIORITY_STEP == 0 and 1 <= fixed // PRIORITY_STEP <= 255


def sample_errors(key: bytes, reply: Message) -> list[str]:
    """What is wrong with an OK SAMPLE reply: the soak's errors it counts as."""
    if reply.stamp == 0:
        return ["sampled a slot not written yet (stamp 0) as data"]
    wrong = []
    if signer(key, reply.payload or b"") is None:
        wrong.append("sampled a payload the soak did not write")
    if not is_soak_priority(reply.priority):
        wrong.append("sampled a priority the soak did not write")
    return wrong
