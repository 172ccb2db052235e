/*
 * sum_tree.p4 -- the priority sum tree, one register array (pair) per level.
 *
 * Stages, in pass order (each array touched at most once per pass):
 *   slot_priority  NUM_TABLE_SLOTS x 32 bit   the slots' priorities, where an
 *                                             INSERT/UPDATE/WRITE/RESET swaps
 *                                             in the new one and learns the change,
 *                                             with slot_priority_stamp (a pair):
 *                                             the stamp each priority belongs to
 *   tree_root      NUM_TABLES pairs           level 0: the table's total
 *   tree_l<l>      NUM_TABLES << l pairs      levels l = 1 .. L-1
 *   tree_leaf      NUM_TABLE_SLOTS x 32 bit   level L: the slot priorities again,
 *                                             for the walk's last step
 * A pair is two 32-bit arrays <name>_hi and <name>_lo holding one 64-bit sum
 * (a table's total reaches 2^44). Node n of level l for table t sits at index
 * (t << l) | n; its children are 2n and 2n+1 of level l+1. Every node holds the
 * sum of the leaves below it.
 *
 * Ops (meta.tree_op):
 *   TREE_ADD   swap the slot's priority, add the change (delta, modulo 2^64)
 *              to its ancestor in every level, write the leaf. Additions
 *              commute, so concurrent updates (bmv2's egress threads) leave
 *              every node equal to the sum of its leaves.
 *   TREE_WALK  prioritized SAMPLE: read the total, draw r in [0, total)
 *              (ProportionalDraw), walk down reading only the left child at
 *              each level, to the slot. The walk reports only the slot: the
 *              reply's priority is the slot record's (slot_store.p4), as one
 *              action per level lets another thread's ADD fall between a
 *              parent's read and its child's, so a sum carried down the walk
 *              may belong to no node.
 *   TREE_TOTAL the total only (SAMPLE, READ and the replies that report it).
 *
 * Each level's action leaves the next level's index in meta.cell (the root's
 * for level 1, level L-1's for the leaf; locate_slot the slot's, for ADD's
 * swap): an index computed in the action that uses it, p4c copies into each of
 * its register accesses, and bmv2 evaluates every copy into a temporary per
 * pass. The walk keeps its path in meta.cell alone (WALK_STEP): every field
 * an action writes costs each pass on bmv2.
 *
 * Changing SLOT_BITS (L) means listing levels 1 .. L-1 in FOR_EACH_INNER_LEVEL.
 */
#ifndef REPLAY_SUM_TREE_P4
#define REPLAY_SUM_TREE_P4

#ifndef FOR_EACH_INNER_LEVEL   /* a build for other sizes defines it first */
#define FOR_EACH_INNER_LEVEL(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif

const bit<8> TREE_ADD   = 1;
const bit<8> TREE_WALK  = 2;
const bit<8> TREE_TOTAL = 3;

/* Level l's cell on the way to the slot (ADD). */
#define ADD_CELL(l)  ((meta.table_index << (l)) | (meta.slot >> (SLOT_BITS - (l))))
/* The walk's step from the left child it read at one level (meta.cell, node
 * 2n of that level) to the left child of the node it goes to at the next:
 * node 2n, or 2n+1 when r is not below the left child's sum, one level down
 * is ((t << l) | 2n | right) << 1, so the cell alone carries the path. */
#define WALK_STEP(sum) ((meta.cell | (bit<32>)(bit<1>)(meta.r >= (sum))) << 1)

