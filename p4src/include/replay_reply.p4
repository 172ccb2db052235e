/*
 * replay_reply.p4 -- turn the request in this packet (or this copy of it) into
 * its reply, addressed back to the requester, in two parts:
 *
 *   ReplyAddress  what every reply to the request shares: addresses and ports
 *                 swapped, the header made a well-formed reply of this version,
 *                 the lengths and meta.frame_len of a reply with a payload
 *                 (the longest).
 *   ReplyFields   what is this reply's own: status, index, slot, stamp,
 *                 priority, size, total; it sheds what only a request carries
 *                 (an INSERT's or WRITE's payload, an UPDATE_BATCH's entries),
 *                 so that every reply but SAMPLE's and READ's is the header
 *                 alone. An UPDATE_BATCH's ACK carries the batch's tally.
 *   ReplyLengths  the lengths of a reply without a payload.
 *
 * ReplyBuilder applies all three in egress, where the egress port is already
 * the requester's (or the CPU port, where the reply gets a packet_in header).
 * An architecture may apply ReplyAddress (and ReplyLengths) in ingress
 * instead: v1model once for a SAMPLE, whose n copies then only fill in their
 * own fields (meta.addressed); TNA for every reply, on the ingress pass that
 * delivers it after its stateful pass (EGRESS_ADDRESSES_REPLIES 0);
 * ReplyUnaddress turns such a copy back into its request when it has to be
 * drawn again. meta.frame_len is the reply's exact length, to which the
 * architecture's top level truncates the frame.
 */
#ifndef REPLAY_REPLY_P4
#define REPLAY_REPLY_P4

/* A reply's addresses and ports are its request's, exchanged (and back).
 * Each swap is three XORs in place: a temporary would be one more field in
 * every copy's PHV on bmv2, for each place the swap is used. */
#define XOR_SWAP(a, b) a = a ^ b; b = b ^ a; a = a ^ b;
#define SWAP_ADDRESSES(hdr) \
        XOR_SWAP(hdr.ethernet.dst_addr, hdr.ethernet.src_addr) \
        XOR_SWAP(hdr.ipv4.dst_addr, hdr.ipv4.src_addr) \
        XOR_SWAP(hdr.udp.dst_port, hdr.udp.src_port)

/* A reply's UDP length without and with a payload. */
const bit<16> REPLY_UDP_BYTES = UDP_BYTES + REPLAY_HDR_BYTES;
const bit<16> REPLY_UDP_BYTES_WITH_PAYLOAD = REPLY_UDP_BYTES + PAYLOAD_BYTES;

/* A request too short to hold a replay header gets an empty one to answer in. */
control ReplayHeaderPresent(inout replay_h replay) {
    apply {
        if (!replay.isValid()) {
            replay.setValid();
            replay.op = 0;
            replay.flags = 0;
            replay.table_id = 0;
            replay.count = 0;
            replay.request_id = 0;
        }
    }
}

control ReplyAddress(inout headers_t hdr, inout metadata_t meta, in bit<9> out_port) {
    ReplayHeaderPresent() header_present;

    apply {
        SWAP_ADDRESSES(hdr)
        hdr.ipv4.ttl = REPLY_TTL;
        hdr.udp.checksum = 0;

        header_present.apply(hdr.replay);
        /* A reply is always well formed, of this version, whatever the request was. */
        hdr.replay.version = REPLAY_VERSION;
        hdr.replay.reserved = 0;
        /* flags: FLAGS_RESERVED (bits 7, 6, 3) cleared, FLAG_REPLY (bit 0) set */
        hdr.replay.flags[7:6] = 0;
        hdr.replay.flags[3:3] = 0;
        hdr.replay.flags[0:0] = 1;

        hdr.udp.length = REPLY_UDP_BYTES_WITH_PAYLOAD;
        hdr.ipv4.total_len = IPV4_BYTES + REPLY_UDP_BYTES_WITH_PAYLOAD;
        meta.ip_rewritten = 1;

        hdr.packet_out.setInvalid();
        if (out_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.orig_port;
            hdr.packet_in._pad = 0;
            meta.frame_len = CONTROLLER_HDR_BYTES + ETHERNET_BYTES
                             + (bit<32>)(IPV4_BYTES + REPLY_UDP_BYTES_WITH_PAYLOAD);
        } else {
            meta.frame_len = ETHERNET_BYTES + (bit<32>)(IPV4_BYTES + REPLY_UDP_BYTES_WITH_PAYLOAD);
        }
    }
}

