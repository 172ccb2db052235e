/*
 * tna/draw.p4 -- the random draws of a SAMPLE reply on TNA, over
 * power-of-two ranges only (as v1model/draw.p4).
 *
 * To draw from [0, n): a 32-bit Random<> value masked to the smallest power
 * of two >= n, rejected when >= n. The mask comes from a ternary table on
 * n, one lookup where v1model smears the bit in six shift steps. Four
 * attempts are made in one pass and the first one inside the range is taken;
 * when all four overshoot (probability < 2^-4) meta.found stays 0 and the
 * reply is drawn again in another pass through LOOP_PORT (PHASE_DRAW again),
 * as v1model recirculates it: every draw stays exactly uniform.
 */
#ifndef REPLAY_DRAW_P4
#define REPLAY_DRAW_P4

/* Ternary entries: a bound n -> the mask 2^k - 1 of the smallest 2^k >= n:
 * n a power of two 2^b first (mask 2^b - 1), then n whose leading bit is
 * bit b (mask 2^(b+1) - 1). */
#define BOUND_MASKS(set) \
    32w0x80000000 &&& 32w0xFFFFFFFF : set(32w0x7FFFFFFF); \
    32w0x40000000 &&& 32w0xFFFFFFFF : set(32w0x3FFFFFFF); \
    32w0x20000000 &&& 32w0xFFFFFFFF : set(32w0x1FFFFFFF); \
    32w0x10000000 &&& 32w0xFFFFFFFF : set(32w0x0FFFFFFF); \
    32w0x08000000 &&& 32w0xFFFFFFFF : set(32w0x07FFFFFF); \
    32w0x04000000 &&& 32w0xFFFFFFFF : set(32w0x03FFFFFF); \
    32w0x02000000 &&& 32w0xFFFFFFFF : set(32w0x01FFFFFF); \
    32w0x01000000 &&& 32w0xFFFFFFFF : set(32w0x00FFFFFF); \
    32w0x00800000 &&& 32w0xFFFFFFFF : set(32w0x007FFFFF); \
    32w0x00400000 &&& 32w0xFFFFFFFF : set(32w0x003FFFFF); \
    32w0x00200000 &&& 32w0xFFFFFFFF : set(32w0x001FFFFF); \
    32w0x00100000 &&& 32w0xFFFFFFFF : set(32w0x000FFFFF); \
    32w0x00080000 &&& 32w0xFFFFFFFF : set(32w0x0007FFFF); \
    32w0x00040000 &&& 32w0xFFFFFFFF : set(32w0x0003FFFF); \
    32w0x00020000 &&& 32w0xFFFFFFFF : set(32w0x0001FFFF); \
    32w0x00010000 &&& 32w0xFFFFFFFF : set(32w0x0000FFFF); \
    32w0x00008000 &&& 32w0xFFFFFFFF : set(32w0x00007FFF); \
    32w0x00004000 &&& 32w0xFFFFFFFF : set(32w0x00003FFF); \
    32w0x00002000 &&& 32w0xFFFFFFFF : set(32w0x00001FFF); \
    32w0x00001000 &&& 32w0xFFFFFFFF : set(32w0x00000FFF); \
    32w0x00000800 &&& 32w0xFFFFFFFF : set(32w0x000007FF); \
    32w0x00000400 &&& 32w0xFFFFFFFF : set(32w0x000003FF); \
    32w0x00000200 &&& 32w0xFFFFFFFF : set(32w0x000001FF); \
    32w0x00000100 &&& 32w0xFFFFFFFF : set(32w0x000000FF); \
    32w0x00000080 &&& 32w0xFFFFFFFF : set(32w0x0000007F); \
    32w0x00000040 &&& 32w0xFFFFFFFF : set(32w0x0000003F); \
    32w0x00000020 &&& 32w0xFFFFFFFF : set(32w0x0000001F); \
    32w0x00000010 &&& 32w0xFFFFFFFF : set(32w0x0000000F); \
    32w0x00000008 &&& 32w0xFFFFFFFF : set(32w0x00000007); \
    32w0x00000004 &&& 32w0xFFFFFFFF : set(32w0x00000003); \
    32w0x00000002 &&& 32w0xFFFFFFFF : set(32w0x00000001); \
    32w0x00000001 &&& 32w0xFFFFFFFF : set(32w0x00000000); \
    32w0x80000000 &&& 32w0x80000000 : set(32w0xFFFFFFFF); \
    32w0x40000000 &&& 32w0xC0000000 : set(32w0x7FFFFFFF); \
    32w0x20000000 &&& 32w0xE0000000 : set(32w0x3FFFFFFF); \
    32w0x10000000 &&& 32w0xF0000000 : set(32w0x1FFFFFFF); \
    32w0x08000000 &&& 32w0xF8000000 : set(32w0x0FFFFFFF); \
    32w0x04000000 &&& 32w0xFC000000 : set(32w0x07FFFFFF); \
    32w0x02000000 &&& 32w0xFE000000 : set(32w0x03FFFFFF); \
    32w0x01000000 &&& 32w0xFF000000 : set(32w0x01FFFFFF); \
    32w0x00800000 &&& 32w0xFF800000 : set(32w0x00FFFFFF); \
    32w0x00400000 &&& 32w0xFFC00000 : set(32w0x007FFFFF); \
    32w0x00200000 &&& 32w0xFFE00000 : set(32w0x003FFFFF); \
    32w0x00100000 &&& 32w0xFFF00000 : set(32w0x001FFFFF); \
    32w0x00080000 &&& 32w0xFFF80000 : set(32w0x000FFFFF); \
    32w0x00040000 &&& 32w0xFFFC0000 : set(32w0x0007FFFF); \
    32w0x00020000 &&& 32w0xFFFE0000 : set(32w0x0003FFFF); \
    32w0x00010000 &&& 32w0xFFFF0000 : set(32w0x0001FFFF); \
    32w0x00008000 &&& 32w0xFFFF8000 : set(32w0x0000FFFF); \
    32w0x00004000 &&& 32w0xFFFFC000 : set(32w0x00007FFF); \
    32w0x00002000 &&& 32w0xFFFFE000 : set(32w0x00003FFF); \
    32w0x00001000 &&& 32w0xFFFFF000 : set(32w0x00001FFF); \
    32w0x00000800 &&& 32w0xFFFFF800 : set(32w0x00000FFF); \
    32w0x00000400 &&& 32w0xFFFFFC00 : set(32w0x000007FF); \
    32w0x00000200 &&& 32w0xFFFFFE00 : set(32w0x000003FF); \
    32w0x00000100 &&& 32w0xFFFFFF00 : set(32w0x000001FF); \
    32w0x00000080 &&& 32w0xFFFFFF80 : set(32w0x000000FF); \
    32w0x00000040 &&& 32w0xFFFFFFC0 : set(32w0x0000007F); \
    32w0x00000020 &&& 32w0xFFFFFFE0 : set(32w0x0000003F); \
    32w0x00000010 &&& 32w0xFFFFFFF0 : set(32w0x0000001F); \
    32w0x00000008 &&& 32w0xFFFFFFF8 : set(32w0x0000000F); \
    32w0x00000004 &&& 32w0xFFFFFFFC : set(32w0x00000007); \
    32w0x00000002 &&& 32w0xFFFFFFFE : set(32w0x00000003); \
    32w0x00000000 &&& 32w0xFFFFFFFF : set(32w0x00000000);

