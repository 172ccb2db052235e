/*
 * tna/loop.p4 -- a replay packet's way round LOOP_PORT (tna/bridge.p4 has
 * its headers and layout): the addressing moved behind the replay header and
 * back, and what one phase of a request leaves the next (tna/phases.p4).
 *
 * A phase's findings travel in the request's own header fields, which the
 * reply overwrites in the last phase:
 *   after phase 0   slot, priority, size, stamp (an ADD's new or given
 *                   stamp); total (the tree's) or, for an ADD, the change to
 *                   add in its low 32 bits
 *   after PHASE_DRAW  uniform: slot = the slot drawn; prioritized: slot = 0
 *                   (the walk's path, empty), stamp = r
 *   after phase 1   slot = the walk's path so far, stamp = its r; an ADD's
 *                   total: the root after the change
 *   after phase 2, 3  slot = the walk's path so far, stamp = its r
 *   after phase 4   slot = where the walk ended, for the record's phase
 *   after PHASE_RECORD  stamp, priority: the record's (its low payload
 *                   halves are in the payload already)
 */
#ifndef REPLAY_TNA_LOOP_P4
#define REPLAY_TNA_LOOP_P4

/* An UPDATE_BATCH's next entry, back from LOOP_PORT to be admitted
 * (IngressDispatch, before ReplayAdmission): the front one (the loop parser's
 * e0) into the header's slot, stamp and priority, where admission and the
 * service read an UPDATE's; the packet goes on without it
 * (include/batch.p4). copy_index is the entries still in the packet. */
control TakeEntry(inout headers_t hdr, inout metadata_t meta) {
    action take_entry() {
        hdr.replay.slot = hdr.batch.e0.slot;
        hdr.replay.stamp = hdr.batch.e0.stamp;
        hdr.replay.priority = hdr.batch.e0.priority;
        hdr.batch.e0.setInvalid();
        meta.copy_index = meta.copy_index - 1;
    }

    apply {
        if (meta.recirculated == 1 && hdr.batch.e0.isValid()) {
            take_entry();
        }
    }
}

/* Bound for LOOP_PORT after admission: the addressing behind the replay
 * header (and an UPDATE_BATCH's entries: tna/bridge.p4), which even a request
 * too short to hold one gets, to be answered in (ReplayHeaderPresent's). An
 * admitted batch (its group found, mcast_grp not 0) loops with its entries
 * (has_entries), as does an entry admitted again (the entries after it, as
 * the loop parser read them, loop_h's has_entries); any other request loops
 * without what the parser read of a batch's entries: a batch refused whole
 * is answered without them. One table, its actions the cases, keyed on what
 * admission decides before its last steps (the INSERT limiter). */
control ToLoopLayout(inout tna_headers_t hdr, inout metadata_t meta) {
    action move_addressing() {
        hdr.tail.ethernet = hdr.replay.ethernet;
        hdr.tail.ipv4 = hdr.replay.ipv4;
        hdr.tail.udp = hdr.replay.udp;
        hdr.replay.ethernet.setInvalid();
        hdr.replay.ipv4.setInvalid();
        hdr.replay.udp.setInvalid();
        hdr.replay.packet_out.setInvalid();
    }

    action as_is() {
        move_addressing();
    }

    action with_entries() {
        move_addressing();
        meta.has_entries = 1;
    }

    action without_entries() {
        move_addressing();
        DROP_ENTRIES(hdr.replay.batch)
    }

    action headerless() {
        move_addressing();
        hdr.replay.replay.setValid();
        hdr.replay.replay.op = 0;
        hdr.replay.replay.flags = 0;
        hdr.replay.replay.table_id = 0;
        hdr.replay.replay.count = 0;
        hdr.replay.replay.request_id = 0;
    }

    table loop_layout {
        key = {
            hdr.replay.replay.isValid() : exact;
            hdr.replay.replay.op        : ternary;
            meta.redraw                 : ternary;
            meta.mcast_grp              : ternary;
        }
        actions = { as_is; with_entries; without_entries; headerless; }
        const entries = {
            (false, _, _, _)              : headerless();
            (true, OP_UPDATE_BATCH, 1, _) : as_is();
            (true, _, _, 0)               : without_entries();
            (true, OP_UPDATE_BATCH, _, _) : with_entries();
        }
        default_action = as_is();
    }

    apply {
        loop_layout.apply();
    }
}

