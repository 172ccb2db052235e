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

#define FOR_EACH_DRAW(X) X(0) X(1) X(2) X(3)

/* Uniform: meta.slot in [0, meta.size). */
control UniformDraw(inout metadata_t meta) {
    action draw_slot() {
        bit<32> mask = meta.size - 1;
        mask = mask | (mask >> 1);
        mask = mask | (mask >> 2);
        mask = mask | (mask >> 4);
        mask = mask | (mask >> 8);
        mask = mask | (mask >> 16);
#define DRAW_SLOT(i) \
        bit<32> s##i; \
        random(s##i, 32w0, 32w0xFFFFFFFF); \
        s##i = s##i & mask;
        FOR_EACH_DRAW(DRAW_SLOT)
        meta.found = (bit<1>)(s0 < meta.size || s1 < meta.size || s2 < meta.size
                              || s3 < meta.size);
        meta.slot = (s0 < meta.size) ? s0 : ((s1 < meta.size) ? s1
                  : ((s2 < meta.size) ? s2 : s3));
    }

    apply {
        draw_slot();
    }
}

/* Proportional: meta.r in [0, meta.total), a 64-bit value drawn as two
 * 32-bit halves; the sum tree walks it down to a leaf. */
control ProportionalDraw(inout metadata_t meta) {
    action draw_point() {
        bit<64> mask = meta.total - 1;
        mask = mask | (mask >> 1);
        mask = mask | (mask >> 2);
        mask = mask | (mask >> 4);
        mask = mask | (mask >> 8);
        mask = mask | (mask >> 16);
        mask = mask | (mask >> 32);
#define DRAW_POINT(i) \
        bit<32> hi##i; \
        bit<32> lo##i; \
        random(hi##i, 32w0, 32w0xFFFFFFFF); \
        random(lo##i, 32w0, 32w0xFFFFFFFF); \
        bit<64> p##i = (hi##i ++ lo##i) & mask;
        FOR_EACH_DRAW(DRAW_POINT)
        meta.found = (bit<1>)(p0 < meta.total || p1 < meta.total || p2 < meta.total
                              || p3 < meta.total);
        meta.r = (p0 < meta.total) ? p0 : ((p1 < meta.total) ? p1
               : ((p2 < meta.total) ? p2 : p3));
    }

    apply {
        draw_point();
    }
}

#endif
