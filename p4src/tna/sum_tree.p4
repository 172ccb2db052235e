/*
 * tna/sum_tree.p4 -- the priority sum tree on TNA: the same stages, tables
 * and ops as v1model/sum_tree.p4, one Register per level.
 *
 * Differences from v1model, all from what one stateful ALU does in one pass:
 *   - Sums are 32 bits (v1model: 64-bit sums as _hi/_lo pairs, so
 *     tree_root_hi/_lo is tree_root here, and so on). A 64-bit add needs a
 *     carry between the halves, which one stateful ALU cannot pass to
 *     another in the same pass. A table's priorities must therefore sum
 *     below 2^32 (with Q16.16 priorities: 65,536 in all); beyond that the
 *     sums wrap (docs/hardware.md).
 *   - The walk's comparison and subtraction at each level follow the
 *     level's read in the next stage (a stateful ALU outputs one value).
 *   - The walk keeps its path in meta.slot (bit L-l = went right at level
 *     l, the bits below still 0), so that the cell an ADD changes and the
 *     left child a WALK reads at level l are one index, {table, the slot's
 *     top l bits}: a stateful ALU has one address per table (tna/arch.p4).
 * Node n of level l for table t is at index (t << l) | n, as on v1model.
 */
#ifndef REPLAY_SUM_TREE_P4
#define REPLAY_SUM_TREE_P4

#ifndef FOR_EACH_INNER_LEVEL
#define FOR_EACH_INNER_LEVEL(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif

const bit<8> TREE_ADD   = 1;
const bit<8> TREE_WALK  = 2;
const bit<8> TREE_TOTAL = 3;

/* A level's register actions: add the change, or read the cell. */
#define SUM_ACTIONS(reg) \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_add = { \
        void apply(inout bit<32> value, out bit<32> result) { \
            value = value + meta.delta[31:0]; \
            result = value; \
        } \
    }; \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_read = { \
        void apply(inout bit<32> value, out bit<32> result) { result = value; } \
    };

control SumTree(inout metadata_t meta) {
    ProportionalDraw() draw;

    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_priority;
    CELL_INDEX(priority_cell);
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) tree_root;
#define DECLARE_LEVEL(l) \
    Register<bit<32>, bit<32>>(NUM_TABLES << l, 0) tree_l##l; \
    SUM_ACTIONS(tree_l##l) \
    CELL_INDEX(level_cell_l##l);
    FOR_EACH_INNER_LEVEL(DECLARE_LEVEL)
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) tree_leaf;
    CELL_INDEX(leaf_cell);

    SUM_ACTIONS(tree_root)

    /* ---- slot_priority ---------------------------------------------------- */
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_priority) priority_swap = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            value = meta.priority;
        }
    };

    action swap_priority() {
        meta.lo = priority_swap.execute(SLOT_CELL(priority_cell));
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
        meta.total = (bit<64>)tree_root_add.execute(meta.table_index);
    }

    action read_root() {
        meta.total = (bit<64>)tree_root_read.execute(meta.table_index);
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
#define LEVEL_CELL(l) \
    level_cell_l##l.get({meta.table_index[TABLE_BITS-1:0], meta.slot[SLOT_BITS-1:SLOT_BITS-l]})
#define LEVEL(l) \
    action add_l##l() { \
        tree_l##l##_add.execute(LEVEL_CELL(l)); \
    } \
    action descend_l##l() { \
        meta.hi = tree_l##l##_read.execute(LEVEL_CELL(l)); \
    } \
    action step_right_l##l() { \
        meta.slot[SLOT_BITS-l:SLOT_BITS-l] = 1; \
        meta.r[31:0] = meta.r[31:0] - meta.hi; \
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
    RegisterAction<bit<32>, bit<32>, bit<32>>(tree_leaf) leaf_write = {
        void apply(inout bit<32> value) { value = meta.priority; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(tree_leaf) leaf_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };

    action write_leaf() {
        leaf_write.execute(SLOT_CELL(leaf_cell));
    }

    action descend_leaf() {
        meta.hi = leaf_read.execute(SLOT_CELL(leaf_cell));
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

    /* The walk's step after reading a left child's sum (meta.hi): go left
     * if r falls inside it, else right (step_right_l<l>: the path's bit set,
     * r reduced). The walk reports only the slot; the reply's priority is the
     * slot record's (tna/slot_store.p4). */

    apply {
        leaf_value.apply();
        if (meta.tree_op == TREE_ADD) {
            meta.delta[31:0] = meta.priority - meta.lo;
        }
        root.apply();
        if (meta.tree_op == TREE_WALK) {
            meta.slot = 0;
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
#define APPLY_LEVEL(l) \
            level_l##l.apply(); \
            if (meta.tree_op == TREE_WALK) { \
                if (meta.r[31:0] >= meta.hi) { step_right_l##l(); } \
            }
            FOR_EACH_INNER_LEVEL(APPLY_LEVEL)
            leaf.apply();
            if (meta.tree_op == TREE_WALK && meta.r[31:0] >= meta.hi) {
                meta.slot[0:0] = 1;
            }
        }
    }
}

#endif
