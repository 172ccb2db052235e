/*
 * constants.p4 -- compile-time sizes and protocol numbers.
 *
 * The replay memory is T tables x N = 2^L slots x K payload words.
 * Change TABLE_BITS / SLOT_BITS / PAYLOAD_WORDS here (or define TABLE_BITS,
 * SLOT_BITS and the level lists before including the program, as a build for
 * a smaller target would); when SLOT_BITS changes, also change the lists of
 * inner tree levels 1..L-1: FOR_EACH_INNER_LEVEL in v1model/sum_tree.p4,
 * WALK_LEVELS_1 .. 4 (the levels by walk phase) in tna/sum_tree.p4; and when
 * PAYLOAD_WORDS changes, FOR_EACH_PAIR in headers.p4.
 * Register cells are 32 bits; what needs more is a pair of them: the sums
 * (hi, lo), the payload's 64-bit cells (two words each).
 * docs/protocol.md lists every place a limit lives.
 */
#ifndef REPLAY_CONSTANTS_P4
#define REPLAY_CONSTANTS_P4

/* --- sizes ------------------------------------------------------------- */
#ifndef TABLE_BITS
#define TABLE_BITS 2                        /* T = 4 replay tables        */
#endif
#ifndef SLOT_BITS
#define SLOT_BITS 12                        /* L = 12, N = 4096 slots     */
#endif
#define NUM_TABLES (1 << TABLE_BITS)
/* A table_id's bits from TABLE_BITS up: all clear below NUM_TABLES (a mask). */
#define TABLE_ID_HIGH (8w0xFF ^ (bit<8>)(NUM_TABLES - 1))
#define NUM_SLOTS (1 << SLOT_BITS)
#define NUM_TABLE_SLOTS (NUM_TABLES * NUM_SLOTS)
#define PAYLOAD_WORDS 16                    /* K = 16 x 32-bit words      */

/* Q16.16 fixed point: 1.0 == 65536. Used when a table has seen no priority. */
#define PRIORITY_ONE 32w65536

/* --- ports and replication ----------------------------------------------- */
#define MAX_PORTS 512                       /* per-port counters: bit<9> port numbers */
const bit<16> REPLAY_UDP_PORT = 45000;

/* SAMPLE n from port p is multicast to group sample_replication[p] + n, whose
 * n replicas (rid 0 .. n-1) all go back out of p: the controller installs one
 * group per sampling port and batch size. RESET is multicast to RESET_GROUP:
 * RESET_FANOUT replicas to the CPU port, rid 0 .. RESET_FANOUT-1, each
 * clearing one slot; the last one recirculates for the next round. */
const bit<16> RESET_GROUP = 255;
const bit<32> RESET_FANOUT = 64;            /* divides NUM_SLOTS; fits bmv2's 64-deep queue */

/* A SAMPLE draw that lands on a slot whose record is not written yet (stamp
 * 0: an INSERT on another egress thread has claimed it and not finished) is
 * drawn again, at most this many times; then it is answered NOT_READY. */
const bit<8> EMPTY_SLOT_REDRAWS = 3;

/* What egress does with a replay packet after its pass (meta.verdict). */
const bit<2> EGRESS_REPLY = 0;              /* send the reply built in place */
const bit<2> EGRESS_DROP  = 1;
const bit<2> EGRESS_AGAIN = 2;              /* another pass (recirculate) */

/* --- lengths and numbers of the headers we parse and build ---------------- */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<4>  IPV4_IHL_NO_OPTIONS = 5;
const bit<3>  IPV4_FLAG_MF   = 1;           /* more fragments */
const bit<16> ARP_OPER_REQUEST = 1;
const bit<16> ARP_OPER_REPLY   = 2;
const bit<8>  REPLY_TTL = 64;
const bit<32> ETHERNET_BYTES = 14;        /* in 32 bits: a frame length */
const bit<16> IPV4_BYTES = 20;
const bit<16> UDP_BYTES = 8;
const bit<32> CONTROLLER_HDR_BYTES = 2;     /* packet_in in front of a reply to the CPU */

