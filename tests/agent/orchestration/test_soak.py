"""The soak (make soak): its checks on their own, and a short soak of every switch
present, as CI runs it."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from agent.contract import protocol
from agent.orchestration.soak.audit import compare
from agent.orchestration.soak.driver import DEFAULT_CONFIG, soak_switch
from agent.orchestration.soak.load import fuzz_datagram
from agent.orchestration.soak.payloads import (
    PRIORITY_STEP,
    SOAK_TABLE,
    WITNESS_TABLE,
    sample_errors,
    sign,
    signer,
)
from tests import needs

KEY = b"k" * 32


def _slot(slot: int, stamp: int, payload: bytes, priority: int = 3 * PRIORITY_STEP) -> dict:
    return {"slot": slot, "stamp": stamp, "priority": priority, "payload": payload.hex()}


def _table(table: int, slots: list[dict], sequence: int) -> dict:
    return {"table": table, "slots": slots,
            "state": {"pointer": len(slots), "sequence": sequence, "max_priority": 0,
                      "size": len(slots), "total": sum(s["priority"] for s in slots)}}


def test_only_this_runs_key_signs() -> None:
    payload = sign(KEY, 3, 41, b"x" * 40)
    assert len(payload) == protocol.PAYLOAD_BYTES and signer(KEY, payload) == (3, 41)
    assert signer(b"other key" * 4, payload) is None
    forged = bytearray(payload)
    forged[10] ^= 1
    assert signer(KEY, bytes(forged)) is None


def test_slot_comparison_finds_what_the_soak_did_not_write() -> None:
    kept = _slot(0, 1, sign(KEY, 255, 0, b""))
    witness = _table(WITNESS_TABLE, [_slot(0, 1, sign(KEY, 255, 1, b""))], 1)
    before = [_table(SOAK_TABLE, [kept, _slot(1, 2, sign(KEY, 255, 2, b""))], 2), witness]
    ok_after = [_table(SOAK_TABLE, [kept, _slot(1, 9, sign(KEY, 0, 5, b""))], 9), witness]
    counts, errors = compare(before, ok_after, KEY, {0: 10, 255: 3})
    assert counts == {"kept": 2, "replaced_by_soak_inserts": 1, "changed_otherwise": 0}
    assert not errors
    for bad in (sign(b"intruder" * 4, 0, 5, b""),   # not signed by this run
                sign(KEY, 0, 10, b""),              # numbered above what actor 0 sent
                sign(KEY, 7, 0, b"")):              # no actor 7 in this run
        after = [_table(SOAK_TABLE, [kept, _slot(1, 9, bad)], 9), witness]
        assert compare(before, after, KEY, {0: 10, 255: 3})[0]["changed_otherwise"] == 1
    odd_priority = [_table(SOAK_TABLE, [_slot(0, 1, sign(KEY, 255, 0, b""), 12345),
                                        before[0]["slots"][1]], 2), witness]
    _, errors = compare(before, odd_priority, KEY, {255: 3})
    assert "table 0 slot 0 changed in place" in errors
    changed_witness = [before[0], _table(WITNESS_TABLE, [], 1)]
    _, errors = compare(before, changed_witness, KEY, {255: 3})
    assert "witness table 1 changed" in errors and "table 1 slot 0 emptied" in errors


def test_a_sampled_reply_is_checked_for_stamp_payload_and_priority() -> None:
    good = protocol.Message(op=protocol.Op.SAMPLE, flags=protocol.Flag.REPLY, stamp=5,
                            priority=3 * PRIORITY_STEP, payload=sign(KEY, 1, 2, b""))
    assert sample_errors(KEY, good) == []
    assert sample_errors(KEY, replace(good, stamp=0)) == [
        "sampled a slot not written yet (stamp 0) as data"]
    assert sample_errors(KEY, replace(good, priority=256 * PRIORITY_STEP)) == [
        "sampled a priority the soak did not write"]
    assert sample_errors(KEY, replace(good, payload=bytes(64))) == [
        "sampled a payload the soak did not write"]


def test_fuzz_mixes_random_mutated_and_valid_requests() -> None:
    rng = random.Random(5)
    decoded = {"valid": 0, "invalid": 0}
    for _ in range(2000):
        data = fuzz_datagram(rng)
        try:
            protocol.decode(data)
            decoded["valid"] += 1
        except protocol.ProtocolError:
            decoded["invalid"] += 1
    assert decoded["valid"] > 300 and decoded["invalid"] > 600


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["python", "bmv2"])
def test_short_soak(kind: str, tmp_path) -> None:
    """Full-rate load, fuzz and forged sources for a few seconds: no errors, the
    intruder served nothing, in its own name or others', every stored slot
    accounted for, the switch's memory flat."""
    needs.testbed(kind)
    r = soak_switch(kind, seconds=8, fuzz=1500, actors=2, config=DEFAULT_CONFIG,
                    log_dir=tmp_path / "logs", forged=300)
    assert r.error_count == 0, r.errors
    assert r.fuzz_sent == 1500 and "OK" not in r.fuzz_replies
    assert sum(r.fuzz_replies.values()) > 0  # refusals come back, nothing is served
    assert r.forged_sent == 300 and r.forged_served == 0
    assert 0 < r.forged_counted <= 300  # dropped by the source guard (a few may be lost)
    assert r.served["INSERT"] > 0 and r.served["SAMPLE"] > 0 and r.served["UPDATE_BATCH"] > 0
    assert r.client["samples_checked"] == r.client["samples"] > 0
    assert r.slots["changed_otherwise"] == 0 and r.slots["replaced_by_soak_inserts"] > 0
    assert r.memory_kib["end"] < 1.25 * r.memory_kib["start"]
