/*
 * replay_service.p4 -- egress half of the replay service: where the replay
 * state lives and every request, or every copy of one, is executed.
 *
 * One egress pass per packet the traffic manager hands over:
 *   INSERT, UPDATE, READ, WRITE, GET_STATE, SET_STATE, refusals: the request
 *              itself (unicast back to the requester / the CPU port).
 *   SAMPLE n   each of the n copies the PRE made (rid = reply index) draws its
 *              own sample: n egress passes, no recirculation. The PRE makes
 *              2^k >= n copies; the ones past n are dropped first thing.
 *   UPDATE_BATCH of n entries: on v1model replicated the same way, each
 *              copy the UPDATE of entry rid (include/batch.p4), tallied
 *              (v1model/batch_tally.p4) when an ACK was asked for, and the
 *              copy that completes the tally answers; on TNA
 *              (BATCH_IN_SEQUENCE) one packet, whose entries follow each
 *              other through LOOP_PORT, each admitted as an UPDATE and
 *              tallied in the verdict of its last pass, the last answering.
 *   RESET      RESET_FANOUT copies per round (rid = slot - reset_base), each
 *              clearing one slot; the round's last copy recirculates for the
 *              next round, and the last copy of the last round answers.
 *
 * The stages, in pass order (each register array touched at most once):
 *   ReplayPlan    op (and mode, a RESET copy's round) -> what each stage does
 *                 (replay_plan, const entries)
 *   RingState     ring_ptr, ring_count, insert_seq
 *   UniformDraw   (uniform SAMPLE) slot in [0, size) (DRAWS_IN_FIRST_PHASE;
 *                 else in a later phase: SumTreeLaterPhases)
 *   SlotGuard     slot_stamp (UPDATE: still the same experience?)
 *   MaxPriority   max_priority
 *   SumTree       slot_priority, tree_root, tree_l1 .. l11, tree_leaf
 *                 (prioritized SAMPLE: ProportionalDraw, then the walk)
 *   SlotStore     slot_record_stamp, slot_record_priority, payload_p0 .. p7
 *                 (a reply's stamp, priority and payload: one record)
 *   BatchTally    (v1model: an UPDATE_BATCH entry's last pass, ACK asked) batch_tally
 *   SampleStats   right after the record, for the SAMPLE reply this pass
 *                 sends: replay_sampled[table] per experience a SAMPLE
 *                 returns, replay_not_ready[table] per SAMPLE reply answered
 *                 NOT_READY (names pinned to ReplayEgress.replay.<name>)
 *   ReplayVerdict (replay_verdict, const entries) reply (ReplyBuilder: a
 *                 SAMPLE copy addressed in ingress only fills in its own
 *                 fields), drop (no ACK asked, not reply 0 of a refused
 *                 SAMPLE), or again (a SAMPLE reply whose draws all
 *                 overshot or that landed on a slot another thread is still
 *                 writing, the next RESET round); a SAMPLE reply still on
 *                 such a slot after EMPTY_SLOT_REDRAWS says NOT_READY
 *   ReplayStats   replay_requests[table, op, status] once per request
 *
 * Phases: v1model runs all of this in one egress pass. TNA runs a request's
 * stages in several passes through LOOP_PORT, its phases (tna/phases.p4):
 * PhasePlan says which comes next, FIRST_PHASE picks the branch of the
 * stages up to the tree's change or draw, the other branches hold the slot
 * record (RECORD_IN_OWN_PHASE: else after the state, gated by STORE_PHASE)
 * and the tree's levels (SumTreeFirstPhase and SumTreeLaterPhases say which
 * part of the tree goes where: on v1model all of it in the first phase,
 * after the guard and the max), MORE_PHASES sends the request round again
 * and PhaseCarry writes what this phase found into it. The predicates are
 * <arch>/arch.p4's; the phase steps are controls of one signature on both
 * architectures (<arch>/phases.p4, <arch>/sum_tree.p4, tna/draw.p4,
 * tna/loop.p4), which do nothing on v1model. Branches that exclude each
 * other (the phases; SAMPLE and the other ops) let a compiler lay their
 * tables over the same stages.
 *
 * Shared by both architectures. The state stages are each architecture's own
 * (p4src/v1model/, p4src/tna/: same controls, tables and register names);
 * the architecture's top level acts on meta.verdict (send, drop, recirculate).
 */
