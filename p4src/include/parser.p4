/*
 * parser.p4 -- the header stack below Ethernet, as sub-parsers both
 * architectures' parsers call once they have dealt with their own metadata
 * and the CPU port's packet_out header: ReplayHeaderParser for a packet as it
 * is on the wire; AddressHeaderParser (Ethernet to UDP) for a parser that
 * reads the replay header itself.
 *
 * The parser only extracts; every decision about a replay request (version,
 * flags, truncation) is made in ingress so that each refusal gets a status.
 */
#ifndef REPLAY_HEADER_PARSER_P4
#define REPLAY_HEADER_PARSER_P4

/* The states, written once: Ethernet to UDP (then `transition after_udp`), the
 * replay header with the payload an INSERT or WRITE carries (then an
 * UPDATE_BATCH's entries: `transition batch`), and the entries. */
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

/* An UPDATE_BATCH's first min(count, MAX_UPDATE_BATCH) entries, one state
 * each (a fixed chain: no header-stack index). `parsed` is set once on each
 * path, after the last entry the batch needs (entries_<n>: n = count; the
 * 16th entry's state: MAX_UPDATE_BATCH), never counted up along the chain (a
 * Tofino parser ORs a second write into a field). A frame that ends before
 * that leaves it 0 (metadata starts zeroed), so that admission can tell a
 * batch cut short in the frame. */
#define ENTRY_STATE(i, next) \
    state parse_entry_##i { \
        pkt.extract(entries.e##i); \
        transition select(count) { \
            next: entries_##next; \
            default: parse_entry_##next; \
        } \
    } \
    state entries_##next { \
        parsed = next; \
        transition accept; \
    }
#define LAST_ENTRY_STATE(i) \
    state parse_entry_##i { \
        pkt.extract(entries.e##i); \
        parsed = MAX_UPDATE_BATCH; \
        transition accept; \
    }

parser EntriesParser(packet_in pkt, in bit<8> count, out batch_t entries, inout bit<8> parsed) {
    state start {
        transition select(count) {
            0: accept;
            default: parse_entry_0;
        }
    }

    FOR_EACH_ENTRY_STEP(ENTRY_STATE)
    FOR_LAST_ENTRY(LAST_ENTRY_STATE)
}

/* The whole stack, as a packet on the wire carries it. */
parser ReplayHeaderParser(packet_in pkt,
                          out ethernet_h ethernet,
                          out arp_h arp,
                          out ipv4_h ipv4,
                          out udp_h udp,
                          out replay_h replay,
                          out replay_payload_h payload,
                          out batch_t entries,
                          inout bit<8> parsed) {
    EntriesParser() entries_parser;

    state start {
        transition parse_ethernet;
    }

    ADDRESS_STATES(select(udp.dst_port) { REPLAY_UDP_PORT: parse_replay; default: accept; })
    state parse_replay {
        pkt.extract(replay);
        transition select(replay.op) {
            OP_INSERT: parse_payload;
            OP_WRITE: parse_payload;
            OP_UPDATE_BATCH: parse_entries;
            default: accept;
        }
    }

    state parse_payload {
        pkt.extract(payload);
        transition accept;
    }

    state parse_entries {
        entries_parser.apply(pkt, replay.count, entries, parsed);
        transition accept;
    }
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

#endif
