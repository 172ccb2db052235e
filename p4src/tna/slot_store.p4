/*
 * tna/slot_store.p4 -- what each slot holds besides its priority, on TNA: the
 * same two controls and table names as v1model/slot_store.p4.
 * A record is the stamp array, the priority array and eight arrays of
 * payload pairs, each with its own table (v1model: the same arrays, all in
 * one slot_store table's actions), read in two passes (below).
 * Tofino runs packets through a stage one at a time and in order, so a pass
 * that reads a record after an INSERT has passed its stage reads that INSERT's.
 * An UPDATE writes the record's priority passes after its stamp guard (phase
 * 0): an INSERT may have rewritten the slot in between, so the priority is
 * written only while the record's stamp is still the UPDATE's (record_moved).
 */
#ifndef REPLAY_SLOT_STORE_P4
#define REPLAY_SLOT_STORE_P4

control SlotGuard(inout metadata_t meta) {
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_stamp;
    CELL_INDEX(stamp_cell);

    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_stamp) stamp_write = {
        void apply(inout bit<32> value) { value = meta.stamp; }
    };
    RegisterAction<bit<32>, bit<32>, bit<1>>(slot_stamp) stamp_check = {
        void apply(inout bit<32> value, out bit<1> same) {
            if (value != 0 && value == meta.stamp) {
                same = 1;
            } else {
                same = 0;
            }
        }
    };

    action write_stamp() {
        stamp_write.execute(SLOT_CELL(stamp_cell));
    }

    action check_stamp() {
        meta.guard_ok = stamp_check.execute(SLOT_CELL(stamp_cell));
    }

    table slot_guard {
        key = { meta.guard_op : exact; }
        actions = { write_stamp; check_stamp; NoAction; }
        const entries = {
            GUARD_WRITE : write_stamp();
            GUARD_CHECK : check_stamp();
        }
        default_action = NoAction();
    }

    apply {
        slot_guard.apply();
    }
}

/* A 32-bit record array's register actions: write from the packet, read, clear. */
#define RECORD_ACTIONS(reg, from) \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_write = { \
        void apply(inout bit<32> value) { value = from; } \
    }; \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_read = { \
        void apply(inout bit<32> value, out bit<32> result) { result = value; } \
    }; \
    RegisterAction<bit<32>, bit<32>, bit<32>>(reg) reg##_clear = { \
        void apply(inout bit<32> value) { value = 0; } \
    };

struct word_pair_t {
    bit<32> lo;
    bit<32> hi;
}

/* The record's cell: {table, meta.path3}, which in the record's phases
 * (PHASE_RECORD, PHASE_RECORD_HI) is the slot the header carries: the
 * request's, the one drawn, or where the walk ended (tna/loop.p4). */
#define RECORD_CELL record_cell.get({meta.table_index[TABLE_BITS-1:0], meta.path3[SLOT_BITS-1:0]})

/* The slot record: the stamp array, the priority array and the payload in
 * eight arrays of 64-bit cells, two words each: a stateful ALU writes both
 * halves of its cell in one pass but outputs one 32-bit value, so a read
 * takes two passes, the stamp, the priority and the low halves in
 * PHASE_RECORD, the high halves in PHASE_RECORD_HI, which reads the stamp
 * again: if another request rewrote the record in between, the read starts
 * over (meta.next_phase = PHASE_RECORD). Eight arrays instead of sixteen
 * leave the stateful ALUs (four a stage) that the rest of the state needs
 * (docs/hardware.md). Each array is addressed by a table of its own: an
 * action takes the output of one stateful ALU. */
