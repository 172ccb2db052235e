/* The smallest TNA program worth deploying: Ethernet forwarding by a table.
 * tests/unit/test_tofino_target.py compiles it with bf-p4c, where installed,
 * to check the device config built from a real compiler output. */
#include <core.p4>
#include <tna.p4>

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_h ethernet;
}

struct metadata_t { }

parser ForwardIngressParser(packet_in pkt, out headers_t hdr, out metadata_t meta,
                            out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control ForwardIngress(inout headers_t hdr, inout metadata_t meta,
                       in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action forward(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table mac_forward {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 256;
    }

    apply {
        mac_forward.apply();
    }
}

control ForwardIngressDeparser(packet_out pkt, inout headers_t hdr, in metadata_t meta,
                               in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

parser ForwardEgressParser(packet_in pkt, out headers_t hdr, out metadata_t meta,
                           out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control ForwardEgress(inout headers_t hdr, inout metadata_t meta,
                      in egress_intrinsic_metadata_t eg_intr_md,
                      in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                      inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control ForwardEgressDeparser(packet_out pkt, inout headers_t hdr, in metadata_t meta,
                              in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

Pipeline(ForwardIngressParser(), ForwardIngress(), ForwardIngressDeparser(),
         ForwardEgressParser(), ForwardEgress(), ForwardEgressDeparser()) pipe;

Switch(pipe) main;
