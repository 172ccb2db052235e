"""What a replicated copy's egress pass costs bmv2, node by node (a measurement,
not a test):

    .venv/bin/python -m tests.dataplane.bench_node_costs [--copies N] [--reps R]

Four tiny v1model programs multicast a request frame into N copies toward
the sender (group 1, rids 0 .. N-1) and forward a frame from a second port
back to it:

    bare        empty egress: the switch's own cost of a copy (the PRE's clone,
                the egress thread's pass, the deparser, the transmit)
    one_action  K dependent 32-bit additions in one egress action, the sum
                written into the frame: K + 2 primitives, one table
    statements  the same as statements, each addition followed by an `if`:
                p4c makes each a table of its own, so about K more tables and
                K conditionals
    record_read the least a uniform SAMPLE reply does: a draw over 2^12 slots and
                one action reading the slot's record (stamp, priority, eight
                64-bit payload pairs, as replay.p4 stores it) into the frame

For each: bmv2's CPU per copy (all its threads, and its busiest: the egress
thread of the port, which bounds a batch) and per forwarded frame, from
/proc schedstat, on a testbed of its own (hosts in namespaces; needs root, p4c-bm2-ss and
simple_switch_grpc built with Thrift); and the Python switch's time per copy
in this process. The differences between rows are what one primitive, and one
table with a conditional, cost: the terms a SAMPLE copy of replay.p4 pays for
every node its egress pass visits; record_read is what no program that answers
a SAMPLE from registers can spend less than (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from agent.orchestration.benchmarks.cpu import thread_cpu_ns
from bmv2.artifacts import find_p4c
from bmv2.launch import SwitchProcess, bmv2_cli
from bmv2.pyswitch import Switch
from bmv2.testbed.netns import Namespace, VethPair, raw_socket, segmentation_offloads_off

K = 30
SLOTS = 4096                 # record_read's slots (a power of two: the draw needs no retry)
PAIRS = 8                    # its 64-bit payload pairs
PREFIX = "p4rnc"
REQUEST_TYPE = b"\x88\x01"   # EtherType low byte = multicast group 1
FORWARD_TYPE = b"\x88\x02"
HOST_MAC, OTHER_MAC = b"\x02" * 6, b"\x04" * 6
PACKET_OUTGOING = 4          # recvfrom's packet type of a frame the host sent itself

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header rec_t { bit<32> stamp; bit<32> priority; %(pairs)s }
struct headers_t { eth_t eth; rec_t rec; }
struct metadata_t { %(fields)s }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (std.ingress_port == 2) { std.egress_spec = 1; }
        else { std.mcast_grp = (bit<16>)hdr.eth.etype[7:0]; }
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    %(actions)s
    apply { %(body)s }
}
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.rec); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def programs(k: int = K) -> dict[str, str]:
    """The four programs' P4 source, by name."""
    fields = " ".join(f"bit<32> a{i};" for i in range(k + 1)) + " bit<32> x; bit<32> slot;"
    pairs = " ".join(f"bit<64> p{i};" for i in range(PAIRS))
    first = "meta.a0 = (bit<32>)hdr.eth.etype;"
    adds = [f"meta.a{i + 1} = meta.a{i} + {i + 1};" for i in range(k)]
    # the sum leaves in the frame, so that no compiler may drop the additions
    last = f"hdr.eth.src[31:0] = meta.a{k};"
    branches = [f"{a} if (meta.a{i + 1} == 7) {{ meta.x = {i}; }}" for i, a in enumerate(adds)]
    arrays = [f"register<bit<32>>({SLOTS}) stamps; register<bit<32>>({SLOTS}) priorities;"]
    arrays += [f"register<bit<64>>({SLOTS}) pair{i};" for i in range(PAIRS)]
    reads = ["stamps.read(hdr.rec.stamp, meta.slot);",
             "priorities.read(hdr.rec.priority, meta.slot);"]
    reads += [f"pair{i}.read(hdr.rec.p{i}, meta.slot);" for i in range(PAIRS)]
    read_record = (f"action read_record() {{ random(meta.slot, 32w0, 32w{SLOTS - 1}); "
                   "hdr.rec.setValid(); " + " ".join(reads) + " }")
    common = {"fields": fields, "pairs": pairs}
    return {
        "bare": TEMPLATE % {**common, "actions": "", "body": ""},
        "one_action": TEMPLATE % {**common,
                                  "actions": ("action adds() { " + first + " ".join(adds)
                                              + last + " }"),
                                  "body": "adds();"},
        "statements": TEMPLATE % {**common, "actions": "",
                                  "body": first + " " + " ".join(branches) + last},
        "record_read": TEMPLATE % {**common,
                                   "actions": " ".join(arrays) + " " + read_record,
                                   "body": "read_record();"},
    }


def compile_program(source: str, out: Path) -> Path:
    """p4c-bm2-ss `source` into out/<name>.json."""
    p4 = out.with_suffix(".p4")
    p4.write_text(source)
    json_path = out.with_suffix(".json")
    subprocess.run([str(find_p4c()), "--std", "p4-16", "--arch", "v1model",
                    "-o", str(json_path), str(p4)], check=True, capture_output=True)
    return json_path


def frames() -> tuple[bytes, bytes]:
    """The request (from port 1, replicated) and the frame forwarded from port 2."""
    pad = b"x" * 100
    return (HOST_MAC + OTHER_MAC + REQUEST_TYPE + pad,
            HOST_MAC + b"\x06" * 6 + FORWARD_TYPE + pad)


