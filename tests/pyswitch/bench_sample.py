"""Cost of SAMPLE's egress passes in the Python switch (a measurement, not a test):

    .venv/bin/python -m tests.pyswitch.bench_sample [--rounds R] [--budget S]

replay.p4 with 4096 experiences (priorities 1..7) in table 0; with
``--past-power-of-two`` all of priority 1 but one raised by 2^-16, so the total
is 2^28 + 1 and half of a prioritized copy's draws overshoot it (the worst case
for draw.p4's rejection: the copies whose attempts all overshoot go round
again). SAMPLE n is
replicated by the PRE and every copy runs one egress pass; the figure is
microseconds of switch time per reply (one SAMPLE's time / n), for uniform and
prioritized sampling and n = 1, 32, 128. For comparison: microseconds per
packet to forward a reply-sized IPv4/UDP packet through the same program,
which is what the host replay server's replies cost the switch. Every case is
timed in ``--rounds`` interleaved rounds; the minimum is printed (the machine
is shared, and noise only ever adds time).

For repeatable numbers, count instructions instead (valgrind's callgrind,
instrumentation switched on only around each case; a fixed number of packets):

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python -m tests.pyswitch.bench_sample --callgrind /tmp/cg
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import subprocess
import time
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from agent.contract import protocol
from bmv2.pyswitch import Lpm, Switch
from controller.program import DEFAULT
from controller.replication import sample_groups
from controller.udp_frame import HEADERS_BYTES

REPLAY_JSON = DEFAULT.bmv2_json
P = "ReplayIngress."
ACTOR, VIP, SERVER = "198.18.0.1", "198.18.0.100", "198.18.0.2"
N_EXPERIENCES = 4096


def _ip(s: str) -> int:
    return int(ipaddress.ip_address(s))


def frame(msg: protocol.Message, src: str = ACTOR, dst: str = VIP, sport: int = 40000,
          dport: int = 45000) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:64")
                 / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport)
                 / protocol.encode(msg))


def make_switch(past_power_of_two: bool = False) -> Switch:
    """replay.p4 with table 0 (4096 slots) filled, SAMPLE groups toward port 1;
    ``past_power_of_two``: the total 2^28 + 1 (see above)."""
    sw = Switch.from_json_file(REPLAY_JSON, cpu_port=255, seed=1)
    for src in (ACTOR, SERVER):  # both send from port 1 with the actor's MAC
        sw.table_add(P + "source.source_guard", [1, 0x020000000001, _ip(src)], P + "source.bound")
    sw.table_add(P + "replay_vip", [_ip(VIP)], P + "replay_vip_hit")
    sw.table_add(P + "replay.replay_table_config", [0], P + "replay.configure",
                 (1, N_EXPERIENCES, 1, 255, 2))
    sw.table_add(P + "replay.replay_acl", [_ip(ACTOR), 0], P + "replay.allow", (7,))
    sw.table_add(P + "replay.sample_replication", [1], P + "replay.replicate", (512,))
    for g, r in sample_groups(1, 512).items():
        sw.mc_group_set(g, r)
    sw.table_add(P + "ipv4.ipv4_lpm", [Lpm(_ip(ACTOR), 32)], P + "ipv4.forward", [1])
    for i in range(N_EXPERIENCES):
        priority = 1.0 if past_power_of_two else 1.0 + i % 7
        sw.process(1, frame(protocol.insert(0, protocol.words_to_payload([i]), priority=priority)))
    if past_power_of_two:  # one priority 2^-16 higher: slot 0, stamp 1 (the first INSERT's)
        sw.process(1, frame(protocol.update(0, 0, 1, 1.0 + 2.0**-16)))
        one = protocol.sample(0, 1, mode=protocol.Mode.PRIORITIZED)
        (_port, reply), = sw.process(1, frame(one))
        total = protocol.decode(reply[HEADERS_BYTES:]).total
        assert total == (1 << 28) + 1, f"total {total:#x}, not 2^28 + 1"
    return sw


def cases(sw: Switch) -> list[tuple[str, bytes, int, int]]:
    """(name, frame, outputs expected, replies per injected packet)."""
    out = []
    for mode in (protocol.Mode.UNIFORM, protocol.Mode.PRIORITIZED):
        for n in (1, 32, 128):
            out.append((f"SAMPLE {mode.name.lower():11s} n={n:<3d}",
                        frame(protocol.sample(0, n, mode=mode)), n, n))
    # A host replay server's reply (header + one experience) on its way to the actor.
    reply = protocol.Message(op=protocol.Op.SAMPLE, flags=protocol.Flag.REPLY, count=32,
                             payload=protocol.words_to_payload([1]))
    out.append(("forward a reply packet     ",
                frame(reply, src=SERVER, dst=ACTOR, sport=45000, dport=40000), 1, 1))
    return out


def time_case(sw: Switch, data: bytes, expect: int, budget: float) -> float:
    """Seconds per injected packet, timed over about ``budget`` seconds."""
    out = sw.process(1, data)
    assert len(out) == expect, (len(out), expect)
    reps = 1
    while True:
        t = time.perf_counter()
        for _ in range(reps):
            sw.process(1, data)
        dt = time.perf_counter() - t
        if dt >= budget / 2:
            return dt / reps
        reps = int(reps * min(10.0, budget / max(dt, 1e-6))) + 1


def callgrind_ir(prefix: str, tag: str, run) -> int:
    """Instructions callgrind counts while ``run()`` executes (this process must run
    under ``valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=PREFIX.%p``)."""
    pid = os.getpid()

    def ctl(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ctl("-i", "on")
    run()
    ctl(f"--dump={tag}")
    ctl("-i", "off")
    for name in sorted(Path(prefix).parent.glob(f"{Path(prefix).name}.{pid}.*")):
        text = name.read_text(errors="replace")
        if f"desc: Trigger: dump {tag}\n" in text:
            name.unlink()
            return int(text.split("\ntotals: ", 1)[1].split()[0])
    raise RuntimeError(f"no callgrind dump for {tag} (run this under callgrind)")


def count(sw: Switch, todo: list[tuple[str, bytes, int, int]], prefix: str, reps: int) -> None:
    """Instructions per reply, from callgrind."""
    base = callgrind_ir(prefix, "empty", lambda: None)
    fwd = 0.0
    results = []
    for i, (name, data, expect, per) in enumerate(todo):
        assert len(sw.process(1, data)) == expect
        k = max(1, reps // per)

        def run(data: bytes = data, k: int = k) -> None:
            for _ in range(k):
                sw.process(1, data)

        ir = (callgrind_ir(prefix, f"case{i}", run) - base) / (k * per)
        results.append((name, ir, per))
        if per == 1 and name.startswith("forward"):
            fwd = ir
    for name, ir, per in results:
        note = f"  ({ir / fwd:4.2f} x forwarding)" if per > 1 and fwd else ""
        print(f"{name} {ir / 1e3:8.1f} k instructions per reply{note}")


def main() -> None:
    ap = argparse.ArgumentParser(description="Python switch: cost of SAMPLE's egress passes")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per case per round")
    ap.add_argument("--callgrind", metavar="PREFIX",
                    help="count instructions instead (under callgrind, see above)")
    ap.add_argument("--replies", type=int, default=256,
                    help="replies per case with --callgrind")
    ap.add_argument("--past-power-of-two", action="store_true",
                    help="the table's total 2^28 + 1: half of all draws overshoot")
    args = ap.parse_args()
    sw = make_switch(args.past_power_of_two)
    todo = cases(sw)
    if args.callgrind:
        count(sw, todo, args.callgrind, args.replies)
        return
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, data, expect, per in todo:
            dt = time_case(sw, data, expect, args.budget)
            best[name] = min(best.get(name, float("inf")), dt / per)
    fwd = best[todo[-1][0]]
    for name, _data, _expect, per in todo:
        us = best[name] * 1e6
        note = f"  ({best[name] / fwd:4.2f} x forwarding)" if per > 1 else ""
        print(f"{name} {us:8.1f} us per reply{note}")


if __name__ == "__main__":
    main()
