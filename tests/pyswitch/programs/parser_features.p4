/* parser_features.p4 -- select values/masks/defaults/multi-field keys, header stacks,
 * lookahead, verify, advance and parser errors. Ingress reports what was parsed in a
 * result header emitted in front of the packet; everything goes out of port 1. */
#include <core.p4>
#include <v1model.p4>

error { BadTag }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<4> kind; bit<4> flags; bit<8> val; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header inner_t { bit<4> version; bit<4> x; bit<8> y; }
header opt_t { bit<8> a; bit<8> b; }
header result_t {
    bit<8>  err;        /* 0 none, 1 PacketTooShort, 2 StackOutOfBounds, 3 BadTag, 4 NoMatch, 9 other */
    bit<8>  path;       /* bit set of visited states */
    bit<8>  last_index;
    bit<16> peek;
    bit<8>  nmpls;
}

struct headers_t {
    result_t   result;
    ethernet_t ethernet;
    tag_t      tag;
    mpls_t[3]  mpls;
    inner_t    inner;
    opt_t      opt;
}

struct metadata_t {
    bit<8>  path;
    bit<8>  last_index;
    bit<16> peek;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x8847: parse_mpls;
            0x8800 &&& 0xff00: parse_tag;
            0x0000 &&& 0xf000: parse_opt_skip;
            default: accept;
        }
    }
    state parse_tag {
        meta.path = meta.path | 1;
        pkt.extract(hdr.tag);
        verify(hdr.tag.val != 0xff, error.BadTag);
        transition select(hdr.tag.kind, hdr.tag.flags) {
            (1, _): parse_inner;
            (2, 0x8 &&& 0x8): parse_opt;
            default: accept;
        }
    }
    state parse_mpls {
        meta.path = meta.path | 2;
        pkt.extract(hdr.mpls.next);
        transition select(hdr.mpls.last.bos) {
            1: after_mpls;
            default: parse_mpls;
        }
    }
    state after_mpls {
        meta.last_index = (bit<8>)hdr.mpls.lastIndex;
        meta.peek = pkt.lookahead<bit<16>>();
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_inner;
            default: accept;
        }
    }
    state parse_inner {
        meta.path = meta.path | 4;
        pkt.extract(hdr.inner);
        transition accept;
    }
    state parse_opt_skip {
        meta.path = meta.path | 16;
        pkt.advance(16);
        transition parse_opt;
    }
    state parse_opt {
        meta.path = meta.path | 8;
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        hdr.result.setValid();
        if (std.parser_error == error.NoError) {
            hdr.result.err = 0;
        } else if (std.parser_error == error.PacketTooShort) {
            hdr.result.err = 1;
        } else if (std.parser_error == error.StackOutOfBounds) {
            hdr.result.err = 2;
        } else if (std.parser_error == error.BadTag) {
            hdr.result.err = 3;
        } else if (std.parser_error == error.NoMatch) {
            hdr.result.err = 4;
        } else {
            hdr.result.err = 9;
        }
        hdr.result.path = meta.path;
        hdr.result.last_index = meta.last_index;
        hdr.result.peek = meta.peek;
        hdr.result.nmpls = 0;
        if (hdr.mpls[0].isValid()) { hdr.result.nmpls = hdr.result.nmpls + 1; }
        if (hdr.mpls[1].isValid()) { hdr.result.nmpls = hdr.result.nmpls + 1; }
        if (hdr.mpls[2].isValid()) { hdr.result.nmpls = hdr.result.nmpls + 1; }
        std.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.result);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.inner);
        pkt.emit(hdr.opt);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
