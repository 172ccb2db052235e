/* arith.p4 -- exact bit-width arithmetic: wrap-around, signed values, shifts, slices,
 * concatenation, saturation, casts, comparisons. Inputs in hdr.inp, results in hdr.res. */
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8>  a;
    bit<8>  b;
    int<8>  s;
    int<8>  t;
    bit<16> w;
    bit<32> x;
    bit<8>  sh;
}

header res_t {
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  shl;
    bit<8>  shr;
    bit<16> shlv;
    bit<16> shrv;
    bit<8>  sadd;
    bit<8>  ssub;
    bit<8>  sshr;
    bit<8>  smul;
    bit<8>  slice;
    bit<16> concat;
    bit<8>  neg;
    bit<8>  logic;
    bit<8>  satadd;
    bit<8>  satsub;
    bit<8>  ssat;
    bit<4>  narrow;
    bit<4>  flags;
    bit<16> sext;
    bit<8>  cond;
    int<8>  sfield;
    bit<8>  setbits;
}

struct headers_t { in_t inp; res_t res; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        hdr.res.setValid();
        hdr.res.add = hdr.inp.a + hdr.inp.b;
        hdr.res.sub = hdr.inp.a - hdr.inp.b;
        hdr.res.mul = hdr.inp.a * hdr.inp.b;
        hdr.res.shl = hdr.inp.a << 3;
        hdr.res.shr = hdr.inp.a >> 2;
        hdr.res.shlv = hdr.inp.w << hdr.inp.sh[3:0];
        hdr.res.shrv = hdr.inp.w >> hdr.inp.sh;
        hdr.res.sadd = (bit<8>)(hdr.inp.s + hdr.inp.t);
        hdr.res.ssub = (bit<8>)(hdr.inp.s - hdr.inp.t);
        hdr.res.sshr = (bit<8>)(hdr.inp.s >> 2);
        hdr.res.smul = (bit<8>)(hdr.inp.s * hdr.inp.t);
        hdr.res.slice = hdr.inp.x[15:8];
        hdr.res.concat = hdr.inp.a ++ hdr.inp.b;
        hdr.res.neg = ~hdr.inp.a;
        hdr.res.logic = (hdr.inp.a & 0xf0) | (hdr.inp.b ^ 0x0f);
        hdr.res.satadd = hdr.inp.a |+| hdr.inp.b;
        hdr.res.satsub = hdr.inp.a |-| hdr.inp.b;
        hdr.res.ssat = (bit<8>)(hdr.inp.s |+| hdr.inp.t);
        hdr.res.narrow = (bit<4>)hdr.inp.x;
        hdr.res.flags = 0;
        if (hdr.inp.s < hdr.inp.t) { hdr.res.flags[0:0] = 1; }
        if (hdr.inp.a < hdr.inp.b) { hdr.res.flags[1:1] = 1; }
        if (hdr.inp.s == -1 || hdr.inp.a == 0) { hdr.res.flags[2:2] = 1; }
        if (!(hdr.inp.w > 1000) && hdr.inp.x != 0) { hdr.res.flags[3:3] = 1; }
        hdr.res.sext = (bit<16>)(int<16>)hdr.inp.s;
        hdr.res.cond = hdr.inp.a > hdr.inp.b ? hdr.inp.a : hdr.inp.b;
        hdr.res.sfield = hdr.inp.s - 100;
        hdr.res.setbits = hdr.inp.b;
        hdr.res.setbits[7:4] = hdr.inp.a[3:0];
        std.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.inp);
        pkt.emit(hdr.res);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
