/*
 * replication_floor.p4 -- what n reply packets cost a switch when a copy does
 * nothing else: the lower bound of any in-network SAMPLE n that sends one
 * packet per reply (agent/orchestration/floor.py measures it; docs/benchmarks.md,
 * "The replication floor").
 *
 * Not the replay service: nothing is stored, drawn or read. A datagram to the
 * replay VIP is a whole SAMPLE reply already (the measuring client builds it,
 * with the request's id and count); ingress turns it round (addresses and UDP
 * ports swapped, UDP checksum 0, as the replay program's replies) and hands it
 * to the PRE: multicast group n holds n replicas (rid 1..n) toward the
 * requester's port, installed by the tool. Each copy's egress pass writes only
 * its index (rid - 1), so what a copy costs is the replication, an egress pass
 * with one assignment, the deparser and the port's send. Every other IPv4
 * datagram is forwarded by its destination (floor_hosts), so the host replay
 * server's replies cost the switch a forwarding pass, as they do on the replay
 * program (which does more per forwarded packet: the source guard, the VIP
 * check).
 *
 * Passes: a request, one ingress pass and n egress passes (one per copy); a
 * forwarded datagram, one of each.
 *
 * Header layout: Ethernet, IPv4, UDP, then for UDP port REPLAY_UDP_PORT the
 * replay header (include/headers.p4, docs/protocol.md); the 64-byte payload
 * after it is not parsed and leaves as it came.
 */
#include <core.p4>
#include <v1model.p4>

#include "../include/constants.p4"
#include "../v1model/arch.p4"
#include "../include/headers.p4"

struct floor_headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
    replay_h   replay;
}

struct floor_metadata_t {
    bit<48> mac;     /* the swaps' temporaries */
    bit<32> addr;
    bit<16> port;
}

parser FloorParser(packet_in pkt, out floor_headers_t hdr, inout floor_metadata_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
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
        transition accept;
    }
}

control FloorVerifyChecksum(inout floor_headers_t hdr, inout floor_metadata_t meta) {
    apply { }
}

control FloorIngress(inout floor_headers_t hdr, inout floor_metadata_t meta,
                     inout standard_metadata_t std) {
    /* The reply template back to its sender, replicated: n copies (group n). */
    action turn_round() {
        meta.mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = meta.mac;
        meta.addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = meta.addr;
        meta.port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = meta.port;
        hdr.udp.checksum = 0;
        std.mcast_grp = (bit<16>)hdr.replay.count;
    }

    /* The replay VIP. */
    table floor_vip {
        key = { hdr.ipv4.dst_addr : exact; }
        actions = { turn_round; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    action forward(bit<9> port) {
        std.egress_spec = port;
    }

    action drop() {
        mark_to_drop(std);
    }

    /* Every host's address, to its port. */
    table floor_hosts {
        key = { hdr.ipv4.dst_addr : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }

    apply {
        if (hdr.replay.isValid() && floor_vip.apply().hit) {
            /* replicated */
        } else if (hdr.ipv4.isValid()) {
            floor_hosts.apply();
        } else {
            drop();
        }
    }
}

control FloorEgress(inout floor_headers_t hdr, inout floor_metadata_t meta,
                    inout standard_metadata_t std) {
    apply {
        if (std.instance_type == INSTANCE_REPLICATION && hdr.replay.isValid()) {
            hdr.replay.index = (bit<8>)(std.egress_rid - 1);
        }
    }
}

/* No header a copy changes is covered by the IPv4 checksum except the swapped
 * addresses, whose sum the swap keeps. */
control FloorComputeChecksum(inout floor_headers_t hdr, inout floor_metadata_t meta) {
    apply { }
}

control FloorDeparser(packet_out pkt, in floor_headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.replay);
    }
}

V1Switch(FloorParser(), FloorVerifyChecksum(), FloorIngress(), FloorEgress(),
         FloorComputeChecksum(), FloorDeparser()) main;
