/*
 * tna/insert_limit.p4 -- the INSERT limit's window (include/insert_limit.p4)
 * on TNA: the window is INSERT_WINDOW_SHIFT bits of meta.now, here the
 * ingress MAC timestamp in nanoseconds: 2^30 ns = 1.073741824 s (v1model:
 * 2^20 us). Each cell is a pair (window number, INSERTs admitted in it)
 * updated by one RegisterAction: a new window restarts the count; an INSERT
 * is admitted while the count is below the budget. The register and counter
 * keep the names the controller reads (@name).
 */
#ifndef REPLAY_INSERT_WINDOW_P4
#define REPLAY_INSERT_WINDOW_P4

#define INSERT_WINDOW_SHIFT 30          /* window = 2^30 ns of ingress_mac_tstamp */

struct insert_window_t {
    bit<32> window;
    bit<32> used;
}

control InsertWindow(inout metadata_t meta, in bit<1> limited, in bit<32> limiter,
                     in bit<32> budget) {
    @name(".ReplayIngress.replay.limiter.insert_window")
    Register<insert_window_t, bit<32>>(NUM_INSERT_LIMITERS) insert_window;
    @name(".ReplayIngress.replay.limiter.rate_limited")
    Counter<bit<32>, bit<32>>(NUM_INSERT_LIMITERS, CounterType_t.PACKETS) rate_limited;

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

    @name(".ReplayIngress.replay.limiter.count_insert")
    action count_insert() {
        admit = count_insert_action.execute(limiter);
    }

    @name(".ReplayIngress.replay.limiter.refuse")
    action refuse() {
        meta.status = STATUS_RATE_LIMITED;
        rate_limited.count(limiter);
    }

    apply {
        window = (bit<32>)(meta.now >> INSERT_WINDOW_SHIFT);
        if (limited == 1) {
            count_insert();
            if (admit == 0) {
                refuse();
            }
        }
    }
}

#endif
