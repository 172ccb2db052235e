/*
 * tna/bridge.p4 -- what travels with a packet between passes on TNA, where
 * metadata does not cross from ingress to egress by itself.
 *
 *   bridge_h   ingress -> egress, in front of every packet the ingress
 *              deparser hands to the traffic manager (and so to every copy the
 *              PRE makes): admission's decisions about a replay request.
 *   loop_h     egress -> ingress, in front of every replay packet leaving by
 *              LOOP_PORT (where all replay state is: replay_tna.p4): what
 *              v1model keeps in its FL_RECIRC field list (a SAMPLE reply to
 *              draw again, the next RESET round), or that the packet is a
 *              finished reply the ingress only delivers.
 *
 * Byte layouts (padding fields make each header whole bytes):
 *   bridge_h  1 B flags (is_replica, is_request, from_cpu, has_priority,
 *             redraw, has_payload, has_entries) | 2 B orig_port | 1 B status |
 *             1 B mode | 1 B copy_index | 1 B phase | 1 B redraws |
 *             1 B batch_applied | 1 B batch_stale | 4 B capacity |
 *             4 B min_size | 4 B reset_base                           = 22 B
 *   loop_h    1 B each has_payload, redraw, verdict, from_cpu (each in
 *             the byte's low bits) |
 *             2 B orig_port | 1 B copy_index | 1 B phase | 1 B mode |
 *             1 B redraws | 4 B reset_base | 1 B has_entries |
 *             1 B batch_applied | 1 B batch_stale                   = 19 B
 *
 * A replay packet on its way through LOOP_PORT is laid out
 *   [bridge_h or loop_h] [replay_h] [replay_payload_h]? [entry_h x n]?
 *   [Ethernet IPv4 UDP]
 * so that the egress parser reads the replay header and payload and nothing
 * else: Tofino 1's egress parser looks at most 160 bytes deep (egress
 * intrinsic metadata 27 + bridge_h 22 + replay_h 36 + payload 64 = 149). The
 * ingress pass that delivers the reply puts the addressing back in front. An
 * UPDATE_BATCH's entries (up to 16 x 12 = 192 bytes) ride behind the replay
 * header, unparsed in egress; the ingress parser extracts those still in the
 * packet (copy_index of them) to reach the addressing behind them, and emits
 * them again but for the one an entry's admission takes (TakeEntry in
 * tna/loop.p4; ingress holds all 16 anyway, for a batch's first pass).
 */
#ifndef REPLAY_TNA_BRIDGE_P4
#define REPLAY_TNA_BRIDGE_P4

@flexible
header bridge_h {
    bit<1>  is_replica;      /* the PRE made this copy (the rid is its index) */
    bit<1>  is_request;
    bit<1>  from_cpu;
    bit<1>  has_priority;
    bit<1>  redraw;          /* a SAMPLE reply drawn again: reply copy_index */
    bit<1>  has_payload;     /* replay_h is followed by a replay_payload_h */
    bit<1>  has_entries;     /* ... or by an UPDATE_BATCH's entries */
    bit<16> orig_port;       /* a 9-bit port, in a container of its own */
    bit<8>  status;
    bit<8>  mode;
    bit<8>  copy_index;      /* UPDATE_BATCH: the entries left after this one */
    bit<8>  phase;           /* the request's phase this pass (tna/phases.p4) */
    bit<8>  redraws;         /* SAMPLE: passes this reply went round to draw again */
    bit<8>  batch_applied;   /* UPDATE_BATCH: its entries applied so far */
    bit<8>  batch_stale;     /* ... and STALE */
    bit<32> capacity;
    bit<32> min_size;
    bit<32> reset_base;
}

/* Every field in a byte of its own, with padding (an egress action may write
 * a PHV container from at most two sources: bits packed from several fields
 * and constants are more than that). The egress parser fills in what the
 * header carries unchanged, and has_payload, has_entries, redraw, verdict,
 * phase, copy_index, redraws, reset_base and the batch's counts are the
 * egress's own metadata fields (@pa_alias in replay_tna.p4), so that no table
 * after the verdict copies them. */
header loop_h {
    bit<7>  pad0;
    bit<1>  has_payload;     /* replay_h is followed by a replay_payload_h */
    bit<7>  pad1;
    bit<1>  redraw;          /* a SAMPLE reply to draw again: reply copy_index */
    bit<6>  pad2;
    bit<2>  verdict;         /* EGRESS_REPLY: a finished reply, ingress only forwards it */
    bit<7>  pad3;
    bit<1>  from_cpu;
    bit<16> orig_port;       /* a 9-bit port */
    bit<8>  copy_index;
    bit<8>  phase;           /* the request's next phase (meta.next_phase); 0: admitted again */
    bit<8>  mode;            /* SAMPLE: its sampling mode, for the later phases */
    bit<8>  redraws;
    bit<32> reset_base;
    bit<7>  pad4;
    bit<1>  has_entries;     /* replay_h is followed by an UPDATE_BATCH's entries */
    bit<8>  batch_applied;   /* UPDATE_BATCH: its entries applied so far */
    bit<8>  batch_stale;     /* ... and STALE */
}

/* A replay packet's addressing while it goes through LOOP_PORT: after the
 * replay header and payload, so that its egress parser reads those alone. */
struct tail_t {
    ethernet_h ethernet;
    arp_h      arp;          /* never valid: AddressHeaderParser's signature */
    ipv4_h     ipv4;
    udp_h      udp;
}

/* The TNA program's header stack: its own headers around the shared ones. */
struct tna_headers_t {
    bridge_h  bridge;
    loop_h    loop;
    headers_t replay;
    tail_t    tail;
}

#endif
