/*
 * batch.p4 -- an UPDATE_BATCH's entries: how a copy takes its own, and how a
 * packet sheds them.
 *
 * An UPDATE_BATCH of n entries is replicated like SAMPLE n (admission: the
 * requester port's groups, rid 0 .. 2^k - 1, the copies past n dropped); each
 * copy is one entry's UPDATE, in a pass of its own. BatchPick writes entry
 * `index` (the copy's rid) into the header's slot, stamp and priority, where
 * the rest of the service reads an UPDATE's: a table keyed on the index with
 * one constant entry per entry, so no header is addressed by a run-time
 * index. v1model picks so, in the copy's egress pass (the entries travel
 * with every copy). TNA does not use it: on the ingress pass after the
 * copy's first loop its parser extracts the copy's own entry alone, by the
 * copy's index (tna/parser.p4, OwnEntryParser), which one action takes
 * (replay_tna.p4; tna/arch.p4, PICK_*).
 * Every copy's outcome is tallied (<arch>/batch_tally.p4), and the one that
 * completes the tally answers for the batch, if the request asked for an ACK.
 * TNA tallies in a pass of its own after the entry's last (PHASE_TALLY,
 * tna/phases.p4), with the entry's status carried in the header's.
 */
#ifndef REPLAY_BATCH_P4
#define REPLAY_BATCH_P4

/* meta.batch_state: what this pass is to its UPDATE_BATCH. */
const bit<2> BATCH_NONE  = 0;   /* no entry: another op, or a batch refused whole */
const bit<2> BATCH_ENTRY = 1;   /* an entry's last pass */
const bit<2> BATCH_LAST  = 2;   /* ... the one that completed the batch's tally: it answers */

/* Entry `index` into the header's slot, stamp and priority. */
control BatchPick(inout headers_t hdr, in bit<8> index) {
#define PICK_ACTION(i) \
    action pick_##i() { \
        hdr.replay.slot = hdr.batch.e##i.slot; \
        hdr.replay.stamp = hdr.batch.e##i.stamp; \
        hdr.replay.priority = hdr.batch.e##i.priority; \
    }
    FOR_EACH_ENTRY(PICK_ACTION)

#define PICK_NAME(i) pick_##i;
#define PICK_ROW(i) i : pick_##i();
    table batch_entry {
        key = { index : exact; }
        actions = { FOR_EACH_ENTRY(PICK_NAME) NoAction; }
        const entries = { FOR_EACH_ENTRY(PICK_ROW) }
        default_action = NoAction();   /* index >= MAX_UPDATE_BATCH: admission refuses those */
    }

    apply {
        batch_entry.apply();
    }
}

/* The entries out of the packet (a reply carries none): statements, for an
 * action (FOR_EACH_ENTRY's 16). */
#define DROP_ENTRIES(b) \
    b.e0.setInvalid(); b.e1.setInvalid(); b.e2.setInvalid(); b.e3.setInvalid(); \
    b.e4.setInvalid(); b.e5.setInvalid(); b.e6.setInvalid(); b.e7.setInvalid(); \
    b.e8.setInvalid(); b.e9.setInvalid(); b.e10.setInvalid(); b.e11.setInvalid(); \
    b.e12.setInvalid(); b.e13.setInvalid(); b.e14.setInvalid(); b.e15.setInvalid();

#endif
