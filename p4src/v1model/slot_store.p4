/*
 * slot_store.p4 -- what each slot holds besides its priority, in two stages.
 *
 *   SlotGuard   slot_stamp: the stamp (the table's insert sequence number when
 *               the slot was written; 0 = empty), early in the pass so that
 *               UPDATE can check it before anything changes.
 *   SlotStore   slot_record_stamp, slot_record_priority + payload_p0 .. p<K/2-1>:
 *               the stamp again, the priority again and the K payload words
 *               as K/2 pairs, last in the pass, after the sum tree has chosen
 *               the slot a SAMPLE reply reads. One register array per pair,
 *               as a hardware target spreads a wide value over stages.
 *
 * Arrays of NUM_TABLE_SLOTS cells, index (table << SLOT_BITS) | slot: 32-bit
 * cells, and for the payload 64-bit cells, each a pair of 32-bit words (TNA:
 * a Register of word_pair_t). A pair costs bmv2 one register access instead
 * of two, and a SAMPLE copy's record read is 10 of them instead of 18.
 * A record is written and read by one action each, so on bmv2 (which locks
 * every register an action touches) a reply's priority and payload are always
 * the ones stored with its stamp, whatever other egress threads do meanwhile:
 * the priority a reply reports is the record's, not the one the prioritized
 * walk ends on (which other threads' tree updates can tear, sum_tree.p4).
 */
#ifndef REPLAY_SLOT_STORE_P4
#define REPLAY_SLOT_STORE_P4

control SlotGuard(inout metadata_t meta) {
    register<bit<32>>(NUM_TABLE_SLOTS) slot_stamp;

    action write_stamp() {
        slot_stamp.write((meta.table_index << SLOT_BITS) | meta.slot, meta.stamp);
    }

    action check_stamp() {
        slot_stamp.read(meta.lo, (meta.table_index << SLOT_BITS) | meta.slot);
        meta.guard_ok = (bit<1>)(meta.lo != 0 && meta.lo == meta.stamp);
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
        if (meta.guard_op != 0) {   /* op 0 (SAMPLE copies): no lookup, it can only miss */
            slot_guard.apply();
        }
    }
}

control SlotStore(inout metadata_t meta, inout replay_payload_h payload) {
    register<bit<32>>(NUM_TABLE_SLOTS) slot_record_stamp;
    register<bit<32>>(NUM_TABLE_SLOTS) slot_record_priority;
#define DECLARE_PAIR_ARRAY(i) register<bit<64>>(NUM_TABLE_SLOTS) payload_p##i;
    FOR_EACH_PAIR(DECLARE_PAIR_ARRAY)

    action write_record() {
        slot_record_stamp.write(meta.cell, meta.stamp);
        slot_record_priority.write(meta.cell, meta.priority);
#define WRITE_PAIR(i) payload_p##i.write(meta.cell, payload.p##i);
        FOR_EACH_PAIR(WRITE_PAIR)
    }

    action read_record() {
        slot_record_stamp.read(meta.stamp, meta.cell);
        slot_record_priority.read(meta.priority, meta.cell);
        payload.setValid();
#define READ_PAIR(i) payload_p##i.read(payload.p##i, meta.cell);
        FOR_EACH_PAIR(READ_PAIR)
    }

    action clear_record() {
        slot_record_stamp.write(meta.cell, 0);
        slot_record_priority.write(meta.cell, 0);
#define CLEAR_PAIR(i) payload_p##i.write(meta.cell, 0);
        FOR_EACH_PAIR(CLEAR_PAIR)
    }

    /* UPDATE: only into the record of the experience it checked (an INSERT on
     * another egress thread may have written the slot since). */
    action write_priority() {
        slot_record_stamp.read(meta.hi, meta.cell);
        slot_record_priority.read(meta.lo, meta.cell);
        slot_record_priority.write(meta.cell, (meta.hi == meta.stamp) ? meta.priority : meta.lo);
    }

    table slot_store {
        key = { meta.store_op : exact; }
        actions = { write_record; read_record; clear_record; write_priority; NoAction; }
        const entries = {
            STORE_WRITE    : write_record();
            STORE_READ     : read_record();
            STORE_CLEAR    : clear_record();
            STORE_PRIORITY : write_priority();
        }
        default_action = NoAction();
    }

    /* The record's cell, in an action of its own: computed in the table's
     * actions, p4c copies the expression into every register access (10 of
     * them per read), and bmv2 evaluates each into a temporary per pass. */
    action locate_record() {
        meta.cell = (meta.table_index << SLOT_BITS) | meta.slot;
    }

    apply {
        if (meta.store_op != 0) {
            locate_record();
            slot_store.apply();
        }
    }
}

#endif
