/*
 * replay_tna.p4 -- in-network experience replay for distributed DQN, for
 * Tofino (TNA). The same replay logic as replay.p4 (v1model): the controls in
 * include/ are shared; tna/ holds this architecture's parsers, bridged
 * headers and the state-holding controls written as RegisterActions.
 *
 * Passes through the Tofino pipeline (docs/hardware.md has the stage map).
 * All replay state (registers and the request counters) is in the egress of
 * the pipe that holds LOOP_PORT, and every replay packet takes its stateful
 * pass there, whichever pipe the requester's port is in:
 *   ingress   as on v1model: SourceGuard, ArpResponder, ReplayAdmission,
 *             Ipv4Forwarding; a replay request (refusals too) goes to
 *             LOOP_PORT, its decisions in bridge_h. Ingress holds no replay
 *             state.
 *   PRE       SAMPLE n: n copies to LOOP_PORT (rid = reply index); RESET:
 *             RESET_FANOUT copies to LOOP_PORT (the controller's groups).
 *   egress    on LOOP_PORT: ReplayService; the packet leaves with loop_h.
 *   ingress   loop_h.verdict EGRESS_REPLY: a finished reply, addressed
 *             (ReplyAddress, as v1model's ingress addresses a SAMPLE) and
 *             forwarded to the requester (or the CPU port); else the
 *             request's next pass: a
 *             SAMPLE reply drawn again (every draw overshot), the next RESET
 *             round. On its way through LOOP_PORT a replay packet carries its
 *             addressing behind the replay header (tna/bridge.p4).
 *   egress    of the requester's port: forwarding only.
 * Broadcast copies are readdressed in the egress of their ports.
 * A request takes its state stages in phases, one such loop each
 * (tna/phases.p4), so that no pass needs more than a pipe's stages.
 */
#include <core.p4>
#include <tna.p4>

/* include/: shared by every architecture; tna/: this one's own. */
#include "include/constants.p4"
#include "tna/arch.p4"
#include "include/headers.p4"
#include "tna/bridge.p4"
#include "include/parser.p4"
#include "tna/parser.p4"
#include "include/forwarding.p4"
#include "tna/insert_limit.p4"
#include "include/replay_admission.p4"
#include "tna/table_state.p4"
#include "tna/sum_tree.p4"
#include "tna/phases.p4"
#include "tna/draw.p4"
#include "tna/slot_store.p4"
#include "include/replay_reply.p4"
#include "tna/loop.p4"
#include "include/replay_service.p4"

