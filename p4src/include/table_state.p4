/*
 * table_state.p4 -- per-table ring state: write pointer, occupancy, insert
 * sequence number (the stamp source) and the running max priority.
 *
 * Four arrays of NUM_TABLES entries; each is touched at most once per pass
 * (one read-modify-write), as a Tofino stage's RegisterAction would.
 */
#ifndef REPLAY_TABLE_STATE_P4
#define REPLAY_TABLE_STATE_P4

const bit<8> STATE_ALLOCATE = 1;   /* INSERT: claim the next ring slot */
const bit<8> STATE_READ     = 2;   /* size, pointer, sequence, max priority */
const bit<8> STATE_OBSERVE  = 3;   /* UPDATE: raise max priority, read size */
const bit<8> STATE_WRITE    = 4;   /* SET_STATE */
const bit<8> STATE_CLEAR    = 5;   /* RESET, last pass */

control TableState(in bit<8> state_op,
                   in bit<32> table_index,
                   in bit<32> capacity,
                   in bit<1> has_priority,
                   inout bit<32> slot,        /* out: ALLOCATE, READ (pointer); in: WRITE */
                   inout bit<32> stamp,       /* out: ALLOCATE, READ (sequence); in: WRITE */
                   inout bit<32> priority,    /* inout: ALLOCATE (resolved), OBSERVE; out: READ */
                   inout bit<32> size) {      /* out: ALLOCATE, READ, OBSERVE; in: WRITE */
    register<bit<32>>(NUM_TABLES) ring_ptr;
    register<bit<32>>(NUM_TABLES) ring_count;
    register<bit<32>>(NUM_TABLES) insert_seq;
    register<bit<32>>(NUM_TABLES) max_priority;

    apply {
        if (state_op == STATE_ALLOCATE) {
            bit<32> ptr;
            ring_ptr.read(ptr, table_index);
            if (ptr >= capacity) {          /* capacity was lowered */
                ptr = 0;
            }
            slot = ptr;
            if (ptr + 1 >= capacity) {
                ring_ptr.write(table_index, 0);
            } else {
                ring_ptr.write(table_index, ptr + 1);
            }

            ring_count.read(size, table_index);
            if (size < capacity) {
                size = size + 1;
            } else {
                size = capacity;
            }
            ring_count.write(table_index, size);

            insert_seq.read(stamp, table_index);
            stamp = stamp + 1;
            insert_seq.write(table_index, stamp);

            /* PER: an experience without a priority gets the max seen so far. */
            bit<32> max_p;
            max_priority.read(max_p, table_index);
            if (has_priority == 0) {
                if (max_p == 0) {
                    priority = PRIORITY_ONE;
                } else {
                    priority = max_p;
                }
            }
            if (priority > max_p) {
                max_priority.write(table_index, priority);
            }
        } else if (state_op == STATE_READ) {
            ring_ptr.read(slot, table_index);
            ring_count.read(size, table_index);
            insert_seq.read(stamp, table_index);
            max_priority.read(priority, table_index);
        } else if (state_op == STATE_OBSERVE) {
            ring_count.read(size, table_index);
            bit<32> max_p;
            max_priority.read(max_p, table_index);
            if (priority > max_p) {
                max_priority.write(table_index, priority);
            }
        } else if (state_op == STATE_WRITE) {
            ring_ptr.write(table_index, slot);
            ring_count.write(table_index, size);
            insert_seq.write(table_index, stamp);
            max_priority.write(table_index, priority);
        } else if (state_op == STATE_CLEAR) {
            ring_ptr.write(table_index, 0);
            ring_count.write(table_index, 0);
            insert_seq.write(table_index, 0);
            max_priority.write(table_index, 0);
        }
    }
}

#endif
