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
 * Ops (meta.tree_op), each one action (bmv2 locks every array an action
 * touches for its duration, so each is atomic against the other threads):
 *   TREE_ADD   swap the slot's priority, add the change (delta, modulo 2^64)
 *              to its ancestor in every level, write the leaf.
 *   TREE_WALK  prioritized SAMPLE: read the total, draw r in [0, total)
 *              (ProportionalDraw), then walk down reading only the left child
 *              at each level, to the slot. The total and the walk are two
 *              actions, so an ADD may fall between them: r is then drawn from
 *              the total before it and walked down the tree after it (an r
 *              the change left at or past the total goes right on every
 *              level, to the table's last slot); the reply's priority is the
 *              slot record's (slot_store.p4), never a sum the walk carried.
 *   TREE_TOTAL the total only (SAMPLE, READ and the replies that report it).
 *
 * The TNA program has one stage per level; here each op is one action, so
 * that it is atomic on bmv2 and costs no table apply per level. Within an
 * action p4c copies an expression assigned to a field into every later use
 * of that field, and bmv2 evaluates each copy: the paths are kept in fields
 * that each step computes from themselves (meta.path: ADD_STEP, meta.cell:
 * WALK_STEP), which p4c leaves as one assignment; the change is added in
 * 32-bit halves (ADD_TO_PAIR), each found once per ADD, instead of as one
 * 64-bit value p4c would copy into both writes; a walk step subtracts a left
 * child's sum only when it goes right (a ternary's other side is not
 * evaluated). bmv2 evaluates every operator of every expression of a pass,
 * so these forms are what a prioritized copy and an UPDATE cost it.
 *
 * Changing SLOT_BITS (L) means listing levels 1 .. L-1 in FOR_EACH_INNER_LEVEL
 * and in FOR_EACH_INNER_LEVEL_UP.
 */
#ifndef REPLAY_SUM_TREE_P4
#define REPLAY_SUM_TREE_P4

#ifndef FOR_EACH_INNER_LEVEL   /* a build for other sizes defines both first */
#define FOR_EACH_INNER_LEVEL(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
/* The same levels from the leaves up, the order ADD climbs them in. */
#define FOR_EACH_INNER_LEVEL_UP(X) \
    X(11) X(10) X(9) X(8) X(7) X(6) X(5) X(4) X(3) X(2) X(1)
#endif

/* ADD's step up from a cell of level l + 1 to its parent on level l: the
 * slot's cell (t << L) | slot shifted right, since level l's cell on the way
 * to the slot is (t << l) | (slot >> (L - l)). A step reads the field it
 * writes, so p4c keeps it one assignment that the level's four accesses share. */
#define ADD_STEP meta.path = meta.path >> 1;
/* A pair's cell plus the change (meta.hi, meta.lo as read), in 32-bit halves
 * (meta.delta_lo, and meta.delta_hi: all ones for a negative change): the low
 * half wraps, and carries when its sum is below what was added. Each half
 * reads the field it writes, so p4c keeps two assignments and the writes take
 * the fields. */
#define ADD_TO_PAIR(name, index) \
        meta.lo = meta.lo + meta.delta_lo; \
        meta.hi = meta.hi + ((meta.lo < meta.delta_lo) ? meta.delta_hi + 1 : meta.delta_hi); \
        name##_hi.write(index, meta.hi); \
        name##_lo.write(index, meta.lo);
/* The walk's step from the left child it read at one level (meta.cell, node
 * 2n of that level) to the left child of the node it goes to at the next:
 * node 2n, or 2n+1 when r is not below the left child's sum, one level down
 * is ((t << l) | 2n | right) << 1, so the cell alone carries the path. */
#define WALK_STEP(sum) ((meta.cell << 1) | ((meta.r >= (sum)) ? 32w2 : 32w0))

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

    /* ---- TREE_ADD: one action ------------------------------------------ */
    /* Swap the slot's priority, then add the change to its ancestor on every
     * level and write the leaf. An UPDATE (guard_op GUARD_CHECK) swaps only
     * while the slot's leaf still carries the stamp it checked: its guard
     * check and this action are separate actions, and an INSERT on another
     * egress thread may take the slot in between; the UPDATE then leaves the
     * leaf and carries the leaf's priority on (to tree_leaf and the record).
     * Every other TREE_ADD sets both. One action locks every level's arrays
     * on bmv2, so a walk (one action too) sees the path before or after. */