/* Four masked draws from [0, 2^k) into meta.draw0..3; the first one below
 * meta.lo (the bound n) into `result`, with meta.found = 1. Each draw has its
 * own result field (uniform: the slot; proportional: r), so that the compiler
 * does not tie the slot's PHV bits to r's. A gateway cannot compare two
 * fields, so each draw becomes its difference from n, whose sign bit answers
 * (exact: n and 2^k are at most 2^31, tna/sum_tree.p4), and the one taken
 * gets n back. */
control MaskedDraw(inout metadata_t meta, out bit<32> result) {
    Random<bit<32>>() rng0;
    Random<bit<32>>() rng1;
    Random<bit<32>>() rng2;
    Random<bit<32>>() rng3;

    action set_mask(bit<32> mask) {
        meta.mask = mask;
    }

    /* A random value and a mask from the table in one instruction would be
     * two action-data operands: the mask is in metadata by now. One draw per
     * action: a table passes 32 bits from the random and hash units. */
    action draw_0() { meta.draw0 = rng0.get() & meta.mask; }
    action draw_1() { meta.draw1 = rng1.get() & meta.mask; }
    action draw_2() { meta.draw2 = rng2.get() & meta.mask; }
    action draw_3() { meta.draw3 = rng3.get() & meta.mask; }

    action less_bound() {
        meta.draw0 = meta.draw0 - meta.lo;
        meta.draw1 = meta.draw1 - meta.lo;
        meta.draw2 = meta.draw2 - meta.lo;
        meta.draw3 = meta.draw3 - meta.lo;
    }

    table draw_mask {
        key = { meta.lo : ternary; }     /* the bound */
        actions = { set_mask; }
        const entries = {
            BOUND_MASKS(set_mask)
        }
        default_action = set_mask(0);
    }

    apply {
        draw_mask.apply();
        draw_0();
        draw_1();
        draw_2();
        draw_3();
        less_bound();
        meta.found = 1;
        result = 0;
        if (meta.draw0[31:31] == 1) {
            result = meta.draw0 + meta.lo;
        } else if (meta.draw1[31:31] == 1) {
            result = meta.draw1 + meta.lo;
        } else if (meta.draw2[31:31] == 1) {
            result = meta.draw2 + meta.lo;
        } else if (meta.draw3[31:31] == 1) {
            result = meta.draw3 + meta.lo;
        } else {
            meta.found = 0;   /* drawn again in another pass */
        }
    }
}

