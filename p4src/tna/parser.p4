/*
 * tna/parser.p4 -- TNA's parsers and deparsers around the shared header stack
 * (include/parser.p4).
 *
 *   ingress   intrinsic metadata, port metadata (skipped), then by port:
 *             LOOP_PORT -> loop_h; CPU_PORT -> packet_out; then the stack.
 *   egress    intrinsic metadata, bridge_h (every packet carries one), then
 *             packet_out if the packet came from the CPU port, then the stack.
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

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            LOOP_PORT: parse_loop;
            CPU_PORT: parse_packet_out;
            default: parse_stack;
        }
    }

    /* A request's next pass from the CPU still has its packet_out header; a
     * finished reply (deliver) has none. */
    state parse_loop {
        pkt.extract(hdr.loop);
        transition select(hdr.loop.deliver, hdr.loop.from_cpu) {
            (0, 1): parse_packet_out;
            default: parse_stack;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.replay.packet_out);
        transition parse_stack;
    }

    state parse_stack {
        headers.apply(pkt, hdr.replay.ethernet, hdr.replay.arp, hdr.replay.ipv4,
                      hdr.replay.udp, hdr.replay.replay, hdr.replay.payload);
        transition accept;
    }
}

control ReplayIngressDeparser(packet_out pkt,
                              inout tna_headers_t hdr,
                              in metadata_t meta,
                              in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.replay);
    }
}

parser ReplayEgressParser(packet_in pkt,
                          out tna_headers_t hdr,
                          out metadata_t meta,
                          out egress_intrinsic_metadata_t eg_intr_md) {
    ReplayHeaderParser() headers;

    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.from_cpu) {
            1: parse_packet_out;
            default: parse_stack;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.replay.packet_out);
        transition parse_stack;
    }

    state parse_stack {
        headers.apply(pkt, hdr.replay.ethernet, hdr.replay.arp, hdr.replay.ipv4,
                      hdr.replay.udp, hdr.replay.replay, hdr.replay.payload);
        transition accept;
    }
}

/* The IPv4 checksum of a header the switch rewrote, then the headers. */
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
        pkt.emit(hdr.replay);
    }
}

#endif
