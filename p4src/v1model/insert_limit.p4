/*
 * v1model/insert_limit.p4 -- per-host INSERT rate limit of each replay table, in
 * ingress: a flooding Actor cannot overwrite the whole ring.
 *
 * A fixed window counter. The controller gives each (table, host) that may
 * insert a limiter (an index into the register below) and a budget: at most
 * `max_inserts` INSERTs per window, the window being INSERT_WINDOW_SHIFT bits
 * of meta.now, the ingress timestamp (standard_metadata.ingress_global_timestamp:
 * microseconds on bmv2 and the Python switch, 2^20 us = 1.048576 s). An INSERT past the budget is refused
 * with STATUS_RATE_LIMITED (not stored, answered like every refusal) and
 * counted per limiter. A (table, host) with no entry is not limited.
 *
 * State: one array of 32-bit cells, one per limiter, each packing the window
 * it counts (the window number's low 16 bits, in bits 31..16) and the INSERTs
 * admitted in it (bits 15..0; a budget is at most 65535). One action reads,
 * compares and writes the cell: a Tofino RegisterAction, and atomic on bmv2,
 * which locks the registers an action touches. Only admitted INSERTs are
 * counted, so a refused one does not use up the budget. The window number
 * wraps after 2^16 windows (19 hours): a limiter idle for exactly a multiple
 * of that may find its old count, and is limited for one window at most.
 */
#ifndef REPLAY_INSERT_LIMIT_P4
#define REPLAY_INSERT_LIMIT_P4

#define INSERT_WINDOW_SHIFT 20          /* window = 2^20 us of ingress_global_timestamp */

control InsertLimit(in headers_t hdr, inout metadata_t meta) {
    register<bit<32>>(NUM_INSERT_LIMITERS) insert_window;
    counter(NUM_INSERT_LIMITERS, CounterType.packets) rate_limited;

    bit<32> limiter = 0;
    bit<32> budget = 0;
    bit<1>  limited = 0;
    bit<32> window = 0;                 /* this packet's window, in bits 31..16 */
    bit<32> cell = 0;
    bit<32> used = 0;                   /* INSERTs admitted in this window so far */
    bit<1>  admit = 0;

    action limit(bit<16> index, bit<16> max_inserts) {
        limited = 1;
        limiter = (bit<32>)index;
        budget = (bit<32>)max_inserts;
    }

    /* Which limiter and budget an INSERT of this table from this host uses. */
    table insert_limit {
        key = {
            hdr.replay.table_id : exact;
            hdr.ipv4.src_addr   : exact;
        }
        actions = { limit; NoAction; }
        default_action = NoAction();
        size = NUM_INSERT_LIMITERS;
    }

    /* The read-compare-write of the limiter's cell, one action. */
    action count_insert() {
        window = ((bit<32>)(meta.now >> INSERT_WINDOW_SHIFT)) << 16;
        insert_window.read(cell, limiter);
        used = ((cell & 0xFFFF0000) == window) ? (cell & 0xFFFF) : 32w0;
        admit = (used < budget) ? 1w1 : 1w0;
        insert_window.write(limiter, window | ((used < budget) ? used + 1 : used));
    }

    action refuse() {
        meta.status = STATUS_RATE_LIMITED;
        rate_limited.count(limiter);
    }

    apply {
        insert_limit.apply();
        if (limited == 1) {
            count_insert();
            if (admit == 0) {
                refuse();
            }
        }
    }
}

#endif
