/*
 * replay_reply.p4 -- turn the request in the packet into its reply, addressed
 * back to the requester (or to the CPU port for controller requests).
 */
#ifndef REPLAY_REPLY_P4
#define REPLAY_REPLY_P4

control ReplyBuilder(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t std) {
    apply {
        bit<48> mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;

        bit<32> ip = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.ipv4.ttl = 64;

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
            hdr.replay.slot = 0;
            hdr.replay.stamp = 0;
            hdr.replay.priority = 0;
        }
        /* A reply is always well-formed v1, whatever the request was. */
        hdr.replay.version = REPLAY_VERSION;
        hdr.replay.reserved = 0;
        hdr.replay.flags = (hdr.replay.flags & ~FLAGS_RESERVED) | FLAG_REPLY;
        hdr.replay.status = meta.status;
        hdr.replay.index = (bit<8>)meta.loop_index;
        hdr.replay.slot = meta.slot;
        hdr.replay.stamp = meta.stamp;
        hdr.replay.priority = meta.priority;
        hdr.replay.size = meta.size;
        hdr.replay.total = meta.total;

        if (hdr.payload.isValid()) {
            hdr.udp.length = 8 + REPLAY_HDR_BYTES + PAYLOAD_BYTES;
        } else {
            hdr.udp.length = 8 + REPLAY_HDR_BYTES;
        }
        hdr.ipv4.total_len = 20 + hdr.udp.length;
        meta.ip_rewritten = 1;
        meta.send_reply = 1;

        hdr.packet_out.setInvalid();
        if (meta.from_cpu == 1) {
            std.egress_spec = CPU_PORT;
        } else {
            std.egress_spec = meta.orig_port;
        }
    }
}

#endif
