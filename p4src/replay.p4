/*
 * replay.p4 -- in-network experience replay for distributed DQN (v1model).
 *
 * Actors INSERT experiences into replay tables kept in switch registers; the
 * Learner SAMPLEs batches (uniform or proportional to priority, from a sum
 * tree in registers) and UPDATEs priorities; the controller READs, WRITEs and
 * RESETs tables through the CPU port. Everything else is forwarded by
 * ipv4_lpm, ARP is answered by the switch, and the Learner's weight packets
 * are multicast to the Actors.
 *
 * Passes through the v1model pipeline (docs/protocol.md has them per op):
 *   ingress   a controller packet-out with a port goes there as is; anything
 *             else through IngressDispatch (include/ingress_dispatch.p4, as on
 *             TNA): IPv4 from a host -> SourceGuard (its port, MAC and
 *             address must be bound, else dropped); ARP -> ArpResponder;
 *             replay request to the VIP -> ReplayAdmission (checks, then
 *             unicast back, or a multicast group for SAMPLE n and RESET);
 *             other IPv4 -> Ipv4Forwarding; anything else is dropped. Then
 *             an admitted SAMPLE's reply addressing (ReplyAddress). Ingress
 *             holds no replay state.
 *   PRE       SAMPLE n: n copies toward the requester, rid = reply index;
 *             UPDATE_BATCH of n entries: the same, rid = entry index.
 *   egress    replay requests and their copies -> ReplayService, where all
 *             replay state lives (a SAMPLE copy drawn again is turned back
 *             into its request and recirculated); broadcast copies are
 *             readdressed.
 * The wire format is in docs/protocol.md.
 */
#include <core.p4>
#include <v1model.p4>

/* include/: shared by every architecture; v1model/: this one's own. */
#include "include/constants.p4"
#include "include/plan_ops.p4"
#include "v1model/arch.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "v1model/parser.p4"
#include "include/forwarding.p4"
#include "v1model/insert_limit.p4"
#include "include/insert_limit.p4"
#include "include/replay_admission.p4"
#include "include/batch.p4"
#include "v1model/batch_tally.p4"
#include "v1model/draw.p4"
#include "v1model/table_state.p4"
#include "v1model/slot_store.p4"
#include "v1model/sum_tree.p4"
#include "v1model/phases.p4"
#include "include/replay_reply.p4"
#include "include/ingress_dispatch.p4"
#include "include/replay_service.p4"

control ReplayIngress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t std) {
    /* Named as this control, so that its tables keep their names. */
    @name(".ReplayIngress") IngressDispatch() dispatch;
    ReplyAddress() reply_address;

    apply {
        meta.in_port = std.ingress_port;
        meta.now = std.ingress_global_timestamp;
        meta.recirculated = (bit<1>)(std.instance_type == INSTANCE_RECIRC);
        if (meta.recirculated == 0) {
            meta.orig_port = std.ingress_port;
            meta.from_cpu = (bit<1>)(std.ingress_port == CPU_PORT);
        }

        if (hdr.packet_out.isValid() && hdr.packet_out.egress_port != 0) {
            /* Controller packet-out with an explicit port: send it there as is. */
            meta.out_port = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            dispatch.apply(hdr, meta);
            /* A SAMPLE's n replies share their addressing: built once here,
             * so that each copy's egress pass only fills in its own fields. */
            if (meta.is_request == 1 && meta.status == STATUS_OK
                && hdr.replay.op == OP_SAMPLE && meta.from_cpu == 0) {
                reply_address.apply(hdr, meta, meta.orig_port);
                meta.addressed = 1;
            }
        }

        /* The shared controls' verdict, in v1model's terms. */
        if (meta.dropped == 1) {
            mark_to_drop(std);
        } else if (meta.mcast_grp != 0) {
            std.mcast_grp = meta.mcast_grp;
        } else {
            std.egress_spec = meta.out_port;
        }
    }
}

control ReplayEgress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t std) {
    ReplayService() replay;
    BroadcastRewrite() broadcast;

    apply {
        meta.egress_port = std.egress_port;
        meta.is_replica = (bit<1>)(std.instance_type == INSTANCE_REPLICATION);
        meta.rid = std.egress_rid;
        if (meta.is_request == 1) {
            replay.apply(hdr, meta);
            if (meta.verdict == EGRESS_REPLY) {
                truncate(meta.frame_len);
            } else if (meta.verdict == EGRESS_AGAIN) {
                recirculate_preserving_field_list(FL_RECIRC);
            } else {
                mark_to_drop(std);
            }
        } else if (meta.is_replica == 1) {
            broadcast.apply(hdr, meta);
        }
    }
}

V1Switch(ReplayParser(),
         ReplayVerifyChecksum(),
         ReplayIngress(),
         ReplayEgress(),
         ReplayComputeChecksum(),
         ReplayDeparser()) main;
