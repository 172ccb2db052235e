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
 */
#ifndef REPLAY_TNA_LOOP_P4
#define REPLAY_TNA_LOOP_P4

/* Bound for LOOP_PORT: the addressing behind the replay header, which even a
 * request too short to hold one gets, to be answered in. */
control ToLoopLayout(inout tna_headers_t hdr) {
    ReplayHeaderPresent() header_present;

    apply {
        header_present.apply(hdr.replay.replay);
        hdr.tail.ethernet = hdr.replay.ethernet;
        hdr.tail.ipv4 = hdr.replay.ipv4;
        hdr.tail.udp = hdr.replay.udp;
        hdr.replay.ethernet.setInvalid();
        hdr.replay.ipv4.setInvalid();
        hdr.replay.udp.setInvalid();
        hdr.replay.packet_out.setInvalid();
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

/* At the end of a phase that has a next one: what it found, for the next. */
control PhaseCarry(inout headers_t hdr, in metadata_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) slot_of_path1;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) slot_of_path2;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) slot_of_path3;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) slot_of_path4;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) stamp_of_r;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) slot_of_r;

    apply {
        /* Each header field written once per branch, and the branches side
         * by side (no nested if), so that the carry takes one stage. */
        if (meta.phase == 0 && meta.tree_op == TREE_ADD) {
            hdr.replay.slot = meta.slot;
            hdr.replay.priority = meta.priority;
            hdr.replay.size = meta.size;
            hdr.replay.stamp = meta.stamp;
            hdr.replay.total = (bit<64>)meta.delta;
        } else if (meta.phase == 0) {
            hdr.replay.slot = meta.slot;
            hdr.replay.priority = meta.priority;
            hdr.replay.size = meta.size;
            hdr.replay.stamp = meta.stamp;
            hdr.replay.total = (bit<64>)meta.total;
        } else if (meta.phase == PHASE_DRAW && meta.tree_op == TREE_WALK) {
            hdr.replay.slot = 0;                  /* the walk starts at the root */
            hdr.replay.stamp = stamp_of_r.get({meta.r});
        } else if (meta.phase == PHASE_DRAW) {
            hdr.replay.slot = slot_of_r.get({meta.r});   /* uniform: the slot */
        } else if (meta.phase == 1) {
            hdr.replay.slot = slot_of_path1.get({meta.path1});
            hdr.replay.stamp = meta.r1;
            hdr.replay.total = (bit<64>)meta.total;
        } else if (meta.phase == 2) {
            hdr.replay.slot = slot_of_path2.get({meta.path2});
            hdr.replay.stamp = meta.r2;
        } else if (meta.phase == 3) {
            hdr.replay.slot = slot_of_path3.get({meta.path3});
            hdr.replay.stamp = meta.r3;
        } else {
            hdr.replay.slot = slot_of_path4.get({meta.path4});
        }
    }
}

#endif
