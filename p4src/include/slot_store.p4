/*
 * slot_store.p4 -- what each slot holds besides its priority: the stamp (the
 * table's insert sequence number when the slot was written; 0 = empty) and
 * the K payload words, one register array per word, as a hardware target would
 * spread a wide value over stages.
 */
#ifndef REPLAY_SLOT_STORE_P4
#define REPLAY_SLOT_STORE_P4

const bit<8> STORE_WRITE      = 1;   /* stamp + payload from the packet */
const bit<8> STORE_READ       = 2;   /* stamp + payload into the packet */
const bit<8> STORE_READ_STAMP = 3;
const bit<8> STORE_CLEAR      = 4;   /* stamp and payload to zero */

control SlotStore(in bit<8> store_op,
                  in bit<32> table_index,
                  in bit<32> slot,
                  inout bit<32> stamp,
                  inout replay_payload_h payload) {
    register<bit<32>>(NUM_TABLE_SLOTS) slot_stamp;
#define DECLARE_WORD_ARRAY(i) register<bit<32>>(NUM_TABLE_SLOTS) payload_w##i;
    FOR_EACH_WORD(DECLARE_WORD_ARRAY)

    apply {
        bit<32> index = (table_index << SLOT_BITS) | slot;
        if (store_op == STORE_WRITE) {
            slot_stamp.write(index, stamp);
#define WRITE_WORD(i) payload_w##i.write(index, payload.w##i);
            FOR_EACH_WORD(WRITE_WORD)
        } else if (store_op == STORE_READ) {
            slot_stamp.read(stamp, index);
            payload.setValid();
#define READ_WORD(i) payload_w##i.read(payload.w##i, index);
            FOR_EACH_WORD(READ_WORD)
        } else if (store_op == STORE_READ_STAMP) {
            slot_stamp.read(stamp, index);
        } else if (store_op == STORE_CLEAR) {
            slot_stamp.write(index, 0);
#define CLEAR_WORD(i) payload_w##i.write(index, 0);
            FOR_EACH_WORD(CLEAR_WORD)
        }
    }
}

#endif
