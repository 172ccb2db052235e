/* v1model_flow.p4 -- simple_switch packet flow: I2E/E2E clones with preserved field
 * lists, resubmit, recirculate, multicast, truncate, exit, drops, counters, registers.
 * hdr.ctl.cmd selects the behaviour; egress reports metadata in hdr.report. */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  cmd;
    bit<8>  arg;
    bit<8>  arg2;
    bit<32> val;
    bit<32> val2;
    bit<8>  passes;
}

header report_t {
    bit<8>  itype_in;     /* instance_type seen by ingress */
    bit<8>  itype_out;    /* instance_type seen by egress */
    bit<16> rid;
    bit<16> eport;
    bit<16> iport;        /* ingress_port seen by ingress */
    bit<16> espec;        /* egress_spec at the start of egress */
    bit<8>  fa;
    bit<16> fb;
    bit<8>  fc;
    bit<8>  scratch;
    bit<32> plen;
}

struct headers_t { report_t report; ctl_t ctl; }

struct metadata_t {
    @field_list(1) bit<8> fa;
    @field_list(1, 2) bit<16> fb;
    @field_list(2, 3) bit<8> fc;
    bit<8>  scratch;
    bit<8>  itype_in;
    bit<16> iport;
    bit<16> espec;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ctl);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    counter(8, CounterType.packets_and_bytes) hits;
    register<bit<32>>(8) store;

    apply {
        meta.scratch = 0x77;
        meta.itype_in = (bit<8>)std.instance_type;
        meta.iport = (bit<16>)std.ingress_port;
        std.egress_spec = 1;
        if (!hdr.ctl.isValid()) {
            mark_to_drop(std);
        } else if (hdr.ctl.cmd == 1) {
            meta.fa = 0xaa;
            meta.fb = (bit<16>)std.ingress_port + 0x100;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            meta.fa = 0xbb;
        } else if (hdr.ctl.cmd == 2) {
            std.mcast_grp = 7;
        } else if (hdr.ctl.cmd == 3) {
            if (meta.fc < 2) {
                meta.fc = meta.fc + 1;
                meta.fb = 0x1234;
                meta.fa = 0x99;
                resubmit_preserving_field_list(2);
            }
        } else if (hdr.ctl.cmd == 6) {
            truncate(20);
        } else if (hdr.ctl.cmd == 7) {
            hits.count((bit<32>)hdr.ctl.arg);
            store.write((bit<32>)hdr.ctl.arg, hdr.ctl.val);
            store.read(hdr.ctl.val2, (bit<32>)hdr.ctl.arg2);
        } else if (hdr.ctl.cmd == 10) {
            std.egress_spec = 511;
        } else if (hdr.ctl.cmd == 11) {
            meta.fa = 0x11;
            clone_preserving_field_list(CloneType.I2E, 8, 1);
        } else if (hdr.ctl.cmd == 12) {
            std.egress_spec = 2;
            exit;
        } else if (hdr.ctl.cmd == 13) {
            std.mcast_grp = 7;
            mark_to_drop(std);
        }
        if (hdr.ctl.isValid() && hdr.ctl.cmd == 12) {
            std.egress_spec = 3;
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        meta.espec = (bit<16>)std.egress_spec;
        if (hdr.ctl.cmd == 4 && meta.fc < 3) {
            meta.fc = meta.fc + 1;
            hdr.ctl.passes = hdr.ctl.passes + 1;
            recirculate_preserving_field_list(3);
        } else if (hdr.ctl.cmd == 8) {
            hdr.ctl.passes = hdr.ctl.passes + 1;
            recirculate_preserving_field_list(3);
        } else {
            if (hdr.ctl.cmd == 5 && std.instance_type == 0) {
                meta.fa = 0xcc;
                clone_preserving_field_list(CloneType.E2E, 6, 1);
            }
            if (hdr.ctl.cmd == 9) {
                mark_to_drop(std);
            }
            hdr.report.setValid();
            hdr.report.itype_in = meta.itype_in;
            hdr.report.itype_out = (bit<8>)std.instance_type;
            hdr.report.rid = std.egress_rid;
            hdr.report.eport = (bit<16>)std.egress_port;
            hdr.report.iport = meta.iport;
            hdr.report.espec = meta.espec;
            hdr.report.fa = meta.fa;
            hdr.report.fb = meta.fb;
            hdr.report.fc = meta.fc;
            hdr.report.scratch = meta.scratch;
            hdr.report.plen = std.packet_length;
        }
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.report);
        pkt.emit(hdr.ctl);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
