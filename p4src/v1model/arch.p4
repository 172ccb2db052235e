/*
 * v1model/arch.p4 -- what the shared controls need from the architecture, in
 * v1model's terms (p4src/tna/arch.p4 has the same names for TNA):
 * constants, the sum's width, the predicates and flags that say how a
 * request's passes are laid out, and macros only where P4 has nothing else:
 * extern declarations whose types differ (counters, hash cells), statements
 * inside actions (a copy's index, a RESET copy's slot), the comparison form
 * (BELOW) and the metadata fields of this architecture alone. The steps that
 * differ are controls with one signature in each architecture's files
 * (InsertWindow, TakeEntry, PhasePlan, SumTreeFirstPhase, ...).
 */
#ifndef REPLAY_ARCH_P4
#define REPLAY_ARCH_P4

const bit<9> CPU_PORT = 255;                /* simple_switch_grpc --cpu-port 255 */

/* The width of the sum tree's sums and of the draws over them: 64-bit sums
 * (registers hold them as _hi/_lo pairs of 32-bit cells). */
typedef bit<64> sum_t;

/* a < b: bmv2 compares two fields in one step (headers.p4's BELOW, for
 * hardware, takes the difference's sign bit; bmv2 ignores the difference). */
#define BELOW(a, b, d, top) ((a) < (b))
#define MARGIN(code)

/* v1model instance types as bmv2 numbers them. */
const bit<32> INSTANCE_NORMAL      = 0;
const bit<32> INSTANCE_RECIRC      = 4;
const bit<32> INSTANCE_REPLICATION = 5;

/* A packet counter per port, and the request statistics. */
#define PORT_COUNTER(name) counter(MAX_PORTS, CounterType.packets) name
#define COUNT_PORT(name, port) name.count((bit<32>)(port))
#define STATS_COUNTER(name, size) counter(size, CounterType.packets_and_bytes) name
#define REQUEST_COUNTER(name, size) STATS_COUNTER(name, size)
/* One request into replay_requests[table_bucket, op, status] (constants.p4). */
#define COUNT_REQUEST(name, table_bucket, op, status) \
    name.count((table_bucket << STATS_TABLE_SHIFT) | (op << STATS_OP_SHIFT) | (bit<32>)(status))

/* The replay service's phases (include/replay_service.p4): bmv2 runs all of
 * a request's state stages in one egress pass, its only phase
 * (v1model/phases.p4: nothing to plan, carry or flag). */
/* ADD's climb from the slot a cell at a time, and its change in halves (v1model/sum_tree.p4). */
#define ARCH_METADATA \
    bit<32> path; \
    bit<32> delta_lo; \
    bit<32> delta_hi;
#define FIRST_PHASE true
#define STORE_PHASE true
/* The draws, the whole sum tree and the slot record in the same pass as the
 * rest. */
#define DRAWS_IN_FIRST_PHASE 1
#define RECORD_IN_OWN_PHASE 0
#define MORE_PHASES false

/* The egress pass sees the reply's addressing: a reply ingress did not address
 * is addressed there, and a copy to draw again is turned back into its
 * request there (include/replay_reply.p4). */
#define EGRESS_ADDRESSES_REPLIES 1

/* An UPDATE_BATCH copy (a replica: a refused batch is not replicated) picks
 * its entry in its egress pass, from the entries the copy carries
 * (include/batch.p4), and that pass is the entry's last. */
#define BATCH_ENTRY_PASS (meta.is_replica == 1)
/* ... so ingress admits a batch whole and checks its entries' slots nowhere;
 * the entry's outcome is tallied in that pass too (v1model/batch_tally.p4). */
#define BATCH_ENTRY_ADMITTED false
#define BATCH_IN_SEQUENCE 0


/* A copy's reply index is its replication id. */
#define REPLY_INDEX_CELL
#define REPLY_INDEX meta.index = (bit<8>)meta.rid;

/* A RESET copy's slot: the round's first plus the copy's replication id. */
#define RESET_SLOT_CELL
#define RESET_SLOT meta.slot = meta.reset_base + (bit<32>)meta.rid;

#endif
