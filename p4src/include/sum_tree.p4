/*
 * sum_tree.p4 -- the priority sum tree, one register array per level.
 *
 *   level 0      tree_root  NUM_TABLES entries            (bit<64>)
 *   level l      tree_l<l>  NUM_TABLES << l entries       (bit<64>), l = 1 .. L-1
 *   level L      tree_leaf  NUM_TABLES << L entries       (bit<32>, = slot priority)
 *
 * Node n of level l for table t sits at index (t << l) | n; its children are
 * 2n and 2n+1 of level l+1. Every node holds the sum of the leaves below it,
 * so tree_root[t] is the table's total priority.
 *
 * Each pass touches each level's array at most once:
 *   SET_LEAF  read-modify-write of the leaf, then "+= delta" on its ancestor in
 *             every level (delta wraps modulo 2^64, which keeps sums exact).
 *   SAMPLE    prioritized: draw r in [0, total) and walk down, reading only the
 *             left child at each level; the chosen node's value is carried down
 *             (cur), so the leaf's priority comes out without a second read.
 *             uniform: draw a slot in [0, size) and read its leaf.
 *   READ      the root and one leaf.
 *
 * Changing SLOT_BITS (L) means listing levels 1 .. L-1 in FOR_EACH_INNER_LEVEL.
 */
#ifndef REPLAY_SUM_TREE_P4
#define REPLAY_SUM_TREE_P4

#define FOR_EACH_INNER_LEVEL(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

const bit<8> TREE_SET_LEAF = 1;
const bit<8> TREE_SAMPLE   = 2;
const bit<8> TREE_READ     = 3;

control SumTree(in bit<8> tree_op,
                in bit<32> table_index,
                in bit<8> mode,            /* SAMPLE: MODE_UNIFORM or MODE_PRIORITIZED */
                in bit<32> size,           /* SAMPLE uniform: slots to draw from */
                inout bit<32> slot,        /* in: SET_LEAF, READ; out: SAMPLE */
                inout bit<32> priority,    /* in: SET_LEAF; out: SAMPLE, READ */
                out bit<64> total) {       /* the table's total after this pass */
#define DECLARE_LEVEL(l) register<bit<64>>(NUM_TABLES << l) tree_l##l;
    register<bit<64>>(NUM_TABLES) tree_root;
    FOR_EACH_INNER_LEVEL(DECLARE_LEVEL)
    register<bit<32>>(NUM_TABLE_SLOTS) tree_leaf;

    apply {
        bit<32> leaf_index = (table_index << SLOT_BITS) | slot;
        bit<64> node_sum;
        total = 0;

        if (tree_op == TREE_SET_LEAF) {
            bit<32> old;
            tree_leaf.read(old, leaf_index);
            tree_leaf.write(leaf_index, priority);
            bit<64> delta = (bit<64>)priority - (bit<64>)old;

#define ADD_TO_ANCESTOR(l) \
            tree_l##l.read(node_sum, (table_index << l) | (slot >> (SLOT_BITS - l))); \
            tree_l##l.write((table_index << l) | (slot >> (SLOT_BITS - l)), node_sum + delta);
            FOR_EACH_INNER_LEVEL(ADD_TO_ANCESTOR)

            tree_root.read(node_sum, table_index);
            total = node_sum + delta;
            tree_root.write(table_index, total);
        } else if (tree_op == TREE_SAMPLE) {
            tree_root.read(total, table_index);
            if (mode == MODE_UNIFORM) {
                random(slot, 32w0, size - 1);
                tree_leaf.read(priority, (table_index << SLOT_BITS) | slot);
            } else if (total != 0) {
                bit<64> r;
                random(r, 64w0, total - 1);
                bit<64> cur = total;
                bit<32> node = 0;

#define DESCEND(l) \
                tree_l##l.read(node_sum, (table_index << l) | (node << 1)); \
                node = node << 1; \
                if (r < node_sum) { \
                    cur = node_sum; \
                } else { \
                    r = r - node_sum; \
                    cur = cur - node_sum; \
                    node = node | 1; \
                }
                FOR_EACH_INNER_LEVEL(DESCEND)

                bit<32> left;
                tree_leaf.read(left, (table_index << SLOT_BITS) | (node << 1));
                node = node << 1;
                if (r < (bit<64>)left) {
                    cur = (bit<64>)left;
                } else {
                    cur = cur - (bit<64>)left;
                    node = node | 1;
                }
                slot = node;
                priority = (bit<32>)cur;
            }
        } else if (tree_op == TREE_READ) {
            tree_root.read(total, table_index);
            tree_leaf.read(priority, leaf_index);
        }
    }
}

#endif
