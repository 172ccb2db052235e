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
 *   ingress   IPv4 from a host -> SourceGuard (its port, MAC and address must
 *             be bound, else dropped); ARP -> ArpResponder; replay request to the VIP ->
 *             ReplayAdmission (checks, then unicast back, or a multicast
 *             group for SAMPLE n and RESET); other IPv4 -> Ipv4Forwarding;
 *             anything else is dropped. Ingress holds no replay state.
 *   PRE       SAMPLE n: n copies toward the requester, rid = reply index.
 *   egress    replay requests and their copies -> ReplayService, where all
 *             replay state lives; broadcast copies are readdressed.
 * The wire format is in docs/protocol.md.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/forwarding.p4"
#include "include/insert_limit.p4"
#include "include/replay_admission.p4"
#include "include/table_state.p4"
#include "include/draw.p4"
#include "include/sum_tree.p4"
#include "include/slot_store.p4"
#include "include/replay_reply.p4"
#include "include/replay_service.p4"

control ReplayIngress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t std) {
    SourceGuard() source;
    ArpResponder() arp;
    Ipv4Forwarding() ipv4;
    ReplayAdmission() replay;

    action replay_vip_hit() {
        meta.is_request = 1;
    }

    /* The replay service's virtual IP (its MAC is answered by arp_responder). */
    table replay_vip {
        key = { hdr.ipv4.dst_addr : exact; }
        actions = { replay_vip_hit; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        if (std.instance_type != INSTANCE_RECIRC) {
            meta.orig_port = std.ingress_port;
            meta.from_cpu = (bit<1>)(std.ingress_port == CPU_PORT);
        }

        /* Controller packet-out with an explicit port: send it there as is. */
        if (hdr.packet_out.isValid() && hdr.packet_out.egress_port != 0) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }

        if (hdr.ipv4.isValid() && meta.from_cpu == 0 && std.instance_type != INSTANCE_RECIRC) {
            source.apply(hdr, meta, std);
            if (meta.dropped == 1) {
                exit;
            }
        }

        /* A first fragment (MF set) is not replay traffic: its reply could
         * not reach the requester whole. */
        if (hdr.udp.isValid() && hdr.udp.dst_port == REPLAY_UDP_PORT
            && (hdr.ipv4.flags & IPV4_FLAG_MF) == 0) {
            replay_vip.apply();
        }

        if (hdr.arp.isValid()) {
            arp.apply(hdr, meta, std);
        } else if (meta.is_request == 1) {
            replay.apply(hdr, meta, std);
        } else if (hdr.ipv4.isValid()) {
            ipv4.apply(hdr, meta, std);
        } else {
            mark_to_drop(std);
        }
    }
}

control ReplayEgress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t std) {
    ReplayService() replay;
    BroadcastRewrite() broadcast;

    apply {
        if (meta.is_request == 1) {
            replay.apply(hdr, meta, std);
        } else if (std.instance_type == INSTANCE_REPLICATION) {
            broadcast.apply(hdr, meta, std);
        }
    }
}

V1Switch(ReplayParser(),
         ReplayVerifyChecksum(),
         ReplayIngress(),
         ReplayEgress(),
         ReplayComputeChecksum(),
         ReplayDeparser()) main;
