/*
 * parser.p4 -- parser, checksum controls and deparser.
 *
 * The parser only extracts; every decision about a replay request (version,
 * flags, truncation) is made in ingress so that each refusal gets a status.
 * A truncated header leaves standard_metadata.parser_error set and the packet
 * continues to ingress (bmv2 v1model behaviour).
 */
#ifndef REPLAY_PARSER_P4
#define REPLAY_PARSER_P4

parser ReplayParser(packet_in pkt,
                    out headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std) {
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
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* Only option-less UDP at fragment offset 0 is parsed; ingress also
         * refuses first fragments (MF set) as replay traffic. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (IPV4_IHL_NO_OPTIONS, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            REPLAY_UDP_PORT: parse_replay;
            default: accept;
        }
    }

    state parse_replay {
        pkt.extract(hdr.replay);
        transition select(hdr.replay.op) {
            OP_INSERT: parse_payload;
            OP_WRITE: parse_payload;
            default: accept;
        }
    }

    state parse_payload {
        pkt.extract(hdr.payload);
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
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
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
    }
}

#endif
