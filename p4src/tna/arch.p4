/*
 * tna/arch.p4 -- what the shared controls need from the architecture, in
 * TNA's terms (p4src/v1model/arch.p4 has the same names for v1model).
 */
#ifndef REPLAY_ARCH_P4
#define REPLAY_ARCH_P4

/* Tofino 1 (2-pipe and 4-pipe parts): the CPU PCIe port, and the port a
 * replay packet loops through when it needs another pass (pipe 0's
 * recirculation port 68). The bmv2 build has no loop port: it recirculates. */
const bit<9> CPU_PORT  = 64;
const bit<9> LOOP_PORT = 68;

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
 * array has an identity hash over its index fields. */
#define CELL_INDEX(name) Hash<bit<32>>(HashAlgorithm_t.IDENTITY) name
#define SLOT_CELL(name) name.get({meta.table_index[TABLE_BITS-1:0], meta.slot[SLOT_BITS-1:0]})

#endif
