/*
 * tna/phases.p4 -- how many egress passes through LOOP_PORT a request takes
 * on TNA, and in which one the slot record is read or written (the
 * service's FIRST_PHASE, STORE_PHASE and MORE_PHASES: tna/arch.p4).
 *
 *   phase 0   ring, a SAMPLE's size check, stamp guard, max priority, the
 *             leaf swap (the change to add), the root read
 *   PHASE_DRAW     a SAMPLE's draw: a slot (uniform) or r (prioritized);
 *             again while every attempt overshoots
 *   phase 1   an ADD's root, levels and leaf (the whole tree in one pass);
 *             a walk's levels WALK_LEVELS_1
 *   phase 2   a walk's levels WALK_LEVELS_2
 *   phase 3   a walk's levels WALK_LEVELS_3
 *   phase 4   a walk's levels WALK_LEVELS_4 and leaf
 *   PHASE_RECORD   the slot record (every op that has one): written,
 *             cleared, or read: its stamp, priority and low payload halves
 *   PHASE_RECORD_HI  a read's high payload halves and the stamp again
 *             (tna/slot_store.p4), last
 * (tna/sum_tree.p4 lists the levels). The slot record has a pass of its own
 * (RECORD_IN_OWN_PHASE), so that its 10 arrays share stages with phase 0's
 * and the levels' instead of following them. A request that is refused,
 * finds nothing to do or must draw again ends in phase 0 whatever comes next
 * in this table (MORE_PHASES, tna/arch.p4).
 */
#ifndef REPLAY_TNA_PHASES_P4
#define REPLAY_TNA_PHASES_P4

/* The phases of the slot record and of a SAMPLE's draw: numbered apart
 * from the tree's, so that a pass knows which it is from the header it came
 * with (tna/arch.p4, STORE_PHASE), before any table has looked. */
const bit<8> PHASE_RECORD = 7;
const bit<8> PHASE_RECORD_HI = 8;  /* a read's second pass: the high payload halves */
const bit<8> PHASE_DRAW = 6;
const bit<8> NO_NEXT_PHASE = 0;   /* this pass ends the request */

/* The phase after this one, from the op, its tree step and this phase. */
control PhasePlan(in headers_t hdr, inout metadata_t meta) {
    action next(bit<8> phase) {
        meta.next_phase = phase;
    }

    table replay_phases {
        key = {
            hdr.replay.op : exact;
            meta.tree_op  : exact;
            meta.phase    : exact;
        }
        actions = { next; }
        const entries = {
            (OP_INSERT, TREE_ADD, 0)                 : next(ADD_PHASE);
            (OP_INSERT, TREE_ADD, ADD_PHASE)         : next(PHASE_RECORD);
            (OP_UPDATE, TREE_ADD, 0)                 : next(ADD_PHASE);
            (OP_UPDATE, TREE_ADD, ADD_PHASE)         : next(PHASE_RECORD);
            (OP_UPDATE_BATCH, TREE_ADD, 0)           : next(ADD_PHASE);
            (OP_UPDATE_BATCH, TREE_ADD, ADD_PHASE)   : next(PHASE_RECORD);
            (OP_WRITE,  TREE_ADD, 0)                 : next(ADD_PHASE);
            (OP_WRITE,  TREE_ADD, ADD_PHASE)         : next(PHASE_RECORD);
            (OP_RESET,  TREE_ADD, 0)                 : next(ADD_PHASE);
            (OP_RESET,  TREE_ADD, ADD_PHASE)         : next(PHASE_RECORD);
            (OP_SAMPLE, TREE_TOTAL, 0)               : next(PHASE_DRAW);     /* uniform */
            (OP_SAMPLE, TREE_TOTAL, PHASE_DRAW)      : next(PHASE_RECORD);
            (OP_SAMPLE, TREE_TOTAL, PHASE_RECORD)    : next(PHASE_RECORD_HI);
            (OP_READ,   TREE_TOTAL, 0)               : next(PHASE_RECORD);
            (OP_READ,   TREE_TOTAL, PHASE_RECORD)    : next(PHASE_RECORD_HI);
            (OP_SAMPLE, TREE_WALK, 0)                : next(PHASE_DRAW);
            (OP_SAMPLE, TREE_WALK, PHASE_DRAW)       : next(1);
            (OP_SAMPLE, TREE_WALK, 1)                : next(2);
            (OP_SAMPLE, TREE_WALK, 2)                : next(3);
            (OP_SAMPLE, TREE_WALK, 3)                : next(WALK_LAST_PHASE);
            (OP_SAMPLE, TREE_WALK, WALK_LAST_PHASE)  : next(PHASE_RECORD);
            (OP_SAMPLE, TREE_WALK, PHASE_RECORD)     : next(PHASE_RECORD_HI);
        }
        default_action = next(NO_NEXT_PHASE);   /* GET_STATE, SET_STATE, the record's last phase */
    }

    apply {
        replay_phases.apply();
    }
}

/* A SAMPLE whose record's stamp is 0 (RecordCheck) ends its read in this
 * pass: it is drawn again, or answered NOT_READY. */
control ReadEnds(inout metadata_t meta) {
    apply {
        meta.next_phase = NO_NEXT_PHASE;
    }
}

#endif
