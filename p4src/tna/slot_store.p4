/*
 * tna/slot_store.p4 -- what each slot holds besides its priority, on TNA: the
 * same two stages, tables and register names as v1model/slot_store.p4.
 * Each register action reads or writes one 32-bit cell; a record is the
 * stamp array, the priority array and one array per payload word, each with
 * its own table (v1model: one slot_store table for the stamp and payload),
 * spread over stages by the compiler. Tofino runs packets through a stage one at a time and in order,
 * so a record read after an INSERT has passed its stage is the whole record.
 */
#ifndef REPLAY_SLOT_STORE_P4
#define REPLAY_SLOT_STORE_P4

const bit<8> GUARD_WRITE = 1;   /* INSERT, WRITE, RESET: the slot's new stamp */
const bit<8> GUARD_CHECK = 2;   /* UPDATE: guard_ok = the slot still holds meta.stamp */

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

const bit<8> STORE_WRITE    = 1;   /* stamp, priority + payload from the packet */
const bit<8> STORE_READ     = 2;   /* stamp, priority + payload into the packet */
const bit<8> STORE_CLEAR    = 3;   /* stamp, priority and payload to zero */
const bit<8> STORE_PRIORITY = 4;   /* UPDATE whose stamp matched: the priority only */

/* A record array's register actions: write from the packet, read, clear. */
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

/* The record's cell: {table, meta.path3}, which in the record's own phase
 * (PHASE_RECORD) is the slot the header carries: the request's, the one
 * drawn, or where the walk ended (tna/loop.p4). */
#define RECORD_CELL record_cell.get({meta.table_index[TABLE_BITS-1:0], meta.path3[SLOT_BITS-1:0]})

control SlotStore(inout metadata_t meta, inout replay_payload_h payload) {
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_record_stamp;
    RECORD_ACTIONS(slot_record_stamp, meta.stamp)
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) slot_record_priority;
    RECORD_ACTIONS(slot_record_priority, meta.priority)
#define DECLARE_WORD_ARRAY(i) \
    Register<bit<32>, bit<32>>(NUM_TABLE_SLOTS, 0) payload_w##i; \
    RECORD_ACTIONS(payload_w##i, payload.w##i)
    FOR_EACH_WORD(DECLARE_WORD_ARRAY)
    CELL_INDEX(record_cell);

    action write_record() {
        slot_record_stamp_write.execute(RECORD_CELL);
    }

    action read_record() {
        meta.stamp = slot_record_stamp_read.execute(RECORD_CELL);
        payload.setValid();
    }

    action clear_record() {
        slot_record_stamp_clear.execute(RECORD_CELL);
    }

    /* The record's stamp; its payload words in tables of their own below. */
    table slot_store {
        key = { meta.store_op : exact; }
        actions = { write_record; read_record; clear_record; NoAction; }
        const entries = {
            STORE_WRITE : write_record();
            STORE_READ  : read_record();
            STORE_CLEAR : clear_record();
        }
        default_action = NoAction();
    }

    /* One table per payload word: an action may take the output of one
     * stateful ALU only, and a stage has four of them. */
#define WORD_TABLE(i) \
    action write_w##i() { payload_w##i##_write.execute(RECORD_CELL); } \
    action read_w##i() { payload.w##i = payload_w##i##_read.execute(RECORD_CELL); } \
    action clear_w##i() { payload_w##i##_clear.execute(RECORD_CELL); } \
    table record_w##i { \
        key = { meta.store_op : exact; } \
        actions = { write_w##i; read_w##i; clear_w##i; NoAction; } \
        const entries = { \
            STORE_WRITE : write_w##i(); \
            STORE_READ  : read_w##i(); \
            STORE_CLEAR : clear_w##i(); \
        } \
        default_action = NoAction(); \
    }
    FOR_EACH_WORD(WORD_TABLE)

    /* The record's priority in a table of its own: UPDATE writes it alone, and
     * every action of a Tofino table must address the same registers (v1model
     * keeps it in slot_store's actions, where bmv2 locks it with the rest of the
     * record). A stage serves packets in order, so on Tofino a copy still reads
     * stamp, priority and payload of one INSERT. */
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
        key = { meta.store_op : exact; }
        actions = { write_priority; read_priority; clear_priority; NoAction; }
        const entries = {
            STORE_WRITE    : write_priority();
            STORE_READ     : read_priority();
            STORE_CLEAR    : clear_priority();
            STORE_PRIORITY : write_priority();
        }
        default_action = NoAction();
    }

    apply {
        slot_store.apply();
        record_priority.apply();
#define APPLY_WORD_TABLE(i) record_w##i.apply();
        FOR_EACH_WORD(APPLY_WORD_TABLE)
    }
}

#endif
