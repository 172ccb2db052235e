/*
 * draw.p4 -- the random draws of a SAMPLE reply, over power-of-two ranges only.
 *
 * To draw from [0, n): mask a random value to 2^k - 1 for a power of two
 * 2^k >= n and reject a value >= n. The first attempt is made on its own;
 * only when it overshoots are three more made (FOR_EACH_MORE_DRAW), and only
 * when those overshoot too, three more again (the same action once more), all
 * in the same pass. The first one inside the range is taken, so the result is
 * exactly uniform over [0, n) whatever 2^k >= n the mask stands for (the
 * smallest one keeps an attempt's overshoot below 1/2). If all seven overshoot
 * meta.found stays 0 (probability below 1/128) and the reply is drawn again in
 * another pass (replay_service.p4): a whole ingress and egress pass more, which
 * with four attempts one copy in 16 took when the range was just past a power
 * of two; the last three cost a copy only in that rare case.
 *
 * A uniform draw's mask is the ring's (ring_mask, kept with the size in
 * table_state.p4, so no copy computes it); a proportional draw's is the
 * total's leading bit smeared right (SMEAR_MASK, in its first attempt's action).
 */
#ifndef REPLAY_DRAW_P4
#define REPLAY_DRAW_P4

/* The attempts after the first: meta.draw<i>, a random value masked. */
#define FOR_EACH_MORE_DRAW(X) X(1) X(2) X(3)

/* meta.mask -> the smallest 2^k - 1 >= it: its leading bit smeared right in six
 * steps, in the action that needs it (bmv2: one table for all six). Set meta.mask
 * before that action: p4c substitutes a value the action assigns into each later
 * step, doubling the expression six times (every step reads it twice). */
#define SMEAR_MASK \
    meta.mask = meta.mask | (meta.mask >> 1); \
    meta.mask = meta.mask | (meta.mask >> 2); \
    meta.mask = meta.mask | (meta.mask >> 4); \
    meta.mask = meta.mask | (meta.mask >> 8); \
    meta.mask = meta.mask | (meta.mask >> 16); \
    meta.mask = meta.mask | (meta.mask >> 32);

control PowerOfTwoMask(inout metadata_t meta) {
    action smear() {
        SMEAR_MASK
    }

    apply {
        smear();
    }
}

/* Uniform: meta.slot in [0, meta.size), masked by meta.size_mask. */
control UniformDraw(inout metadata_t meta) {
    action draw_first() {
        random(meta.slot, 32w0, 32w0xFFFFFFFF);
        meta.slot = meta.slot & meta.size_mask;
        meta.found = (bit<1>)(meta.slot < meta.size);
    }

    action draw_more() {
#define DRAW_SLOT(i) \
        random(meta.lo, 32w0, 32w0xFFFFFFFF); \
        meta.draw##i = (bit<64>)(meta.lo & meta.size_mask);
        FOR_EACH_MORE_DRAW(DRAW_SLOT)
        meta.sum = (bit<64>)meta.size;
        meta.found = (bit<1>)(meta.draw1 < meta.sum || meta.draw2 < meta.sum
                              || meta.draw3 < meta.sum);
        meta.slot = (bit<32>)((meta.draw1 < meta.sum) ? meta.draw1
                  : ((meta.draw2 < meta.sum) ? meta.draw2 : meta.draw3));
    }

    apply {
        draw_first();
        if (meta.found == 0) {
            draw_more();
            if (meta.found == 0) {
                draw_more();
            }
        }
    }
}

/* Proportional: meta.r in [0, meta.total), a 64-bit value; the sum tree
 * walks it down to a leaf. The caller sets meta.mask = total - 1 (the sum
 * tree's read_root_to_walk), in an action before this control's. */
control ProportionalDraw(inout metadata_t meta) {
    /* The mask smeared, then the first attempt (meta.mask set before: in
     * the action, p4c would substitute it into every step). */
    action draw_first() {
        SMEAR_MASK
        random(meta.r, 64w0, 64w0xFFFFFFFFFFFFFFFF);
        meta.r = meta.r & meta.mask;
        meta.found = (bit<1>)(meta.r < meta.total);
    }

    action draw_more() {
#define DRAW_POINT(i) \
        random(meta.draw##i, 64w0, 64w0xFFFFFFFFFFFFFFFF); \
        meta.draw##i = meta.draw##i & meta.mask;
        FOR_EACH_MORE_DRAW(DRAW_POINT)
        meta.found = (bit<1>)(meta.draw1 < meta.total || meta.draw2 < meta.total
                              || meta.draw3 < meta.total);
        meta.r = (meta.draw1 < meta.total) ? meta.draw1
               : ((meta.draw2 < meta.total) ? meta.draw2 : meta.draw3);
    }

    apply {
        draw_first();
        if (meta.found == 0) {
            draw_more();
            if (meta.found == 0) {
                draw_more();
            }
        }
    }
}

#endif
