/*
 * tna/phases.p4 -- how many egress passes through LOOP_PORT a request takes
 * on TNA, and in which one the slot record is read or written (the
 * service's FIRST_PHASE, STORE_PHASE and MORE_PHASES: tna/arch.p4).
 *
 *   phase 0   ring, uniform draw, stamp guard, max priority, the leaf swap
 *             (the change to add), the root read and the proportional draw
 *   phase 1   an ADD's root, levels and leaf (the whole tree in one pass),
 *             the slot record; a walk's levels WALK_LEVELS_1
 *   phase 2   a walk's levels WALK_LEVELS_2
 *   phase 3   a walk's levels WALK_LEVELS_3 and leaf, the slot record
 * (tna/sum_tree.p4 lists the levels). A request that is refused, finds
 * nothing to do or must draw again ends in phase 0.
 */
#ifndef REPLAY_TNA_PHASES_P4
#define REPLAY_TNA_PHASES_P4

const bit<8> NO_PHASE = 255;      /* no slot record to touch */

control PhasePlan(in headers_t hdr, inout metadata_t meta) {
    action phases(bit<8> store_phase, bit<8> last_phase) {
        meta.store_phase = store_phase;
        meta.last_phase = last_phase;
    }

    table replay_phases {
        key = {
            hdr.replay.op : exact;
            meta.tree_op  : exact;
        }
        actions = { phases; }
        const entries = {
            (OP_INSERT, TREE_ADD)   : phases(1, 1);
            (OP_UPDATE, TREE_ADD)   : phases(1, 1);
            (OP_WRITE,  TREE_ADD)   : phases(1, 1);
            (OP_RESET,  TREE_ADD)   : phases(1, 1);
            (OP_SAMPLE, TREE_TOTAL) : phases(1, 1);      /* uniform */
            (OP_SAMPLE, TREE_WALK)  : phases(WALK_LAST_PHASE, WALK_LAST_PHASE);
            (OP_READ,   TREE_TOTAL) : phases(0, 0);
        }
        default_action = phases(NO_PHASE, 0);   /* GET_STATE, SET_STATE, a STALE UPDATE */
    }

    apply {
        if (meta.status == STATUS_OK) {
            replay_phases.apply();
        } else {
            meta.store_phase = NO_PHASE;
            meta.last_phase = 0;
        }
    }
}

#endif
