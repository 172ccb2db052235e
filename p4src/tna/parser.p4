/*
 * tna/parser.p4 -- TNA's parsers and deparsers around the shared header stack
 * (include/parser.p4), and the layout of a replay packet on its way through
 * LOOP_PORT (tna/bridge.p4).
 *
 *   ingress   intrinsic metadata, port metadata (skipped), then by port:
 *             LOOP_PORT -> loop_h, the replay header and payload or an
 *             UPDATE_BATCH's entries left, the addressing (into the stack's
 *             own headers); CPU_PORT -> packet_out; then the stack.
 *   egress    intrinsic metadata, bridge_h (every packet carries one), then a
 *             replay request's replay header and payload, or another packet's
 *             Ethernet to UDP.
 * A header cut short ends parsing and sets the parser error; admission then
 * answers TRUNCATED from the headers' length fields, as on v1model. (Whether a
 * Tofino drops such packets before ingress depends on its parser error
 * configuration: not checked on hardware yet.)
 */
#ifndef REPLAY_TNA_PARSER_P4
#define REPLAY_TNA_PARSER_P4

parser ReplayIngressParser(packet_in pkt,
                           out tna_headers_t hdr,
                           out metadata_t meta,
                           out ingress_intrinsic_metadata_t ig_intr_md) {
    ReplayHeaderParser() headers;
    AddressHeaderParser() address;
    EntriesParser() entries_left;

    /* The intrinsic metadata the shared controls read goes into meta here
     * too (but the request's port, orig_port: the reply's packet_in header
     * takes it, and a parser copy would fix its bit alignment). */
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.in_port = ig_intr_md.ingress_port;
        meta.now = ig_intr_md.ingress_mac_tstamp;
        transition select(ig_intr_md.ingress_port) {
            LOOP_PORT: parse_loop;
            CPU_PORT: parse_packet_out;
            default: parse_stack;
        }
    }

    /* After a stateful pass: the replay header (and payload), then the
     * addressing (tna/bridge.p4), which goes straight back in front of the
     * replay header (the deparser emits in stack order); what loop_h carries
     * goes into metadata here, where a copy takes no stage. */
    state parse_loop {
        pkt.extract(hdr.loop);
        meta.recirculated = 1;
        meta.from_cpu = hdr.loop.from_cpu;
        meta.phase = hdr.loop.phase;
        meta.mode = hdr.loop.mode;
        meta.redraws = hdr.loop.redraws;
        meta.redraw = hdr.loop.redraw;
        meta.copy_index = hdr.loop.copy_index;
        meta.reset_base = hdr.loop.reset_base;
        meta.has_entries = hdr.loop.has_entries;
        meta.batch_applied = hdr.loop.batch_applied;
        meta.batch_stale = hdr.loop.batch_stale;
        pkt.extract(hdr.replay.replay);
        transition select(hdr.loop.has_payload, hdr.loop.has_entries) {
            (1, _): parse_loop_payload;
            (0, 1): parse_loop_entries;
            default: parse_tail;
        }
    }

    state parse_loop_payload {
        pkt.extract(hdr.replay.payload);
        transition parse_tail;
    }

    /* An UPDATE_BATCH's entries left (copy_index of them), read only to reach
     * the addressing behind them, and emitted again. */
    state parse_loop_entries {
        entries_left.apply(pkt, hdr.loop.copy_index, hdr.replay.batch, meta.entries_parsed);
        transition parse_tail;
    }

    state parse_tail {
        address.apply(pkt, hdr.replay.ethernet, hdr.replay.arp, hdr.replay.ipv4, hdr.replay.udp);
        transition accept;
    }

    state parse_packet_out {
        meta.from_cpu = 1;
        pkt.extract(hdr.replay.packet_out);
        transition parse_stack;
    }

    state parse_stack {
        headers.apply(pkt, hdr.replay.ethernet, hdr.replay.arp, hdr.replay.ipv4,
                      hdr.replay.udp, hdr.replay.replay, hdr.replay.payload, hdr.replay.batch,
                      meta.entries_parsed);
        transition accept;
    }
}

/* The bridge, then the stack in wire order, or for a replay packet bound for
 * LOOP_PORT its replay header and payload with the addressing in the tail;
 * the IPv4 checksum of a reply addressed on its delivery. */
