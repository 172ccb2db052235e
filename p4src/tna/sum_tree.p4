/*
 * tna/sum_tree.p4 -- the priority sum tree on TNA: the same stages, tables
 * and ops as v1model/sum_tree.p4, one Register per level.
 *
 * Differences from v1model, all from what one stateful ALU does in one pass:
 *   - Sums are 32 bits (v1model: 64-bit sums as _hi/_lo pairs, so
 *     tree_root_hi/_lo is tree_root here, and so on). A 64-bit add needs a
 *     carry between the halves, which one stateful ALU cannot pass to
 *     another in the same pass. A table's priorities must sum below 2^31
 *     (with Q16.16 priorities: 32,768 in all), for a walk and a draw tell
 *     r < sum by the sign bit of r - sum: a gateway cannot compare two
 *     fields (docs/hardware.md).
 *   - The walk's comparison and subtraction at each level follow the
 *     level's read in the next stage (a stateful ALU outputs one value), so
 *     a level takes two stages and the walk is spread over phases 1 .. 4
 *     (tna/phases.p4): the draw in a phase of its own (PHASE_DRAW,
 *     tna/draw.p4), three levels in each of phases 1 .. 3, the last two
 *     levels and the leaves in phase 4.
 *   - An ADD (INSERT, UPDATE, WRITE, RESET) swaps the slot's priority in
 *     phase 0, which gives the change, and adds it to the root and every
 *     level and writes the leaf in phase 1: the tree is a sum tree after
 *     every packet.
 *   - Walk phase k keeps its path in meta.path<k> (bit L-l = went right at
 *     level l, the bits below still 0) and an ADD its slot there too, so that
 *     the cell an ADD changes and the left child a WALK reads at level l are
 *     one index, {table, the path's top l bits}: a stateful ALU has one
 *     address per table (tna/arch.p4).
 * Node n of level l for table t is at index (t << l) | n, as on v1model.
 */
#ifndef REPLAY_SUM_TREE_P4
#define REPLAY_SUM_TREE_P4

/* The inner levels 1 .. L-1, by the walk phase that reads them (phase 4 also
 * reads the leaves); an ADD writes every level in phase 1. A build with
 * another SLOT_BITS defines the four lists (tna/phases.p4). */
#ifndef WALK_LEVELS_1
#define WALK_LEVELS_1(X) X(1, 1) X(2, 1) X(3, 1)
#define WALK_LEVELS_2(X) X(4, 2) X(5, 2) X(6, 2)
#define WALK_LEVELS_3(X) X(7, 3) X(8, 3) X(9, 3)
#define WALK_LEVELS_4(X) X(10, 4) X(11, 4)
#endif
#define FOR_EACH_INNER_LEVEL(X) \
    WALK_LEVELS_1(X) WALK_LEVELS_2(X) WALK_LEVELS_3(X) WALK_LEVELS_4(X)
const bit<8> ADD_PHASE = 1;
const bit<8> WALK_LAST_PHASE = 4;

/* A level's register actions: add the change; walk phase k: r<k> minus the
 * cell (the left child's sum), whose sign bit says go left. */
#define SUM_ADD(reg) \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_add = { \
        void apply(inout bit<32> value, out bit<32> result) { \
            value = value + meta.carried_delta; \
            result = value; \
        } \
    };
#define SUM_DESCEND(reg, k) \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_descend = { \
        void apply(inout bit<32> value, out bit<32> over) { over = meta.r##k - value; } \
    };

/* The tree in the parts a request's phases use, each applied in a branch of
 * the service of its own (tna/arch.p4), so that bf-p4c can lay branches that
 * exclude each other over the same stages. The root and slot_priority keep
 * the names they have in SumTree on v1model. */

/* ---- level 0: read in phase 0, added to in phase 1 ------------------------- */
control SumTreeRoot(inout metadata_t meta) {
    @name(".ReplayEgress.replay.tree.tree_root")
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) tree_root;
    SUM_ADD(tree_root)
    RegisterAction<bit<32>, bit<32>, bit<32>>(tree_root) tree_root_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };

    action add_root() {
        meta.total = tree_root_add.execute(meta.table_index);
    }

    action read_root() {
        meta.total = tree_root_read.execute(meta.table_index);
    }

    /* Phase 0 reads the total for every op that may need it, before the guard
     * and the size check can turn the op into TREE_TOTAL (a STALE UPDATE's or
     * a BELOW_MIN_SIZE reply's total). */
    table root {
        key = {
            meta.tree_op : exact;
            meta.phase   : exact;
        }
        actions = { add_root; read_root; NoAction; }
        const entries = {
            (TREE_ADD, ADD_PHASE) : add_root();
            (TREE_ADD, 0)         : read_root();
            (TREE_WALK, 0)        : read_root();
            (TREE_TOTAL, 0)       : read_root();
        }
        default_action = NoAction();
    }

    apply {
        root.apply();
    }
}