#ifndef REPLAY_SERVICE_P4
#define REPLAY_SERVICE_P4

/* What each state stage does for this request: its row of replay_plan (const
 * entries), which also gives a RESET copy its slot. */
control ReplayPlan(in headers_t hdr, inout metadata_t meta) {
    RESET_SLOT_CELL
    /* The table (its state's index), the slot, stamp and priority the
     * request names (a refusal's too). */
    action keep() {
        meta.table_index = (bit<32>)hdr.replay.table_id;
        meta.slot = hdr.replay.slot;
        meta.stamp = hdr.replay.stamp;
        meta.priority = hdr.replay.priority;
    }

    action plan(bit<8> ring_op, bit<8> guard_op, bit<8> max_op, bit<8> tree_op,
                bit<8> store_op) {
        keep();
        meta.ring_op = ring_op;
        meta.guard_op = guard_op;
        meta.max_op = max_op;
        meta.tree_op = tree_op;
        meta.store_op = store_op;
    }

    action set_state() {
        keep();
        meta.ring_op = RING_WRITE_ALL;
        meta.guard_op = 0;
        meta.max_op = MAX_WRITE;
        meta.tree_op = 0;
        meta.store_op = 0;
        meta.size = hdr.replay.size;
    }

    /* A RESET copy clears its slot (the round's first plus its index); the
     * ring and the max only in the last copy of the last round. */
    action reset_copy(bit<8> ring_op, bit<8> max_op) {
        meta.table_index = (bit<32>)hdr.replay.table_id;
        meta.ring_op = ring_op;
        meta.guard_op = GUARD_WRITE;
        meta.max_op = max_op;
        meta.tree_op = TREE_ADD;
        meta.store_op = STORE_CLEAR;
        RESET_SLOT
        meta.stamp = 0;
        meta.priority = 0;
    }

    /* What an admitted request does in each stage, first matching row first;
     * a refused one misses and does nothing (keep()). SAMPLE's tree op is TREE_WALK
     * in prioritized mode (TREE_TOTAL: uniform). A reply's priority is always the
     * slot record's (STORE_READ), read with its stamp and payload. The last copy
     * of a RESET's last round is told from the round's first slot and the copy's
     * index (its rid, below RESET_FANOUT), not from its own slot, a step later. */
    table replay_plan {
        key = {
            meta.status     : exact;
            hdr.replay.op   : exact;
            meta.mode       : ternary;
            meta.index      : ternary;
            meta.reset_base : ternary;
            meta.redraw     : ternary;   /* BATCH_IN_SEQUENCE: an UPDATE_BATCH's first pass, 0 */
        }
        actions = { plan; set_state; reset_copy; keep; }
        const entries = {
            (STATUS_OK, OP_INSERT, _, _, _, _)    : plan(RING_ALLOCATE,  GUARD_WRITE, MAX_RESOLVE, TREE_ADD,   STORE_WRITE);
            (STATUS_OK, OP_SAMPLE, MODE_PRIORITIZED, _, _, _)
                                               : plan(RING_READ_SIZE, 0,           0,           TREE_WALK,  STORE_READ);
            (STATUS_OK, OP_SAMPLE, _, _, _, _)    : plan(RING_READ_SIZE, 0,           0,           TREE_TOTAL, STORE_READ);
            (STATUS_OK, OP_UPDATE, _, _, _, _)    : plan(RING_READ_SIZE, GUARD_CHECK, MAX_RAISE,   TREE_ADD,   STORE_PRIORITY);
#if BATCH_IN_SEQUENCE
            (STATUS_OK, OP_UPDATE_BATCH, _, _, _, 0) : keep();   /* takes entry 0 alone (verdict) */
#endif
            (STATUS_OK, OP_UPDATE_BATCH, _, _, _, _)
                                               : plan(RING_READ_SIZE, GUARD_CHECK, MAX_RAISE,   TREE_ADD,   STORE_PRIORITY);
            (STATUS_OK, OP_READ, _, _, _, _)      : plan(RING_READ_SIZE, 0,           0,           TREE_TOTAL, STORE_READ);
            (STATUS_OK, OP_WRITE, _, _, _, _)     : plan(RING_READ_SIZE, GUARD_WRITE, 0,           TREE_ADD,   STORE_WRITE);
            (STATUS_OK, OP_RESET, _, (bit<8>)(RESET_FANOUT - 1), NUM_SLOTS - RESET_FANOUT, _)
                                               : reset_copy(RING_CLEAR, MAX_CLEAR);
            (STATUS_OK, OP_RESET, _, _, _, _)     : reset_copy(0, 0);
            (STATUS_OK, OP_GET_STATE, _, _, _, _) : plan(RING_READ_ALL,  0,           MAX_READ,    TREE_TOTAL, 0);
            (STATUS_OK, OP_SET_STATE, _, _, _, _) : set_state();
        }
        default_action = keep();
    }

    apply {
        replay_plan.apply();
    }
}

