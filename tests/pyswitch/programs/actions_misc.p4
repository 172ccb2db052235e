/* actions_misc.p4 -- header stack push/pop and run-time indexing, if-statements inside
 * actions (predicated by p4c), exit inside an action, assert, log_msg and random. */
#include <core.p4>
#include <v1model.p4>

header op_t { bit<8> op; bit<8> idx; bit<8> val; }
header item_t { bit<8> v; }
header out_t { bit<8> count; bit<8> r; bit<8> flag; bit<8> sel; }

struct headers_t { out_t res; op_t op; item_t[4] items; }
struct metadata_t { bit<8> count; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.op);
        transition parse_items;
    }
    state parse_items {
        pkt.extract(hdr.items.next);
        meta.count = meta.count + 1;
        transition select(hdr.items.last.v) {
            0: accept;
            default: parse_items;
        }
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action set_item() {
        hdr.items[hdr.op.idx].v = hdr.op.val;
    }
    action classify(bit<8> limit) {
        if (hdr.op.val > limit) {
            hdr.res.flag = 1;
            std.egress_spec = 2;
        } else {
            hdr.res.flag = 2;
            std.egress_spec = 511;
        }
    }
    action do_exit() {
        std.egress_spec = 3;
        exit;
    }
    table t_classify {
        key = { hdr.op.op : exact; }
        actions = { classify; NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.res.setValid();
        hdr.res.count = meta.count;
        std.egress_spec = 1;
        log_msg("op={} idx={}", {hdr.op.op, hdr.op.idx});
        if (hdr.op.op == 1) {
            hdr.items.push_front(1);
            hdr.items[0].setValid();
            hdr.items[0].v = hdr.op.val;
        } else if (hdr.op.op == 2) {
            hdr.items.pop_front(1);
        } else if (hdr.op.op == 3) {
            set_item();
        } else if (hdr.op.op == 4) {
            t_classify.apply();
        } else if (hdr.op.op == 5) {
            random(hdr.res.r, 8w10, 8w20);
        } else if (hdr.op.op == 6) {
            assert(hdr.op.val != 0);
        } else if (hdr.op.op == 7) {
            do_exit();
            hdr.res.sel = 0x55;
        } else if (hdr.op.op == 8) {
            hdr.res.sel = hdr.items[hdr.op.idx].v;
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.res);
        pkt.emit(hdr.op);
        pkt.emit(hdr.items);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