/* --- wire protocol (docs/protocol.md) ----------------------------------- */
const bit<8> REPLAY_VERSION = 2;

const bit<8> OP_INSERT    = 1;
const bit<8> OP_SAMPLE    = 2;
const bit<8> OP_UPDATE    = 3;
const bit<8> OP_READ      = 4;   /* CPU port only */
const bit<8> OP_WRITE     = 5;   /* CPU port only */
const bit<8> OP_RESET     = 6;   /* CPU port only */
const bit<8> OP_GET_STATE = 7;   /* CPU port only */
const bit<8> OP_SET_STATE = 8;   /* CPU port only */
const bit<8> OP_UPDATE_BATCH = 9;   /* `count` UPDATEs in one request, one egress pass each */
const bit<8> OP_LAST      = 9;   /* ReplayStatsBuckets matches 0 .. 9 as 0 .. 7, 8 .. 9 */

const bit<8> FLAG_REPLY        = 0x01;
const bit<8> FLAG_ACK          = 0x02;
const bit<8> FLAG_HAS_PRIORITY = 0x04;
const bit<8> FLAG_MODE_MASK    = 0x30;   /* bits 4-5: sampling mode */
const bit<8> FLAG_MODE_SHIFT   = 4;
const bit<8> FLAGS_RESERVED    = 0xC8;   /* must be zero */

const bit<8> MODE_DEFAULT     = 0;
const bit<8> MODE_UNIFORM     = 1;
const bit<8> MODE_PRIORITIZED = 2;
const bit<8> MODE_INVALID     = 3;

const bit<8> STATUS_OK              = 0;
const bit<8> STATUS_UNKNOWN_TABLE   = 1;
const bit<8> STATUS_DISABLED        = 2;
const bit<8> STATUS_BELOW_MIN_SIZE  = 3;
const bit<8> STATUS_BATCH_TOO_LARGE = 4;
const bit<8> STATUS_MALFORMED       = 5;
const bit<8> STATUS_TRUNCATED       = 6;
const bit<8> STATUS_UNKNOWN_OP      = 7;
const bit<8> STATUS_BAD_SLOT        = 8;
const bit<8> STATUS_DENIED          = 9;
const bit<8> STATUS_STALE           = 10;
const bit<8> STATUS_EMPTY           = 11;
const bit<8> STATUS_RATE_LIMITED    = 12;   /* <arch>/insert_limit.p4 */
const bit<8> STATUS_NOT_READY       = 13;   /* a SAMPLE reply: its slot holds no experience yet */

#define NUM_INSERT_LIMITERS 1024        /* one per (table, host) that may insert */

/* ACL permission bits (action parameter of replay_acl). */
const bit<8> ALLOW_INSERT = 0x01;
const bit<8> ALLOW_SAMPLE = 0x02;
const bit<8> ALLOW_UPDATE = 0x04;

/* Request counters: index = table_bucket << STATS_TABLE_SHIFT
 * | op << STATS_OP_SHIFT | status (controller/stats.py reads them so);
 * table_bucket NUM_TABLES collects requests naming no valid table. */
const bit<8> STATS_TABLE_SHIFT = 8;
const bit<8> STATS_OP_SHIFT = 4;
#define STATS_SIZE ((NUM_TABLES + 1) * 256)

/* Reply sizes in bytes (Ethernet + IPv4 + UDP + replay header [+ payload]). */
const bit<16> REPLAY_HDR_BYTES = 36;
const bit<16> PAYLOAD_BYTES = 64;          /* PAYLOAD_WORDS * 4 */

/* UPDATE_BATCH: at most MAX_UPDATE_BATCH entries of ENTRY_BYTES (slot, stamp,
 * priority) after the header (FOR_EACH_ENTRY in headers.p4 lists them). Its
 * copies tally their outcomes in batch_tally, 2^TALLY_BITS cells addressed by
 * the request id's low bits (<arch>/batch_tally.p4). */
const bit<8> MAX_UPDATE_BATCH = 16;
#define ENTRY_BYTES 12
#define TALLY_BITS 10

#endif
