/*
 * tna/batch_tally.p4 -- v1model/batch_tally.p4 on TNA: the same outcome, as
 * three RegisterActions of one table.
 *
 * The tally is three arrays of 2^TALLY_BITS pair cells (tag, n), cell = the
 * request id's low TALLY_BITS bits, tag = the whole request id:
 * batch_tally_applied and batch_tally_stale count a batch's entries applied
 * and STALE, batch_tally_left those still to come. A copy's pass executes
 * one RegisterAction on each, chosen by its entry's outcome (batch_outcome,
 * one action per outcome): each returns its new n, applied and STALE
 * straight into meta.slot and meta.stamp, where the ACK's slot and stamp are
 * taken from (ReplyFields), the entries left into meta.batch_left. A cell
 * tagged for another request starts afresh: 0 applied, 0 STALE, count - 1
 * left, before this copy's outcome. The copy that leaves none left answers.
 * The tally has a pass of its own, PHASE_TALLY, after the entry's last
 * (tna/arch.p4, TALLY_IN_OWN_PHASE): the entry's status comes with it.
 * Copies finish in any order (each takes its UPDATE's phases on its own),
 * and whichever is tallied last answers. Unlike v1model the cells are not
 * cleared when a batch completes (a stateful ALU on a pair cannot return a
 * sum it does not store): the next request on a cell, with another tag,
 * starts it afresh (request ids start at a random value per client), and a
 * copy of a batch already answered is silent (its left wraps past 0).
 */
#ifndef REPLAY_BATCH_TALLY_P4
#define REPLAY_BATCH_TALLY_P4

struct tally_t {
    bit<32> tag;
    bit<32> n;
}

/* A tally cell's RegisterAction that adds `step` to n (a fresh cell: `first`). */
#define TALLY_STEP(reg, name, first, step) \
    RegisterAction<tally_t, bit<TALLY_BITS>, bit<32>>(reg) name = { \
        void apply(inout tally_t cell, out bit<32> n) { \
            if (cell.tag != hdr.replay.request_id) { \
                cell.tag = hdr.replay.request_id; \
                cell.n = first; \
            } else { \
                cell.n = cell.n + step; \
            } \
            n = cell.n; \
        } \
    }

control BatchTally(in headers_t hdr, inout metadata_t meta) {
    Register<tally_t, bit<TALLY_BITS>>(1 << TALLY_BITS) batch_tally_applied;
    Register<tally_t, bit<TALLY_BITS>>(1 << TALLY_BITS) batch_tally_stale;
    Register<tally_t, bit<TALLY_BITS>>(1 << TALLY_BITS) batch_tally_left;

    TALLY_STEP(batch_tally_applied, applied_one, 1, 1);
    TALLY_STEP(batch_tally_applied, applied_none, 0, 0);
    TALLY_STEP(batch_tally_stale, stale_one, 1, 1);
    TALLY_STEP(batch_tally_stale, stale_none, 0, 0);
    TALLY_STEP(batch_tally_left, left_one_less, (bit<32>)hdr.replay.count - 1, 0xFFFFFFFF);

#define TALLY_CELL hdr.replay.request_id[TALLY_BITS - 1:0]
    action tally_applied() {
        meta.batch_state = BATCH_ENTRY;
        meta.slot = applied_one.execute(TALLY_CELL);
        meta.stamp = stale_none.execute(TALLY_CELL);
        meta.batch_left = left_one_less.execute(TALLY_CELL);
    }

    action tally_stale() {
        meta.batch_state = BATCH_ENTRY;
        meta.slot = applied_none.execute(TALLY_CELL);
        meta.stamp = stale_one.execute(TALLY_CELL);
        meta.batch_left = left_one_less.execute(TALLY_CELL);
    }

    /* BAD_SLOT, or refused on a later pass: done, neither applied nor STALE. */
    action tally_done() {
        meta.batch_state = BATCH_ENTRY;
        meta.slot = applied_none.execute(TALLY_CELL);
        meta.stamp = stale_none.execute(TALLY_CELL);
        meta.batch_left = left_one_less.execute(TALLY_CELL);
    }

    table batch_outcome {
        key = { meta.status : exact; }
        actions = { tally_applied; tally_stale; tally_done; }
        const entries = {
            STATUS_OK    : tally_applied();
            STATUS_STALE : tally_stale();
        }
        default_action = tally_done();
        size = 4;
    }

    apply {
        batch_outcome.apply();
        if (meta.batch_left == 0) {
            meta.batch_state = BATCH_LAST;
        }
    }
}

#endif
