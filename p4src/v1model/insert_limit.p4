/*
 * v1model/insert_limit.p4 -- the INSERT limit's window (include/insert_limit.p4)
 * on v1model: the window is INSERT_WINDOW_SHIFT bits of
 * standard_metadata.ingress_global_timestamp, in microseconds on bmv2 and the
 * Python switch: 2^20 us = 1.048576 s.
 *
 * One array of 32-bit cells, one per limiter, each packing the window it
 * counts (the window number's low 16 bits, in bits 31..16) and the INSERTs
 * admitted in it (bits 15..0; a budget is at most 65535), read, compared and
 * written in one action. The window number wraps after 2^16 windows (19
 * hours): a limiter idle for exactly a multiple of that may find its old
 * count, and is limited for one window at most. The register and counter
 * keep the names the controller reads (@name).
 */
#ifndef REPLAY_INSERT_WINDOW_P4
#define REPLAY_INSERT_WINDOW_P4

#define INSERT_WINDOW_SHIFT 20          /* window = 2^20 us of ingress_global_timestamp */

control InsertWindow(inout metadata_t meta, in bit<1> limited, in bit<32> limiter,
                     in bit<32> budget) {
    @name(".ReplayIngress.replay.limiter.insert_window")
    register<bit<32>>(NUM_INSERT_LIMITERS) insert_window;
    @name(".ReplayIngress.replay.limiter.rate_limited")
    counter(NUM_INSERT_LIMITERS, CounterType.packets) rate_limited;

    bit<32> window = 0;                 /* this packet's window, in bits 31..16 */
    bit<32> cell = 0;
    bit<32> used = 0;                   /* INSERTs admitted in this window so far */
    bit<1>  admit = 0;

    /* The read-compare-write of the limiter's cell, one action. */
    @name(".ReplayIngress.replay.limiter.count_insert")
    action count_insert() {
        window = ((bit<32>)(meta.now >> INSERT_WINDOW_SHIFT)) << 16;
        insert_window.read(cell, limiter);
        used = ((cell & 0xFFFF0000) == window) ? (cell & 0xFFFF) : 32w0;
        admit = (used < budget) ? 1w1 : 1w0;
        insert_window.write(limiter, window | ((used < budget) ? used + 1 : used));
    }

    @name(".ReplayIngress.replay.limiter.refuse")
    action refuse() {
        meta.status = STATUS_RATE_LIMITED;
        rate_limited.count(limiter);
    }

    apply {
        if (limited == 1) {
            count_insert();
            if (admit == 0) {
                refuse();
            }
        }
    }
}

#endif