/* PHASE_DRAW: a SAMPLE's draw, into meta.r: uniform, a slot in [0, size);
 * prioritized, r in [0, total), which the sum tree walks down (both carried
 * from phase 0 in the request's header, tna/loop.p4). One draw for both
 * modes, in a pass of its own, so that neither waits for phase 0's ring or
 * root. When every attempt overshot, the next pass draws again
 * (meta.next_phase), with the same bound: every draw stays exactly uniform.
 *
 * The bound goes to meta.lo through the hash unit, which ties no PHV
 * container of the one to the other's (the draws' arithmetic would put the
 * size, the total and everything moved to and from them in one cluster of
 * containers, too large for the compiler to place: docs/hardware.md). */
control SampleDraw(inout metadata_t meta) {
    MaskedDraw() masked;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) bound_of_size;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) bound_of_total;

    apply {
        if (meta.tree_op == TREE_WALK) {
            meta.lo = bound_of_total.get({meta.total});
        } else {
            meta.lo = bound_of_size.get({meta.size});
        }
        bit<32> r = 0;
        masked.apply(meta, r);
        meta.r = r;
        if (meta.found == 0) {
            meta.next_phase = PHASE_DRAW;   /* every attempt overshot: again */
        }
    }
}

/* The tree by phase (the service's tree steps, one signature on both
 * architectures): phase 0 applies the tree's parts on their own
 * (tna/sum_tree.p4: SumTreeRoot, SumTreeChange, SumTreeEmpty) and nothing
 * after them; the later phases a SAMPLE's draw (PHASE_DRAW) or the levels.
 * The levels and the draw keep the names they have on v1model (@name). */
control SumTreeFirstPhase(inout metadata_t meta) {
    apply { }
}

control SumTreeLaterPhases(inout metadata_t meta) {
    @name(".ReplayEgress.replay.tree") SumTree() tree;
    @name(".ReplayEgress.replay.draw") SampleDraw() draw;

    apply {
        if (meta.phase == PHASE_DRAW) {
            draw.apply(meta);
        } else {
            tree.apply(meta);
        }
    }
}

#endif
