/*
 * table_state.p4 -- per-table state: the ring (write pointer, occupancy,
 * insert sequence number = the stamp source) and the running max priority.
 *
 * ring_mask is the uniform draw's mask (draw.p4), kept with the size so that
 * no SAMPLE copy computes it: some 2^k - 1 with 2^k >= size, the smallest
 * unless the capacity was lowered (an INSERT only ever doubles it, when the
 * size outgrows it; SET_STATE and RESET set the smallest).
 *
 * Arrays of NUM_TABLES 32-bit cells. Each stage is one table whose op (set
 * by the plan in replay_service.p4) picks the action; every access is one action, a
 * read-modify-write of one cell as a Tofino RegisterAction would do it (and
 * atomic on bmv2, which locks the registers an action touches). RingState and
 * MaxPriority are separate stages: an UPDATE raises the max only after
 * SlotGuard, between them, has checked its stamp.
 */
#ifndef REPLAY_TABLE_STATE_P4
#define REPLAY_TABLE_STATE_P4

control RingState(inout metadata_t meta) {
    register<bit<32>>(NUM_TABLES) ring_ptr;
    register<bit<32>>(NUM_TABLES) ring_count;
    register<bit<32>>(NUM_TABLES) insert_seq;
    register<bit<32>>(NUM_TABLES) ring_mask;
    PowerOfTwoMask() power_of_two;

    action allocate() {
        ring_ptr.read(meta.slot, meta.table_index);
        meta.slot = (meta.slot >= meta.capacity) ? 32w0 : meta.slot;  /* capacity was lowered */
        ring_ptr.write(meta.table_index, (meta.slot + 1 >= meta.capacity) ? 32w0 : meta.slot + 1);

        ring_count.read(meta.size, meta.table_index);
        meta.size = (meta.size < meta.capacity) ? meta.size + 1 : meta.capacity;
        ring_count.write(meta.table_index, meta.size);
        ring_mask.read(meta.size_mask, meta.table_index);
        meta.size_mask = (meta.size > meta.size_mask + 1) ? (meta.size_mask << 1) | 1
                                                           : meta.size_mask;
        ring_mask.write(meta.table_index, meta.size_mask);

        insert_seq.read(meta.stamp, meta.table_index);
        meta.stamp = meta.stamp + 1;
        insert_seq.write(meta.table_index, meta.stamp);
    }

    action read_size() {
        ring_count.read(meta.size, meta.table_index);
        ring_mask.read(meta.size_mask, meta.table_index);
    }

    action read_all() {
        ring_ptr.read(meta.slot, meta.table_index);
        ring_count.read(meta.size, meta.table_index);
        insert_seq.read(meta.stamp, meta.table_index);
    }

    action write_all() {
        ring_ptr.write(meta.table_index, meta.slot);
        ring_count.write(meta.table_index, meta.size);
        insert_seq.write(meta.table_index, meta.stamp);
        ring_mask.write(meta.table_index, meta.size_mask);
    }

    action clear_all() {
        ring_ptr.write(meta.table_index, 0);
        ring_count.write(meta.table_index, 0);
        insert_seq.write(meta.table_index, 0);
        ring_mask.write(meta.table_index, 0);
        meta.size = 0;
    }

    /* The stage: one table, its op decides the register action. */
    table ring_state {
        key = { meta.ring_op : exact; }
        actions = { allocate; read_size; read_all; write_all; clear_all; NoAction; }
        const entries = {
            RING_ALLOCATE  : allocate();
            RING_READ_SIZE : read_size();
            RING_READ_ALL  : read_all();
            RING_WRITE_ALL : write_all();
            RING_CLEAR     : clear_all();
        }
        default_action = NoAction();
    }

    apply {
        if (meta.ring_op == RING_WRITE_ALL) {   /* SET_STATE: the smallest mask for its size */
            if (meta.size == 0) {
                meta.size_mask = 0;
            } else {
                meta.mask = (bit<64>)(meta.size - 1);
                power_of_two.apply(meta);
                meta.size_mask = meta.mask[31:0];
            }
        }
        ring_state.apply();
    }
}

control MaxPriority(inout metadata_t meta) {
    register<bit<32>>(NUM_TABLES) max_priority;

    action resolve() {
        max_priority.read(meta.lo, meta.table_index);
        /* PER: an experience without a priority gets the max seen so far. */
        meta.priority = (meta.has_priority == 1) ? meta.priority
                      : ((meta.lo == 0) ? PRIORITY_ONE : meta.lo);
        max_priority.write(meta.table_index, (meta.priority > meta.lo) ? meta.priority : meta.lo);
    }

    action raise() {
        max_priority.read(meta.lo, meta.table_index);
        max_priority.write(meta.table_index, (meta.priority > meta.lo) ? meta.priority : meta.lo);
    }

    action read_max() {
        max_priority.read(meta.priority, meta.table_index);
    }

    action write_max() {
        max_priority.write(meta.table_index, meta.priority);
    }

    action clear_max() {
        max_priority.write(meta.table_index, 0);
        meta.priority = 0;
    }

    table max_state {
        key = { meta.max_op : exact; }
        actions = { resolve; raise; read_max; write_max; clear_max; NoAction; }
        const entries = {
            MAX_RESOLVE : resolve();
            MAX_RAISE   : raise();
            MAX_READ    : read_max();
            MAX_WRITE   : write_max();
            MAX_CLEAR   : clear_max();
        }
        default_action = NoAction();
    }

    apply {
        if (meta.max_op != 0) {   /* op 0 (most SAMPLE copies): no lookup, it can only miss */
            max_state.apply();
        }
    }
}

#endif