/* After the state stages: whether this pass answers (meta.verdict: a refused
 * SAMPLE once, an INSERT or UPDATE only when it asked for an ACK, a RESET
 * only at its end), goes round again (the request's next phase; a SAMPLE
 * reply drawn again: every draw overshot, or the slot drawn holds no
 * experience yet; the next RESET round) or is dropped, and whether the
 * request is counted now (once per request). The decision is a table
 * (replay_verdict, const entries), after the phases' own check. */
control ReplayVerdict(inout headers_t hdr, inout metadata_t meta, out bit<1> counted) {
    action next_phase() {
        meta.verdict = EGRESS_AGAIN;
        counted = 0;
        meta.copy_index = meta.index;
    }

    /* Every draw overshot, or the slot drawn holds no experience yet. */
    action draw_again() {
        meta.verdict = EGRESS_AGAIN;
        counted = 0;
        meta.redraw = 1;
        meta.redraws = meta.redraws + 1;
        meta.copy_index = meta.index;
    }

    action next_round() {
        meta.verdict = EGRESS_AGAIN;
        counted = 0;
        meta.reset_base = meta.reset_base + RESET_FANOUT;
    }

#if BATCH_IN_SEQUENCE
    /* Round for an UPDATE_BATCH's next entry, which the next ingress pass takes
     * off the front of the packet (TakeEntry, tna/loop.p4) and admits as
     * that entry's UPDATE (redraw); copy_index is the entries still in the
     * packet. */
    action to_next_entry() {
        meta.verdict = EGRESS_AGAIN;
        meta.has_entries = 1;
        meta.redraw = 1;
        meta.next_phase = NO_NEXT_PHASE;
    }

    /* An UPDATE_BATCH's first pass (its plan does nothing else): round for
     * entry 0, all count entries in the packet. */
    action first_entry() {
        counted = 0;
        meta.copy_index = hdr.replay.count;
        to_next_entry();
    }

    /* An UPDATE_BATCH entry's last pass, with entries after it (meta.index:
     * those still in the packet): its outcome tallied (applied, stale: 1 or
     * 0), and round for the next. */
    action next_entry(bit<8> applied, bit<8> stale) {
        counted = 1;
        meta.batch_applied = meta.batch_applied + applied;
        meta.batch_stale = meta.batch_stale + stale;
        meta.copy_index = meta.index;
        to_next_entry();
    }

    /* The batch's last entry, ACK asked: its outcome tallied, and the ACK. */
    action last_entry(bit<8> applied, bit<8> stale) {
        meta.verdict = EGRESS_REPLY;
        counted = 1;
        meta.batch_applied = meta.batch_applied + applied;
        meta.batch_stale = meta.batch_stale + stale;
        meta.batch_state = BATCH_LAST;
    }
#endif

    action reply(bit<1> count) {
        meta.verdict = EGRESS_REPLY;
        counted = count;
    }

    action drop(bit<1> count) {
        meta.verdict = EGRESS_DROP;
        counted = count;
    }

    /* First matching row first. A SAMPLE is counted by its reply 0 alone; a
     * refused SAMPLE answers once (reply 0), a RESET at the last copy of its
     * last round, an INSERT or UPDATE (done or stale) only when it asked for
     * an ACK (counted either way), an UPDATE_BATCH entry (each counted) only
     * when it completed its batch's tally (BATCH_IN_SEQUENCE: the last entry,
     * when the batch asked for an ACK; the others go on to the next entry), a
     * refused UPDATE_BATCH once; everything else answers. */
    table replay_verdict {
        key = {
            hdr.replay.op    : ternary;
            meta.status      : ternary;
            meta.found       : ternary;
            meta.index       : ternary;
            meta.reset_base  : ternary;
            hdr.replay.flags : ternary;
            meta.batch_state : ternary;
            meta.redraw      : ternary;   /* an UPDATE_BATCH entry's pass (BATCH_IN_SEQUENCE) */
        }
        actions = {
            draw_again; next_round; reply; drop;
#if BATCH_IN_SEQUENCE
            first_entry; next_entry; last_entry;
#endif
        }
        const entries = {
            (OP_UPDATE_BATCH, _, _, _, _, _, BATCH_LAST, _)  : reply(1);
            (OP_UPDATE_BATCH, _, _, _, _, _, BATCH_ENTRY, _) : drop(1);
#if BATCH_IN_SEQUENCE
            /* the batch's first pass: entry 0; an entry's last pass (not
             * MORE_PHASES), by its outcome and the entries left after it
             * (meta.index) */
            (OP_UPDATE_BATCH, STATUS_OK, _, _, _, _, _, 0)     : first_entry();
            (OP_UPDATE_BATCH, STATUS_OK, _, 0, _, FLAG_ACK &&& FLAG_ACK, _, 1)    : last_entry(1, 0);
            (OP_UPDATE_BATCH, STATUS_STALE, _, 0, _, FLAG_ACK &&& FLAG_ACK, _, 1) : last_entry(0, 1);
            (OP_UPDATE_BATCH, _, _, 0, _, FLAG_ACK &&& FLAG_ACK, _, 1)            : last_entry(0, 0);
            (OP_UPDATE_BATCH, _, _, 0, _, _, _, 1)             : drop(1);
            (OP_UPDATE_BATCH, STATUS_OK, _, _, _, _, _, 1)     : next_entry(1, 0);
            (OP_UPDATE_BATCH, STATUS_STALE, _, _, _, _, _, 1)  : next_entry(0, 1);
            (OP_UPDATE_BATCH, _, _, _, _, _, _, 1)             : next_entry(0, 0);
#endif
            (OP_SAMPLE, STATUS_OK, 0, _, _, _, _, _)   : draw_again();
            (OP_SAMPLE, _, _, 0, _, _, _, _)           : reply(1);
            (OP_SAMPLE, STATUS_OK, _, _, _, _, _, _)   : reply(0);
            (OP_SAMPLE, _, _, _, _, _, _, _)           : drop(0);
            (OP_RESET, STATUS_OK, _, (bit<8>)(RESET_FANOUT - 1), NUM_SLOTS - RESET_FANOUT, _, _, _)
                                                 : reply(1);
            (OP_RESET, STATUS_OK, _, (bit<8>)(RESET_FANOUT - 1), _, _, _, _)
                                                 : next_round();
            (OP_RESET, STATUS_OK, _, _, _, _, _, _)    : drop(0);
            (OP_INSERT, STATUS_OK, _, _, _, 0 &&& FLAG_ACK, _, _)    : drop(1);
            (OP_INSERT, STATUS_STALE, _, _, _, 0 &&& FLAG_ACK, _, _) : drop(1);
            (OP_UPDATE, STATUS_OK, _, _, _, 0 &&& FLAG_ACK, _, _)    : drop(1);
            (OP_UPDATE, STATUS_STALE, _, _, _, 0 &&& FLAG_ACK, _, _) : drop(1);
        }
        default_action = reply(1);
    }

    apply {
        if (MORE_PHASES) {
            next_phase();   /* the request's next phase (<arch>/arch.p4) */
        } else {
            replay_verdict.apply();
        }
    }
}