control ReplayIngressDeparser(packet_out pkt,
                              inout tna_headers_t hdr,
                              in metadata_t meta,
                              in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (meta.ip_rewritten == 1) {
            hdr.replay.ipv4.hdr_checksum = ipv4_checksum.update(IPV4_CHECKSUM_FIELDS(hdr.replay.ipv4));
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.replay);
        pkt.emit(hdr.tail);
    }
}

/* Intrinsic metadata and bridge_h, then a replay request's replay header and
 * payload alone (on LOOP_PORT), or another packet's addressing: Ethernet to
 * UDP, after the packet_out header of a packet from the CPU port. */
parser ReplayEgressParser(packet_in pkt,
                          out tna_headers_t hdr,
                          out metadata_t meta,
                          out egress_intrinsic_metadata_t eg_intr_md) {
    AddressHeaderParser() address;

    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        /* into metadata here, where a copy costs no stage of the pipe */
        meta.is_replica = hdr.bridge.is_replica;
        meta.is_request = hdr.bridge.is_request;
        meta.from_cpu = hdr.bridge.from_cpu;
        meta.has_priority = hdr.bridge.has_priority;
        meta.redraw = hdr.bridge.redraw;
        meta.orig_port = hdr.bridge.orig_port[8:0];
        meta.status = hdr.bridge.status;
        meta.mode = hdr.bridge.mode;
        meta.copy_index = hdr.bridge.copy_index;
        meta.phase = hdr.bridge.phase;
        meta.capacity = hdr.bridge.capacity;
        meta.min_size = hdr.bridge.min_size;
        meta.reset_base = hdr.bridge.reset_base;
        meta.redraws = hdr.bridge.redraws;
        meta.has_entries = hdr.bridge.has_entries;
        meta.batch_applied = hdr.bridge.batch_applied;
        meta.batch_stale = hdr.bridge.batch_stale;
        meta.rid = eg_intr_md.egress_rid;
        meta.egress_port = eg_intr_md.egress_port;
        transition select(hdr.bridge.is_request, hdr.bridge.from_cpu) {
            (1, _): parse_request;
            (0, 1): parse_packet_out;
            default: parse_address;
        }
    }

    /* loop_h, and what it carries unchanged, where that costs no stage (the
     * padding too: the header leaves with it) */
    state parse_request {
        hdr.loop.setValid();
        hdr.loop.mode = hdr.bridge.mode;
        hdr.loop.orig_port = hdr.bridge.orig_port;
        hdr.loop.from_cpu = hdr.bridge.from_cpu;
        hdr.loop.pad0 = 0;
        hdr.loop.pad1 = 0;
        hdr.loop.pad2 = 0;
        hdr.loop.pad3 = 0;
        hdr.loop.pad4 = 0;
        pkt.extract(hdr.replay.replay);
        transition select(hdr.bridge.has_payload) {
            1: parse_request_payload;
            default: accept;
        }
    }

    /* The payload of an INSERT or WRITE, or the record an earlier pass read. */
    state parse_request_payload {
        pkt.extract(hdr.replay.payload);
        transition accept;
    }

    state parse_packet_out {
        pkt.extract(hdr.replay.packet_out);
        transition parse_address;
    }

    state parse_address {
        address.apply(pkt, hdr.replay.ethernet, hdr.replay.arp, hdr.replay.ipv4, hdr.replay.udp);
        transition accept;
    }
}

/* The IPv4 checksum of a header the switch rewrote, then the headers: on
 * LOOP_PORT loop_h and the replay header and payload (an UPDATE_BATCH's
 * entries and the addressing follow, unparsed), elsewhere the addressing (the
 * rest follows, unparsed). */
control ReplayEgressDeparser(packet_out pkt,
                             inout tna_headers_t hdr,
                             in metadata_t meta,
                             in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (meta.ip_rewritten == 1) {
            hdr.replay.ipv4.hdr_checksum = ipv4_checksum.update(IPV4_CHECKSUM_FIELDS(hdr.replay.ipv4));
        }
        pkt.emit(hdr.loop);
        pkt.emit(hdr.replay.packet_out);
        pkt.emit(hdr.replay.packet_in);
        pkt.emit(hdr.replay.ethernet);
        pkt.emit(hdr.replay.arp);
        pkt.emit(hdr.replay.ipv4);
        pkt.emit(hdr.replay.udp);
        pkt.emit(hdr.replay.replay);
        pkt.emit(hdr.replay.payload);
    }
}

#endif
