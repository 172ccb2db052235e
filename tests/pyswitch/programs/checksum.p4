/* checksum.p4 -- csum16 verify (checksum_error) and update of IPv4, UDP checksum with
 * payload, and the hash algorithms of v1model into a result header. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
header udp_t { bit<16> src_port; bit<16> dst_port; bit<16> length; bit<16> checksum; }
header hashes_t {
    bit<16> crc16;
    bit<32> crc32;
    bit<16> csum16;
    bit<32> identity;
    bit<16> xor16;
    bit<16> ranged;
    bit<8>  cksum_err;
}

struct headers_t { hashes_t hashes; ethernet_t ethernet; ipv4_t ipv4; udp_t udp; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (!hdr.ipv4.isValid()) {
            mark_to_drop(std);
            exit;
        }
        hdr.hashes.setValid();
        hdr.hashes.cksum_err = (bit<8>)std.checksum_error;
        hash(hdr.hashes.crc16, HashAlgorithm.crc16, 16w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol }, 32w65536);
        hash(hdr.hashes.crc32, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol }, 64w4294967296);
        hash(hdr.hashes.csum16, HashAlgorithm.csum16, 16w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol }, 32w65536);
        hash(hdr.hashes.identity, HashAlgorithm.identity, 32w0,
             { hdr.ipv4.dst_addr }, 64w4294967296);
        hash(hdr.hashes.xor16, HashAlgorithm.xor16, 16w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol }, 32w65536);
        hash(hdr.hashes.ranged, HashAlgorithm.crc16, 16w10,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr }, 32w100);
        if (std.checksum_error == 1) {
            std.egress_spec = 2;
        } else {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            std.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, hdr.ipv4.protocol, hdr.udp.length,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0 },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.hashes);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
