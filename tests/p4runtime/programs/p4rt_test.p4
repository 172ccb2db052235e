/*
 * p4rt_test.p4 -- a small v1model program exercising every P4Runtime feature
 * the Python switch's P4Runtime server implements: exact / lpm / ternary /
 * range / optional matches, table-only and default-only actions, a const
 * default action, a direct counter, an indirect counter, a register,
 * multicast, I2E clone sessions and packet_in / packet_out controller headers
 * that are not byte-aligned per field.
 *
 * Forwarding:
 *   - from the CPU with packet_out.egress_port != 0: sent to that port as is;
 *   - ether_type 0x88b5 (punt): sent to the CPU with a packet_in header
 *     (reason 1, or the packet_out's flags for a packet-out through the
 *     pipeline, whose tag also replaces the low 12 bits of the source MAC);
 *   - otherwise: l2_exact on the destination MAC, then ipv4_lpm, then acl.
 */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;
const bit<16> ETH_PUNT = 0x88b5;
const bit<16> ETH_IPV4 = 0x0800;

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<3> flags;
    bit<12> tag;
}

@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<3> reason;
    bit<4> _pad;
}

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
}

struct metadata_t {
    bit<3> reason;
}

parser TestParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
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
            ETH_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control TestVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control TestIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    counter(512, CounterType.packets_and_bytes) port_counter;
    counter(16, CounterType.packets) drop_counter;
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    register<bit<32>>(8) scratch;

    action drop() {
        mark_to_drop(std);
        drop_counter.count(0);
    }

    action set_port(bit<9> port) {
        std.egress_spec = port;
    }

    action set_port_and_mac(bit<9> port, bit<48> mac) {
        std.egress_spec = port;
        hdr.ethernet.dst_addr = mac;
    }

    action miss(bit<8> code) {
        scratch.write(0, (bit<32>)code);
    }

    action set_mcast(bit<16> group) {
        std.mcast_grp = group;
    }

    action clone_and_forward(bit<32> session, bit<9> port) {
        std.egress_spec = port;
        clone(CloneType.I2E, session);
    }

    action acl_permit() {
        acl_counter.count();
    }

    action acl_deny() {
        acl_counter.count();
        mark_to_drop(std);
    }

    table l2_exact {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { set_port; @tableonly set_port_and_mac; set_mcast;
                    clone_and_forward; drop; @defaultonly miss; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr : lpm; }
        actions = { set_port; drop; NoAction; }
        const default_action = drop();
        size = 32;
    }

    table acl {
        key = {
            hdr.ethernet.ether_type : ternary;
            hdr.ipv4.src_addr       : range;
            std.ingress_port        : optional;
        }
        actions = { acl_permit; acl_deny; }
        default_action = acl_permit();
        counters = acl_counter;
        size = 16;
    }

    apply {
        port_counter.count((bit<32>)std.ingress_port);
        meta.reason = 1;
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.egress_port != 0) {
                std.egress_spec = hdr.packet_out.egress_port;
                hdr.packet_out.setInvalid();
                exit;
            }
            /* Through the pipeline: echo the header's fields into the frame. */
            meta.reason = hdr.packet_out.flags;
            hdr.ethernet.src_addr[11:0] = hdr.packet_out.tag;
            hdr.packet_out.setInvalid();
        }
        if (hdr.ethernet.ether_type == ETH_PUNT) {
            std.egress_spec = CPU_PORT;
            exit;
        }
        if (!l2_exact.apply().hit && hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        }
        acl.apply();
    }
}

control TestEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    apply {
        if (std.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std.ingress_port;
            hdr.packet_in.reason = meta.reason;
            hdr.packet_in._pad = 0;
        }
    }
}

control TestComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control TestDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(TestParser(),
         TestVerifyChecksum(),
         TestIngress(),
         TestEgress(),
         TestComputeChecksum(),
         TestDeparser()) main;
