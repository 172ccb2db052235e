/*
 * tna/arch.p4 -- what the shared controls need from the architecture, in
 * TNA's terms (p4src/v1model/arch.p4 has the same names for v1model):
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

/* Tofino 1 (2-pipe and 4-pipe parts): the CPU PCIe port, and the port a
 * replay packet loops through when it needs another pass (pipe 0's
 * recirculation port 68). The bmv2 build has no loop port: it recirculates. */
const bit<9> CPU_PORT  = 64;
const bit<9> LOOP_PORT = 68;

/* The width of the sum tree's sums and of the draws over them: 32 bits, what
 * one stateful ALU adds in one pass (tna/sum_tree.p4). The reply's total is
 * still 64 bits on the wire. */
typedef bit<32> sum_t;

/* A packet counter per port, and the request statistics. */
#define PORT_COUNTER(name) Counter<bit<32>, bit<9>>(MAX_PORTS, CounterType_t.PACKETS) name
#define COUNT_PORT(name, port) name.count(port)
#define STATS_COUNTER(name, size) \
    Counter<bit<64>, bit<32>>(size, CounterType_t.PACKETS_AND_BYTES) name
/* The request counter, with the identity hash COUNT_REQUEST addresses it by. */
#define REQUEST_COUNTER(name, size) STATS_COUNTER(name, size); CELL_INDEX(name##_cell)
/* One request into replay_requests[table_bucket, op, status] (constants.p4):
 * the fields side by side, STATS_OP_SHIFT and STATS_TABLE_SHIFT apart. */
#define COUNT_REQUEST(name, table_bucket, op, status) \
    name.count(name##_cell.get({table_bucket[TABLE_BITS:0], op[3:0], status[3:0]}))

/* A register cell addressed by fields laid side by side, e.g. {table, slot}:
 * a stateful ALU takes a composite address only from the hash unit, so each
 * array has an identity hash over its index fields. The arrays a slot
 * addresses in phase 0 (slot_stamp, slot_priority) are laid out slot-major,
 * {slot, table}: the hash then takes the slot whole, and a hash over a part
 * of it would cut meta.slot, and every field copied to or from it, at that
 * bit (docs/hardware.md). */
#define CELL_INDEX(name) Hash<bit<32>>(HashAlgorithm_t.IDENTITY) name
#define SLOT_CELL(name) name.get({meta.slot, meta.table_index[TABLE_BITS-1:0]})

/* The replay service's phases (include/replay_service.p4, tna/phases.p4): a
 * request takes its state stages in up to eight egress passes through
 * LOOP_PORT, so that no pass's chain of dependent steps is longer than the
 * 12 stages of a Tofino 1 pipe. What a phase finds travels to the next in the
 * request's own header fields (replay_tna.p4); each walk phase has its own
 * working fields, so that the compiler chains no step of one phase to
 * another's. */
#define ARCH_METADATA \
    bit<8>  phase;         /* this pass's phase of the request, 0 first */ \
    bit<8>  next_phase;    /* the request's phase after this pass's */ \
    sum_t   delta;         /* a slot's priority change, added to every ancestor */ \
    bit<32> carried_delta; /* the change to a slot's priority, found in phase 0 */ \
    bit<32> path1;         /* walk phases 1 .. 4: the path (bit L-l: went right */ \
    bit<32> r1;            /* at level l), r, and r minus the left child's sum */ \
    bit<32> over1; \
    bit<32> path2; \
    bit<32> r2; \
    bit<32> over2; \
    bit<32> path3;         /* also the slot whose record the store reads or writes */ \
    bit<32> r3; \
    bit<32> over3; \
    bit<32> path4; \
    bit<32> r4; \
    bit<32> over4; \
    bit<1>  has_payload;   /* loop_h's (@pa_alias, replay_tna.p4): LoopFlags */ \
    bit<1>  has_entries;   /* an UPDATE_BATCH's entries follow the replay header */
#define FIRST_PHASE (meta.phase == 0)
#define STORE_PHASE (meta.phase == PHASE_RECORD || meta.phase == PHASE_RECORD_HI)
/* The slot record in a pass of its own: a branch beside phase 0's and the
 * levels', over the same stages. */
#define RECORD_IN_OWN_PHASE 1
/* A SAMPLE's draw, uniform or proportional, in a pass of its own too
 * (PHASE_DRAW: tna/draw.p4, SumTreeLaterPhases): phase 0 only checks the size. */
#define DRAWS_IN_FIRST_PHASE 0
/* Phase 0 may end the request (refused, stale, below the minimum size, every
 * draw overshot: the op's tree step cleared), whatever its plan said. A pass
 * that goes round again without it (a redraw, the next RESET round: status
 * OK and a tree step, so next_phase alone says no) has next_phase
 * NO_NEXT_PHASE, which is what loop_h.phase carries (replay_tna.p4). */
#define MORE_PHASES \
    (meta.next_phase != NO_NEXT_PHASE && meta.status == STATUS_OK && meta.tree_op != 0)
/* The stateful egress pass does not parse the addressing (tna/bridge.p4):
 * every reply is addressed on the ingress pass that delivers it, and a copy
 * to draw again keeps its request's addressing untouched. */
#define EGRESS_ADDRESSES_REPLIES 0

/* An UPDATE_BATCH goes to LOOP_PORT whole (ingress's tm_verdict: not
 * replicated), and its entries follow each other (include/batch.p4): its
 * first pass (planned to do nothing else: the verdict's first_entry,
 * include/replay_service.p4) and each entry's last pass (next_entry) go round
 * to the ingress pass that takes the next entry off the front of the packet
 * and admits it as that entry's UPDATE (redraw: BATCH_ENTRY_ADMITTED, whose
 * slot admission checks: tna/loop.p4, TakeEntry); an entry's outcome is
 * tallied in the verdict of its last pass (batch_applied, batch_stale: loop_h
 * and bridge_h carry them), the last entry's answering. copy_index is the
 * entries still in the packet. */
#define BATCH_IN_SEQUENCE 1
#define BATCH_ENTRY_ADMITTED (hdr.replay.op == OP_UPDATE_BATCH && meta.redraw == 1)

/* A copy's reply index is its replication id, through the hash unit (see
 * RESET_SLOT). */
#define REPLY_INDEX_CELL Hash<bit<8>>(HashAlgorithm_t.IDENTITY) reply_index;
#define REPLY_INDEX meta.index = reply_index.get({meta.rid});

/* A RESET copy's slot: the round's first (a multiple of RESET_FANOUT = 64)
 * with the copy's index (its rid in phase 0, carried as copy_index to phase 1)
 * below it, through the hash unit, which ties no PHV bits of the one to the
 * other (an addition would cut the slot into the index's pieces:
 * docs/hardware.md). */
#define RESET_SLOT_CELL Hash<bit<32>>(HashAlgorithm_t.IDENTITY) reset_slot;
#define RESET_SLOT meta.slot = reset_slot.get({meta.reset_base[31:6], meta.index[5:0]});

#endif
