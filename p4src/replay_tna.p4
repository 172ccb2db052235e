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
 *   ingress   as on v1model, IngressDispatch (include/ingress_dispatch.p4):
 *             SourceGuard, ArpResponder, ReplayAdmission (after TakeEntry),
 *             Ipv4Forwarding; a replay request (refusals too) goes to
 *             LOOP_PORT, its decisions in bridge_h. Ingress holds no replay
 *             state.
 *   PRE       SAMPLE n: n copies to LOOP_PORT (rid = reply index); RESET:
 *             RESET_FANOUT copies to LOOP_PORT (the controller's groups).
 *             An UPDATE_BATCH goes to LOOP_PORT whole: its entries follow
 *             each other (include/batch.p4).
 *   egress    on LOOP_PORT: ReplayService; the packet leaves with loop_h.
 *   ingress   loop_h.verdict EGRESS_REPLY: a finished reply, addressed
 *             (ReplyAddress, as v1model's ingress addresses a SAMPLE) and
 *             forwarded to the requester (or the CPU port); else the
 *             request's next pass: a
 *             SAMPLE reply drawn again (every draw overshot), the next RESET
 *             round, an UPDATE_BATCH's next entry, admitted as that UPDATE.
 *             On its way through LOOP_PORT a replay packet carries its
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
#include "include/plan_ops.p4"
#include "tna/arch.p4"
#include "include/headers.p4"
#include "tna/bridge.p4"
#include "include/parser.p4"
#include "tna/parser.p4"
#include "include/forwarding.p4"
#include "tna/insert_limit.p4"
#include "include/insert_limit.p4"
#include "include/replay_admission.p4"
#include "include/batch.p4"
#include "tna/table_state.p4"
#include "tna/sum_tree.p4"
#include "tna/phases.p4"
#include "tna/draw.p4"
#include "tna/slot_store.p4"
#include "include/replay_reply.p4"
#include "tna/loop.p4"
#include "include/ingress_dispatch.p4"
#include "include/replay_service.p4"

@pa_auto_init_metadata
control ReplayIngress(inout tna_headers_t hdr,
                      inout metadata_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* Named as this control, so that its tables keep their names. */
    @name(".ReplayIngress") IngressDispatch() dispatch;
    ReplyAddress() reply_address;
    ReplyLengths() reply_lengths;
    ToLoopLayout() to_loop;

    /* Frames the ingress parser ran out of, per port. Reading parser_err is
     * also what keeps them: a Tofino drops a frame cut short unless ingress
     * reads it, and admission answers it TRUNCATED, as on v1model. */
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) cut_short;

    /* Which way a packet goes through ingress, by what it came with, and each
     * way's first steps, in one table (its actions pick the branch below):
     * a reply finished on LOOP_PORT, addressed here and on to the requester
     * (or the CPU port); the request's next phase (admitted already, back to
     * the state); a controller packet-out with an explicit port, sent there
     * as is; anything else, admitted (a request drawn again, or an
     * UPDATE_BATCH's next entry, comes from LOOP_PORT). */
    action deliver_to_requester() {
        meta.orig_port = hdr.loop.orig_port[8:0];
        meta.out_port = hdr.loop.orig_port[8:0];
    }

    action deliver_to_cpu() {
        meta.orig_port = hdr.loop.orig_port[8:0];
        meta.out_port = CPU_PORT;
    }

    /* The phase's loop layout as ToLoopLayout's: the replay header is valid
     * on every pass back from LOOP_PORT. */
    action next_phase() {
        meta.orig_port = hdr.loop.orig_port[8:0];
        meta.is_request = 1;
        meta.out_port = LOOP_PORT;
        hdr.tail.ethernet = hdr.replay.ethernet;
        hdr.tail.ipv4 = hdr.replay.ipv4;
        hdr.tail.udp = hdr.replay.udp;
        hdr.replay.ethernet.setInvalid();
        hdr.replay.ipv4.setInvalid();
        hdr.replay.udp.setInvalid();
        hdr.replay.packet_out.setInvalid();
    }

    action send_packet_out() {
        meta.orig_port = ig_intr_md.ingress_port;
        meta.out_port = hdr.replay.packet_out.egress_port;
        hdr.replay.packet_out.setInvalid();
    }

    action admit_looped() {
        meta.orig_port = hdr.loop.orig_port[8:0];
    }

    action admit() {
        meta.orig_port = ig_intr_md.ingress_port;
    }

    table ingress_path {
        key = {
            hdr.loop.isValid()               : exact;
            hdr.loop.verdict                 : ternary;
            hdr.loop.phase                   : ternary;
            meta.from_cpu                    : ternary;
            hdr.replay.packet_out.isValid()  : ternary;
            hdr.replay.packet_out.egress_port : ternary;
        }
        actions = {
            deliver_to_requester; deliver_to_cpu; next_phase;
            send_packet_out; admit_looped; admit;
        }
        const entries = {
            (true, EGRESS_REPLY, _, 0, _, _)   : deliver_to_requester();
            (true, EGRESS_REPLY, _, 1, _, _)   : deliver_to_cpu();
            (true, _, 0, _, _, _)              : admit_looped();
            (true, _, _, _, _, _)              : next_phase();
            (false, _, _, _, true, 0)          : admit();
            (false, _, _, _, true, _)          : send_packet_out();
        }
        default_action = admit();
    }

    /* The traffic manager's verdict, and the bridged header's flags it goes
     * with: whether egress sees a copy the PRE made, and whether a payload
     * follows the replay header (an INSERT's or WRITE's, or a record read in
     * an earlier pass: the egress parser reads it by this, not by the op). */
    action drop_packet(bit<1> has_payload) {
        ig_dprsr_md.drop_ctl = 1;
        hdr.bridge.is_replica = 0;
        hdr.bridge.has_payload = has_payload;
    }

    action multicast(bit<1> has_payload) {
        ig_tm_md.mcast_grp_a = meta.mcast_grp;
        hdr.bridge.is_replica = 1;
        hdr.bridge.has_payload = has_payload;
    }

    action to_state(bit<1> has_payload) {
        ig_tm_md.ucast_egress_port = LOOP_PORT;   /* to the replay state */
        hdr.bridge.is_replica = 0;
        hdr.bridge.has_payload = has_payload;
    }

    action unicast(bit<1> has_payload) {
        ig_tm_md.ucast_egress_port = meta.out_port;
        hdr.bridge.is_replica = 0;
        hdr.bridge.has_payload = has_payload;
    }

    table tm_verdict {
        key = {
            meta.dropped                 : ternary;
            meta.mcast_grp               : ternary;
            meta.is_request              : ternary;
            hdr.replay.payload.isValid() : exact;
            hdr.replay.replay.op         : ternary;
        }
        actions = { drop_packet; multicast; to_state; unicast; }
        const entries = {
            (1, _, _, true, _)                 : drop_packet(1);
            (1, _, _, false, _)                : drop_packet(0);
            (0, _, 1, false, OP_UPDATE_BATCH)  : to_state(0);   /* whole: include/batch.p4 */
            (0, 0, 1, true, _)                 : to_state(1);
            (0, 0, 1, false, _)                : to_state(0);
            (0, 0, 0, true, _)                 : unicast(1);
            (0, 0, 0, false, _)                : unicast(0);
            (0, _, _, true, _)                 : multicast(1);
            (0, _, _, false, _)                : multicast(0);
        }
        default_action = unicast(0);   /* never taken */
    }

    /* The intrinsic metadata, and loop_h's fields, are in meta already: the
     * ingress parser copies them (ReplayIngressParser), which takes no stage. */
    apply {
        if (ig_prsr_md.parser_err != 0) {
            cut_short.count(ig_intr_md.ingress_port);
        }
        switch (ingress_path.apply().action_run) {
            deliver_to_requester:
            deliver_to_cpu: {
                reply_address.apply(hdr.replay, meta, meta.out_port);
                reply_lengths.apply(hdr.replay, meta);
            }
            admit_looped:
            admit: {
                dispatch.apply(hdr.replay, meta);
                if (meta.is_request == 1) {
                    to_loop.apply(hdr, meta);
                }
            }
        }

        /* Admission's decisions, for egress, and the shared controls' verdict
         * in TNA's terms (the bridge's fields first: the verdict's table then
         * shares their stage). */
        hdr.loop.setInvalid();
        hdr.bridge.setValid();
        hdr.bridge.is_request = meta.is_request;
        hdr.bridge.from_cpu = meta.from_cpu;
        hdr.bridge.has_priority = meta.has_priority;
        hdr.bridge.has_entries = meta.has_entries;
        hdr.bridge.batch_applied = meta.batch_applied;
        hdr.bridge.batch_stale = meta.batch_stale;
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
        tm_verdict.apply();
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
@pa_alias("egress", "hdr.loop.has_payload", "meta.has_payload")
@pa_alias("egress", "hdr.loop.has_entries", "meta.has_entries")
@pa_alias("egress", "hdr.loop.batch_applied", "meta.batch_applied")
@pa_alias("egress", "hdr.loop.batch_stale", "meta.batch_stale")
control ReplayEgress(inout tna_headers_t hdr,
                     inout metadata_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    ReplayService() replay;
    BroadcastRewrite() broadcast;
    PhaseResume() resume;

    /* After the service: the verdict in TNA's terms (loop_h's flags are
     * the service's, LoopFlags). */
    action drop_pass() {
        eg_dprsr_md.drop_ctl = 1;
    }

    table egress_verdict {
        key = { meta.verdict : exact; }
        actions = { drop_pass; NoAction; }
        const entries = {
            EGRESS_DROP : drop_pass();
        }
        default_action = NoAction();
    }

    /* Admission's decisions and the intrinsic metadata are in meta already:
     * the egress parser copies them (ReplayEgressParser), which takes no
     * stage. */
    apply {
        if (meta.is_request == 1 && eg_intr_md.egress_port != LOOP_PORT) {
            eg_dprsr_md.drop_ctl = 1;   /* a group that is not the controller's */
        } else if (meta.is_request == 1) {
            resume.apply(hdr.replay, meta);
            replay.apply(hdr.replay, meta);
            egress_verdict.apply();
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
