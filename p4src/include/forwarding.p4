/*
 * forwarding.p4 -- everything that is not replay: IPv4 forwarding, ARP
 * answered by the switch, and the parameter broadcast group.
 *
 * Shared by both architectures: the controls read and write metadata only
 * (meta.in_port, out_port, mcast_grp, dropped, egress_port), which each
 * architecture's top level maps onto its intrinsic metadata.
 */
#ifndef REPLAY_FORWARDING_P4
#define REPLAY_FORWARDING_P4

/* A host's addresses are bound to its switch port: an IPv4 packet whose
 * (port, source MAC, source IPv4) the controller did not install is dropped
 * and counted per port, before any other table sees it, so a host that forges
 * another's address gains nothing (replay ACL, broadcast) and can spoof no one.
 * The CPU port and recirculated passes are exempt. */
control SourceGuard(inout headers_t hdr, inout metadata_t meta) {
    PORT_COUNTER(forged_sources);

    action bound() { }

    action forged() {
        COUNT_PORT(forged_sources, meta.in_port);
        meta.dropped = 1;
    }

    table source_guard {
        key = {
            meta.in_port          : exact @name("ingress_port");
            hdr.ethernet.src_addr : exact;
            hdr.ipv4.src_addr     : exact;
        }
        actions = { bound; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* forged() runs on a miss, but not as the table's default action: its
     * counter index comes from the hash unit, which a Tofino table reaches on
     * a hit only. */
    apply {
        if (!source_guard.apply().hit) {
            forged();
        }
    }
}

/* IPv4 forwarding by table entries the controller installs. Packets are sent
 * untouched (no TTL or MAC rewrite): hosts learn each other's real MACs from
 * the ARP responder. ipv4_lpm also carries the broadcast group address, whose
 * action hands the packet to a multicast group. */
control Ipv4Forwarding(inout headers_t hdr, inout metadata_t meta) {
    action drop() {
        meta.dropped = 1;
    }

    action forward(bit<9> port) {
        meta.out_port = port;
    }

    action broadcast(bit<16> group) {
        meta.mcast_grp = group;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr : lpm; }
        actions = { forward; broadcast; drop; }
        default_action = drop();
        size = 1024;
    }

    PORT_COUNTER(refused_broadcasts);

    action may_broadcast() { }

    action may_not_broadcast() {
        COUNT_PORT(refused_broadcasts, meta.in_port);
        meta.mcast_grp = 0;
        meta.dropped = 1;
    }

    /* Only the Learner's port may send to the weight-broadcast address. */
    table broadcast_senders {
        key = { meta.in_port : exact @name("ingress_port"); }
        actions = { may_broadcast; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        switch (ipv4_lpm.apply().action_run) {
            broadcast: {
                if (!broadcast_senders.apply().hit) {
                    may_not_broadcast();   /* as forged() in SourceGuard */
                }
            }
        }
    }
}

/* Proxy ARP: the switch answers requests for every address in arp_responder
 * (each host and the replay VIP), so no host needs static ARP entries. */
control ArpResponder(inout headers_t hdr, inout metadata_t meta) {
    action drop() {
        meta.dropped = 1;
    }

    action answer(bit<48> mac) {
        hdr.ethernet.dst_addr = hdr.arp.sha;
        hdr.ethernet.src_addr = mac;
        hdr.arp.oper = ARP_OPER_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        bit<32> requester = hdr.arp.spa;
        hdr.arp.spa = hdr.arp.tpa;
        hdr.arp.tpa = requester;
        meta.out_port = meta.in_port;
    }

    table arp_responder {
        key = { hdr.arp.tpa : exact; }
        actions = { answer; drop; }
        default_action = drop();
        size = 1024;
    }

    apply {
        if (hdr.arp.oper == ARP_OPER_REQUEST) {
            arp_responder.apply();
        } else {
            meta.dropped = 1;
        }
    }
}

/* Egress: each copy of a broadcast is readdressed to the host on its port, so
 * actors receive it as ordinary unicast UDP. The UDP checksum covered the old
 * destination, so it is cleared (0 = none, allowed in IPv4). */
control BroadcastRewrite(inout headers_t hdr, inout metadata_t meta) {
    action readdress(bit<48> mac, bit<32> ip) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        meta.ip_rewritten = 1;
        hdr.udp.checksum = 0;
    }

    table broadcast_rewrite {
        key = { meta.egress_port : exact @name("egress_port"); }
        actions = { readdress; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        broadcast_rewrite.apply();
    }
}

#endif