/* Right after the slot record's read, in its branch (so that the verdict does
 * not wait for it): a drawn slot that holds no experience (stamp 0: an INSERT
 * on another thread has claimed it and not written it yet) is drawn again;
 * after EMPTY_SLOT_REDRAWS redraws the reply says NOT_READY (ReplyFields),
 * without payload. `unwritten` comes in false (the service's), so that no
 * pass spends a table on setting it. */
control RecordCheck(inout headers_t hdr, inout metadata_t meta, inout bool unwritten) {
    ReadEnds() read_ends;

    apply {
        if (hdr.replay.op == OP_SAMPLE && meta.status == STATUS_OK && meta.found == 1) {
            if (meta.stamp == 0) {      /* a condition of its own: 4 bytes */
                unwritten = true;
                hdr.payload.setInvalid();
                read_ends.apply(meta);   /* <arch>/phases.p4 */
                if (meta.redraws < EMPTY_SLOT_REDRAWS) {
                    meta.found = 0;
                }
            }
        }
    }
}

/* The request counter, read by controller/stats.py: replay_requests once per
 * request. Its name is pinned (@name) to where the controller has always
 * found it, as are SampleStats'. */
control ReplayStats(in headers_t hdr, in metadata_t meta, in bit<32> bucket,
                    in bit<32> op_bucket, in bit<1> counted) {
    @name(".ReplayEgress.replay.replay_requests") REQUEST_COUNTER(replay_requests, STATS_SIZE);

    apply {
        if (counted == 1) {
            COUNT_REQUEST(replay_requests, bucket, op_bucket, meta.status);
        }
    }
}