control SumTree(inout metadata_t meta) {
    ProportionalDraw() draw;

    register<bit<32>>(NUM_TABLE_SLOTS) slot_priority;
    register<bit<32>>(NUM_TABLE_SLOTS) slot_priority_stamp;
    register<bit<32>>(NUM_TABLES) tree_root_hi;
    register<bit<32>>(NUM_TABLES) tree_root_lo;
#define DECLARE_LEVEL(l) \
    register<bit<32>>(NUM_TABLES << l) tree_l##l##_hi; \
    register<bit<32>>(NUM_TABLES << l) tree_l##l##_lo;
    FOR_EACH_INNER_LEVEL(DECLARE_LEVEL)
    register<bit<32>>(NUM_TABLE_SLOTS) tree_leaf;

    /* ---- slot_priority ---------------------------------------------------- */
    /* An UPDATE (guard_op GUARD_CHECK) swaps only while the slot's leaf still
     * carries the stamp it checked: its guard check and this swap are separate
     * actions, and an INSERT on another egress thread may take the slot in
     * between; the UPDATE then leaves the leaf and carries the leaf's priority
     * on (to tree_leaf and the record). Every other TREE_ADD sets both. */
    action swap_priority() {
        slot_priority_stamp.read(meta.hi, meta.cell);
        slot_priority.read(meta.lo, meta.cell);
        meta.priority = (meta.guard_op == GUARD_CHECK && meta.hi != meta.stamp)
                        ? meta.lo : meta.priority;
        slot_priority.write(meta.cell, meta.priority);
        slot_priority_stamp.write(meta.cell, (meta.guard_op == GUARD_CHECK) ? meta.hi : meta.stamp);
        meta.delta = (bit<64>)meta.priority - (bit<64>)meta.lo;
    }

    table leaf_value {
        key = { meta.tree_op : exact; }
        actions = { swap_priority; NoAction; }
        const entries = {
            TREE_ADD  : swap_priority();
        }
        default_action = NoAction();
    }

    /* ---- level 0 ---------------------------------------------------------- */
    action add_root() {
        tree_root_hi.read(meta.hi, meta.table_index);
        tree_root_lo.read(meta.lo, meta.table_index);
        meta.total = (meta.hi ++ meta.lo) + meta.delta;
        tree_root_hi.write(meta.table_index, meta.total[63:32]);
        tree_root_lo.write(meta.table_index, meta.total[31:0]);
        meta.cell = ADD_CELL(1);
    }

    action read_root() {
        tree_root_hi.read(meta.hi, meta.table_index);
        tree_root_lo.read(meta.lo, meta.table_index);
        meta.total = meta.hi ++ meta.lo;
        meta.cell = meta.table_index << 1;   /* level 1, node 0 (the root's left child) */
    }

    table root {
        key = { meta.tree_op : exact; }
        actions = { add_root; read_root; NoAction; }
        const entries = {
            TREE_ADD   : add_root();
            TREE_WALK  : read_root();
            TREE_TOTAL : read_root();
        }
        default_action = NoAction();
    }

    /* ---- levels 1 .. L-1 -------------------------------------------------- */
#define LEVEL(l) \
    action add_l##l() { \
        tree_l##l##_hi.read(meta.hi, meta.cell); \
        tree_l##l##_lo.read(meta.lo, meta.cell); \
        meta.sum = (meta.hi ++ meta.lo) + meta.delta; \
        tree_l##l##_hi.write(meta.cell, meta.sum[63:32]); \
        tree_l##l##_lo.write(meta.cell, meta.sum[31:0]); \
        meta.cell = ADD_CELL(l + 1); \
    } \
    action descend_l##l() { \
        tree_l##l##_hi.read(meta.hi, meta.cell); \
        tree_l##l##_lo.read(meta.lo, meta.cell); \
        meta.sum = meta.hi ++ meta.lo; \
        meta.cell = WALK_STEP(meta.sum); \
        meta.r = (meta.r < meta.sum) ? meta.r : meta.r - meta.sum; \
    } \
    table level_l##l { \
        key = { meta.tree_op : exact; } \
        actions = { add_l##l; descend_l##l; NoAction; } \
        const entries = { \
            TREE_ADD  : add_l##l(); \
            TREE_WALK : descend_l##l(); \
        } \
        default_action = NoAction(); \
    }
    FOR_EACH_INNER_LEVEL(LEVEL)

    /* ---- level L ---------------------------------------------------------- */
    action write_leaf() {
        tree_leaf.write(meta.cell, meta.priority);
    }

    action descend_leaf() {
        tree_leaf.read(meta.lo, meta.cell);
        meta.slot = (meta.cell | (bit<32>)(bit<1>)(meta.r >= (bit<64>)meta.lo)) & (NUM_SLOTS - 1);
    }

    table leaf {
        key = { meta.tree_op : exact; }
        actions = { write_leaf; descend_leaf; NoAction; }
        const entries = {
            TREE_ADD  : write_leaf();
            TREE_WALK : descend_leaf();
        }
        default_action = NoAction();
    }

    action locate_slot() {
        meta.cell = (meta.table_index << SLOT_BITS) | meta.slot;
    }

    apply {
        if (meta.tree_op == TREE_ADD) {
            locate_slot();
            leaf_value.apply();
        }
        root.apply();
        if (meta.tree_op == TREE_WALK) {
            if (meta.total == 0) {
                meta.status = STATUS_EMPTY;
                meta.tree_op = 0;
            } else {
                draw.apply(meta);
                if (meta.found == 0) {
                    meta.tree_op = 0;
                }
            }
        }
        if (meta.tree_op == TREE_ADD || meta.tree_op == TREE_WALK) {
#define APPLY_LEVEL(l) level_l##l.apply();
            FOR_EACH_INNER_LEVEL(APPLY_LEVEL)
            leaf.apply();
        }
    }
}

#endif
