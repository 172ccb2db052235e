/*
 * insert_limit.p4 -- per-host INSERT rate limit of each replay table, in
 * ingress: a flooding Actor cannot overwrite the whole ring.
 *
 * A fixed window counter. The controller gives each (table, host) that may
 * insert a limiter (an index into the architecture's window register) and a
 * budget: at most `max_inserts` INSERTs per window of meta.now, the ingress
 * timestamp (INSERT_WINDOW_SHIFT bits of it: about a second on either
 * architecture). An INSERT past the budget is refused with
 * STATUS_RATE_LIMITED (not stored, answered like every refusal) and counted
 * per limiter. A (table, host) with no entry is not limited.
 *
 * The table is shared; the read-compare-write of the limiter's cell is each
 * architecture's InsertWindow (v1model/insert_limit.p4, tna/insert_limit.p4),
 * one atomic step: an action on bmv2, which locks the registers an action
 * touches, and a RegisterAction on Tofino. Only admitted INSERTs are counted,
 * so a refused one does not use up the budget.
 */
#ifndef REPLAY_INSERT_LIMIT_P4
#define REPLAY_INSERT_LIMIT_P4

control InsertLimit(in headers_t hdr, inout metadata_t meta) {
    InsertWindow() window;

    bit<32> limiter = 0;
    bit<32> budget = 0;
    bit<1>  limited = 0;

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

    apply {
        insert_limit.apply();
        window.apply(meta, limited, limiter, budget);
    }
}

#endif
