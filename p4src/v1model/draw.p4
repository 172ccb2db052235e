/*
 * draw.p4 -- the random draws of a SAMPLE reply, over power-of-two ranges only.
 *
 * To draw from [0, n): mask a 32-bit random value to the smallest power of two
 * >= n (the leading bit of n - 1, smeared right) and reject a value >= n,
 * which happens with probability < 1/2. SAMPLE_DRAWS attempts are made in the
 * same pass and the first one inside the range is taken, so the result is
 * exactly uniform over [0, n); if every attempt overshoots (probability
 * < 2^-SAMPLE_DRAWS) meta.found stays 0 and the reply is drawn again in
 * another pass (replay_service.p4).
 */
#ifndef REPLAY_DRAW_P4
#define REPLAY_DRAW_P4

/* Attempt i: meta.draw<i>, a random value masked to meta.mask. */
#define FOR_EACH_DRAW(X) X(0) X(1) X(2) X(3)

/* One step of smearing meta.mask's leading bit to the right; six steps turn
 * bound - 1 into the smallest 2^k - 1 >= it. Each step is its own action: in
 * one action p4c would substitute every step into the next, doubling the
 * expression six times. */
#define SMEAR_MASK \
        smear(1); \
        smear(2); \
        smear(4); \
        smear(8); \
        smear(16); \
        smear(32);

/* Uniform: meta.slot in [0, meta.size). */
control UniformDraw(inout metadata_t meta) {
    action smear(bit<8> shift) {
        meta.mask = meta.mask | (meta.mask >> shift);
    }

    action draw_slot() {
#define DRAW_SLOT(i) \
        random(meta.lo, 32w0, 32w0xFFFFFFFF); \
        meta.draw##i = (bit<64>)meta.lo & meta.mask;
        FOR_EACH_DRAW(DRAW_SLOT)
        meta.sum = (bit<64>)meta.size;
        meta.found = (bit<1>)(meta.draw0 < meta.sum || meta.draw1 < meta.sum
                              || meta.draw2 < meta.sum || meta.draw3 < meta.sum);
        meta.slot = (bit<32>)((meta.draw0 < meta.sum) ? meta.draw0
                  : ((meta.draw1 < meta.sum) ? meta.draw1
                  : ((meta.draw2 < meta.sum) ? meta.draw2 : meta.draw3)));
    }

    apply {
        meta.mask = (bit<64>)(meta.size - 1);
        SMEAR_MASK
        draw_slot();
    }
}

/* Proportional: meta.r in [0, meta.total), a 64-bit value drawn as two
 * 32-bit halves; the sum tree walks it down to a leaf. */
control ProportionalDraw(inout metadata_t meta) {
    action smear(bit<8> shift) {
        meta.mask = meta.mask | (meta.mask >> shift);
    }

    action draw_point() {
#define DRAW_POINT(i) \
        random(meta.hi, 32w0, 32w0xFFFFFFFF); \
        random(meta.lo, 32w0, 32w0xFFFFFFFF); \
        meta.draw##i = (meta.hi ++ meta.lo) & meta.mask;
        FOR_EACH_DRAW(DRAW_POINT)
        meta.found = (bit<1>)(meta.draw0 < meta.total || meta.draw1 < meta.total
                              || meta.draw2 < meta.total || meta.draw3 < meta.total);
        meta.r = (meta.draw0 < meta.total) ? meta.draw0
               : ((meta.draw1 < meta.total) ? meta.draw1
               : ((meta.draw2 < meta.total) ? meta.draw2 : meta.draw3));
    }

    apply {
        meta.mask = meta.total - 1;
        SMEAR_MASK
        draw_point();
    }
}

#endif
