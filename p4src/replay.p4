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
 * Passes through the v1model pipeline:
 *   ingress   ARP -> ArpResponder; replay request to the VIP -> ReplayService;
 *             other IPv4 -> Ipv4Forwarding; anything else is dropped.
 *   egress    the recirculation loop's clones are recirculated; replies bound
 *             for the CPU get a packet_in header; all replies are truncated to
 *             their exact length; broadcast copies are readdressed.
 * The wire format is in docs/protocol.md.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/forwarding.p4"
#include "include/table_state.p4"
#include "include/sum_tree.p4"
#include "include/slot_store.p4"
#include "include/replay_reply.p4"
#include "include/replay_service.p4"

control ReplayIngress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t std) {
    ArpResponder() arp;
    Ipv4Forwarding() ipv4;
    ReplayService() replay;

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
        if (std.instance_type == INSTANCE_NORMAL) {
            meta.orig_port = std.ingress_port;
            if (std.ingress_port == CPU_PORT) {
                meta.from_cpu = 1;
            }
        }

        /* Controller packet-out with an explicit port: send it there as is. */
        if (hdr.packet_out.isValid() && hdr.packet_out.egress_port != 0) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }

        if (hdr.udp.isValid() && hdr.udp.dst_port == REPLAY_UDP_PORT) {
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
    BroadcastRewrite() broadcast;

    apply {
        if (std.instance_type == INSTANCE_INGRESS_CLONE) {
            /* A copy of the original request: back to ingress for the next pass. */
            recirculate_preserving_field_list(FL_LOOP);
        } else if (meta.send_reply == 1) {
            bit<32> frame_len = 14 + (bit<32>)hdr.ipv4.total_len;
            if (std.egress_port == CPU_PORT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = meta.orig_port;
                hdr.packet_in._pad = 0;
                frame_len = frame_len + 2;
            }
            truncate(frame_len);
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