/* A SAMPLE reply's counters, right after its record's read (RecordCheck), so
 * that they do not wait for the verdict: replay_sampled per experience a
 * SAMPLE returns, replay_not_ready per SAMPLE reply still on an unwritten
 * slot. A SAMPLE pass answers when it found its slot and has no phase after
 * this one (the verdict's first rows). */
control SampleStats(in headers_t hdr, in metadata_t meta, in bool unwritten) {
    @name(".ReplayEgress.replay.replay_sampled") STATS_COUNTER(replay_sampled, NUM_TABLES);
    @name(".ReplayEgress.replay.replay_not_ready") STATS_COUNTER(replay_not_ready, NUM_TABLES);

    apply {
        /* Side by side, not nested: one gateway. */
        if (hdr.replay.op == OP_SAMPLE && meta.status == STATUS_OK && meta.found == 1
            && !MORE_PHASES && unwritten) {
            replay_not_ready.count((bit<32>)hdr.replay.table_id);
        } else if (hdr.replay.op == OP_SAMPLE && meta.status == STATUS_OK && meta.found == 1
                   && !MORE_PHASES) {
            replay_sampled.count((bit<32>)hdr.replay.table_id);
        }
    }
}

/* The request counter's table and op buckets (out of range: NUM_TABLES, 0),
 * taken before the state stages: they change the status, but never to or from
 * UNKNOWN_TABLE, so the buckets do not wait for them. Only a pass that may be
 * counted takes them (a SAMPLE is counted by its reply 0 alone). */
control ReplayStatsBuckets(in headers_t hdr, in metadata_t meta,
                           out bit<32> bucket, out bit<32> op_bucket) {
    action by_table_and_op() {
        bucket = (bit<32>)hdr.replay.table_id;
        op_bucket = (bit<32>)hdr.replay.op;
    }

    action by_op() {
        bucket = NUM_TABLES;
        op_bucket = (bit<32>)hdr.replay.op;
    }

    action by_table() {
        bucket = (bit<32>)hdr.replay.table_id;
        op_bucket = 0;
    }

    action out_of_range() {
        bucket = NUM_TABLES;
        op_bucket = 0;
    }

    /* First matching row first: a SAMPLE's replies past 0 take neither; the
     * table's bucket for a header naming a table below NUM_TABLES
     * (table_id's bits from TABLE_BITS up clear) that is not UNKNOWN_TABLE;
     * the op's for ops 0 .. OP_LAST (0 .. 7, 8 .. 9). */
    table stats_buckets {
        key = {
            hdr.replay.op        : ternary;
            meta.index           : ternary;
            hdr.replay.isValid() : exact;
            hdr.replay.table_id  : ternary;
            meta.status          : ternary;
        }
        actions = { by_table_and_op; by_op; by_table; out_of_range; }
        const entries = {
            (OP_SAMPLE, 0, true, 0 &&& TABLE_ID_HIGH, STATUS_UNKNOWN_TABLE) : by_op();
            (OP_SAMPLE, 0, true, 0 &&& TABLE_ID_HIGH, _)                    : by_table_and_op();
            (OP_SAMPLE, 0, true, _, _)                                      : by_op();
            (OP_SAMPLE, 0, false, _, _)                                     : by_op();
            (OP_SAMPLE, _, true, _, _)                                      : out_of_range();
            (OP_SAMPLE, _, false, _, _)                                     : out_of_range();
            (0 &&& 0xF8, _, true, 0 &&& TABLE_ID_HIGH, STATUS_UNKNOWN_TABLE) : by_op();
            (0 &&& 0xF8, _, true, 0 &&& TABLE_ID_HIGH, _)                   : by_table_and_op();
            (0 &&& 0xF8, _, true, _, _)                                     : by_op();
            (0 &&& 0xF8, _, false, _, _)                                    : by_op();
            (8 &&& 0xFE, _, true, 0 &&& TABLE_ID_HIGH, STATUS_UNKNOWN_TABLE) : by_op();
            (8 &&& 0xFE, _, true, 0 &&& TABLE_ID_HIGH, _)                   : by_table_and_op();
            (8 &&& 0xFE, _, true, _, _)                                     : by_op();
            (8 &&& 0xFE, _, false, _, _)                                    : by_op();
            (_, _, true, 0 &&& TABLE_ID_HIGH, STATUS_UNKNOWN_TABLE)         : out_of_range();
            (_, _, true, 0 &&& TABLE_ID_HIGH, _)                            : by_table();
        }
        default_action = out_of_range();
    }

    apply {
        stats_buckets.apply();
    }
}