def python_switch_us(json_path: Path, copies: int, reps: int) -> tuple[float, float]:
    """The Python switch's µs per copy and per forwarded frame, in this process."""
    sw = Switch.from_json_file(json_path)
    sw.mc_group_set(1, [(1, rid) for rid in range(copies)])
    request, forward = frames()
    assert len(sw.process(1, request)) == copies
    out = []
    for port, data, per in ((1, request, copies), (2, forward, 1)):
        n = reps * copies // per
        start = time.perf_counter()
        for _ in range(n):
            sw.process(port, data)
        out.append((time.perf_counter() - start) / (n * per) * 1e6)
    return out[0], out[1]


class Testbed:
    """Hosts h1 and h2 in namespaces of their own, on ports 1 and 2 of a bmv2 in this
    namespace whose multicast group 1 holds `copies` replicas toward port 1."""

    def __init__(self, copies: int) -> None:
        self.copies = copies
        self.spaces = [Namespace(f"{PREFIX}{n}") for n in ("h1", "h2")]
        self.pairs: list[VethPair] = []
        self.switch: SwitchProcess | None = None
        self.h1: socket.socket | None = None
        self.h2: socket.socket | None = None

    def __enter__(self) -> Testbed:
        try:
            self._build()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _build(self) -> None:
        h1, h2 = (ns.create() for ns in self.spaces)
        for i, host in ((1, h1), (2, h2)):
            self.pairs.append(VethPair(f"{PREFIX}s{i}", f"{PREFIX}h{i}", None, host.name).create())
            segmentation_offloads_off(f"{PREFIX}s{i}")
        self.switch = SwitchProcess("bmv2", {1: f"{PREFIX}s1", 2: f"{PREFIX}s2"}).start()
        if self.switch.thrift_port is None:
            raise SystemExit("this simple_switch_grpc has no Thrift server (configure it "
                             "--with-thrift, README)")
        script = ["mc_mgrp_create 1"]
        for rid in range(self.copies):
            script += [f"mc_node_create {rid} 1", f"mc_node_associate 1 {rid}"]
        bmv2_cli(self.switch.thrift_port, "\n".join(script) + "\n")
        self.h1 = raw_socket(f"{PREFIX}h1", h1.name)
        self.h1.settimeout(2.0)
        self.h2 = raw_socket(f"{PREFIX}h2", h2.name)

    def __exit__(self, *exc: object) -> None:
        for sock in (self.h1, self.h2):
            if sock is not None:
                sock.close()
        if self.switch is not None:
            self.switch.stop()
        for pair in self.pairs:
            pair.delete()
        for ns in self.spaces:
            ns.delete()   # nothing but this process's sockets used them

    def load(self, json_path: Path) -> None:
        """Swap in the program."""
        assert self.switch is not None and self.switch.thrift_port is not None
        bmv2_cli(self.switch.thrift_port, f"load_new_config_file {json_path}\nswap_configs\n")

    def measure(self, reps: int) -> dict[str, float]:
        """bmv2's CPU µs per copy and per forwarded frame (all threads, busiest)."""
        assert self.switch is not None and self.switch.proc is not None
        assert self.h1 is not None and self.h2 is not None
        request, forward = frames()
        copies = self.copies
        pid = self.switch.proc.pid
        out: dict[str, float] = {}
        for kind in ("copy", "forward"):
            before = thread_cpu_ns(pid)
            for _ in range(reps):
                if kind == "copy":
                    self.h1.send(request)
                else:
                    for _ in range(copies):
                        self.h2.send(forward)
                self._receive(copies)
            after = thread_cpu_ns(pid)
            spent = [ns - before.get(tid, 0) for tid, ns in after.items()]
            out[f"{kind}_all"] = sum(spent) / 1e3 / (reps * copies)
            out[f"{kind}_busiest"] = max(spent) / 1e3 / (reps * copies)
        return out

    def _receive(self, n: int) -> None:
        """n frames the switch sent to h1 (not h1's own), or a timeout error."""
        assert self.h1 is not None
        got = 0
        while got < n:
            _data, address = self.h1.recvfrom(2048)
            if address[2] != PACKET_OUTGOING:
                got += 1


def main() -> None:
    ap = argparse.ArgumentParser(description="bmv2 and the Python switch: cost per copy")
    ap.add_argument("--copies", type=int, default=128, help="replicas per request")
    ap.add_argument("--reps", type=int, default=200, help="requests per program")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Testbed(args.copies) as bed:
        for name, source in programs().items():
            json_path = compile_program(source, Path(tmp) / name)
            bed.load(json_path)
            bed.measure(max(1, args.reps // 10))   # warm up
            figs = bed.measure(args.reps)
            py_copy, py_fwd = python_switch_us(json_path, args.copies, args.reps)
            rows.append((name, figs, py_copy, py_fwd))
    print(f"µs per copy of a {args.copies}-copy multicast, and per forwarded frame "
          f"(K = {K}):")
    print(f"{'program':12s} {'bmv2 copy all':>14s} {'busiest':>8s} {'bmv2 fwd all':>13s} "
          f"{'busiest':>8s} {'Python copy':>12s} {'Python fwd':>11s}")
    for name, f, py_copy, py_fwd in rows:
        print(f"{name:12s} {f['copy_all']:14.1f} {f['copy_busiest']:8.1f} "
              f"{f['forward_all']:13.1f} {f['forward_busiest']:8.1f} {py_copy:12.2f} "
              f"{py_fwd:11.2f}")


if __name__ == "__main__":
    main()
