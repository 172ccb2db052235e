/*
 * headers.p4 -- header layouts and per-packet metadata.
 *
 * Replay packets are UDP datagrams to the replay VIP on REPLAY_UDP_PORT:
 *
 *   Ethernet | IPv4 (IHL 5) | UDP | replay_h (36 B) | replay_payload_h (64 B)?
 *                                                | entry_h (12 B) x count?
 *
 * replay_payload_h is present in INSERT and WRITE requests and in SAMPLE and
 * READ replies; `count` entry_h in UPDATE_BATCH requests (batch_t). Packets
 * to or from the CPU port carry a 2-byte controller header in front of
 * Ethernet (packet_out from the controller, packet_in to it).
 * docs/protocol.md is the normative description of every field.
 */
#ifndef REPLAY_HEADERS_P4
#define REPLAY_HEADERS_P4

/* One entry per pair of payload words: X(i) for i in 0 .. PAYLOAD_WORDS/2-1.
 * Pair i is words 2i (its high half) and 2i + 1 (its low half), in the order
 * the wire carries them. */
#define FOR_EACH_PAIR(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;      /* 0: run the frame through the pipeline */
    bit<7> _pad;
}

@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;     /* port the original request came in on */
    bit<7> _pad;
}

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header arp_h {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* The fields an IPv4 header's checksum covers: all but the checksum itself. */
#define IPV4_CHECKSUM_FIELDS(ip) \
    { ip.version, ip.ihl, ip.diffserv, ip.total_len, ip.identification, \
      ip.flags, ip.frag_offset, ip.ttl, ip.protocol, ip.src_addr, ip.dst_addr }

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* The replay header: requests and replies share it (FLAG_REPLY tells). */
header replay_h {
    bit<8>  version;         /* REPLAY_VERSION */
    bit<8>  op;              /* OP_* */
    bit<8>  flags;           /* FLAG_*; mode in bits 4-5 */
    bit<8>  status;          /* STATUS_* in replies, 0 in requests */
    bit<8>  table_id;
    bit<8>  count;           /* SAMPLE: batch size n */
    bit<8>  index;           /* SAMPLE reply: 0 .. n-1 */
    bit<8>  reserved;        /* must be 0 */
    bit<32> request_id;      /* echoed in every reply */
    bit<32> slot;
    bit<32> stamp;           /* insert sequence number of the slot's experience */
    bit<32> priority;        /* Q16.16 */
    bit<32> size;            /* reply: experiences stored in the table */
    bit<64> total;           /* reply: sum of the table's priorities (Q16.16) */
}

/* The payload as 64-bit pairs: the slot record stores one pair per register
 * cell (v1model/slot_store.p4, tna/slot_store.p4), so a copy reads it with
 * eight register accesses, not sixteen. */
#define DECLARE_PAIR(i) bit<64> p##i;
header replay_payload_h {
    FOR_EACH_PAIR(DECLARE_PAIR)
}

/* One entry of an UPDATE_BATCH: what an UPDATE's header carries. */
header entry_h {
    bit<32> slot;
    bit<32> stamp;
    bit<32> priority;        /* Q16.16 */
}

/* One X(i) per entry a batch may carry: i = 0 .. MAX_UPDATE_BATCH - 1; and
 * X(i, i + 1) in FOR_EACH_ENTRY_STEP for all but the last, which is
 * FOR_LAST_ENTRY's (the parser's chain, include/parser.p4). */
#define FOR_EACH_ENTRY(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) \
    X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define FOR_EACH_ENTRY_STEP(X) \
    X(0, 1) X(1, 2) X(2, 3) X(3, 4) X(4, 5) X(5, 6) X(6, 7) X(7, 8) \
    X(8, 9) X(9, 10) X(10, 11) X(11, 12) X(12, 13) X(13, 14) X(14, 15)
#define FOR_LAST_ENTRY(X) X(15)

/* An UPDATE_BATCH's entries, as separate headers: a copy picks its own by a
 * table keyed on its index (include/batch.p4), never by a run-time index. */
#define DECLARE_ENTRY(i) entry_h e##i;
struct batch_t {
    FOR_EACH_ENTRY(DECLARE_ENTRY)
}

struct headers_t {
    packet_out_h     packet_out;
    packet_in_h      packet_in;
    ethernet_h       ethernet;
    arp_h            arp;
    ipv4_h           ipv4;
    udp_h            udp;
    replay_h         replay;
    replay_payload_h payload;
    batch_t          batch;
}

/* Field list preserved when a packet is recirculated (a SAMPLE reply drawn
 * again, the next RESET round). */
#define FL_RECIRC 1

/* A declaration or statement that only serves BELOW's d (below): an
 * architecture whose BELOW compares the fields themselves defines MARGIN
 * empty, and leaves out the margins' fields, the work of taking them and the
 * tables that do it. */
#ifndef MARGIN
#define MARGIN(code) code
#endif

/* Ingress decides, egress executes: everything below except the egress
 * working values is set in ingress and travels with every copy the PRE makes
 * (on TNA this is the bridged header). */
struct metadata_t {
    /* kept across recirculation */
    @field_list(FL_RECIRC) bit<1>  from_cpu;    /* request came in on the CPU port */
    @field_list(FL_RECIRC) bit<9>  orig_port;   /* port of the original request */
    @field_list(FL_RECIRC) bit<1>  redraw;      /* this pass draws one SAMPLE reply again */
    @field_list(FL_RECIRC) bit<8>  copy_index;  /* ... namely reply copy_index */
    @field_list(FL_RECIRC) bit<32> reset_base;  /* RESET: first slot of this round */
    @field_list(FL_RECIRC) bit<8>  redraws;     /* SAMPLE: passes this reply went round */

    /* the architecture's intrinsic metadata, as the shared controls see it
     * (each architecture's top level copies them in and out) */
    bit<9>  in_port;         /* ingress port of this pass */
    bit<1>  recirculated;    /* this ingress pass follows a recirculation */
    bit<48> now;             /* ingress timestamp (InsertLimit's windows) */
    bit<9>  out_port;        /* ingress: unicast egress port */
    bit<16> mcast_grp;       /* ingress: multicast group, 0 = unicast */
    bit<1>  dropped;         /* ingress: drop the packet (SourceGuard, forwarding) */
    bit<9>  egress_port;     /* egress: the port this copy leaves by */
    bit<1>  is_replica;      /* egress: a copy the PRE made */
    bit<16> rid;             /* egress: its replication id */
    bit<2>  verdict;         /* egress: EGRESS_REPLY, EGRESS_DROP or EGRESS_AGAIN */
    bit<32> frame_len;       /* egress: length of the reply frame to send */

    /* ingress -> egress */
    bit<1>  is_request;      /* a replay request addressed to the VIP */
    bit<8>  status;          /* admission's verdict; egress may refine it */
    bit<8>  mode;            /* SAMPLE: resolved sampling mode */
    bit<1>  has_priority;
    bit<32> capacity;        /* replay_table_config */
    bit<32> min_size;
    bit<1>  enabled;
    bit<8>  max_batch;
    bit<8>  default_mode;
    bit<8>  allowed_ops;     /* replay_acl */
    bit<8>  copies;          /* SAMPLE, UPDATE_BATCH: n - 1, whose leading bit picks the group */
    bit<1>  replicate;       /* admitted SAMPLE or UPDATE_BATCH: to its group of copies */
    bit<8>  entries_parsed;  /* UPDATE_BATCH: entries the parser extracted */
    bit<1>  addressed;       /* the reply's addressing is done (ReplyAddress in ingress) */

    /* Wide comparisons, as differences computed in an action first: a Tofino
     * gateway compares a field with a constant only at a power of two and
     * with another field only for equality (BELOW, below). */
    bit<16> udp_margin;      /* udp.length - the bytes any request needs */
    bit<16> ip_margin;       /* ipv4.total_len - ... */
    bit<16> udp_margin_op;   /* udp.length - the bytes this op needs */
    bit<16> ip_margin_op;
    /* and BELOW's (below), where the architecture's BELOW reads them */
    MARGIN(bit<32> slot_margin;)     /* slot - capacity */
    MARGIN(bit<8>  batch_margin;)    /* max_batch - count */
    MARGIN(bit<8>  copy_margin;)     /* egress: index - count */
    MARGIN(bit<32> size_margin;)     /* egress: size - min_size */

    /* egress: the plan (replay_plan) */
    bit<8>  ring_op;
    bit<8>  guard_op;
    bit<8>  max_op;
    bit<8>  tree_op;
    bit<8>  store_op;

    /* egress: working values of this pass */
    bit<8>  index;           /* SAMPLE: which reply; RESET: rid */
    bit<32> table_index;
    bit<32> slot;
    bit<32> stamp;
    bit<32> priority;
    bit<32> size;
    bit<32> size_mask;       /* v1model: the uniform draw's mask (ring_mask) */
    sum_t   total;
    bit<1>  found;           /* a draw landed inside its range */
    bit<1>  guard_ok;        /* UPDATE: the slot still holds that stamp */
    bit<2>  batch_state;     /* UPDATE_BATCH: BATCH_NONE, BATCH_ENTRY or BATCH_LAST */
    bit<16> batch_counts;    /* v1model: the batch's tally once its last entry is done */
    bit<8>  batch_applied;   /* ... its entries applied, for the ACK's slot */
    bit<8>  batch_stale;     /* ... and STALE, for its index (TNA: so far, loop_h) */
    bit<8>  record_moved;    /* TNA, an UPDATE's record pass: PHASE_RECORD if the record
                              * no longer holds its stamp, else NO_NEXT_PHASE */
    sum_t   r;               /* prioritized draw, walked down the tree */

    /* egress: scratch of one action. Metadata, not action locals, so that
     * p4c keeps each step one assignment instead of substituting it into
     * every later use (which multiplies the work of every pass). */
    bit<32> cell;            /* register index */
    bit<32> hi;              /* a pair's halves as read */
    bit<32> lo;
    sum_t   sum;             /* a pair as one value */
    sum_t   mask;            /* power-of-two range of a draw, minus one */
    sum_t   draw0;           /* the draw attempts (v1model: draw1..3, after its first) */
    sum_t   draw1;
    sum_t   draw2;
    sum_t   draw3;
    bit<1>  ip_rewritten;    /* recompute the IPv4 checksum on the way out */

    /* the architecture's own (<arch>/arch.p4) */
    ARCH_METADATA
}

/* a < b for unsigned a, b whose top bit is `top`, given d = a - b (the
 * difference's sign bit is the answer when the top bits agree), unless the
 * architecture compares fields itself (<arch>/arch.p4). */
#ifndef BELOW
#define BELOW(a, b, d, top) (((a)[top:top] == 0 && (b)[top:top] == 1) \
                             || ((a)[top:top] == (b)[top:top] && (d)[top:top] == 1))
#endif

#endif
