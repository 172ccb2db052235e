/* unsupported_selector.p4 -- a table with an action selector (refused at load time). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    action fwd(bit<9> port) { std.egress_spec = port; }
    table ecmp {
        key = { hdr.ethernet.dst : exact; hdr.ethernet.src : selector; }
        actions = { fwd; }
        implementation = sel;
    }
    apply { ecmp.apply(); }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
