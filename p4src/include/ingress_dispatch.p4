/*
 * ingress_dispatch.p4 -- what ingress does with a packet it admits, on both
 * architectures: the source guard for a host's IPv4 packet (its port, MAC
 * and address must be bound, else dropped), then one of
 *   ARP                        -> ArpResponder
 *   a replay request (UDP to the replay VIP, not a first fragment)
 *                              -> ReplayAdmission (after the architecture's
 *                                 TakeEntry: on TNA an UPDATE_BATCH's next
 *                                 entry comes back through ingress)
 *   other IPv4                 -> Ipv4Forwarding
 *   anything else              -> dropped.
 * The verdict is in meta (dropped, out_port, mcast_grp, is_request); each
 * architecture's ingress (replay.p4, replay_tna.p4) acts on it, and on a
 * request, afterwards. The program instantiates it as `.ReplayIngress`, so
 * that its tables keep the names the controller uses
 * (ReplayIngress.replay_vip, ReplayIngress.source.source_guard, ...).
 */
#ifndef REPLAY_INGRESS_DISPATCH_P4
#define REPLAY_INGRESS_DISPATCH_P4

control IngressDispatch(inout headers_t hdr, inout metadata_t meta) {
    SourceGuard() source;
    ArpResponder() arp;
    Ipv4Forwarding() ipv4;
    TakeEntry() take_entry;
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
        if (hdr.ipv4.isValid() && meta.from_cpu == 0 && meta.recirculated == 0) {
            source.apply(hdr, meta);
        }
        /* A first fragment (MF set) is not replay traffic: its reply could
         * not reach the requester whole. */
        if (meta.dropped == 0 && hdr.udp.isValid() && hdr.udp.dst_port == REPLAY_UDP_PORT
            && (hdr.ipv4.flags & IPV4_FLAG_MF) == 0) {
            replay_vip.apply();
        }
        if (meta.dropped == 1) {
            /* SourceGuard refused it */
        } else if (hdr.arp.isValid()) {
            arp.apply(hdr, meta);
        } else if (meta.is_request == 1) {
            take_entry.apply(hdr, meta);
            replay.apply(hdr, meta);
        } else if (hdr.ipv4.isValid()) {
            ipv4.apply(hdr, meta);
        } else {
            meta.dropped = 1;
        }
    }
}

#endif
