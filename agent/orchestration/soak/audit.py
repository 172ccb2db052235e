"""The soak's integrity audit: signed experiences in both tables first, a snapshot
of every slot before and after; a slot may only have kept its experience (same
stamp and payload; in table 0 a priority k/64) or hold a new one the soak
signed, from an actor, numbered below what that actor sent."""

from __future__ import annotations

import random
from collections import Counter

from agent.contract.protocol import REPLAY_UDP_PORT
from agent.orchestration.soak.payloads import (
    BATCH,
    SOAK_TABLE,
    WITNESS_TABLE,
    is_soak_priority,
    sign,
    signer,
    soak_priority,
)
from agent.replay.client import make_client
from bmv2.testbed.netns import inside
from bmv2.testbed.netns_bed import Testbed

PREFILL = (1500, 600)                  # experiences in the soak and witness tables first
PREFILL_ACTOR = 255                    # the actor id the learner's prefill signs with


def prefill(bed: Testbed, key: bytes, rng: random.Random) -> None:
    """Signed experiences from the learner into both tables (actor PREFILL_ACTOR)."""
    learner = next(h for h in bed.config.hosts if h.role == "learner")
    with inside(bed.ns_name(learner.name)):
        client = make_client("switch", address=(bed.config.vip, REPLAY_UDP_PORT),
                             bind=(learner.ip, 0), ack_inserts=True)
    try:
        counter = 0
        for table, n in zip((SOAK_TABLE, WITNESS_TABLE), PREFILL, strict=True):
            client.table = table
            for start in range(0, n, BATCH):
                batch = [sign(key, PREFILL_ACTOR, counter + i, rng.randbytes(40))
                         for i in range(min(BATCH, n - start))]
                counter += len(batch)
                client.insert_many(batch, [soak_priority(rng) for _ in batch])
    finally:
        client.close()


def compare(before: list[dict], after: list[dict], key: bytes,
            sent: dict[int, int]) -> tuple[dict[str, int], Counter[str]]:
    """Slots kept, replaced by the soak's inserts, or changed otherwise (errors)."""
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for b, a in zip(before, after, strict=True):
        table = b["table"]
        old = {s["slot"]: s for s in b["slots"]}
        new = {s["slot"]: s for s in a["slots"]}
        if table == WITNESS_TABLE and (a["state"] != b["state"] or old != new):
            errors[f"witness table {table} changed"] += 1
        if a["state"]["total"] != sum(s["priority"] for s in a["slots"]):
            errors[f"table {table}: total priority is not the sum of its slots"] += 1
        for slot in old.keys() - new.keys():
            errors[f"table {table} slot {slot} emptied"] += 1
        for slot, s in new.items():
            was = old.get(slot)
            if was is not None and was["stamp"] == s["stamp"]:
                if was["payload"] != s["payload"] or not is_soak_priority(s["priority"]):
                    errors[f"table {table} slot {slot} changed in place"] += 1
                else:
                    counts["kept"] += 1
                continue
            who = signer(key, bytes.fromhex(s["payload"]))
            if (table != SOAK_TABLE or who is None or who[0] not in sent
                    or who[1] >= sent[who[0]] or not is_soak_priority(s["priority"])):
                errors[f"table {table} slot {slot} holds what the soak did not insert"] += 1
            else:
                counts["replaced_by_soak_inserts"] += 1
    counts["changed_otherwise"] = sum(errors.values())
    return dict(counts), errors
