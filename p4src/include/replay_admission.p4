/*
 * replay_admission.p4 -- ingress half of the replay service: decide, touch no
 * replay state.
 *
 *   1. checks     header sanity, lengths, replay_table_config, replay_acl ->
 *                 meta.status (docs/protocol.md lists the order)
 *   2. routing    SAMPLE n (and UPDATE_BATCH of n entries) that passed:
 *                 multicast to the group of 2^k >= n replicas toward the
 *                 requester's port (sample_replication); RESET:
 *                 RESET_GROUP; everything else (refusals included): unicast
 *                 back to the requester's port or the CPU port.
 *
 * All replay state lives in egress (replay_service.p4), where each copy the
 * PRE makes executes its own part of the request. Shared by both
 * architectures: the verdict is meta.out_port or meta.mcast_grp.
 */
#ifndef REPLAY_ADMISSION_P4
#define REPLAY_ADMISSION_P4

control ReplayAdmission(inout headers_t hdr, inout metadata_t meta) {
    InsertLimit() limiter;

    action configure(bit<1> enabled, bit<32> capacity, bit<32> min_size,
                     bit<8> max_batch, bit<8> default_mode) {
        meta.enabled = enabled;
        meta.capacity = capacity;
        meta.min_size = min_size;
        meta.max_batch = max_batch;
        meta.default_mode = default_mode;
    }

    action unknown_table() {
        meta.status = STATUS_UNKNOWN_TABLE;
    }

    /* Per-table configuration the controller writes. */
    table replay_table_config {
        key = { hdr.replay.table_id : exact; }
        actions = { configure; unknown_table; }
        default_action = unknown_table();
        size = NUM_TABLES;
    }

    action allow(bit<8> ops) {
        meta.allowed_ops = ops;
    }

    action deny() {
        meta.allowed_ops = 0;
    }

    /* Which host may insert / sample / update which table. Default deny. */
    table replay_acl {
        key = {
            hdr.ipv4.src_addr  : exact;
            hdr.replay.table_id : exact;
        }
        actions = { allow; deny; }
        default_action = deny();
        size = 1024;
    }

    /* n copies are made as the next power of two, 2^k >= n (egress drops
     * copies n .. 2^k - 1): group group_base + 2^k holds 2^k replicas. */
    action replicate(bit<16> group_base) {
        meta.mcast_grp = group_base;
    }

    action no_replication() {
        meta.status = STATUS_DENIED;
    }

    /* Where SAMPLE n (or an UPDATE_BATCH of n entries) from this port is
     * replicated: group_base + 2^k holds 2^k replicas (rid 0 .. 2^k - 1) toward
     * the port, k = 0 .. 8. The controller installs an entry and the groups
     * for every port whose host may sample or update. */
    table sample_replication {
        key = { meta.orig_port : exact; }
        actions = { replicate; no_replication; }
        default_action = no_replication();
        size = 512;
    }

    action add_replicas(bit<16> replicas) {
        meta.mcast_grp = meta.mcast_grp + replicas;
    }

    /* 2^k, the smallest power of two >= n, from the leading bit of n - 1
     * (meta.copies): one ternary lookup, no shift loop. */
    table batch_replicas {
        key = { meta.copies : ternary; }
        actions = { add_replicas; NoAction; }
        const entries = {
            8w0x00 &&& 8w0xFF : add_replicas(1);
            8w0x01 &&& 8w0xFF : add_replicas(2);
            8w0x02 &&& 8w0xFE : add_replicas(4);
            8w0x04 &&& 8w0xFC : add_replicas(8);
            8w0x08 &&& 8w0xF8 : add_replicas(16);
            8w0x10 &&& 8w0xF0 : add_replicas(32);
            8w0x20 &&& 8w0xE0 : add_replicas(64);
            8w0x40 &&& 8w0xC0 : add_replicas(128);
            8w0x80 &&& 8w0x80 : add_replicas(256);
        }
        default_action = NoAction();   /* n <= 255: never taken */
    }

    /* A request's lengths in bytes, UDP and IPv4, header included. */
    const bit<16> UDP_NEED = UDP_BYTES + REPLAY_HDR_BYTES;
    const bit<16> IP_NEED = IPV4_BYTES + UDP_NEED;

    /* The request's lengths against what it needs: the header, and what its
     * op needs too, as differences (headers.p4: BELOW). The op's needs come
     * negated, as the table's action data: a Tofino adds action data to a
     * field, it cannot subtract it. */
    action measure_lengths(bit<16> minus_udp_need, bit<16> minus_ip_need) {
        meta.udp_margin = hdr.udp.length - UDP_NEED;
        meta.ip_margin = hdr.ipv4.total_len - IP_NEED;
        meta.udp_margin_op = hdr.udp.length + minus_udp_need;   /* length - need */
        meta.ip_margin_op = hdr.ipv4.total_len + minus_ip_need;
    }

    /* What each op needs: INSERT and WRITE their payload, UPDATE_BATCH its
     * entries as the parser read them (min(count, MAX_UPDATE_BATCH) when the
     * frame holds them; fewer is TRUNCATED below anyway), the others their
     * header alone. */
    table request_lengths {
        key = { hdr.replay.op : exact; meta.entries_parsed : exact; }
        actions = { measure_lengths; }
        const entries = {
            (OP_INSERT, 0) : measure_lengths(-(UDP_NEED + PAYLOAD_BYTES),
                                             -(IP_NEED + PAYLOAD_BYTES));
            (OP_WRITE, 0) : measure_lengths(-(UDP_NEED + PAYLOAD_BYTES),
                                            -(IP_NEED + PAYLOAD_BYTES));
            (OP_UPDATE_BATCH, 1) : measure_lengths(-(UDP_NEED + 1 * ENTRY_BYTES),
                                                 -(IP_NEED + 1 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 2) : measure_lengths(-(UDP_NEED + 2 * ENTRY_BYTES),
                                                 -(IP_NEED + 2 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 3) : measure_lengths(-(UDP_NEED + 3 * ENTRY_BYTES),
                                                 -(IP_NEED + 3 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 4) : measure_lengths(-(UDP_NEED + 4 * ENTRY_BYTES),
                                                 -(IP_NEED + 4 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 5) : measure_lengths(-(UDP_NEED + 5 * ENTRY_BYTES),
                                                 -(IP_NEED + 5 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 6) : measure_lengths(-(UDP_NEED + 6 * ENTRY_BYTES),
                                                 -(IP_NEED + 6 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 7) : measure_lengths(-(UDP_NEED + 7 * ENTRY_BYTES),
                                                 -(IP_NEED + 7 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 8) : measure_lengths(-(UDP_NEED + 8 * ENTRY_BYTES),
                                                 -(IP_NEED + 8 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 9) : measure_lengths(-(UDP_NEED + 9 * ENTRY_BYTES),
                                                 -(IP_NEED + 9 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 10) : measure_lengths(-(UDP_NEED + 10 * ENTRY_BYTES),
                                                 -(IP_NEED + 10 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 11) : measure_lengths(-(UDP_NEED + 11 * ENTRY_BYTES),
                                                 -(IP_NEED + 11 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 12) : measure_lengths(-(UDP_NEED + 12 * ENTRY_BYTES),
                                                 -(IP_NEED + 12 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 13) : measure_lengths(-(UDP_NEED + 13 * ENTRY_BYTES),
                                                 -(IP_NEED + 13 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 14) : measure_lengths(-(UDP_NEED + 14 * ENTRY_BYTES),
                                                 -(IP_NEED + 14 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 15) : measure_lengths(-(UDP_NEED + 15 * ENTRY_BYTES),
                                                 -(IP_NEED + 15 * ENTRY_BYTES));
            (OP_UPDATE_BATCH, 16) : measure_lengths(-(UDP_NEED + 16 * ENTRY_BYTES),
                                                 -(IP_NEED + 16 * ENTRY_BYTES));
        }
        default_action = measure_lengths(-UDP_NEED, -IP_NEED);
    }

    action disabled() {
        meta.status = STATUS_DISABLED;
    }

    action denied() {
        meta.status = STATUS_DENIED;
    }

    /* The table's state and the host's rights, for the ops they govern: a
     * disabled table refuses INSERT, SAMPLE and UPDATE (UPDATE_BATCH) from
     * anyone, replay_acl's allowed_ops a host's. */
    table permission {
        key = {
            meta.status      : exact;
            meta.enabled     : ternary;
            meta.from_cpu    : ternary;
            hdr.replay.op    : exact;
            meta.allowed_ops : ternary;
        }
        actions = { disabled; denied; NoAction; }
        const entries = {
            (STATUS_OK, 0, _, OP_INSERT, _)                        : disabled();
            (STATUS_OK, 0, _, OP_SAMPLE, _)                        : disabled();
            (STATUS_OK, 0, _, OP_UPDATE, _)                        : disabled();
            (STATUS_OK, 0, _, OP_UPDATE_BATCH, _)                  : disabled();
            (STATUS_OK, _, 0, OP_INSERT, 0 &&& ALLOW_INSERT)       : denied();
            (STATUS_OK, _, 0, OP_SAMPLE, 0 &&& ALLOW_SAMPLE)       : denied();
            (STATUS_OK, _, 0, OP_UPDATE, 0 &&& ALLOW_UPDATE)       : denied();
            (STATUS_OK, _, 0, OP_UPDATE_BATCH, 0 &&& ALLOW_UPDATE) : denied();
        }
        default_action = NoAction();
    }

    /* SAMPLE n, UPDATE_BATCH of n: n copies, group 2^k >= n (batch_replicas). */
    action replicate_copies() {
        meta.replicate = 1;
        meta.copies = hdr.replay.count - 1;
    }

    action batch_malformed() {
        meta.status = STATUS_MALFORMED;
    }

    action batch_too_large() {
        meta.status = STATUS_BATCH_TOO_LARGE;
    }

    /* An UPDATE_BATCH's count: 1 .. MAX_UPDATE_BATCH (16), one copy per
     * entry. */
    table batch_count {
        key = { hdr.replay.count : ternary; }
        actions = { replicate_copies; batch_malformed; batch_too_large; }
        const entries = {
            0                 : batch_malformed();
            MAX_UPDATE_BATCH  : replicate_copies();
            0x00 &&& 0xF0     : replicate_copies();
        }
        default_action = batch_too_large();
    }

    action to_cpu() {
        meta.out_port = CPU_PORT;
    }

    action to_requester() {
        meta.out_port = meta.orig_port;
    }

    /* A request not multicast goes back to its requester, or the CPU port. */
    table unicast_route {
        key = {
            meta.mcast_grp : exact;
            meta.from_cpu  : exact;
        }
        actions = { to_cpu; to_requester; NoAction; }
        const entries = {
            (0, 1) : to_cpu();
            (0, 0) : to_requester();
        }
        default_action = NoAction();
    }

    MARGIN(action measure_limits() {
        meta.slot_margin = hdr.replay.slot - meta.capacity;
        meta.batch_margin = meta.max_batch - hdr.replay.count;
    })

    apply {
        bit<8> flags = hdr.replay.flags;
        bit<8> op = hdr.replay.op;
        request_lengths.apply();
        meta.status = STATUS_OK;
        meta.mode = (bit<8>)flags[FLAG_MODE_SHIFT + 1:FLAG_MODE_SHIFT];   /* FLAG_MODE_MASK */
        /* An UPDATE always carries its priority. */
        meta.has_priority = 0;
        if ((flags & FLAG_HAS_PRIORITY) != 0 || op == OP_UPDATE || op == OP_UPDATE_BATCH) {
            meta.has_priority = 1;
        }

        /* ---- 1. checks ------------------------------------------------------ */
        /* The lengths' margins are below 0 (a length under what is needed; the
         * needs are below 2^15) when the length's top bit is clear and the
         * margin's is set. */
        if (!hdr.replay.isValid()
            || hdr.udp.length[15:15] == 0 && meta.udp_margin[15:15] == 1
            || hdr.ipv4.total_len[15:15] == 0 && meta.ip_margin[15:15] == 1) {
            meta.status = STATUS_TRUNCATED;
        } else if (hdr.replay.version != REPLAY_VERSION || hdr.replay.reserved != 0
                   || (flags & (FLAGS_RESERVED | FLAG_REPLY)) != 0 || meta.mode == MODE_INVALID
                   || hdr.replay.status != 0) {
            meta.status = STATUS_MALFORMED;
        } else if (op == 0 || op > OP_LAST) {
            meta.status = STATUS_UNKNOWN_OP;
        } else if (!hdr.payload.isValid() && (op == OP_INSERT || op == OP_WRITE)
                   || hdr.udp.length[15:15] == 0 && meta.udp_margin_op[15:15] == 1
                   || hdr.ipv4.total_len[15:15] == 0 && meta.ip_margin_op[15:15] == 1
                   /* fewer than min(count, MAX_UPDATE_BATCH) entries in the frame
                    * (an entry admitted again, BATCH_ENTRY_ADMITTED, has fewer) */
                   || op == OP_UPDATE_BATCH && meta.redraw == 0
                      && meta.entries_parsed != hdr.replay.count
                      && meta.entries_parsed != MAX_UPDATE_BATCH) {
            meta.status = STATUS_TRUNCATED;
        } else if ((op == OP_READ || op == OP_WRITE || op == OP_RESET || op == OP_GET_STATE
                    || op == OP_SET_STATE) && meta.from_cpu == 0) {
            /* a CPU-only op from a host, op by op: bf-p4c's gateway cannot
             * lay out the overlapping slices of op that the range 4 .. 8 takes */
            meta.status = STATUS_DENIED;
        } else if (hdr.replay.table_id >= NUM_TABLES) {
            meta.status = STATUS_UNKNOWN_TABLE;
        } else {
            replay_table_config.apply();
            replay_acl.apply();   /* looked up for all; it judges hosts' requests only */
            /* capacity > NUM_SLOTS, NUM_SLOTS being 2^SLOT_BITS */
            if (meta.capacity[31:SLOT_BITS] != 0) {
                meta.capacity = NUM_SLOTS;
            }
            MARGIN(measure_limits();)
            permission.apply();
            /* The op's own checks, and its route: one branch per op, so that
             * no op waits for another's steps (a Tofino places the branches
             * side by side). */
            if (meta.status == STATUS_OK) {
                if (op == OP_INSERT) {
                    if (meta.from_cpu == 0) {
                        limiter.apply(hdr, meta);   /* per-host budget, include/insert_limit.p4 */
                    }
                } else if (op == OP_UPDATE || op == OP_READ || op == OP_WRITE
                           || BATCH_ENTRY_ADMITTED) {
                    /* slot >= capacity (the capacity's top bit is clear) */
                    if (!BELOW(hdr.replay.slot, meta.capacity, meta.slot_margin, 31)) {
                        meta.status = STATUS_BAD_SLOT;
                    }
                } else if (op == OP_SAMPLE || op == OP_UPDATE_BATCH) {
                    if (op == OP_SAMPLE) {
                        /* the table's default mode stands in for none */
                        if (meta.mode == MODE_DEFAULT) {
                            meta.mode = meta.default_mode;
                        }
                        if (hdr.replay.count == 0) {
                            meta.status = STATUS_MALFORMED;
                        } else if (BELOW(meta.max_batch, hdr.replay.count, meta.batch_margin, 7)) {
                            meta.status = STATUS_BATCH_TOO_LARGE;
                        } else if (meta.redraw == 0) {
                            replicate_copies();   /* a copy drawn again is one */
                        }
                    } else {
                        batch_count.apply();
                    }
                    /* ---- 2. routing: SAMPLE n, UPDATE_BATCH of n: n replicas, in
                     * this branch, so that it does not wait for the INSERT
                     * limiter's */
                    if (meta.replicate == 1) {
                        if (sample_replication.apply().hit) {
                            batch_replicas.apply();
                        }
                    }
                } else if (op == OP_RESET) {
                    meta.mcast_grp = RESET_GROUP;
                }
            }
        }

        /* ---- 2. routing: all but SAMPLE n and RESET (above), refusals too */
        unicast_route.apply();
    }
}

#endif
