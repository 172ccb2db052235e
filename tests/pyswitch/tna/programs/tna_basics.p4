/* tna_basics.p4 -- the TNA model's externs and traffic manager, one feature per
 * op code in the test header (tests/pyswitch/tna/test_basics.py):
 *   op 1  forward to test_h.arg (unicast)
 *   op 2  a RegisterAction adds arg to cell idx, returns the old value in res
 *   op 3  a pair register: lo += arg, hi = max(hi, arg), returns lo
 *   op 4  identity and CRC16 hashes of {idx, arg} into res / res2
 *   op 5  Random<16> masked with arg into res
 *   op 6  multicast group arg; egress writes egress_port and egress_rid
 *   op 7  through the loop port arg times, counting passes in res
 *   op 8  drop in ingress; op 9 drop in egress
 *   op 10 bridged metadata: ingress bridges arg + 1, egress writes it to res
 *   op 11 the register of op 2 twice in one pass (what a Tofino cannot run)
 *   op 12 an action called directly: res = 5; op 13 the same action from a
 *         table's const entries: res = 100 or 200 by arg, else 0
 * The result leaves by the port in test_h.port (the ingress port for op 2..5).
 */
#include <core.p4>
#include <tna.p4>

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header test_h {
    bit<8>  op;
    bit<8>  passes;
    bit<16> port;
    bit<32> idx;
    bit<32> arg;
    bit<32> res;
    bit<32> res2;
}

header bridge_h {
    bit<32> value;
}

struct headers_t {
    bridge_h   bridge;
    ethernet_h ethernet;
    test_h     test;
}

struct pair_t {
    bit<32> lo;
    bit<32> hi;
}

struct meta_t {
    bit<32> value;
}

parser IgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_test;
            default: accept;
        }
    }
    state parse_test {
        pkt.extract(hdr.test);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<32>>(16) cells;
    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) add_to_cell = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value + hdr.test.arg;
        }
    };
    Register<pair_t, bit<32>>(16) pairs;
    RegisterAction<pair_t, bit<32>, bit<32>>(pairs) update_pair = {
        void apply(inout pair_t value, out bit<32> rv) {
            value.lo = value.lo + hdr.test.arg;
            if (hdr.test.arg > value.hi) {
                value.hi = hdr.test.arg;
            }
            rv = value.lo;
        }
    };
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) identity;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) crc16;
    Random<bit<16>>() rng;
    Counter<bit<32>, bit<8>>(256, CounterType_t.PACKETS_AND_BYTES) ops;

    action to_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }
    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    table dmac {
        key = { hdr.ethernet.dst : exact; }
        actions = { to_port; drop; }
        default_action = drop();
        size = 64;
    }
    /* called directly (op 12) and from a table's const entries (op 13) */
    action set_res(bit<32> value) {
        hdr.test.res = value;
    }
    table res_by_arg {
        key = { hdr.test.arg : exact; }
        actions = { set_res; }
        const entries = {
            1 : set_res(100);
            2 : set_res(200);
        }
        default_action = set_res(0);
    }

    apply {
        if (!hdr.test.isValid()) {
            dmac.apply();
        } else {
            ops.count(hdr.test.op);
            ig_tm_md.ucast_egress_port = (PortId_t)hdr.test.port;
            if (hdr.test.op == 2) {
                hdr.test.res = add_to_cell.execute(hdr.test.idx);
            } else if (hdr.test.op == 3) {
                hdr.test.res = update_pair.execute(hdr.test.idx);
            } else if (hdr.test.op == 4) {
                hdr.test.res = identity.get({hdr.test.idx[15:0], hdr.test.arg[15:0]});
                hdr.test.res2 = (bit<32>)crc16.get({hdr.test.idx, hdr.test.arg});
            } else if (hdr.test.op == 5) {
                hdr.test.res = (bit<32>)rng.get() & hdr.test.arg;
            } else if (hdr.test.op == 6) {
                ig_tm_md.mcast_grp_a = (MulticastGroupId_t)hdr.test.arg;
            } else if (hdr.test.op == 7) {
                hdr.test.res = hdr.test.res + 1;
                if (hdr.test.res < hdr.test.arg) {
                    ig_tm_md.ucast_egress_port = 68;
                }
            } else if (hdr.test.op == 8) {
                ig_dprsr_md.drop_ctl = 1;
            } else if (hdr.test.op == 10) {
                hdr.bridge.setValid();
                hdr.bridge.value = hdr.test.arg + 1;
            } else if (hdr.test.op == 11) {
                hdr.test.res = add_to_cell.execute(hdr.test.idx);
                hdr.test.res2 = add_to_cell.execute(hdr.test.idx);
            } else if (hdr.test.op == 12) {
                set_res(5);
            } else if (hdr.test.op == 13) {
                res_by_arg.apply();
            }
        }
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

parser EgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<112>>()[15:0]) {
            0x88b5: parse_ethernet;
            default: parse_bridge;
        }
    }
    state parse_bridge {
        pkt.extract(hdr.bridge);
        meta.value = hdr.bridge.value;
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_test;
            default: accept;
        }
    }
    state parse_test {
        pkt.extract(hdr.test);
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.test.isValid()) {
            hdr.test.passes = hdr.test.passes + 1;
            if (hdr.test.op == 6) {
                hdr.test.res = (bit<32>)eg_intr_md.egress_port;
                hdr.test.res2 = (bit<32>)eg_intr_md.egress_rid;
            } else if (hdr.test.op == 9) {
                eg_dprsr_md.drop_ctl = 1;
            } else if (hdr.test.op == 10) {
                hdr.test.res = meta.value;
                hdr.bridge.setInvalid();
            }
        }
    }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
