/*
 * tna/batch_tally.p4 -- v1model/batch_tally.p4 on TNA: the same register name
 * and outcome, as one RegisterAction on a pair cell.
 *
 * batch_tally: 2^TALLY_BITS cells of (tag, counts), cell = the request id's
 * low TALLY_BITS bits, tag = the rest of it. counts is laid out as on
 * v1model: bits 14..10 entries done, 9..5 STALE, 4..0 applied. One
 * RegisterAction adds a copy's outcome (a cell tagged for another request
 * counts from zero) and returns the new counts; the copy whose `done` reaches
 * the batch's count answers, with applied and STALE in meta.slot and
 * meta.stamp. The tally has a pass of its own, PHASE_TALLY, after the
 * entry's last (tna/arch.p4, TALLY_IN_OWN_PHASE): the entry's status comes
 * with it. Copies finish in any order (each takes its UPDATE's phases on its
 * own), and whichever is tallied last answers. A Tofino
 * stateful ALU on a pair cannot return a sum it does not store, so unlike
 * v1model the cell is not cleared when its batch completes: the next request
 * on the cell, with another tag, starts it afresh (request ids start at a
 * random value per client), and a copy of a batch already answered is silent.
 */
#ifndef REPLAY_BATCH_TALLY_P4
#define REPLAY_BATCH_TALLY_P4

/* An entry's outcome, as added to its cell: one done, and applied or STALE. */
const bit<32> TALLY_DONE    = 0x0400;
const bit<32> TALLY_APPLIED = 0x0001;
const bit<32> TALLY_STALE   = 0x0020;

struct tally_t {
    bit<32> tag;
    bit<32> counts;
}

control BatchTally(in headers_t hdr, inout metadata_t meta) {
    Register<tally_t, bit<32>>(1 << TALLY_BITS) batch_tally;
    CELL_INDEX(tally_cell);

    bit<32> tag = 0;
    bit<32> outcome = 0;

    RegisterAction<tally_t, bit<32>, bit<32>>(batch_tally) tally_entry = {
        void apply(inout tally_t cell, out bit<32> counts) {
            if (cell.tag != tag) {
                cell.tag = tag;
                cell.counts = outcome;
            } else {
                cell.counts = cell.counts + outcome;
            }
            counts = cell.counts;
        }
    };

    action tally(bit<32> entry_outcome) {
        outcome = entry_outcome;
        tag = (bit<32>)hdr.replay.request_id[31:TALLY_BITS];
    }

    table batch_outcome {
        key = { meta.status : exact; }
        actions = { tally; }
        const entries = {
            STATUS_OK    : tally(TALLY_DONE | TALLY_APPLIED);
            STATUS_STALE : tally(TALLY_DONE | TALLY_STALE);
        }
        default_action = tally(TALLY_DONE);   /* BAD_SLOT, or refused on a later pass */
        size = 4;
    }

    action count_entry() {
        meta.batch_counts = tally_entry.execute(
            tally_cell.get({hdr.replay.request_id[TALLY_BITS - 1:0]}))[15:0];
    }

    /* The counts apart, each a whole field through the hash unit (a table
     * passes one hash result): a move of a few bits into a wide field would
     * cut it, and every field copied to or from it, at those bits
     * (docs/hardware.md). done is compared with the whole count; applied and
     * STALE are the ACK's slot and stamp (ReplyFields). */
    Hash<bit<8>>(HashAlgorithm_t.IDENTITY) done_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) applied_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) stale_of;

    action take_done() { meta.batch_done = done_of.get({meta.batch_counts[14:10]}); }
    action take_applied() { meta.slot = applied_of.get({meta.batch_counts[4:0]}); }
    action take_stale() { meta.stamp = stale_of.get({meta.batch_counts[9:5]}); }

    apply {
        batch_outcome.apply();
        count_entry();
        take_done();
        take_applied();
        take_stale();
        if (meta.batch_done == hdr.replay.count) {
            meta.batch_state = BATCH_LAST;
        }
    }
}

#endif
