/*
 * batch_tally.p4 -- where the copies of an UPDATE_BATCH that asked for an ACK
 * count their outcomes, so that one reply can say how many entries were
 * applied and how many were STALE.
 *
 * batch_tally: 2^TALLY_BITS 32-bit cells, cell = the request id's low
 * TALLY_BITS bits. A cell holds
 *   bits 31..16  tag: the request id's next 16 bits (whose batch this is)
 *   bits 14..10  entries done      bits 9..5  STALE      bits 4..0  applied
 * Each copy's last pass adds its outcome in one action (atomic on bmv2, one
 * RegisterAction on TNA): a cell tagged for another request counts from zero;
 * the copy that brings `done` to the batch's count (or past it) takes the
 * counts (meta.batch_counts; applied and STALE into meta.batch_applied and
 * meta.batch_stale, for its ACK) and clears the cell. Copies finish in any order (bmv2's
 * egress threads, TNA's phases), and whichever finishes last answers. A
 * copy lost on its way leaves its batch's cell unfinished: no ACK (the client
 * asks again, with a new request id), and the cell starts over for the next
 * request that maps to it. Two batches in flight at once whose ids share the
 * low 26 bits would mix their counts.
 */
#ifndef REPLAY_BATCH_TALLY_P4
#define REPLAY_BATCH_TALLY_P4

/* An entry's outcome, as added to its cell: one done, and applied or STALE. */
const bit<16> TALLY_DONE    = 0x0400;
const bit<16> TALLY_APPLIED = 0x0001;
const bit<16> TALLY_STALE   = 0x0020;

/* v1model replicates a batch (each copy picks its entry in egress), so no
 * entry comes back to ingress: IngressDispatch's TakeEntry does nothing here
 * (tna/loop.p4 has TNA's). */
control TakeEntry(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control BatchTally(in headers_t hdr, inout metadata_t meta) {
    register<bit<32>>(1 << TALLY_BITS) batch_tally;

    /* The cell, in an action of its own (p4c would copy the expression into
     * both register accesses). */
    action locate_tally() {
        meta.cell = (bit<32>)hdr.replay.request_id[TALLY_BITS - 1:0];
    }

    action tally(bit<16> outcome) {
        batch_tally.read(meta.lo, meta.cell);
        meta.lo = (meta.lo[31:16] == hdr.replay.request_id[TALLY_BITS + 15:TALLY_BITS])
                  ? meta.lo : hdr.replay.request_id[TALLY_BITS + 15:TALLY_BITS] ++ 16w0;
        meta.lo = meta.lo + (bit<32>)outcome;
        meta.batch_counts = (meta.lo[14:10] >= hdr.replay.count[4:0]) ? meta.lo[15:0] : 16w0;
        batch_tally.write(meta.cell, (meta.lo[14:10] >= hdr.replay.count[4:0]) ? 32w0 : meta.lo);
    }

    table batch_outcome {
        key = { meta.status : exact; }
        actions = { tally; }
        const entries = {
            STATUS_OK    : tally(TALLY_DONE | TALLY_APPLIED);
            STATUS_STALE : tally(TALLY_DONE | TALLY_STALE);
        }
        default_action = tally(TALLY_DONE);   /* BAD_SLOT, or refused on a later pass */
    }

    apply {
        locate_tally();
        batch_outcome.apply();
        if (meta.batch_counts != 0) {
            meta.batch_state = BATCH_LAST;
            meta.batch_applied = (bit<8>)meta.batch_counts[4:0];   /* the ACK's slot */
            meta.batch_stale = (bit<8>)meta.batch_counts[9:5];     /* its index */
        }
    }
}

#endif