/* loop_h's has_payload (the service's metadata, @pa_alias in replay_tna.p4),
 * as soon as the verdict is known, before the reply is built, so that it
 * takes no stage after it: whether a payload follows the replay header (an
 * INSERT's or WRITE's reply sheds it: ReplyFields). A dropped pass takes it
 * nowhere. (has_entries comes with the pass, or from the step that takes an
 * UPDATE_BATCH's entry: include/batch.p4.) */
control LoopFlags(in headers_t hdr, inout metadata_t meta) {
    action flags(bit<1> has_payload) {
        meta.has_payload = has_payload;
    }

    table loop_flags {
        key = {
            meta.verdict          : ternary;
            hdr.replay.op         : ternary;
            hdr.payload.isValid() : exact;
        }
        actions = { flags; }
        const entries = {
            (EGRESS_DROP, _, true)          : flags(0);
            (EGRESS_REPLY, OP_INSERT, true) : flags(0);
            (EGRESS_REPLY, OP_WRITE, true)  : flags(0);
            (_, _, true)                    : flags(1);
        }
        default_action = flags(0);
    }

    apply {
        loop_flags.apply();
    }
}

/* At the start of a phase after 0: what the last one found. Every phase
 * starts its walk fields from the header's slot, the request's own in
 * phase 0 (a READ's record). A walk's path goes to and from the header
 * through the hash unit: the levels' cell hashes cut the path into single
 * bits, and a plain copy would cut the header's fields with it, which no
 * action can then write (docs/hardware.md). A RESET copy's place in its
 * round is its index, carried as copy_index (tna/arch.p4, RESET_SLOT). */
control PhaseResume(in headers_t hdr, inout metadata_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) path1_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) path2_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) path3_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) path4_of;

    /* One hash result per action: a table passes 32 bits from the hash unit. */
    action resume_path1() { meta.path1 = path1_of.get({hdr.replay.slot}); }
    action resume_path2() { meta.path2 = path2_of.get({hdr.replay.slot}); }
    action resume_path3() { meta.path3 = path3_of.get({hdr.replay.slot}); }
    action resume_path4() { meta.path4 = path4_of.get({hdr.replay.slot}); }

    apply {
        resume_path1();
        resume_path2();
        resume_path3();
        resume_path4();
        if (meta.phase != 0) {
            meta.found = 1;                       /* phase 0 drew inside its range */
            meta.size = hdr.replay.size;
            meta.total = hdr.replay.total[31:0];
            meta.carried_delta = hdr.replay.total[31:0];
            meta.r1 = hdr.replay.stamp;
            meta.r2 = hdr.replay.stamp;
            meta.r3 = hdr.replay.stamp;
            meta.r4 = hdr.replay.stamp;
        }
    }
}

/* At the end of a phase that has a next one: what it found, for the next,
 * by phase and tree step: two tables on the two sides of one if, so that the
 * carry takes one stage. A table passes 32 bits from the hash unit, so each
 * has one hash: the draw's carries copy r through `carried_r`, and the walk
 * phases' carries take their path through `walk_path`, an XOR of the four
 * path fields and the header's slot: in walk phase k the other three paths
 * are still the header's slot as the pass resumed it (PhaseResume), so the
 * XOR is path<k> (an ADD's phase 1 leaves its slot as it was). A slot is
 * below 2^SLOT_BITS (at most 2^16), so the XOR takes the low 16 bits of each:
 * half the hash unit's bits of a 32-bit XOR, in the crowded stage after the
 * verdict. */