#define ADD_LEVEL(l) \
        ADD_STEP \
        tree_l##l##_hi.read(meta.hi, meta.path); \
        tree_l##l##_lo.read(meta.lo, meta.path); \
        ADD_TO_PAIR(tree_l##l, meta.path)
    /* The slot's cell, also the path's start (ADD_STEP), in an action of their
     * own: fields, not expressions p4c would copy into every access of add(). */
    action locate_slot() {
        meta.cell = (meta.table_index << SLOT_BITS) | meta.slot;
        meta.path = meta.cell;
    }

    action add() {
        slot_priority_stamp.read(meta.hi, meta.cell);
        slot_priority.read(meta.lo, meta.cell);
        meta.priority = (meta.guard_op == GUARD_CHECK && meta.hi != meta.stamp)
                        ? meta.lo : meta.priority;
        slot_priority.write(meta.cell, meta.priority);
        slot_priority_stamp.write(meta.cell, (meta.guard_op == GUARD_CHECK) ? meta.hi : meta.stamp);
        /* new - old, modulo 2^64, as two halves (p4c keeps both fields: the
         * root's read below overwrites the meta.lo they read) */
        meta.delta_lo = meta.priority - meta.lo;
        meta.delta_hi = (meta.priority < meta.lo) ? 32w0xFFFFFFFF : 32w0;
        tree_root_hi.read(meta.hi, meta.table_index);
        tree_root_lo.read(meta.lo, meta.table_index);
        ADD_TO_PAIR(tree_root, meta.table_index)
        meta.total = meta.hi ++ meta.lo;
        FOR_EACH_INNER_LEVEL_UP(ADD_LEVEL)
        tree_leaf.write(meta.cell, meta.priority);
    }

    /* ---- the total ----------------------------------------------------- */
    action read_root() {
        tree_root_hi.read(meta.hi, meta.table_index);
        tree_root_lo.read(meta.lo, meta.table_index);
        meta.total = meta.hi ++ meta.lo;
    }

    /* The total, and what a walk starts from: the range of its draw less one
     * (ProportionalDraw) and its first cell (level 1, node 0). */
    action read_root_to_walk() {
        tree_root_hi.read(meta.hi, meta.table_index);
        tree_root_lo.read(meta.lo, meta.table_index);
        meta.total = meta.hi ++ meta.lo;
        meta.mask = (meta.hi ++ meta.lo) - 1;
        meta.cell = meta.table_index << 1;
    }

    /* ---- TREE_WALK: one action ----------------------------------------- */
    /* From the root's left child (level 1, node 0) down, reading the left
     * child on each level: r below its sum goes left, else right with the
     * sum taken off r (bit 1 of the step's cell says which). One action, so
     * the walk reads every level at one moment: no other thread's ADD falls
     * between a parent and its child. It starts at the cell read_root_to_walk
     * set: set here, p4c would copy the expression into level 1's accesses. */
#define WALK_LEVEL(l) \
        tree_l##l##_hi.read(meta.hi, meta.cell); \
        tree_l##l##_lo.read(meta.lo, meta.cell); \
        meta.cell = WALK_STEP(meta.hi ++ meta.lo); \
        meta.r = (meta.cell & 2 == 0) ? meta.r : meta.r - (meta.hi ++ meta.lo);
    action walk() {
        FOR_EACH_INNER_LEVEL(WALK_LEVEL)
        tree_leaf.read(meta.lo, meta.cell);
        meta.slot = (meta.cell | (bit<32>)(bit<1>)(meta.r >= (bit<64>)meta.lo)) & (NUM_SLOTS - 1);
    }

    apply {
        if (meta.tree_op == TREE_ADD) {
            locate_slot();
            add();
        } else if (meta.tree_op == TREE_WALK) {
            read_root_to_walk();
            if (meta.total == 0) {
                meta.status = STATUS_EMPTY;
                meta.tree_op = 0;
            } else {
                draw.apply(meta);
                if (meta.found == 1) {
                    walk();
                } else {
                    meta.tree_op = 0;
                }
            }
        } else if (meta.tree_op == TREE_TOTAL) {
            read_root();
        }
    }
}

/* The tree by phase (the service's tree steps, one signature on both
 * architectures): v1model runs all of SumTree in its one pass, after the
 * guard and the max, so the parts TNA applies on their own (the root, an
 * ADD's change, the empty-tree check) do nothing here, nor do later phases,
 * which v1model has none of. */
control SumTreeRoot(inout metadata_t meta) {
    apply { }
}

control SumTreeChange(inout metadata_t meta) {
    apply { }
}

control SumTreeEmpty(inout metadata_t meta) {
    apply { }
}

control SumTreeFirstPhase(inout metadata_t meta) {
    @name(".ReplayEgress.replay.tree") SumTree() tree;

    apply {
        tree.apply(meta);
    }
}

control SumTreeLaterPhases(inout metadata_t meta) {
    apply { }
}

#endif
