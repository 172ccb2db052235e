/*
 * parser.p4 -- the header stack below Ethernet, as sub-parsers both
 * architectures' parsers call once they have dealt with their own metadata
 * and the CPU port's packet_out header: ReplayHeaderParser for a packet as it
 * is on the wire; its two halves (AddressHeaderParser: Ethernet to UDP;
 * ReplayBodyParser: the replay header and payload) for a parser that needs
 * one of them.
 *
 * The parser only extracts; every decision about a replay request (version,
 * flags, truncation) is made in ingress so that each refusal gets a status.
 */
#ifndef REPLAY_HEADER_PARSER_P4
#define REPLAY_HEADER_PARSER_P4

/* The states, written once: Ethernet to UDP (then `transition after_udp`), and the
 * replay header with the payload an INSERT or WRITE carries. */
#define ADDRESS_STATES(after_udp) \
    state parse_ethernet { \
        pkt.extract(ethernet); \
        transition select(ethernet.ether_type) { \
            ETHERTYPE_IPV4: parse_ipv4; \
            ETHERTYPE_ARP: parse_arp; \
            default: accept; \
        } \
    } \
    state parse_arp { \
        pkt.extract(arp); \
        transition accept; \
    } \
    /* Only option-less UDP at fragment offset 0 is parsed; ingress also \
     * refuses first fragments (MF set) as replay traffic. */ \
    state parse_ipv4 { \
        pkt.extract(ipv4); \
        transition select(ipv4.ihl, ipv4.frag_offset, ipv4.protocol) { \
            (IPV4_IHL_NO_OPTIONS, 0, IP_PROTO_UDP): parse_udp; \
            default: accept; \
        } \
    } \
    state parse_udp { \
        pkt.extract(udp); \
        transition after_udp \
    }

#define BODY_STATES \
    state parse_replay { \
        pkt.extract(replay); \
        transition select(replay.op) { \
            OP_INSERT: parse_payload; \
            OP_WRITE: parse_payload; \
            default: accept; \
        } \
    } \
    state parse_payload { \
        pkt.extract(payload); \
        transition accept; \
    }

/* The whole stack, as a packet on the wire carries it. */
parser ReplayHeaderParser(packet_in pkt,
                          out ethernet_h ethernet,
                          out arp_h arp,
                          out ipv4_h ipv4,
                          out udp_h udp,
                          out replay_h replay,
                          out replay_payload_h payload) {
    state start {
        transition parse_ethernet;
    }

    ADDRESS_STATES(select(udp.dst_port) { REPLAY_UDP_PORT: parse_replay; default: accept; })
    BODY_STATES
}

/* Ethernet to UDP only: what forwarding reads and rewrites. */
parser AddressHeaderParser(packet_in pkt,
                           out ethernet_h ethernet,
                           out arp_h arp,
                           out ipv4_h ipv4,
                           out udp_h udp) {
    state start {
        transition parse_ethernet;
    }

    ADDRESS_STATES(accept;)
}

/* The replay header and payload only (a TNA loop packet carries them first). */
parser ReplayBodyParser(packet_in pkt,
                        out replay_h replay,
                        out replay_payload_h payload) {
    state start {
        transition parse_replay;
    }

    BODY_STATES
}

#endif
