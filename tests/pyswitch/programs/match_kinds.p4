/* match_kinds.p4 -- every match kind, priorities, const entries, masked keys,
 * hit/miss and action_run branches, a direct counter. Results go in an out header. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header in_t { bit<8> a; bit<16> b; bit<32> c; bit<8> d; bit<12> e; bit<4> pad; }
header out_t {
    bit<8> exact; bit<8> lpm; bit<8> lpm2; bit<8> tern; bit<8> range; bit<8> opt;
    bit<8> cst; bit<8> crange; bit<8> masked; bit<8> hm; bit<8> sw;
}

struct headers_t { out_t res; ethernet_t ethernet; in_t inp; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    direct_counter(CounterType.packets_and_bytes) exact_hits;

    action set_exact(bit<8> v) { hdr.res.exact = v; exact_hits.count(); }
    action set_lpm(bit<8> v) { hdr.res.lpm = v; }
    action set_lpm2(bit<8> v) { hdr.res.lpm2 = v; }
    action set_tern(bit<8> v) { hdr.res.tern = v; }
    action set_range(bit<8> v) { hdr.res.range = v; }
    action set_opt(bit<8> v) { hdr.res.opt = v; }
    action set_cst(bit<8> v) { hdr.res.cst = v; }
    action set_crange(bit<8> v) { hdr.res.crange = v; }
    action set_masked(bit<8> v) { hdr.res.masked = v; }
    action act_a() { }
    action act_b(bit<8> unused) { }
    action nop() { }

    table t_exact {
        key = { hdr.inp.a : exact; hdr.inp.e : exact; }
        actions = { set_exact; nop; }
        default_action = nop();
        counters = exact_hits;
    }
    table t_lpm {
        key = { hdr.inp.c : lpm; }
        actions = { set_lpm; }
        default_action = set_lpm(0xee);
    }
    table t_lpm2 {
        key = { hdr.inp.a : exact; hdr.inp.c : lpm; }
        actions = { set_lpm2; }
        default_action = set_lpm2(0xee);
    }
    table t_tern {
        key = { hdr.inp.b : ternary; hdr.inp.a : exact; }
        actions = { set_tern; }
        default_action = set_tern(0xee);
    }
    table t_range {
        key = { hdr.inp.d : range; hdr.inp.a : ternary; }
        actions = { set_range; }
        default_action = set_range(0xee);
    }
    table t_opt {
        key = { hdr.inp.a : optional; hdr.inp.d : optional; }
        actions = { set_opt; }
        const default_action = set_opt(0xee);
    }
    table t_cst {
        key = { hdr.inp.b : ternary; }
        actions = { set_cst; }
        default_action = set_cst(0xee);
        const entries = {
            0x1200 &&& 0xff00 : set_cst(1);
            0x1234 : set_cst(2);
            0x00ff &&& 0x00ff : set_cst(3);
        }
    }
    table t_crange {
        key = { hdr.inp.d : range; }
        actions = { set_crange; }
        default_action = set_crange(0xee);
        const entries = {
            1 .. 8 : set_crange(1);
            6 .. 12 : set_crange(2);
            15 : set_crange(3);
            _ : set_crange(4);
        }
    }
    table t_masked {
        key = { hdr.inp.b & 0x0ff0 : exact @name("b_mid"); }
        actions = { set_masked; }
        default_action = set_masked(0xee);
    }
    table t_hm {
        key = { hdr.inp.a : exact; }
        actions = { nop; }
        default_action = nop();
    }
    table t_sw {
        key = { hdr.inp.a : exact; }
        actions = { act_a; act_b; nop; }
        default_action = nop();
    }

    apply {
        hdr.res.setValid();
        t_exact.apply();
        t_lpm.apply();
        t_lpm2.apply();
        t_tern.apply();
        t_range.apply();
        t_opt.apply();
        t_cst.apply();
        t_crange.apply();
        t_masked.apply();
        if (t_hm.apply().hit) {
            hdr.res.hm = 1;
        } else {
            hdr.res.hm = 2;
        }
        switch (t_sw.apply().action_run) {
            act_a: { hdr.res.sw = 10; }
            act_b: { hdr.res.sw = 20; }
            default: { hdr.res.sw = 30; }
        }
        std.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.res);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.inp);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