/* ---- phase 0, an ADD: the change to the slot's priority (slot_priority) ---- */
control SumTreeChange(inout metadata_t meta) {
    @name(".ReplayEgress.replay.tree.slot_priority")
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_priority;
    CELL_INDEX(priority_cell);
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_priority) priority_swap = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            value = meta.priority;
        }
    };

    action swap_priority() {
        meta.hi = priority_swap.execute(SLOT_CELL(priority_cell));
    }

    table leaf_value {
        key = { meta.tree_op : exact; }
        actions = { swap_priority; NoAction; }
        const entries = {
            TREE_ADD  : swap_priority();
        }
        default_action = NoAction();
    }

    apply {
        leaf_value.apply();
        if (meta.tree_op == TREE_ADD) {
            meta.delta = meta.priority - meta.hi;   /* new - old */
        }
    }
}

/* ---- phase 0, a prioritized SAMPLE: an empty tree has nothing to draw ---- */
control SumTreeEmpty(inout metadata_t meta) {
    apply {
        if (meta.total == 0) {
            meta.status = STATUS_EMPTY;
            meta.tree_op = 0;
        }
    }
}

/* ---- phases 1 .. 4: an ADD's levels and leaf, a walk's levels -------------- */
control SumTree(inout metadata_t meta) {
#define DECLARE_LEVEL(l, k) \
    Register<bit<32>, bit<32>>(NUM_TABLES << l, 0) tree_l##l; \
    SUM_ADD(tree_l##l) \
    SUM_DESCEND(tree_l##l, k) \
    CELL_INDEX(level_cell_l##l);
    FOR_EACH_INNER_LEVEL(DECLARE_LEVEL)
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) tree_leaf;
    CELL_INDEX(leaf_cell);

    /* ---- levels 1 .. L-1: level l of walk phase k steers by path<k>, r<k> --- */
#define LEVEL_CELL(l, k) \
    level_cell_l##l.get({meta.table_index[TABLE_BITS-1:0], meta.path##k[SLOT_BITS-1:SLOT_BITS-l]})
#define LEVEL(l, k) \
    action add_l##l() { \
        tree_l##l##_add.execute(LEVEL_CELL(l, k)); \
    } \
    action descend_l##l() { \
        meta.over##k = tree_l##l##_descend.execute(LEVEL_CELL(l, k)); \
    } \
    action step_right_l##l() { \
        meta.path##k[SLOT_BITS-l:SLOT_BITS-l] = 1; \
        meta.r##k = meta.over##k; \
    } \
    table level_l##l { \
        key = { \
            meta.tree_op : exact; \
            meta.phase   : exact; \
        } \
        actions = { add_l##l; descend_l##l; NoAction; } \
        const entries = { \
            (TREE_ADD, ADD_PHASE) : add_l##l(); \
            (TREE_WALK, k)        : descend_l##l(); \
        } \
        default_action = NoAction(); \
    }
    FOR_EACH_INNER_LEVEL(LEVEL)

    /* ---- level L: written in phase 1, read in the last walk phase ---------- */
    RegisterAction<bit<32>, bit<32>, bit<32>>(tree_leaf) leaf_write = {
        void apply(inout bit<32> value) { value = meta.priority; }
    };
    SUM_DESCEND(tree_leaf, 4)

    action write_leaf() {
        leaf_write.execute(leaf_cell.get({meta.table_index[TABLE_BITS-1:0],
                                          meta.path4[SLOT_BITS-1:0]}));
    }

    action descend_leaf() {
        meta.over4 = tree_leaf_descend.execute(leaf_cell.get({meta.table_index[TABLE_BITS-1:0],
                                                      meta.path4[SLOT_BITS-1:0]}));
    }

    table leaf {
        key = {
            meta.tree_op : exact;
            meta.phase   : exact;
        }
        actions = { write_leaf; descend_leaf; NoAction; }
        const entries = {
            (TREE_ADD, ADD_PHASE)        : write_leaf();
            (TREE_WALK, WALK_LAST_PHASE) : descend_leaf();
        }
        default_action = NoAction();
    }

    /* The walk's step after a level (meta.over<k> = r - the left child's sum):
     * go left if r falls inside the left child (over < 0), else right
     * (step_right_l<l>: the path's bit set, r reduced to over). The walk
     * reports only the slot; the reply's priority is the slot record's
     * (tna/slot_store.p4). */

    apply {
        if (meta.tree_op == TREE_ADD || meta.tree_op == TREE_WALK) {
#define APPLY_LEVEL(l, k) \
            level_l##l.apply(); \
            if (meta.tree_op == TREE_WALK && meta.phase == k && meta.over##k[31:31] == 0) { \
                step_right_l##l(); \
            }
            FOR_EACH_INNER_LEVEL(APPLY_LEVEL)
            leaf.apply();
            if (meta.tree_op == TREE_WALK && meta.phase == WALK_LAST_PHASE
                && meta.over4[31:31] == 0) {
                meta.path4[0:0] = 1;      /* the slot, carried to the record's phase */
            }
        }
    }
}

#endif
