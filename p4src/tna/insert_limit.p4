/*
 * tna/insert_limit.p4 -- the per-host INSERT rate limit of
 * v1model/insert_limit.p4 on TNA: the same table, register and counter names.
 *
 * The window is INSERT_WINDOW_SHIFT bits of meta.now, here the ingress MAC
 * timestamp in nanoseconds: 2^30 ns = 1.073741824 s (v1model: 2^20 us). Each
 * cell is a pair (window number, INSERTs admitted in it) updated by one
 * RegisterAction: a new window restarts the count; an INSERT is admitted while
 * the count is below the budget.
 */
#ifndef REPLAY_INSERT_LIMIT_P4
#define REPLAY_INSERT_LIMIT_P4

#define INSERT_WINDOW_SHIFT 30          /* window = 2^30 ns of ingress_mac_tstamp */

struct insert_window_t {
    bit<32> window;
    bit<32> used;
}

control InsertLimit(in headers_t hdr, inout metadata_t meta) {
    Register<insert_window_t, bit<32>>(NUM_INSERT_LIMITERS) insert_window;
    Counter<bit<32>, bit<32>>(NUM_INSERT_LIMITERS, CounterType_t.PACKETS) rate_limited;

    bit<32> limiter = 0;
    bit<32> budget = 0;
    bit<1>  limited = 0;
    bit<32> window = 0;
    bit<1>  admit = 0;

    RegisterAction<insert_window_t, bit<32>, bit<1>>(insert_window) count_insert_action = {
        void apply(inout insert_window_t cell, out bit<1> admitted) {
            if (cell.window != window) {
                cell.window = window;
                cell.used = 0;
            }
            if (cell.used < budget) {
                cell.used = cell.used + 1;
                admitted = 1;
            } else {
                admitted = 0;
            }
        }
    };

    action limit(bit<16> index, bit<16> max_inserts) {
        limited = 1;
        limiter = (bit<32>)index;
        budget = (bit<32>)max_inserts;
    }

    table insert_limit {
        key = {
            hdr.replay.table_id : exact;
            hdr.ipv4.src_addr   : exact;
        }
        actions = { limit; NoAction; }
        default_action = NoAction();
        size = NUM_INSERT_LIMITERS;
    }

    action count_insert() {
        admit = count_insert_action.execute(limiter);
    }

    action refuse() {
        meta.status = STATUS_RATE_LIMITED;
        rate_limited.count(limiter);
    }

    apply {
        window = (bit<32>)(meta.now >> INSERT_WINDOW_SHIFT);
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
