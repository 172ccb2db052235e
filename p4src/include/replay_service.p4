/*
 * replay_service.p4 -- the replay request pipeline (ingress).
 *
 * One pass serves one request or, for SAMPLE n and RESET, one step of a loop:
 *
 *   1. admission   header sanity, replay_table_config, replay_acl -> status
 *   2. operation   TableState, SumTree, SlotStore (each array touched <= once)
 *   3. reply       ReplyBuilder; errors always answer, STALE only with ACK
 *   4. loop        SAMPLE reply k < n-1 and RESET slot s < N-1: clone the
 *                  original request (I2E, LOOP_SESSION) with loop_index + 1;
 *                  egress recirculates the clone, which re-enters here as the
 *                  next pass. One request in, n replies out.
 *   5. stats       replay_requests[table, op, status] on the first pass
 */
#ifndef REPLAY_SERVICE_P4
#define REPLAY_SERVICE_P4

control ReplayService(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t std) {
    TableState() table_state;
    SumTree() sum_tree;
    SlotStore() slot_store;
    ReplyBuilder() reply;

    counter(STATS_SIZE, CounterType.packets_and_bytes) replay_requests;

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

    apply {
        bit<32> t = (bit<32>)hdr.replay.table_id;
        bit<8> flags = hdr.replay.flags;
        bit<8> op = hdr.replay.op;
        meta.status = STATUS_OK;
        meta.slot = hdr.replay.slot;
        meta.stamp = hdr.replay.stamp;
        meta.priority = hdr.replay.priority;
        meta.mode = (flags & FLAG_MODE_MASK) >> 4;

        /* ---- 1. admission ------------------------------------------------ */
        if (!hdr.replay.isValid()) {
            meta.status = STATUS_TRUNCATED;
        } else if (hdr.replay.version != REPLAY_VERSION || hdr.replay.reserved != 0
                   || (flags & (FLAGS_RESERVED | FLAG_REPLY)) != 0 || meta.mode == 3
                   || hdr.replay.status != 0) {
            meta.status = STATUS_MALFORMED;
        } else if (op == 0 || op > OP_LAST) {
            meta.status = STATUS_UNKNOWN_OP;
        } else if ((op == OP_INSERT || op == OP_WRITE) && !hdr.payload.isValid()) {
            meta.status = STATUS_TRUNCATED;
        } else if (op >= OP_READ && meta.from_cpu == 0) {
            meta.status = STATUS_DENIED;
        } else if (hdr.replay.table_id >= NUM_TABLES) {
            meta.status = STATUS_UNKNOWN_TABLE;
        } else {
            replay_table_config.apply();
            if (meta.capacity > NUM_SLOTS) {
                meta.capacity = NUM_SLOTS;
            }
            if (meta.status == STATUS_OK && meta.enabled == 0 && op <= OP_UPDATE) {
                meta.status = STATUS_DISABLED;
            }
            if (meta.status == STATUS_OK && meta.from_cpu == 0) {
                replay_acl.apply();
                if ((op == OP_INSERT && (meta.allowed_ops & ALLOW_INSERT) == 0)
                    || (op == OP_SAMPLE && (meta.allowed_ops & ALLOW_SAMPLE) == 0)
                    || (op == OP_UPDATE && (meta.allowed_ops & ALLOW_UPDATE) == 0)) {
                    meta.status = STATUS_DENIED;
                }
            }
            if (meta.status == STATUS_OK && (op == OP_UPDATE || op == OP_READ || op == OP_WRITE)
                && hdr.replay.slot >= meta.capacity) {
                meta.status = STATUS_BAD_SLOT;
            }
        }

        /* ---- 2. operation ------------------------------------------------ */
        bit<8> tree_op = 0;
        bit<8> store_op = 0;
        bit<8> state_op = 0;
        bit<1> has_priority = 0;
        if ((flags & FLAG_HAS_PRIORITY) != 0) {
            has_priority = 1;
        }

        if (meta.status == STATUS_OK) {
            if (op == OP_INSERT) {
                state_op = STATE_ALLOCATE;
                tree_op = TREE_SET_LEAF;
                store_op = STORE_WRITE;
            } else if (op == OP_SAMPLE) {
                if (meta.mode == MODE_DEFAULT) {
                    meta.mode = meta.default_mode;
                }
                state_op = STATE_READ;
                if (hdr.replay.count == 0) {
                    meta.status = STATUS_MALFORMED;
                } else if (hdr.replay.count > meta.max_batch) {
                    meta.status = STATUS_BATCH_TOO_LARGE;
                }
            } else if (op == OP_UPDATE) {
                store_op = STORE_READ_STAMP;
            } else if (op == OP_READ) {
                state_op = STATE_READ;
                tree_op = TREE_READ;
                store_op = STORE_READ;
            } else if (op == OP_WRITE) {
                state_op = STATE_READ;
                tree_op = TREE_SET_LEAF;
                store_op = STORE_WRITE;
            } else if (op == OP_RESET) {
                meta.slot = (bit<32>)meta.loop_index;
                meta.priority = 0;
                meta.stamp = 0;
                tree_op = TREE_SET_LEAF;
                store_op = STORE_CLEAR;
                if (meta.loop_index == NUM_SLOTS - 1) {
                    state_op = STATE_CLEAR;
                }
            } else if (op == OP_GET_STATE) {
                state_op = STATE_READ;
                tree_op = TREE_READ;
            } else if (op == OP_SET_STATE) {
                state_op = STATE_WRITE;
                meta.size = hdr.replay.size;
            }
        }

        /* Ring state first: INSERT needs its slot and stamp, SAMPLE its size. */
        bit<32> ring_slot = meta.slot;
        bit<32> ring_stamp = meta.stamp;
        bit<32> ring_priority = meta.priority;
        if (state_op != 0) {
            table_state.apply(state_op, t, meta.capacity, has_priority,
                              ring_slot, ring_stamp, ring_priority, meta.size);
        }
        if (op == OP_INSERT || op == OP_GET_STATE) {
            meta.slot = ring_slot;
            meta.stamp = ring_stamp;
            meta.priority = ring_priority;
        }

        if (meta.status == STATUS_OK && op == OP_SAMPLE) {
            if (meta.size < meta.min_size || meta.size == 0) {
                meta.status = STATUS_BELOW_MIN_SIZE;
            } else {
                tree_op = TREE_SAMPLE;
                store_op = STORE_READ;
            }
        }

        /* UPDATE: only if the slot still holds the experience it was sampled as. */
        if (store_op == STORE_READ_STAMP) {
            bit<32> stored_stamp = 0;
            slot_store.apply(store_op, t, meta.slot, stored_stamp, hdr.payload);
            store_op = 0;
            if (stored_stamp == 0 || stored_stamp != hdr.replay.stamp) {
                meta.status = STATUS_STALE;
            } else {
                tree_op = TREE_SET_LEAF;
                table_state.apply(STATE_OBSERVE, t, meta.capacity, has_priority,
                                  ring_slot, ring_stamp, meta.priority, meta.size);
            }
        }

        bit<32> tree_priority = meta.priority;
        if (tree_op != 0) {
            sum_tree.apply(tree_op, t, meta.mode, meta.size, meta.slot,
                           tree_priority, meta.total);
        }
        if (tree_op == TREE_SAMPLE || op == OP_READ) {
            meta.priority = tree_priority;
        }
        if (tree_op == TREE_SAMPLE && meta.mode == MODE_PRIORITIZED && meta.total == 0) {
            meta.status = STATUS_EMPTY;
            store_op = 0;
        }

        if (store_op != 0) {
            slot_store.apply(store_op, t, meta.slot, meta.stamp, hdr.payload);
        }

        /* ---- 3. reply and 4. loop ---------------------------------------- */
        bool answer = true;
        if (meta.status == STATUS_OK) {
            if (op == OP_INSERT || op == OP_UPDATE) {
                answer = (flags & FLAG_ACK) != 0;
            } else if (op == OP_SAMPLE) {
                meta.loop_again = (bit<1>)(meta.loop_index + 1 < (bit<16>)hdr.replay.count);
            } else if (op == OP_RESET) {
                answer = meta.loop_index == NUM_SLOTS - 1;
                meta.loop_again = (bit<1>)(!answer);
            }
        } else if (meta.status == STATUS_STALE) {
            answer = (flags & FLAG_ACK) != 0;
        }

        if (!(meta.status == STATUS_OK && (op == OP_SAMPLE || op == OP_READ))) {
            hdr.payload.setInvalid();
        }

        /* ---- 5. stats (first pass of a request only) ---------------------- */
        if (meta.loop_index == 0) {
            bit<32> bucket = NUM_TABLES;
            if (hdr.replay.isValid() && hdr.replay.table_id < NUM_TABLES
                && meta.status != STATUS_UNKNOWN_TABLE) {
                bucket = t;
            }
            bit<32> op_bucket = 0;
            if (op <= OP_LAST) {
                op_bucket = (bit<32>)op;
            }
            replay_requests.count((bucket << 8) | (op_bucket << 4) | (bit<32>)meta.status);
        }

        if (answer) {
            reply.apply(hdr, meta, std);    /* copies loop_index into the reply */
        } else {
            mark_to_drop(std);
        }

        /* The clone takes the field list as it is at the end of ingress. */
        if (meta.loop_again == 1) {
            meta.loop_index = meta.loop_index + 1;
            clone_preserving_field_list(CloneType.I2E, LOOP_SESSION, FL_LOOP);
        }
    }
}

#endif
