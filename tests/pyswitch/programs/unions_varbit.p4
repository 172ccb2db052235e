/* unions_varbit.p4 -- header union stacks (extract through a member, validity, push/pop,
 * setValid of a member) and a varbit field (extract_VL, setValid keeping its width). */
#include <core.p4>
#include <v1model.p4>

header base_t { bit<8> op; }
header A { bit<8> t; bit<8> x; }
header B { bit<8> t; bit<16> y; }
header_union U { A a; B b; }
header V { bit<8> t; bit<8> len; varbit<32> opts; }

struct headers_t { base_t base; U[3] us; V v; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.base);
        transition elems;
    }
    state elems {
        transition select(pkt.lookahead<bit<8>>()) {
            0xAA: elem_a;
            0xBB: elem_b;
            0x00: opts;
            default: accept;
        }
    }
    state elem_a { pkt.extract(hdr.us.next.a); transition elems; }
    state elem_b { pkt.extract(hdr.us.next.b); transition elems; }
    state opts {
        pkt.extract(hdr.v, (bit<32>) pkt.lookahead<bit<16>>()[7:0] * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (hdr.base.op == 1) {
            hdr.us.pop_front(1);
        } else if (hdr.base.op == 2) {
            hdr.us.push_front(1);
        } else if (hdr.base.op == 3) {
            hdr.v.setInvalid();
            hdr.v.setValid();
        } else if (hdr.base.op == 4) {
            hdr.us[1].b.setValid();
        } else if (hdr.base.op == 5) {
            hdr.us.pop_front(2);
        } else if (hdr.base.op == 6) {
            hdr.base.op = hdr.us[2].a.isValid() ? 8w0x62 : (hdr.us[2].b.isValid() ? 8w0x61 : 8w0x60);
        }
        std.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
