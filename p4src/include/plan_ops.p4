/*
 * plan_ops.p4 -- what each state stage does for a request: the codes the
 * service's plan (include/replay_service.p4, replay_plan) gives each stage,
 * and each architecture's stage of that name (v1model/, tna/) acts on. Op 0
 * is "nothing" in every stage.
 */
#ifndef REPLAY_PLAN_OPS_P4
#define REPLAY_PLAN_OPS_P4

/* RingState (table_state.p4): ring_ptr, ring_count, insert_seq. */
const bit<8> RING_ALLOCATE  = 1;   /* INSERT: claim the next slot, its stamp, new size */
const bit<8> RING_READ_SIZE = 2;
const bit<8> RING_READ_ALL  = 3;   /* GET_STATE: pointer, sequence, size */
const bit<8> RING_WRITE_ALL = 4;   /* SET_STATE */
const bit<8> RING_CLEAR     = 5;   /* RESET, last reply */

/* SlotGuard (slot_store.p4): slot_stamp. */
const bit<8> GUARD_WRITE = 1;   /* INSERT, WRITE, RESET: the slot's new stamp */
const bit<8> GUARD_CHECK = 2;   /* UPDATE: guard_ok = the slot still holds meta.stamp */

/* MaxPriority (table_state.p4): max_priority. */
const bit<8> MAX_RESOLVE = 1;   /* INSERT: priority given, else the max (1.0 if none); raise */
const bit<8> MAX_RAISE   = 2;   /* UPDATE whose stamp matched */
const bit<8> MAX_READ    = 3;   /* GET_STATE */
const bit<8> MAX_WRITE   = 4;   /* SET_STATE */
const bit<8> MAX_CLEAR   = 5;   /* RESET, last reply */

/* SumTree (sum_tree.p4): slot_priority and the tree's levels. */
const bit<8> TREE_ADD   = 1;    /* a slot's priority change, added up to the root */
const bit<8> TREE_WALK  = 2;    /* a prioritized draw, walked down to a slot */
const bit<8> TREE_TOTAL = 3;    /* the root's sum only */

/* SlotStore (slot_store.p4): the slot record (stamp, priority, payload). */
const bit<8> STORE_WRITE    = 1;   /* stamp, priority + payload from the packet */
const bit<8> STORE_READ     = 2;   /* stamp, priority + payload into the packet */
const bit<8> STORE_CLEAR    = 3;   /* stamp, priority and payload to zero */
const bit<8> STORE_PRIORITY = 4;   /* UPDATE whose stamp matched: the priority only */

#endif