control SlotStore(inout metadata_t meta, inout replay_payload_h payload) {
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_record_stamp;
    RECORD_ACTIONS(slot_record_stamp, meta.stamp)
    /* PHASE_RECORD_HI: the record is still the one whose stamp the first pass
     * read (the header's); else the read starts over. An UPDATE's record pass
     * asks the same of the UPDATE's stamp (record_moved): a stateful ALU has
     * four instructions, and this array's are taken. */
    RegisterAction<bit<32>, bit<32>, bit<8>>(slot_record_stamp) slot_record_stamp_recheck = {
        void apply(inout bit<32> value, out bit<8> next_phase) {
            if (value == meta.stamp) {
                next_phase = NO_NEXT_PHASE;
            } else {
                next_phase = PHASE_RECORD;
            }
        }
    };
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_record_priority;
    RECORD_ACTIONS(slot_record_priority, meta.priority)
    CELL_INDEX(record_cell);

    action write_record() {
        slot_record_stamp_write.execute(RECORD_CELL);
    }

    action read_record() {
        meta.stamp = slot_record_stamp_read.execute(RECORD_CELL);
        payload.setValid();
    }

    action recheck_record() {
        meta.next_phase = slot_record_stamp_recheck.execute(RECORD_CELL);
    }

    action clear_record() {
        slot_record_stamp_clear.execute(RECORD_CELL);
    }

    action check_record() {
        meta.record_moved = slot_record_stamp_recheck.execute(RECORD_CELL);
    }

    /* The record's stamp; its priority and payload pairs in tables of their own below. */
    table slot_store {
        key = {
            meta.store_op : exact;
            meta.phase    : exact;
        }
        actions = { write_record; read_record; recheck_record; clear_record; check_record;
                    NoAction; }
        const entries = {
            (STORE_WRITE, PHASE_RECORD)    : write_record();
            (STORE_READ, PHASE_RECORD)     : read_record();
            (STORE_READ, PHASE_RECORD_HI)  : recheck_record();
            (STORE_CLEAR, PHASE_RECORD)    : clear_record();
            (STORE_PRIORITY, PHASE_RECORD) : check_record();
        }
        default_action = NoAction();
    }

    /* One table per pair of payload words. */
#define PAIR_TABLE(i) \
    Register<word_pair_t, bit<32>>(NUM_TABLE_SLOTS) payload_p##i; \
    RegisterAction<word_pair_t, bit<32>, bit<32>>(payload_p##i) payload_p##i##_write = { \
        void apply(inout word_pair_t value) { \
            value.lo = payload.p##i[31:0]; \
            value.hi = payload.p##i[63:32]; \
        } \
    }; \
    RegisterAction<word_pair_t, bit<32>, bit<32>>(payload_p##i) payload_p##i##_read_lo = { \
        void apply(inout word_pair_t value, out bit<32> result) { result = value.lo; } \
    }; \
    RegisterAction<word_pair_t, bit<32>, bit<32>>(payload_p##i) payload_p##i##_read_hi = { \
        void apply(inout word_pair_t value, out bit<32> result) { result = value.hi; } \
    }; \
    RegisterAction<word_pair_t, bit<32>, bit<32>>(payload_p##i) payload_p##i##_clear = { \
        void apply(inout word_pair_t value) { \
            value.lo = 0; \
            value.hi = 0; \
        } \
    }; \
    action write_p##i() { payload_p##i##_write.execute(RECORD_CELL); } \
    action read_lo_p##i() { payload.p##i[31:0] = payload_p##i##_read_lo.execute(RECORD_CELL); } \
    action read_hi_p##i() { payload.p##i[63:32] = payload_p##i##_read_hi.execute(RECORD_CELL); } \
    action clear_p##i() { payload_p##i##_clear.execute(RECORD_CELL); } \
    table record_p##i { \
        key = { \
            meta.store_op : exact; \
            meta.phase    : exact; \
        } \
        actions = { write_p##i; read_lo_p##i; read_hi_p##i; clear_p##i; NoAction; } \
        const entries = { \
            (STORE_WRITE, PHASE_RECORD)   : write_p##i(); \
            (STORE_READ, PHASE_RECORD)    : read_lo_p##i(); \
            (STORE_READ, PHASE_RECORD_HI) : read_hi_p##i(); \
            (STORE_CLEAR, PHASE_RECORD)   : clear_p##i(); \
        } \
        default_action = NoAction(); \
    }
    FOR_EACH_PAIR(PAIR_TABLE)

    /* The record's priority in a table of its own: UPDATE writes it alone, and
     * every action of a Tofino table must address the same registers (v1model
     * keeps it in slot_store's actions, where bmv2 locks it with the rest of the
     * record). A stage serves packets in order, so on Tofino one pass reads
     * stamp and priority of one INSERT, and the stamp's recheck tells a record
     * rewritten before the second pass. An UPDATE writes it only while the
     * record holds the UPDATE's stamp (record_moved, from slot_store). */
    action write_priority() {
        slot_record_priority_write.execute(RECORD_CELL);
    }

    action read_priority() {
        meta.priority = slot_record_priority_read.execute(RECORD_CELL);
    }

    action clear_priority() {
        slot_record_priority_clear.execute(RECORD_CELL);
    }

    table record_priority {
        key = {
            meta.store_op     : exact;
            meta.phase        : exact;
            meta.record_moved : exact;
        }
        actions = { write_priority; read_priority; clear_priority; NoAction; }
        const entries = {
            (STORE_WRITE, PHASE_RECORD, 0)                : write_priority();
            (STORE_READ, PHASE_RECORD, 0)                 : read_priority();
            (STORE_CLEAR, PHASE_RECORD, 0)                : clear_priority();
            (STORE_PRIORITY, PHASE_RECORD, NO_NEXT_PHASE) : write_priority();
        }
        default_action = NoAction();
    }

    apply {
        slot_store.apply();
        record_priority.apply();
#define APPLY_PAIR_TABLE(i) record_p##i.apply();
        FOR_EACH_PAIR(APPLY_PAIR_TABLE)
    }
}

#endif
