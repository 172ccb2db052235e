/* replicate_egress.p4 -- what the replicated SAMPLE of replay.p4 relies on:
 * a multicast group of several replicas toward one port, each copy running a
 * register read-modify-write in egress keyed by its replication id (egress_rid),
 * a random draw over a power-of-two range, a copy dropped in egress, and a copy
 * recirculated from egress with a preserved field list whose next pass is
 * unicast back to egress. hdr.ctl.cmd selects; egress reports in hdr.report. */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  cmd;
    bit<16> group;
    bit<32> add;
}

header report_t {
    bit<8>  itype;        /* instance_type seen by egress */
    bit<16> rid;
    bit<16> eport;
    bit<32> before;       /* the register cell before this copy's update */
    bit<32> after;
    bit<8>  passes;       /* preserved across recirculation */
    bit<32> masked;       /* a random draw shifted out: 0, so traces stay deterministic */
}

struct headers_t { ctl_t ctl; report_t report; }

struct metadata_t {
    @field_list(1) bit<8>  passes;
    @field_list(1) bit<16> saved_rid;
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
    apply {
        if (!hdr.ctl.isValid()) {
            mark_to_drop(std);
        } else if (std.instance_type == 4) {     /* a recirculated copy: unicast */
            std.egress_spec = 2;
        } else {
            std.mcast_grp = hdr.ctl.group;
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    register<bit<32>>(16) cells;

    action rmw(bit<32> index) {
        bit<32> old;
        cells.read(old, index);
        hdr.report.before = old;
        hdr.report.after = old + hdr.ctl.add + index;
        cells.write(index, hdr.report.after);
    }

    apply {
        bit<16> rid = std.egress_rid;
        if (std.instance_type == 4) {
            rid = meta.saved_rid;
        }
        hdr.report.setValid();
        hdr.report.itype = (bit<8>)std.instance_type;
        hdr.report.rid = rid;
        hdr.report.eport = (bit<16>)std.egress_port;
        if (hdr.ctl.cmd == 3) {
            rmw(0);                                /* every copy updates one cell */
        } else {
            rmw((bit<32>)rid & 15);
        }
        bit<32> r;
        random(r, 32w0, 32w0xFFFFFFFF);
        hdr.report.masked = (r & 0xFF00) >> 16;
        hdr.report.passes = meta.passes;
        if (hdr.ctl.cmd == 1 && rid == 2) {
            mark_to_drop(std);                     /* one copy dropped in egress */
        } else if (hdr.ctl.cmd == 2 && rid == 1 && meta.passes == 0) {
            meta.passes = meta.passes + 1;         /* one copy goes round again */
            meta.saved_rid = rid;
            hdr.report.setInvalid();
            recirculate_preserving_field_list(1);
        }
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.report);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