@pa_auto_init_metadata
control ReplayIngress(inout tna_headers_t hdr,
                      inout metadata_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    SourceGuard() source;
    ArpResponder() arp;
    Ipv4Forwarding() ipv4;
    ReplayAdmission() replay;
    ReplyAddress() reply_address;
    ReplyLengths() reply_lengths;
    ToLoopLayout() to_loop;

    /* Frames the ingress parser ran out of, per port. Reading parser_err is
     * also what keeps them: a Tofino drops a frame cut short unless ingress
     * reads it, and admission answers it TRUNCATED, as on v1model. */
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) cut_short;

    action replay_vip_hit() {
        meta.is_request = 1;
    }

    /* The replay service's virtual IP (its MAC is answered by arp_responder). */
    table replay_vip {
        key = { hdr.replay.ipv4.dst_addr : exact @name("hdr.ipv4.dst_addr"); }
        actions = { replay_vip_hit; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    /* The intrinsic metadata, and loop_h's fields, are in meta already: the
     * ingress parser copies them (ReplayIngressParser), which takes no stage. */
    apply {
        if (ig_prsr_md.parser_err != 0) {
            cut_short.count(ig_intr_md.ingress_port);
        }
        if (hdr.loop.isValid()) {
            meta.orig_port = hdr.loop.orig_port[8:0];
        } else {
            meta.orig_port = ig_intr_md.ingress_port;
        }
        if (hdr.loop.isValid() && hdr.loop.verdict == EGRESS_REPLY) {
            /* A reply finished on LOOP_PORT: addressed, on to the requester. */
            meta.out_port = meta.orig_port;
            if (meta.from_cpu == 1) {
                meta.out_port = CPU_PORT;
            }
            reply_address.apply(hdr.replay, meta, meta.out_port);
            reply_lengths.apply(hdr.replay, meta);
        } else if (hdr.loop.isValid() && hdr.loop.phase != 0) {
            /* The request's next phase: admitted already, back to the state. */
            meta.is_request = 1;
            meta.out_port = LOOP_PORT;
            to_loop.apply(hdr);
        } else if (hdr.replay.packet_out.isValid() && hdr.replay.packet_out.egress_port != 0) {
            /* Controller packet-out with an explicit port: send it there as is. */
            meta.out_port = hdr.replay.packet_out.egress_port;
            hdr.replay.packet_out.setInvalid();
        } else {
            if (hdr.replay.ipv4.isValid() && meta.from_cpu == 0 && meta.recirculated == 0) {
                source.apply(hdr.replay, meta);
            }
            /* A first fragment (MF set) is not replay traffic. */
            if (meta.dropped == 0 && hdr.replay.udp.isValid()
                && hdr.replay.udp.dst_port == REPLAY_UDP_PORT
                && (hdr.replay.ipv4.flags & IPV4_FLAG_MF) == 0) {
                replay_vip.apply();
            }
            if (meta.dropped == 1) {
                /* SourceGuard refused it */
            } else if (hdr.replay.arp.isValid()) {
                arp.apply(hdr.replay, meta);
            } else if (meta.is_request == 1) {
                replay.apply(hdr.replay, meta);
                to_loop.apply(hdr);
            } else if (hdr.replay.ipv4.isValid()) {
                ipv4.apply(hdr.replay, meta);
            } else {
                meta.dropped = 1;
            }
        }
        hdr.loop.setInvalid();

        /* The shared controls' verdict, in TNA's terms, and whether egress
         * sees a copy the PRE made (each branch writes it once). */
        hdr.bridge.setValid();
        if (meta.dropped == 1) {
            ig_dprsr_md.drop_ctl = 1;
            hdr.bridge.is_replica = 0;
        } else if (meta.mcast_grp != 0) {
            ig_tm_md.mcast_grp_a = meta.mcast_grp;
            hdr.bridge.is_replica = 1;
        } else if (meta.is_request == 1) {
            ig_tm_md.ucast_egress_port = LOOP_PORT;   /* to the replay state */
            hdr.bridge.is_replica = 0;
        } else {
            ig_tm_md.ucast_egress_port = meta.out_port;
            hdr.bridge.is_replica = 0;
        }

        /* Admission's decisions, for egress, and whether a payload follows the
         * replay header (an INSERT's or WRITE's, or a record read in an earlier
         * pass): the egress parser reads it by this, not by the op. */
        if (hdr.replay.payload.isValid()) {
            hdr.bridge.has_payload = 1;
        } else {
            hdr.bridge.has_payload = 0;
        }
        hdr.bridge.is_request = meta.is_request;
        hdr.bridge.from_cpu = meta.from_cpu;
        hdr.bridge.has_priority = meta.has_priority;
        hdr.bridge.redraw = meta.redraw;
        hdr.bridge.orig_port = (bit<16>)meta.orig_port;
        hdr.bridge.status = meta.status;
        hdr.bridge.mode = meta.mode;
        hdr.bridge.copy_index = meta.copy_index;
        hdr.bridge.phase = meta.phase;
        hdr.bridge.redraws = meta.redraws;
        hdr.bridge.capacity = meta.capacity;
        hdr.bridge.min_size = meta.min_size;
        hdr.bridge.reset_base = meta.reset_base;
    }
}

/* loop_h's fields the service decides are its metadata fields, in the same
 * containers: the verdict itself; the next phase, which is NO_NEXT_PHASE
 * whenever a pass goes round again without MORE_PHASES (a redraw, the next
 * RESET round: tna/arch.p4), so that ingress admits it again. */
@pa_auto_init_metadata
@pa_alias("egress", "hdr.loop.copy_index", "meta.copy_index")
@pa_alias("egress", "hdr.loop.redraws", "meta.redraws")
@pa_alias("egress", "hdr.loop.reset_base", "meta.reset_base")
@pa_alias("egress", "hdr.loop.redraw", "meta.redraw")
@pa_alias("egress", "hdr.loop.verdict", "meta.verdict")
@pa_alias("egress", "hdr.loop.phase", "meta.next_phase")
control ReplayEgress(inout tna_headers_t hdr,
                     inout metadata_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    ReplayService() replay;
    BroadcastRewrite() broadcast;
    PhaseResume() resume;

    /* Admission's decisions and the intrinsic metadata are in meta already:
     * the egress parser copies them (ReplayEgressParser), which takes no
     * stage. */
    apply {
        if (meta.is_request == 1 && eg_intr_md.egress_port != LOOP_PORT) {
            eg_dprsr_md.drop_ctl = 1;   /* a group that is not the controller's */
        } else if (meta.is_request == 1) {
            /* loop_h: the egress parser made it valid and filled in the
             * fields it carries unchanged, the aliases above are the
             * service's decisions, and has_payload is set here (a dropped
             * packet takes it nowhere). */
            resume.apply(hdr.replay, meta);
            replay.apply(hdr.replay, meta);
            if (meta.verdict == EGRESS_DROP) {
                eg_dprsr_md.drop_ctl = 1;
            }
            if (hdr.replay.payload.isValid()) {
                hdr.loop.has_payload = 1;
            } else {
                hdr.loop.has_payload = 0;
            }
        } else if (meta.is_replica == 1) {
            broadcast.apply(hdr.replay, meta);
        }
    }
}

Pipeline(ReplayIngressParser(),
         ReplayIngress(),
         ReplayIngressDeparser(),
         ReplayEgressParser(),
         ReplayEgress(),
         ReplayEgressDeparser()) pipe;

Switch(pipe) main;
