"""The conformance corpus: per test program, control-plane setup and input packets.

``record_traces.py`` runs each case on real bmv2 (simple_switch) and stores what
came out in ``traces/<program>.json``; ``test_traces.py`` replays the traces on
the Python switch. Setup operations are JSON-able dicts:

  {"op": "table_add", "table", "matches", "action", "params", "priority"}
      matches: ["exact", v] | ["lpm", v, plen] | ["ternary", v, mask] |
               ["range", lo, hi] | ["optional", v] | null; priority: P4Runtime
               convention (higher wins) or null
  {"op": "table_set_default", "table", "action", "params"}
  {"op": "mc_group_set", "group", "replicas": [[port, rid], ...]}
  {"op": "clone_session_set", "session", "port" | "mc_group"}
  {"op": "register_write", "name", "index", "value"}
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from bmv2.pyswitch import Exact, Lpm, Match, Optional_, Range, Switch, Ternary
from controller.program import DEFAULT

from .util import PROGRAMS

REPLAY_JSON = DEFAULT.bmv2_json


@dataclass
class Case:
    """One input packet."""

    name: str
    port: int
    data: bytes


@dataclass
class Corpus:
    """Setup and cases of one program (``json_path``: its bmv2 JSON)."""

    program: str
    setup: list[dict[str, Any]] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    json_path: Path | None = None

    @property
    def path(self) -> Path:
        """The bmv2 JSON the corpus runs on."""
        return self.json_path or PROGRAMS / f"{self.program}.json"


def to_match(m: list[Any] | None) -> Match:
    """A setup match as a pyswitch match object."""
    if m is None:
        return None
    kind, *args = m
    return {"exact": Exact, "lpm": Lpm, "ternary": Ternary, "range": Range,
            "optional": Optional_}[kind](*args)


def apply_setup(sw: Switch, setup: list[dict[str, Any]]) -> None:
    """Run setup operations against the Python switch."""
    for op in setup:
        kind = op["op"]
        if kind == "table_add":
            sw.table_add(op["table"], [to_match(m) for m in op["matches"]], op["action"],
                         op["params"], op.get("priority"))
        elif kind == "table_set_default":
            sw.table_set_default(op["table"], op["action"], op["params"])
        elif kind == "mc_group_set":
            sw.mc_group_set(op["group"], [tuple(r) for r in op["replicas"]])
        elif kind == "clone_session_set":
            sw.clone_session_set(op["session"], port=op.get("port"), mc_group=op.get("mc_group"))
        elif kind == "register_write":
            sw.register_write(op["name"], op["index"], op["value"])
        else:
            raise ValueError(f"unknown setup op {kind!r}")


def _add(table: str, matches: list[Any], action: str, params: list[int],
         priority: int | None = None) -> dict[str, Any]:
    return {"op": "table_add", "table": table, "matches": matches, "action": action,
            "params": params, "priority": priority}


def _eth(ether_type: int) -> bytes:
    return bytes.fromhex("020000000001020000000002") + struct.pack("!H", ether_type)


def _udp(dst: str, **ip: Any) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
                 / IP(src="198.18.0.1", dst=dst, **ip) / UDP(sport=1234, dport=5678)
                 / (b"0123456789" * 3))


def _arp() -> bytes:
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:02")
                 / ARP(hwsrc="02:00:00:00:00:02", hwdst="00:00:00:00:00:00",
                       psrc="198.18.0.1", pdst="198.18.0.2"))


def basic_fwd() -> Corpus:
    c = Corpus("basic_fwd", [
        _add("I.ipv4_lpm", [["lpm", 0xC6120000, 16]], "I.forward", [2]),
        _add("I.ipv4_lpm", [["lpm", 0xC6120100, 24]], "I.forward", [3]),
        _add("I.ipv4_lpm", [["lpm", 0xC6120102, 32]], "I.forward", [4]),
    ])
    for name, dst in [("host32", "198.18.1.2"), ("net24", "198.18.1.9"),
                      ("net16", "198.18.7.7"), ("miss", "198.19.0.1")]:
        c.cases.append(Case(name, 1, _udp(dst)))
    pkt = _udp("198.18.1.2")
    c.cases += [Case("arp_dropped", 1, _arp()),
                Case("truncated_ipv4", 1, pkt[:20]), Case("empty", 1, b"")]
    return c


def parser_features() -> Corpus:
    def mpls(label: int, bos: int) -> bytes:
        return struct.pack("!I", label << 12 | bos << 8 | 64)

    c = Corpus("parser_features")
    c.cases = [
        Case("default", 0, _eth(0x9000) + b"\x45payload"),
        Case("tag_inner", 0, _eth(0x88AB) + b"\x1f\x05\x4a\x99rest"),
        Case("tag_opt", 0, _eth(0x8801) + b"\x2c\x05\x01\x02rest"),
        Case("tag_default", 0, _eth(0x8801) + b"\x27\x05\x01\x02rest"),
        Case("bad_tag", 0, _eth(0x8800) + b"\x10\xffrest"),
        Case("mpls2_inner", 0, _eth(0x8847) + mpls(100, 0) + mpls(200, 1) + b"\x45\x66xyz"),
        Case("mpls1", 0, _eth(0x8847) + mpls(7, 1) + b"\x60\x01zz"),
        Case("mpls_overflow", 0, _eth(0x8847) + b"".join(mpls(i, 0) for i in range(4)) + b"z"),
        Case("advance", 0, _eth(0x0123) + b"\xde\xad\x01\x02tail"),
        Case("short_eth", 0, _eth(0x8800)[:9]),
        Case("short_tag", 0, _eth(0x8800) + b"\x10"),
        Case("short_lookahead", 0, _eth(0x8847) + mpls(5, 1) + b"\x45"),
    ]
    return c


def match_kinds() -> Corpus:
    t = "I."
    c = Corpus("match_kinds", [
        _add(t + "t_exact", [["exact", 7], ["exact", 0xABC]], t + "set_exact", [42]),
        _add(t + "t_lpm", [["lpm", 0x0A000000, 8]], t + "set_lpm", [8]),
        _add(t + "t_lpm", [["lpm", 0x0A0B0C00, 24]], t + "set_lpm", [24]),
        _add(t + "t_lpm2", [["exact", 1], ["lpm", 0x0A000000, 8]], t + "set_lpm2", [1]),
        _add(t + "t_lpm2", [["exact", 2], ["lpm", 0x0A000000, 16]], t + "set_lpm2", [2]),
        _add(t + "t_tern", [["ternary", 0x1200, 0xFF00], ["exact", 1]], t + "set_tern", [1], 10),
        _add(t + "t_tern", [["ternary", 0x1234, 0xFFFF], ["exact", 1]], t + "set_tern", [2], 20),
        _add(t + "t_tern", [None, ["exact", 1]], t + "set_tern", [3], 1),
        _add(t + "t_range", [["range", 10, 20], None], t + "set_range", [1], 1),
        _add(t + "t_range", [["range", 15, 15], ["ternary", 0x80, 0x80]], t + "set_range",
             [2], 2),
        _add(t + "t_opt", [["optional", 4], None], t + "set_opt", [1], 1),
        _add(t + "t_opt", [["optional", 4], ["optional", 9]], t + "set_opt", [2], 2),
        _add(t + "t_masked", [["exact", 0x0230]], t + "set_masked", [9]),
        _add(t + "t_hm", [["exact", 1]], t + "nop", []),
        _add(t + "t_sw", [["exact", 1]], t + "act_a", []),
        _add(t + "t_sw", [["exact", 2]], t + "act_b", [7]),
        _add(t + "t_sw", [["exact", 3]], t + "nop", []),
        {"op": "table_set_default", "table": t + "t_lpm2", "action": t + "set_lpm2",
         "params": [0x55]},
    ])
    rng = random.Random(5)
    head = bytes.fromhex("020000000001020000000002") + b"\x12\x34"
    values = [(7, 0x1234, 0x0A0B0C0D, 15, 0xABC), (1, 0x12FF, 0x0A000001, 10, 0),
              (2, 0x00FF, 0x0A010001, 7, 1), (4, 0xF23F, 0, 20, 2), (0x81, 0x5555, 0, 15, 3)]
    values += [(rng.choice((1, 2, 4, 7, 0x81, 0)), rng.randrange(1 << 16),
                rng.choice((0x0A0B0C01, 0x0A000009, rng.randrange(1 << 32))),
                rng.randrange(25), rng.randrange(1 << 12)) for _ in range(25)]
    for i, (a, b, cc, d, e) in enumerate(values):
        c.cases.append(Case(f"v{i}", 0, head + struct.pack("!BHIBH", a, b, cc, d, e << 4)))
    return c


def arith() -> Corpus:
    c = Corpus("arith")
    rng = random.Random(3)
    edges = [(0, 0, 0, 0, 0, 0, 0), (255, 255, -128, -128, 0xFFFF, 0xFFFFFFFF, 255),
             (255, 1, 127, 1, 1001, 1, 15), (1, 255, -1, 127, 1000, 0, 16),
             (128, 128, -128, 127, 0x8001, 0x12345678, 3)]
    edges += [(rng.randrange(256), rng.randrange(256), rng.randrange(-128, 128),
               rng.randrange(-128, 128), rng.randrange(1 << 16), rng.randrange(1 << 32),
               rng.randrange(256)) for _ in range(30)]
    for i, v in enumerate(edges):
        c.cases.append(Case(f"v{i}", 0, struct.pack("!BBbbHIB", *v) + b"tail"))
    return c


def checksum() -> Corpus:
    good = _udp("198.18.1.2", ttl=64)
    bad = bytearray(good)
    bad[24] ^= 0xFF
    return Corpus("checksum", cases=[
        Case("good", 0, good), Case("bad_ipv4_checksum", 0, bytes(bad)),
        Case("other_dst", 0, _udp("198.19.200.1", ttl=9, tos=0x10)),
        Case("arp", 0, _arp()),
    ])


def v1model_flow() -> Corpus:
    c = Corpus("v1model_flow", [
        {"op": "clone_session_set", "session": 5, "port": 3},
        {"op": "clone_session_set", "session": 6, "port": 4},
        {"op": "mc_group_set", "group": 7, "replicas": [[2, 100], [3, 200], [2, 50]]},
        {"op": "clone_session_set", "session": 8, "mc_group": 7},
        {"op": "register_write", "name": "I.store", "index": 3, "value": 0xCAFE},
    ])
    for cmd in (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13):
        data = struct.pack("!BBBIIB", cmd, 2, 3, 0xDEADBEEF, 0, 0) + b"payload"
        c.cases.append(Case(f"cmd{cmd}", 9, data))
    c.cases.append(Case("no_ctl", 9, b"\x01\x02"))
    return c


def unions_varbit() -> Corpus:
    elems = "AA11 BB2222 AA33 0002C1C2 FFFF"
    cases = [Case(f"op{op}", 0, bytes.fromhex(f"0{op}" + elems.replace(" ", "")))
             for op in range(7)]
    for name, data in [("no_elems", "06 FF"), ("one_elem", "06 BB0102 EE"),
                       ("empty_varbit", "03 AA11 0000 EE"), ("set_valid_b", "04 AA11 AA22 EE"),
                       ("pop_one_of_one", "01 BB0102 EE"), ("push_two", "02 AA11 BB0102 EE"),
                       ("stack_full", "00 AA01 AA02 AA03 AA04"),
                       ("varbit_4_bytes", "00 0004 01020304"),
                       ("varbit_too_long", "00 0005 0102030405"), ("varbit_short", "00 0003 0102")]:
        cases.append(Case(name, 0, bytes.fromhex(data.replace(" ", ""))))
    return Corpus("unions_varbit", cases=cases)


def _replay_request(op: int, flags: int = 0, table: int = 0, count: int = 0,
                    src: str = "198.18.0.1", version: int = 1, payload: bytes = b"",
                    cut: int | None = None) -> bytes:
    body = struct.pack("!8B5IQ", version, op, flags, 0, table, count, 0, 0, 0x01020304, 0, 0,
                       3 << 16, 0, 0) + payload
    frame = bytes(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
                  / IP(src=src, dst="198.18.255.254") / UDP(sport=5000, dport=45000) / body)
    return frame if cut is None else frame[:cut]


def replicate_egress() -> Corpus:
    """Multicast toward one port, per-copy register updates in egress by egress_rid,
    drops in egress and recirculation from egress (what replay.p4's SAMPLE uses)."""
    c = Corpus("replicate_egress", [
        {"op": "mc_group_set", "group": 1, "replicas": [[2, 0], [2, 1], [2, 2], [2, 3]]},
        {"op": "mc_group_set", "group": 2, "replicas": [[2, 0], [3, 1], [3, 5]]},
        {"op": "register_write", "name": "E.cells", "index": 0, "value": 100},
    ])
    # (cmd 3 updates one cell from every copy: only with one port, whose copies
    # bmv2 runs in order on one egress thread; across ports the order is not fixed)
    for cmd, group in ((0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (0, 9)):
        data = struct.pack("!BHI", cmd, group, 7) + b"payload"
        c.cases.append(Case(f"cmd{cmd}_group{group}", 1, data))
    c.cases.append(Case("no_ctl", 1, b"\x01"))
    return c


def _replay_request(op: int, flags: int = 0, table: int = 0, count: int = 0,
                    src: str = "198.18.0.1", version: int = 2, payload: bytes = b"",
                    cut: int | None = None, slot: int = 0, stamp: int = 0,
                    priority: int = 3 << 16) -> bytes:
    body = struct.pack("!8B5IQ", version, op, flags, 0, table, count, 0, 0, 0x01020304, slot,
                       stamp, priority, 0, 0) + payload
    frame = bytes(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
                  / IP(src=src, dst="198.18.255.254") / UDP(sport=5000, dport=45000) / body)
    return frame if cut is None else frame[:cut]


def _entries(*entries: tuple[int, int, int]) -> bytes:
    """An UPDATE_BATCH's (slot, stamp, priority) entries as the wire carries them."""
    return b"".join(struct.pack("!3I", *e) for e in entries)


def _one_experience(table: int, priority: int) -> list[dict[str, Any]]:
    """Register writes that leave `table` holding one experience in slot 0 (stamp 1):
    every SAMPLE draw then lands on it, so the replies are deterministic."""
    e = "ReplayEgress.replay."
    slot = table << 12
    ops = [(e + "ring.ring_ptr", table, 1), (e + "ring.ring_count", table, 1),
           (e + "ring.insert_seq", table, 1), (e + "max_priority.max_priority", table, priority),
           (e + "guard.slot_stamp", slot, 1), (e + "tree.slot_priority", slot, priority),
           (e + "tree.tree_root_lo", table, priority), (e + "tree.tree_leaf", slot, priority),
           (e + "store.slot_record_stamp", slot, 1)]
    ops += [(e + f"tree.tree_l{level}_lo", table << level, priority) for level in range(1, 12)]
    ops += [(e + f"store.payload_p{i}", slot, 0x01010101 * ((2 * i + 1) << 32 | 2 * i + 2))
            for i in range(8)]
    return [{"op": "register_write", "name": n, "index": i, "value": v} for n, i, v in ops]


def replay() -> Corpus:
    """The project's replay.p4: deterministic cases, including replicated SAMPLEs."""
    r = "ReplayIngress."
    vip, mac = 0xC612FFFE, 0x0200000000FE
    c = Corpus("replay", [
        _add(r + "replay_vip", [["exact", vip]], r + "replay_vip_hit", []),
        *(_add(r + "source.source_guard", [["exact", port], ["exact", src_mac], ["exact", src]],
               r + "source.bound", [])
          for port, src_mac, src in ((1, 0x020000000001, 0xC6120001),
                                     (1, 0x020000000001, 0xC6120009),
                                     (1, 0x020000000002, 0xC6120001),
                                     (3, 0x020000000002, 0xC6120001))),
        _add(r + "ipv4.broadcast_senders", [["exact", 1]], r + "ipv4.may_broadcast", []),
        _add(r + "arp.arp_responder", [["exact", vip]], r + "arp.answer", [mac]),
        _add(r + "replay.replay_table_config", [["exact", 0]], r + "replay.configure",
             [1, 4096, 1, 32, 1]),
        _add(r + "replay.replay_table_config", [["exact", 1]], r + "replay.configure",
             [0, 4096, 1, 32, 1]),
        _add(r + "replay.replay_table_config", [["exact", 2]], r + "replay.configure",
             [1, 4096, 1, 32, 2]),
        _add(r + "replay.replay_acl", [["exact", 0xC6120001], ["exact", 0]], r + "replay.allow",
             [7]),
        _add(r + "replay.replay_acl", [["exact", 0xC6120001], ["exact", 2]], r + "replay.allow",
             [7]),
        # table 3: a ring of 1 slot that nobody wrote (stamp 0): every draw finds slot 0,
        # draws again EMPTY_SLOT_REDRAWS times (recirculating) and says NOT_READY
        _add(r + "replay.replay_table_config", [["exact", 3]], r + "replay.configure",
             [1, 4096, 1, 32, 1]),
        _add(r + "replay.replay_acl", [["exact", 0xC6120001], ["exact", 3]], r + "replay.allow",
             [7]),
        {"op": "register_write", "name": "ReplayEgress.replay.ring.ring_count", "index": 3,
         "value": 1},
        _add(r + "replay.sample_replication", [["exact", 1]], r + "replay.replicate", [256]),
        # INSERT limits: table 0 one per window, its cell last counted in window 0xFFFF
        # (no switch has run 19 hours here, so the count restarts); table 2 none at all
        _add(r + "replay.limiter.insert_limit", [["exact", 0], ["exact", 0xC6120001]],
             r + "replay.limiter.limit", [5, 1]),
        _add(r + "replay.limiter.insert_limit", [["exact", 2], ["exact", 0xC6120001]],
             r + "replay.limiter.limit", [6, 0]),
        {"op": "register_write", "name": r + "replay.limiter.insert_window", "index": 5,
         "value": 0xFFFF0001},
        _add(r + "ipv4.ipv4_lpm", [["lpm", 0xC6120100, 24]], r + "ipv4.forward", [3]),
        _add(r + "ipv4.ipv4_lpm", [["lpm", 0xC612FEFF, 32]], r + "ipv4.broadcast", [1]),
        {"op": "mc_group_set", "group": 1, "replicas": [[2, 0], [3, 0]]},
        *({"op": "mc_group_set", "group": 256 + c, "replicas": [[1, i] for i in range(c)]}
          for c in (1, 2, 4)),
        {"op": "mc_group_set", "group": 255, "replicas": [[255, i] for i in range(64)]},
        _add("ReplayEgress.broadcast.broadcast_rewrite", [["exact", 2]],
             "ReplayEgress.broadcast.readdress", [0x020000000002, 0xC6120002]),
        # a power-of-two total: no draw can overshoot, so no reply is drawn again in
        # another pass, which would reorder the replies by chance
        *_one_experience(2, 2 << 16),
    ], json_path=REPLAY_JSON)
    arp = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01")
                / ARP(op=1, hwsrc="02:00:00:00:00:01", hwdst="00:00:00:00:00:00",
                      psrc="198.18.0.1", pdst="198.18.255.254"))
    cpu = b"\x00\x00"  # packet_out: egress_port 0 = run the pipeline
    payload = bytes(range(64))
    c.cases = [
        Case("arp_vip", 1, arp),
        Case("arp_other", 1, _arp()),
        Case("ipv4_forward", 1, _udp("198.18.1.2")),
        Case("ipv4_miss", 1, _udp("198.19.1.2")),
        Case("broadcast", 1, _udp("198.18.254.255")),
        Case("broadcast_not_a_sender", 3, _udp("198.18.254.255")),
        Case("forged_source", 1, _replay_request(1, 0x02, src="198.18.0.7", payload=payload)),
        Case("forged_port", 2, _udp("198.18.1.2")),
        Case("insert_ack", 1, _replay_request(1, 0x02 | 0x04, payload=payload)),
        Case("insert_noack", 1, _replay_request(1, 0x04, payload=payload)),
        Case("insert_denied", 1, _replay_request(1, 0x02, src="198.18.0.9", payload=payload)),
        Case("insert_disabled", 1, _replay_request(1, 0x02, table=1, payload=payload)),
        Case("insert_no_payload", 1, _replay_request(1, 0x02)),
        Case("insert_rate_limited", 1, _replay_request(1, 0x02, table=2, payload=payload)),
        Case("insert_noack_rate_limited", 1, _replay_request(1, 0x04, table=2, payload=payload)),
        Case("cpu_insert_not_limited", 255, cpu + _replay_request(1, 0x02, table=2,
                                                                  payload=payload)),
        Case("bad_version", 1, _replay_request(2, version=1)),
        Case("unknown_op", 1, _replay_request(10)),
        Case("unknown_table", 1, _replay_request(2, table=9, count=1)),
        Case("truncated_header", 1, _replay_request(2, count=1, cut=42 + 10)),
        Case("sample_empty", 1, _replay_request(2, 0x10, count=2)),
        Case("sample_too_many", 1, _replay_request(2, 0x10, count=33)),
        Case("sample_missing_group", 1, _replay_request(2, 0x10, table=2, count=7)),
        Case("sample_uniform_4", 1, _replay_request(2, 0x10, table=2, count=4)),
        Case("sample_prioritized_3", 1, _replay_request(2, 0x20, table=2, count=3)),
        Case("sample_not_ready", 1, _replay_request(2, 0x10, table=3, count=2)),
        Case("update_ack", 1, _replay_request(3, 0x02, table=2, stamp=1, priority=5 << 16)),
        Case("update_stale", 1, _replay_request(3, 0x02, table=2, stamp=9)),
        # UPDATE_BATCH: slot 0 with its stamp (applied), a stale stamp, a slot past
        # the capacity, in the copies of group 256 + 4 (the fourth dropped)
        Case("update_batch_ack", 1, _replay_request(9, 0x02, table=2, count=3, payload=_entries(
            (0, 1, 6 << 16), (0, 9, 1 << 16), (5000, 1, 1 << 16)))),
        Case("update_batch_noack", 1, _replay_request(9, 0, table=2, count=2, payload=_entries(
            (0, 1, 7 << 16), (0, 2, 1 << 16)))),
        Case("update_batch_too_large", 1, _replay_request(9, 0x02, table=2, count=17,
                                                          payload=_entries(*[(0, 1, 1)] * 17))),
        Case("update_batch_cut_short", 1, _replay_request(9, 0x02, table=2, count=2,
                                                          payload=_entries((0, 1, 1)))),
        Case("read_not_cpu", 1, _replay_request(4)),
        Case("cpu_read", 255, cpu + _replay_request(4, table=2)),
        Case("cpu_get_state", 255, cpu + _replay_request(7, table=2)),
        Case("cpu_write", 255, cpu + _replay_request(5, payload=payload)),
        Case("cpu_reset_64_rounds", 255, cpu + _replay_request(6, table=2)),
        Case("cpu_packet_out_port2", 255, b"\x01\x00" + _udp("198.18.9.9")),
    ]
    return c


CORPORA = {c.program: c for c in (basic_fwd(), parser_features(), match_kinds(), arith(),
                                   checksum(), v1model_flow(), replicate_egress(), unions_varbit(),
                                   replay())}
