/*
 * tna/table_state.p4 -- per-table ring and running max priority, as TNA
 * RegisterActions: the same controls, tables, register names and ops as
 * v1model/table_state.p4. Each RegisterAction is one read-modify-write of one
 * 32-bit cell in one stateful ALU; an action runs at most one per register.
 */
#ifndef REPLAY_TABLE_STATE_P4
#define REPLAY_TABLE_STATE_P4

control RingState(inout metadata_t meta) {
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) ring_ptr;
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) ring_count;
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) insert_seq;

    /* The slot to write is the pointer (0 if the capacity was lowered below
     * it); the pointer moves on, wrapping at the capacity. */
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_ptr) ptr_allocate = {
        void apply(inout bit<32> value, out bit<32> slot) {
            if (value >= meta.capacity) {
                slot = 0;
            } else {
                slot = value;
            }
            if (value + 1 >= meta.capacity) {
                value = 0;
            } else {
                value = value + 1;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_ptr) ptr_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_ptr) ptr_write = {
        void apply(inout bit<32> value) { value = meta.slot; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_ptr) ptr_clear = {
        void apply(inout bit<32> value) { value = 0; }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_count) count_allocate = {
        void apply(inout bit<32> value, out bit<32> size) {
            if (value < meta.capacity) {
                value = value + 1;
            } else {
                value = meta.capacity;
            }
            size = value;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_count) count_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_count) count_write = {
        void apply(inout bit<32> value) { value = meta.size; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_count) count_clear = {
        void apply(inout bit<32> value) { value = 0; }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(insert_seq) seq_next = {
        void apply(inout bit<32> value, out bit<32> stamp) {
            value = value + 1;
            stamp = value;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(insert_seq) seq_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(insert_seq) seq_write = {
        void apply(inout bit<32> value) { value = meta.stamp; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(insert_seq) seq_clear = {
        void apply(inout bit<32> value) { value = 0; }
    };

    /* One table per register: Tofino addresses an array from one table, and
     * every action of that table must use it (v1model: one table, ring_state). */
    action ptr_allocate_op() { meta.slot = ptr_allocate.execute(meta.table_index); }
    action ptr_read_op()     { meta.slot = ptr_read.execute(meta.table_index); }
    action ptr_write_op()    { ptr_write.execute(meta.table_index); }
    action ptr_clear_op()    { ptr_clear.execute(meta.table_index); }

    table ring_ptr_state {
        key = { meta.ring_op : exact; }
        actions = { ptr_allocate_op; ptr_read_op; ptr_write_op; ptr_clear_op; NoAction; }
        const entries = {
            RING_ALLOCATE  : ptr_allocate_op();
            RING_READ_ALL  : ptr_read_op();
            RING_WRITE_ALL : ptr_write_op();
            RING_CLEAR     : ptr_clear_op();
        }
        default_action = NoAction();
        size = 8;
    }

    action count_allocate_op() { meta.size = count_allocate.execute(meta.table_index); }
    action count_read_op()     { meta.size = count_read.execute(meta.table_index); }
    action count_write_op()    { count_write.execute(meta.table_index); }
    action count_clear_op() {
        count_clear.execute(meta.table_index);
        meta.size = 0;
    }

    table ring_count_state {
        key = { meta.ring_op : exact; }
        actions = { count_allocate_op; count_read_op; count_write_op; count_clear_op; NoAction; }
        const entries = {
            RING_ALLOCATE  : count_allocate_op();
            RING_READ_SIZE : count_read_op();
            RING_READ_ALL  : count_read_op();
            RING_WRITE_ALL : count_write_op();
            RING_CLEAR     : count_clear_op();
        }
        default_action = NoAction();
        size = 8;
    }

    action seq_next_op()  { meta.stamp = seq_next.execute(meta.table_index); }
    action seq_read_op()  { meta.stamp = seq_read.execute(meta.table_index); }
    action seq_write_op() { seq_write.execute(meta.table_index); }
    action seq_clear_op() { seq_clear.execute(meta.table_index); }

    table insert_seq_state {
        key = { meta.ring_op : exact; }
        actions = { seq_next_op; seq_read_op; seq_write_op; seq_clear_op; NoAction; }
        const entries = {
            RING_ALLOCATE  : seq_next_op();
            RING_READ_ALL  : seq_read_op();
            RING_WRITE_ALL : seq_write_op();
            RING_CLEAR     : seq_clear_op();
        }
        default_action = NoAction();
        size = 8;
    }

    apply {
        ring_ptr_state.apply();
        ring_count_state.apply();
        insert_seq_state.apply();
    }
}

control MaxPriority(inout metadata_t meta) {
    Register<bit<32>, bit<32>>(NUM_TABLES, 0) max_priority;

    /* Raise to the given priority; answer the max as it was (INSERT without
     * a priority takes it, 1.0 while the table has seen none). */
    RegisterAction<bit<32>, bit<32>, bit<32>>(max_priority) max_raise = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            if (meta.has_priority == 1 && meta.priority > value) {
                value = meta.priority;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(max_priority) max_read = {
        void apply(inout bit<32> value, out bit<32> result) { result = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(max_priority) max_write = {
        void apply(inout bit<32> value) { value = meta.priority; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(max_priority) max_clear = {
        void apply(inout bit<32> value) { value = 0; }
    };

    action resolve() {
        meta.hi = max_raise.execute(meta.table_index);
    }

    action raise() {
        max_raise.execute(meta.table_index);   /* an UPDATE always has a priority */
    }

    action read_max() {
        meta.priority = max_read.execute(meta.table_index);
    }

    action write_max() {
        max_write.execute(meta.table_index);
    }

    action clear_max() {
        max_clear.execute(meta.table_index);
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
        switch (max_state.apply().action_run) {
            resolve: {
                /* PER: an experience without a priority gets the max so far. */
                if (meta.has_priority == 0 && meta.hi == 0) {
                    meta.priority = PRIORITY_ONE;
                } else if (meta.has_priority == 0) {
                    meta.priority = meta.hi;
                }
            }
        }
    }
}

#endif
