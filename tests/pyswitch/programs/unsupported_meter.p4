/* unsupported_meter.p4 -- uses a meter, which the Python switch refuses at load time. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { bit<32> color; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    meter(16, MeterType.packets) m;
    apply {
        m.execute_meter((bit<32>)std.ingress_port, meta.color);
        std.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
