/*
 * replay_reply.p4 -- turn the request in this packet (or this copy of it) into
 * its reply, addressed back to the requester, in egress: the egress port is
 * already the requester's (or the CPU port, where the reply gets a packet_in
 * header). meta.frame_len is the reply's exact length, to which the
 * architecture's top level truncates the frame.
 */
#ifndef REPLAY_REPLY_P4
#define REPLAY_REPLY_P4

control ReplyBuilder(inout headers_t hdr, inout metadata_t meta) {
    apply {
        bit<48> mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;

        bit<32> ip = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.ipv4.ttl = REPLY_TTL;

        bit<16> port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.checksum = 0;

        if (!hdr.replay.isValid()) {   /* request too short to hold a header */
            hdr.replay.setValid();
            hdr.replay.op = 0;
            hdr.replay.flags = 0;
            hdr.replay.table_id = 0;
            hdr.replay.count = 0;
            hdr.replay.request_id = 0;
        }
        /* A reply is always well-formed v1, whatever the request was. */
        hdr.replay.version = REPLAY_VERSION;
        hdr.replay.reserved = 0;
        /* flags: FLAGS_RESERVED (bits 7, 6, 3) cleared, FLAG_REPLY (bit 0) set */
        hdr.replay.flags[7:6] = 0;
        hdr.replay.flags[3:3] = 0;
        hdr.replay.flags[0:0] = 1;
        hdr.replay.status = meta.status;
        hdr.replay.index = meta.index;
        hdr.replay.slot = meta.slot;
        hdr.replay.stamp = meta.stamp;
        hdr.replay.priority = meta.priority;
        hdr.replay.size = meta.size;
        hdr.replay.total = meta.total;

        if (hdr.payload.isValid()) {
            hdr.udp.length = UDP_BYTES + REPLAY_HDR_BYTES + PAYLOAD_BYTES;
        } else {
            hdr.udp.length = UDP_BYTES + REPLAY_HDR_BYTES;
        }
        hdr.ipv4.total_len = IPV4_BYTES + hdr.udp.length;
        meta.ip_rewritten = 1;

        hdr.packet_out.setInvalid();
        if (meta.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.orig_port;
            hdr.packet_in._pad = 0;
            meta.frame_len = CONTROLLER_HDR_BYTES + ETHERNET_BYTES + (bit<32>)IPV4_BYTES
                             + (bit<32>)hdr.udp.length;
        } else {
            meta.frame_len = ETHERNET_BYTES + (bit<32>)IPV4_BYTES + (bit<32>)hdr.udp.length;
        }
    }
}

#endif