control ReplayService(inout headers_t hdr, inout metadata_t meta) {
    RingState() ring;
#if DRAWS_IN_FIRST_PHASE
    UniformDraw() uniform;
#endif
    SlotGuard() guard;
    MaxPriority() max_priority;
    /* The sum tree by phase (<arch>/sum_tree.p4 and tna/draw.p4): the root
     * before the phase branches (phase 0 reads it, phase 1 adds to it), the
     * empty-tree check in phase 0's SAMPLE branch, an ADD's change (the leaf
     * swap) in phase 0's other branch, the rest in phase 0 (v1model: all of
     * it) or in the later phases (TNA: the levels, beside a SAMPLE's draw). */
    SumTreeRoot() tree_root;
    SumTreeEmpty() tree_empty;
    SumTreeChange() tree_change;
    SumTreeFirstPhase() tree_first;
    @noWarn("unused") SumTreeLaterPhases() tree_later;   /* v1model has no later phase */
    SlotStore() store;
    RecordCheck() record_check;
    ReplyBuilder() reply;
#if EGRESS_ADDRESSES_REPLIES
    ReplyUnaddress() unaddress;
#endif
    ReplayPlan() plan;
    ReplayVerdict() verdict;
#if !BATCH_IN_SEQUENCE
    BatchPick() pick;
#endif
#if !BATCH_IN_SEQUENCE
    BatchTally() tally;
#endif

    ReplayStats() stats;
    SampleStats() sample_stats;
    ReplayStatsBuckets() stats_buckets;
    /* The phases (<arch>/phases.p4, tna/loop.p4: nothing on v1model): which
     * comes next, what this one found into the request for it, and loop_h's
     * flags as soon as the verdict is known. */
    PhasePlan() phases;
    @noWarn("unused") PhaseCarry() carry;   /* nor a next phase to carry into */
    LoopFlags() loop_flags;
    REPLY_INDEX_CELL

    /* A copy's index (REPLY_INDEX: its rid's low byte) and index - count,
     * taken from the rid, so that the check below waits for nothing; and
     * size - min_size, for BELOW (headers.p4). */
    action measure_copy() {
        REPLY_INDEX
        MARGIN(meta.copy_margin = meta.rid[7:0] - hdr.replay.count;)
    }

    MARGIN(action measure_size() {
        meta.size_margin = meta.size - meta.min_size;
    })


    /* A request (or a copy on a later pass) has the index it came with. */
    action keep_index() {
        meta.index = meta.copy_index;
    }

    table index_source {
        key = { meta.is_replica : exact; }
        actions = { measure_copy; keep_index; }
        const entries = {
            1 : measure_copy();
            0 : keep_index();
        }
        default_action = keep_index();   /* never taken */
    }

    apply {
        bit<8> op = hdr.replay.op;
        index_source.apply();
        /* rid >= count (a SAMPLE's copy, or a replicated UPDATE_BATCH's: every
         * replica but a RESET's) */
        if (meta.is_replica == 1 && op != OP_RESET
            && (meta.rid[15:8] != 0
                || !BELOW(meta.rid[7:0], hdr.replay.count, meta.copy_margin, 7))) {
            meta.verdict = EGRESS_DROP;   /* a copy past n: the group is n rounded up to 2^k */
        } else {
#if !BATCH_IN_SEQUENCE
            /* an UPDATE_BATCH copy: the UPDATE of entry rid (slot < capacity) */
            if (op == OP_UPDATE_BATCH && meta.is_replica == 1 && meta.status == STATUS_OK) {
                pick.apply(hdr, meta.index);
                if (!BELOW(hdr.replay.slot, meta.capacity, meta.slot_margin, 31)) {
                    meta.status = STATUS_BAD_SLOT;
                }
            }
#endif
            plan.apply(hdr, meta);   /* also sets meta.table_index */
            /* a SAMPLE reply's slot holds no experience (RecordCheck); set next
             * to the buckets' first values, in the same action */
            bool unwritten = false;
            bit<32> bucket;
            bit<32> op_bucket;
            stats_buckets.apply(hdr, meta, bucket, op_bucket);

            /* ---- state ----------------------------------------------------------- */
            phases.apply(hdr, meta);
            tree_root.apply(meta);
            if (FIRST_PHASE) {
                ring.apply(meta);
                /* A SAMPLE's checks and draw, or the other ops' guard, max and
                 * change: branches that exclude each other, so that a compiler
                 * may lay them over the same stages (SAMPLE has no guard and
                 * no max op, so none is skipped). */
                if (op == OP_SAMPLE) {
                    if (meta.status == STATUS_OK) {
                        MARGIN(measure_size();)
                        if (BELOW(meta.size, meta.min_size, meta.size_margin, 31)
                            || meta.size == 0) {
                            meta.status = STATUS_BELOW_MIN_SIZE;
                            meta.tree_op = TREE_TOTAL;
                        } else if (meta.tree_op == TREE_TOTAL) {   /* uniform */
#if DRAWS_IN_FIRST_PHASE
                            uniform.apply(meta);
                            if (meta.found == 0) {
                                meta.tree_op = 0;
                            }
#endif
                        } else {                                   /* prioritized */
                            tree_empty.apply(meta);
                        }
                    }
                } else {
                    guard.apply(meta);
                    if (meta.guard_op == GUARD_CHECK && meta.guard_ok == 0) {
                        meta.status = STATUS_STALE;
                        meta.max_op = 0;
                        meta.tree_op = TREE_TOTAL;
                        meta.store_op = 0;
                    }
                    max_priority.apply(meta);
                    tree_change.apply(meta);
                }
                tree_first.apply(meta);
            }
#if RECORD_IN_OWN_PHASE
            else if (STORE_PHASE) {
                store.apply(meta, hdr.payload);   /* reached only by what phase 0 found */
                record_check.apply(hdr, meta, unwritten);
                sample_stats.apply(hdr, meta, unwritten);
            }
#endif
            else {
                tree_later.apply(meta);
            }
#if !RECORD_IN_OWN_PHASE
            if (op == OP_SAMPLE && (meta.status != STATUS_OK || meta.found == 0)) {
                meta.store_op = 0;
            }
            if (STORE_PHASE) {
                store.apply(meta, hdr.payload);
                record_check.apply(hdr, meta, unwritten);
                sample_stats.apply(hdr, meta, unwritten);
            }
#endif
            /* an UPDATE_BATCH entry's last pass: its outcome tallied, if the
             * request asked for an ACK (BATCH_IN_SEQUENCE: in the verdict) */
#if !BATCH_IN_SEQUENCE
            if (op == OP_UPDATE_BATCH && BATCH_ENTRY_PASS && !MORE_PHASES) {
                meta.batch_state = BATCH_ENTRY;
                if ((hdr.replay.flags & FLAG_ACK) != 0) {
                    tally.apply(hdr, meta);
                }
            }
#endif

            bit<1> counted;
            verdict.apply(hdr, meta, counted);

            /* ---- stats ----------------------------------------------------------- */
            stats.apply(hdr, meta, bucket, op_bucket, counted);
            loop_flags.apply(hdr, meta);   /* what the architecture decides by the verdict alone */

            if (meta.verdict == EGRESS_REPLY) {
                reply.apply(hdr, meta, unwritten);
            } else if (meta.verdict == EGRESS_AGAIN) {
                if (MORE_PHASES) {
                    carry.apply(hdr, meta);
                }
#if EGRESS_ADDRESSES_REPLIES
                if (meta.addressed == 1) {
                    unaddress.apply(hdr);
                }
#endif
            }
        }
    }
}

#endif
