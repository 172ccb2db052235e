/*
 * batch.p4 -- an UPDATE_BATCH's entries: how an UPDATE takes its own, and how
 * a packet sheds them.
 *
 * v1model replicates an UPDATE_BATCH of n entries like SAMPLE n (admission:
 * the requester port's groups, rid 0 .. 2^k - 1, the copies past n dropped);
 * each copy is one entry's UPDATE, in a pass of its own. BatchPick writes entry
 * `index` (the copy's rid) into the header's slot, stamp and priority, where
 * the rest of the service reads an UPDATE's: a table keyed on the index with
 * one constant entry per entry, so no header is addressed by a run-time index.
 * The copies tally their outcomes (v1model/batch_tally.p4), and the one that
 * completes the tally answers for the batch, if the request asked for an ACK.
 *
 * TNA (BATCH_IN_SEQUENCE) sends the batch to LOOP_PORT whole and takes its
 * entries one after the other off the front of the packet: the ingress pass
 * that admits an entry moves the front one (e0) into the header's slot, stamp
 * and priority and drops it from the packet (replay_tna.p4), so that no pass
 * needs a replica's tally and egress never parses an entry. Admission still
 * looks up the requester port's groups, as for a replicated batch, so that
 * both programs refuse the same requests.
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