control PhaseCarry(inout headers_t hdr, in metadata_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) carried_r;
    Hash<bit<16>>(HashAlgorithm_t.XOR16) walk_path;

    /* PHASE_DRAW: the walk starts at the root with r in the stamp field; a
     * uniform draw's r is the slot drawn. */
    action carry_walk_start() {
        hdr.replay.slot = 0;
        hdr.replay.stamp = carried_r.get({meta.r});
    }

    action carry_drawn_slot() {
        hdr.replay.slot = carried_r.get({meta.r});
    }

    table draw_carry {
        key = { meta.tree_op : exact; }
        actions = { carry_walk_start; carry_drawn_slot; NoAction; }
        const entries = {
            TREE_WALK  : carry_walk_start();
            TREE_TOTAL : carry_drawn_slot();
        }
        default_action = NoAction();
    }

    /* Phase 0: the slot, its priority and stamp, the ring's size, and the
     * change an ADD adds (carry_change) or the tree's total (carry_first). */
    action carry_change() {
        hdr.replay.slot = meta.slot;
        hdr.replay.priority = meta.priority;
        hdr.replay.size = meta.size;
        hdr.replay.stamp = meta.stamp;
        hdr.replay.total = (bit<64>)meta.delta;
    }

    action carry_first() {
        hdr.replay.slot = meta.slot;
        hdr.replay.priority = meta.priority;
        hdr.replay.size = meta.size;
        hdr.replay.stamp = meta.stamp;
        hdr.replay.total = (bit<64>)meta.total;
    }

    /* Phases 1 (a walk's levels, or an ADD's whole tree: its total is the
     * root after the change) .. 4: the path so far and its r; after phase 4
     * the slot where the walk ended. */
#define WALK_SLOT (bit<32>)walk_path.get({meta.path1[15:0], meta.path2[15:0], meta.path3[15:0], \
                                          meta.path4[15:0], hdr.replay.slot[15:0]})
    action carry_walk1() {
        hdr.replay.slot = WALK_SLOT;
        hdr.replay.stamp = meta.r1;
        hdr.replay.total = (bit<64>)meta.total;
    }

    action carry_walk2() {
        hdr.replay.slot = WALK_SLOT;
        hdr.replay.stamp = meta.r2;
    }

    action carry_walk3() {
        hdr.replay.slot = WALK_SLOT;
        hdr.replay.stamp = meta.r3;
    }

    action carry_walk4() {
        hdr.replay.slot = WALK_SLOT;
    }

    /* PHASE_RECORD: the record's stamp, for PHASE_RECORD_HI's recheck, and its
     * priority (its low payload halves are in the payload already). */
    action carry_record() {
        hdr.replay.stamp = meta.stamp;
        hdr.replay.priority = meta.priority;
    }

    /* PHASE_RECORD_HI goes round again only when the record was rewritten: it
     * is read again from the same slot, and nothing is carried (a miss). */
    table phase_carry {
        key = {
            meta.phase   : exact;
            meta.tree_op : exact;
        }
        actions = {
            carry_change; carry_first; carry_walk1; carry_walk2; carry_walk3;
            carry_walk4; carry_record; NoAction;
        }
        const entries = {
            (0, TREE_ADD)                    : carry_change();
            (0, TREE_WALK)                   : carry_first();
            (0, TREE_TOTAL)                  : carry_first();
            (1, TREE_ADD)                    : carry_walk1();
            (1, TREE_WALK)                   : carry_walk1();
            (2, TREE_WALK)                   : carry_walk2();
            (3, TREE_WALK)                   : carry_walk3();
            (WALK_LAST_PHASE, TREE_WALK)     : carry_walk4();
            (PHASE_RECORD, TREE_WALK)        : carry_record();
            (PHASE_RECORD, TREE_TOTAL)       : carry_record();
        }
        default_action = NoAction();
    }

    apply {
        if (meta.phase == PHASE_DRAW) {
            draw_carry.apply();
        } else {
            phase_carry.apply();
        }
    }
}

#endif
