/*
 * v1model/parser.p4 -- v1model's parser, checksum controls and deparser.
 *
 * The parser reads the CPU port's packet_out header, then the shared header
 * stack (include/parser.p4). A truncated header leaves
 * standard_metadata.parser_error set and the packet continues to ingress
 * (bmv2 v1model behaviour).
 */
#ifndef REPLAY_V1MODEL_PARSER_P4
#define REPLAY_V1MODEL_PARSER_P4

parser ReplayParser(packet_in pkt,
                    out headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std) {
    ReplayHeaderParser() headers;

    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: check_loop;
        }
    }

    /* Recirculated passes (a SAMPLE reply drawn again, the next RESET round)
     * lose ingress_port; from_cpu is preserved instead. */
    state check_loop {
        transition select(meta.from_cpu) {
            1: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        headers.apply(pkt, hdr.ethernet, hdr.arp, hdr.ipv4, hdr.udp, hdr.replay, hdr.payload,
                      hdr.batch, meta.entries_parsed);
        transition accept;
    }
}

control ReplayVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* Only packets whose IPv4 header the switch rewrote (replies, broadcast
 * copies) get a new checksum: forwarded traffic leaves untouched. */
control ReplayComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid() && meta.ip_rewritten == 1,
            IPV4_CHECKSUM_FIELDS(hdr.ipv4),
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control ReplayDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.packet_out);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.replay);
        pkt.emit(hdr.payload);
        pkt.emit(hdr.batch);
    }
}

#endif