/* unwritten: a SAMPLE reply still on a slot that holds no experience after its
 * redraws (RecordCheck), which says NOT_READY; its request was counted with
 * meta.status, OK. An UPDATE_BATCH's ACK (the copy that completed the tally,
 * counted with its own entry's status): OK, slot = entries applied, index =
 * entries STALE, the rest 0. */
control ReplyFields(inout headers_t hdr, inout metadata_t meta, in bool unwritten) {
    /* The reply's own fields, its status given. */
    action fill(bit<8> status) {
        hdr.replay.status = status;
        hdr.replay.index = meta.index;
        hdr.replay.slot = meta.slot;
        hdr.replay.stamp = meta.stamp;
        hdr.replay.priority = meta.priority;
        hdr.replay.size = meta.size;
        hdr.replay.total = (bit<64>)meta.total;
    }

    action answer() {
        fill(meta.status);
    }

    action not_ready() {
        fill(STATUS_NOT_READY);
    }

    /* INSERT, WRITE: without the request's payload. */
    action answer_without_payload() {
        hdr.payload.setInvalid();
        fill(meta.status);
    }

    /* UPDATE_BATCH: without the request's entries. */
    action answer_without_entries() {
        DROP_ENTRIES(hdr.batch)
        fill(meta.status);
    }

    /* The batch's ACK: slot and stamp the tally's counts. */
    action batch_ack() {
        DROP_ENTRIES(hdr.batch)
        meta.status = STATUS_OK;
        hdr.replay.status = STATUS_OK;
        hdr.replay.index = meta.batch_stale;
        hdr.replay.slot = (bit<32>)meta.batch_applied;
        hdr.replay.stamp = 0;
        hdr.replay.priority = 0;
        hdr.replay.size = 0;
        hdr.replay.total = 0;
    }

    /* First matching row first; unwritten is a SAMPLE's alone. */
    table reply_fields {
        key = {
            unwritten         : exact;
            hdr.replay.op     : ternary;
            meta.batch_state  : ternary;
        }
        actions = { answer; not_ready; answer_without_payload; answer_without_entries; batch_ack; }
        const entries = {
            (true, _, _)                           : not_ready();
            (false, OP_INSERT, _)                  : answer_without_payload();
            (false, OP_WRITE, _)                   : answer_without_payload();
            (false, OP_UPDATE_BATCH, BATCH_LAST)   : batch_ack();
            (false, OP_UPDATE_BATCH, _)            : answer_without_entries();
        }
        default_action = answer();
    }

    apply {
        reply_fields.apply();
    }
}

/* The lengths of a reply that has no payload (ReplyAddress set them with one). */
control ReplyLengths(inout headers_t hdr, inout metadata_t meta) {
    apply {
        if (!hdr.payload.isValid()) {
            hdr.udp.length = REPLY_UDP_BYTES;
            hdr.ipv4.total_len = IPV4_BYTES + REPLY_UDP_BYTES;
            meta.frame_len = meta.frame_len - (bit<32>)PAYLOAD_BYTES;
        }
    }
}

/* A copy addressed in ingress that goes round again: its request as it was,
 * so that the next ingress pass admits and addresses it like the first (its
 * lengths stay the reply's, which the request's checks accept). */
control ReplyUnaddress(inout headers_t hdr) {
    apply {
        SWAP_ADDRESSES(hdr)
        hdr.replay.flags[0:0] = 0;
    }
}

control ReplyBuilder(inout headers_t hdr, inout metadata_t meta, in bool unwritten) {
#if EGRESS_ADDRESSES_REPLIES
    ReplyAddress() address;
    ReplyLengths() lengths;
#endif
    ReplyFields() fields;

    apply {
#if EGRESS_ADDRESSES_REPLIES
        if (meta.addressed == 0) {
            address.apply(hdr, meta, meta.egress_port);
        }
#endif
        fields.apply(hdr, meta, unwritten);
#if EGRESS_ADDRESSES_REPLIES
        lengths.apply(hdr, meta);
#endif
    }
}

#endif
