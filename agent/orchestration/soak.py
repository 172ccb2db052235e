"""Soak and fuzz (`make soak`): every Actor inserts, samples and updates at full
rate while a host without rights sends random and mutated datagrams, on each
switch; then a snapshot proves that no stored slot changed except by the
valid requests the soak made.

    python -m agent.orchestration.soak --switch all --seconds 600 --fuzz 100000 --forged 10000

Per switch (the --seconds are shared out between the switches):
  1. the namespace testbed with the config's actors and learner and one more
     host, `intruder`, that the ACL does not name; table 0 is soaked, table 1
     is a witness nobody may write during the soak;
  2. the learner fills both tables with experiences signed with a key made for
     this run (HMAC-SHA256 of the payload's first 56 bytes in its last 8), at
     priorities k/64 (k = 1..255); a snapshot of both tables is taken;
  3. every actor process loops until the deadline: INSERT a batch (ACK), SAMPLE
     a batch and check every reply (signature, priority k/64), UPDATE the
     sampled slots (ACK) to new priorities k/64; the intruder sends --fuzz
     datagrams (random bytes, mutated requests, valid requests of every op)
     to the replay service, paced over the run, and counts its replies; from
     the intruder's port, --forged requests (INSERT, SAMPLE, UPDATE of both
     tables, paced likewise) carry the learner's or an actor's IPv4 address
     (and half of them its MAC too): the switch must serve none (a reply to one
     would come back out of the intruder's port) and counts them as forged;
  4. the switch's memory (RSS) is sampled throughout; after the deadline a
     second snapshot is compared with the first: a slot may only have kept its
     experience (same stamp and payload; in table 0 a priority k/64) or hold a
     new one the soak signed, from an actor, numbered below what that actor sent.

Errors (target 0): a valid request refused, a sampled or stored slot the soak
did not write, any OK answer to the intruder, any answer to a forged request,
the switch process gone, a failure of the controller. Timeouts of UDP requests
are counted apart (lost packets under full load, not wrong answers), and so are
SAMPLE replies NOT_READY (a draw that found a slot an INSERT had claimed and not
yet written: a missing sample the client asks again for, not data). Exit
code: 0 no errors, 1 errors, 2 bad usage or environment. A JSON report goes
to --json.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import multiprocessing as mp
import os
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.contract import protocol
from agent.contract.cli_args import RUNS, ArgumentParser, int_range, positive_float
from agent.contract.protocol import REPLAY_UDP_PORT, Message, Op, ProtocolError, Status
from agent.replay.client import ReplayRefused, ReplayTimeout, RetryPolicy, make_client
from agent.rl.hparams import MAX_ACTORS
from agent.rl.namespace import enter
from bmv2.launch import SWITCH_KINDS, find_bmv2, resolve_kind
from bmv2.testbed.netns import have_netns, inside, raw_socket
from bmv2.testbed.netns_bed import Testbed
from controller import config as cfgmod
from controller import snapshot, udp_frame
from controller.config import DEFAULT_CONFIG, AclRule, Config, Host, ReplayTable
from controller.inband import InbandChannel
from controller.stats import OTHER_TABLE, read_guard_drops, read_stats

SOAK_TABLE, WITNESS_TABLE = 0, 1
MAGIC = 0x50345253                     # "P4RS": a soak payload
PRIORITY_STEP = 1 << 10                # priorities k/64 in Q16.16
BATCH = 32
PREFILL = (1500, 600)                  # experiences in the soak and witness tables first
INTRUDER = Host("intruder", "198.18.2.1", "02:00:00:00:02:01", 20, "host")
MAX_EXAMPLES = 10                      # error messages kept per process
FORGED_SPORT = 31999                   # forged requests' source port (not an ephemeral one)
PACKET_OUTGOING = 4                    # AF_PACKET: a frame this socket's host sent


def say(text: str) -> None:
    print(f"[soak] {text}", flush=True)


# --- signed payloads --------------------------------------------------------------

def sign(key: bytes, actor: int, counter: int, filler: bytes) -> bytes:
    """A 64-byte payload: MAGIC, actor, counter, 40 filler bytes, 8 bytes of HMAC."""
    body = struct.pack("!IIQ", MAGIC, actor, counter) + filler[:40].ljust(40, b"\0")
    return body + hmac.new(key, body, hashlib.sha256).digest()[:8]


def signer(key: bytes, payload: bytes) -> tuple[int, int] | None:
    """(actor, counter) of a payload this run signed, else None."""
    if len(payload) != protocol.PAYLOAD_BYTES:
        return None
    body, mac = payload[:56], payload[56:]
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest()[:8], mac):
        return None
    magic, actor, counter = struct.unpack_from("!IIQ", body)
    return (actor, counter) if magic == MAGIC else None


def soak_priority(rng: random.Random) -> float:
    return rng.randrange(1, 256) * PRIORITY_STEP / protocol.PRIORITY_ONE


def is_soak_priority(fixed: int) -> bool:
    return fixed % PRIORITY_STEP == 0 and 1 <= fixed // PRIORITY_STEP <= 255


def sample_errors(key: bytes, reply: Message) -> list[str]:
    """What is wrong with an OK SAMPLE reply: the soak's errors it counts as."""
    if reply.stamp == 0:
        return ["sampled a slot not written yet (stamp 0) as data"]
    wrong = []
    if signer(key, reply.payload or b"") is None:
        wrong.append("sampled a payload the soak did not write")
    if not is_soak_priority(reply.priority):
        wrong.append("sampled a priority the soak did not write")
    return wrong


# --- the actors' load ----------------------------------------------------------------

@dataclass(frozen=True)
class Worker:
    """What one load process needs (picklable)."""

    index: int
    netns: str
    ip: str
    vip: str
    key: bytes
    deadline: float                # time.monotonic() (system-wide on Linux)
    seed: int


def actor_load(w: Worker, out: Any) -> None:
    """INSERT, SAMPLE and UPDATE table 0 until the deadline; report to `out`."""
    enter(w.netns)
    rng = random.Random(w.seed)
    client = make_client("switch", address=(w.vip, REPLAY_UDP_PORT), bind=(w.ip, 0),
                         table=SOAK_TABLE, ack_inserts=True, ack_updates=True,
                         policy=RetryPolicy(timeout=0.5, retries=3))
    sent, errors, checked = 0, Counter[str](), 0
    while time.monotonic() < w.deadline:
        payloads = [sign(w.key, w.index, sent + i, rng.randbytes(40)) for i in range(BATCH)]
        sent += BATCH
        try:
            client.insert_many(payloads, [soak_priority(rng) for _ in payloads])
            pending = client.sample_async(BATCH)
            batch = client.wait(pending)
            for reply in pending.replies.values():
                errors.update(sample_errors(w.key, reply))
            checked += len(batch)
            client.update(batch.slot, batch.stamp, [soak_priority(rng) for _ in batch.slot])
        except ReplayTimeout:
            continue  # counted in the client's stats
        except ReplayRefused as exc:
            if exc.status != Status.NOT_READY:  # NOT_READY: in the client's not_ready
                errors[f"actor {w.index}: valid request refused: {exc}"] += 1
    out.put({"actor": w.index, "sent": sent, "checked": checked, "errors": dict(errors),
             "client": client.stats()})
    client.close()


# --- the intruder's fuzz ----------------------------------------------------------------

def random_request(rng: random.Random) -> Message:
    """A well-formed request of any op, for any table (valid or not)."""
    table, slot, rid = rng.randrange(6), rng.randrange(1 << 13), rng.getrandbits(32)
    payload = rng.randbytes(protocol.PAYLOAD_BYTES)
    op = rng.choice(list(Op))
    msg = {Op.INSERT: lambda: protocol.insert(table, payload, ack=rng.random() < 0.5),
           Op.SAMPLE: lambda: protocol.sample(table, rng.randrange(1, 65)),
           Op.UPDATE: lambda: protocol.update(table, slot, rng.getrandbits(16), 2.0, ack=True),
           Op.READ: lambda: protocol.read(table, slot),
           Op.WRITE: lambda: protocol.write(table, slot, rng.getrandbits(20), 1 << 16, payload),
           Op.RESET: lambda: protocol.reset(table),
           Op.GET_STATE: lambda: protocol.get_state(table),
           Op.SET_STATE: lambda: protocol.set_state(table, pointer=slot, sequence=0,
                                                    max_priority_fixed=0, size=0)}[op]()
    return protocol.with_request_id(msg, rid)


def fuzz_datagram(rng: random.Random) -> bytes:
    """40 % random bytes, 40 % a mutated request, 20 % a valid request."""
    r = rng.random()
    if r < 0.4:
        return rng.randbytes(rng.randrange(0, 121))
    data = bytearray(protocol.encode(random_request(rng)))
    if r >= 0.8:
        return bytes(data)
    for _ in range(rng.randrange(1, 5)):
        how = rng.randrange(4)
        if how == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == 1 and data:
            data[rng.randrange(min(len(data), protocol.HEADER_BYTES))] = rng.randrange(256)
        elif how == 2:
            del data[rng.randrange(len(data) + 1):]
        else:
            data += rng.randbytes(rng.randrange(1, 40))
    return bytes(data)


def intruder_load(netns: str, ip: str, vip: str, count: int, deadline: float, seed: int,
                  out: Any) -> None:
    """Send `count` fuzz datagrams paced until the deadline; count the answers."""
    enter(netns)
    rng = random.Random(seed)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip, 0))
    sock.setblocking(False)
    statuses: Counter[str] = Counter()
    start = time.monotonic()
    span = max(deadline - start, 0.1) * 0.9
    sent = 0
    while sent < count and time.monotonic() < deadline:
        if sent > count * (time.monotonic() - start) / span:
            time.sleep(0.001)
        else:
            try:
                sock.sendto(fuzz_datagram(rng), (vip, REPLAY_UDP_PORT))
                sent += 1
            except OSError:
                time.sleep(0.001)  # a full socket buffer: the same as a loss
        _count_replies(sock, statuses)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        _count_replies(sock, statuses)
        time.sleep(0.01)
    out.put({"fuzz_sent": sent, "fuzz_replies": dict(statuses)})


def _count_replies(sock: socket.socket, statuses: Counter[str]) -> None:
    while True:
        try:
            data = sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            continue
        try:
            statuses[protocol.decode(data).status_name()] += 1
        except ProtocolError:
            statuses["undecodable"] += 1


# --- the forger: the intruder in other hosts' names --------------------------------------

@dataclass(frozen=True)
class Forger:
    """What the forging process needs (picklable): the intruder's namespace, interface
    and MAC, the (IPv4, MAC) of the hosts it poses as, the VIP and its MAC."""

    netns: str
    iface: str
    mac: str
    victims: tuple[tuple[str, str], ...]
    vip: str
    vip_mac: str
    count: int
    deadline: float
    seed: int


def forged_frame(f: Forger, rng: random.Random) -> bytes:
    """A valid INSERT, SAMPLE or UPDATE of either table in a victim's IPv4 address,
    from the intruder's MAC or the victim's."""
    ip, mac = rng.choice(f.victims)
    table, rid = rng.choice((SOAK_TABLE, WITNESS_TABLE)), rng.getrandbits(32)
    msg = rng.choice((
        lambda: protocol.insert(table, rng.randbytes(protocol.PAYLOAD_BYTES), ack=True),
        lambda: protocol.sample(table, rng.randrange(1, 33)),
        lambda: protocol.update(table, rng.randrange(4096), rng.getrandbits(16), 2.0,
                                ack=True)))()
    return udp_frame.build(udp_frame.UdpFrame(
        mac if rng.random() < 0.5 else f.mac, f.vip_mac, ip, f.vip, FORGED_SPORT,
        REPLAY_UDP_PORT, protocol.encode(protocol.with_request_id(msg, rid))))


def forger_load(f: Forger, out: Any) -> None:
    """Send `count` forged requests paced until the deadline; count the answers (any
    reply comes back out of the intruder's port, to FORGED_SPORT)."""
    sock = raw_socket(f.iface, f.netns)
    sock.setblocking(False)
    rng = random.Random(f.seed)
    start = time.monotonic()
    span = max(f.deadline - start, 0.1) * 0.9
    sent = served = 0

    def answers() -> int:
        n = 0
        while True:
            try:
                data, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return n
            except OSError:
                continue
            frame = udp_frame.parse(data)
            n += (addr[2] != PACKET_OUTGOING and frame is not None
                  and frame.src_port == REPLAY_UDP_PORT and frame.dst_port == FORGED_SPORT)

    while sent < f.count and time.monotonic() < f.deadline:
        if sent > f.count * (time.monotonic() - start) / span:
            time.sleep(0.001)
        else:
            try:
                sock.send(forged_frame(f, rng))
                sent += 1
            except OSError:
                time.sleep(0.001)
        served += answers()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        served += answers()
        time.sleep(0.01)
    sock.close()
    out.put({"forged_sent": sent, "forged_served": served})


# --- the soak of one switch ---------------------------------------------------------------

def soak_config(base: Config, actors: int) -> Config:
    """The base config's learner and `actors` actors, the intruder, the two tables,
    and an ACL that lets the actors do everything on table 0 and the learner fill both."""
    learner = next(h for h in base.hosts if h.role == "learner")
    acts = [h for h in base.hosts if h.role == "actor"][:actors]
    if len(acts) < actors:
        raise ValueError(f"{base.source} has {len(acts)} actor hosts, not {actors}")
    tables = (ReplayTable(SOAK_TABLE, capacity=4096, min_size=1, max_batch=128),
              ReplayTable(WITNESS_TABLE, capacity=4096, min_size=1, max_batch=128,
                          mode="uniform"))
    acl = [AclRule(a.name, SOAK_TABLE, ("insert", "sample", "update")) for a in acts]
    acl += [AclRule(learner.name, t, ("insert",)) for t in (SOAK_TABLE, WITNESS_TABLE)]
    broadcast = replace(base.broadcast, members=tuple(a.name for a in acts)) \
        if base.broadcast else None
    return replace(base, hosts=(learner, *acts, INTRUDER), tables=tables, acl=tuple(acl),
                   broadcast=broadcast)


def rss_kib(pid: int) -> int:
    """Resident memory of a process, KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class SoakResult:
    """The figures of one switch's soak."""

    switch: str
    seconds: float
    memory_kib: dict[str, int] = field(default_factory=dict)
    memory_trace_kib: list[int] = field(default_factory=list)   # every 2 s
    served: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    client: dict[str, int] = field(default_factory=dict)
    fuzz_sent: int = 0
    fuzz_replies: dict[str, int] = field(default_factory=dict)
    forged_sent: int = 0
    forged_served: int = 0
    forged_counted: int = 0        # the switch's forged_sources count at the intruder's port
    not_ready: int = 0             # SAMPLE replies the switch answered NOT_READY
    slots: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def prefill(bed: Testbed, key: bytes, rng: random.Random) -> None:
    """Signed experiences from the learner into both tables (actor id 255)."""
    learner = next(h for h in bed.config.hosts if h.role == "learner")
    with inside(bed.ns_name(learner.name)):
        client = make_client("switch", address=(bed.config.vip, REPLAY_UDP_PORT),
                             bind=(learner.ip, 0), ack_inserts=True)
    try:
        counter = 0
        for table, n in zip((SOAK_TABLE, WITNESS_TABLE), PREFILL, strict=True):
            client.table = table
            for start in range(0, n, BATCH):
                batch = [sign(key, 255, counter + i, rng.randbytes(40))
                         for i in range(min(BATCH, n - start))]
                counter += len(batch)
                client.insert_many(batch, [soak_priority(rng) for _ in batch])
    finally:
        client.close()


def compare(before: list[dict], after: list[dict], key: bytes,
            sent: dict[int, int]) -> tuple[dict[str, int], Counter[str]]:
    """Slots kept, replaced by the soak's inserts, or changed otherwise (errors)."""
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for b, a in zip(before, after, strict=True):
        table = b["table"]
        old = {s["slot"]: s for s in b["slots"]}
        new = {s["slot"]: s for s in a["slots"]}
        if table == WITNESS_TABLE and (a["state"] != b["state"] or old != new):
            errors[f"witness table {table} changed"] += 1
        if a["state"]["total"] != sum(s["priority"] for s in a["slots"]):
            errors[f"table {table}: total priority is not the sum of its slots"] += 1
        for slot in old.keys() - new.keys():
            errors[f"table {table} slot {slot} emptied"] += 1
        for slot, s in new.items():
            was = old.get(slot)
            if was is not None and was["stamp"] == s["stamp"]:
                if was["payload"] != s["payload"] or not is_soak_priority(s["priority"]):
                    errors[f"table {table} slot {slot} changed in place"] += 1
                else:
                    counts["kept"] += 1
                continue
            who = signer(key, bytes.fromhex(s["payload"]))
            if (table != SOAK_TABLE or who is None or who[0] not in sent
                    or who[1] >= sent[who[0]] or not is_soak_priority(s["priority"])):
                errors[f"table {table} slot {slot} holds what the soak did not insert"] += 1
            else:
                counts["replaced_by_soak_inserts"] += 1
    counts["changed_otherwise"] = sum(errors.values())
    return dict(counts), errors


def soak_switch(kind: str, seconds: float, fuzz: int, actors: int, config: Path,
                log_dir: Path | None = None, seed: int = 1, forged: int = 0) -> SoakResult:
    """Run the soak on one switch kind; its figures."""
    cfg = soak_config(cfgmod.load(config), actors)
    key = os.urandom(32)
    rng = random.Random(seed)
    result = SoakResult(kind, seconds)
    errors: Counter[str] = Counter()
    with Testbed(cfg, kind, log_dir=log_dir) as bed:
        assert bed.switch is not None and bed.switch.proc is not None and bed.session
        pid = bed.switch.proc.pid
        inband = InbandChannel(bed.session, cfg.vip, cfg.vip_mac, timeout=10)
        prefill(bed, key, rng)
        tables = (SOAK_TABLE, WITNESS_TABLE)
        before = [snapshot.snapshot_table(inband, t, 4096) for t in tables]
        base_stats = read_stats(bed.session, list(tables))
        base_forged = read_guard_drops(bed.session).forged.get(INTRUDER.port, 0)
        memory = [rss_kib(pid)]
        say(f"{kind}: {actors} actors at full rate, {fuzz} fuzz datagrams and {forged} "
            f"forged-source requests for {seconds:.0f} s; switch RSS "
            f"{memory[0] / 1024:.1f} MiB")
        deadline = time.monotonic() + seconds
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        procs = [ctx.Process(target=actor_load, args=(Worker(
            i, bed.ns_name(h.name), h.ip, cfg.vip, key, deadline, seed * 100 + i), out))
            for i, h in enumerate(h for h in cfg.hosts if h.role == "actor")]
        procs.append(ctx.Process(target=intruder_load, args=(
            bed.ns_name(INTRUDER.name), INTRUDER.ip, cfg.vip, fuzz, deadline, seed, out)))
        if forged:
            victims = tuple((h.ip, h.mac) for h in cfg.hosts if h.name != INTRUDER.name)
            procs.append(ctx.Process(target=forger_load, args=(Forger(
                bed.ns_name(INTRUDER.name), bed.host_iface(INTRUDER.name), INTRUDER.mac,
                victims, cfg.vip, cfg.vip_mac, forged, deadline, seed + 7), out)))
        for p in procs:
            p.start()
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_memory, args=(pid, memory, stop), daemon=True)
        sampler.start()
        reports = []
        for _ in procs:
            try:
                reports.append(out.get(timeout=max(deadline - time.monotonic(), 0) + 60))
            except Exception:  # queue.Empty: a process died without reporting
                errors["a load process did not report"] += 1
                break
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
        stop.set()
        sampler.join()
        memory.append(rss_kib(pid))
        if bed.switch.proc.poll() is not None:
            errors[f"the switch exited with {bed.switch.proc.returncode}"] += 1
            return _finish(result, errors, memory)
        after = [snapshot.snapshot_table(inband, t, 4096) for t in tables]
        stats = read_stats(bed.session, list(tables))
        result.forged_counted = read_guard_drops(bed.session).forged.get(
            INTRUDER.port, 0) - base_forged
    sent = {r["actor"]: r["sent"] for r in reports if "actor" in r}
    sent[255] = sum(PREFILL)
    result.slots, slot_errors = compare(before, after, key, sent)
    errors.update(slot_errors)
    client: Counter[str] = Counter()
    for r in reports:
        errors.update(r.get("errors", {}))
        client.update(r.get("client", {}))
        if "fuzz_sent" in r:
            result.fuzz_sent, result.fuzz_replies = r["fuzz_sent"], r["fuzz_replies"]
        if "forged_sent" in r:
            result.forged_sent, result.forged_served = r["forged_sent"], r["forged_served"]
    client["samples_checked"] = sum(r.get("checked", 0) for r in reports)
    result.client = dict(client)
    if result.fuzz_replies.get("OK"):
        errors["the intruder got OK answers"] += result.fuzz_replies["OK"]
    if result.forged_served:
        errors["forged-source requests were answered"] += result.forged_served
    for t, s in stats.items():
        b = base_stats[t]
        result.not_ready += s.not_ready - b.not_ready
        for op, n in s.ok.items():
            result.served[op] = result.served.get(op, 0) + n - b.ok.get(op, 0)
        for status, n in s.refused.items():
            name = f"{status} ({'other' if t == OTHER_TABLE else f'table {t}'})"
            result.refused[name] = n - b.refused.get(status, 0)
    return _finish(result, errors, memory)


def _sample_memory(pid: int, memory: list[int], stop: threading.Event) -> None:
    while not stop.wait(2.0):
        memory.append(rss_kib(pid))


def _finish(result: SoakResult, errors: Counter[str], memory: list[int]) -> SoakResult:
    result.memory_kib = {"start": memory[0], "end": memory[-1], "max": max(memory)}
    result.memory_trace_kib = memory
    result.errors = dict(errors.most_common(MAX_EXAMPLES * 2))
    extra = sum(errors.values()) - sum(result.errors.values())
    if extra:
        result.errors["(more)"] = extra
    return result


def print_result(r: SoakResult) -> None:
    m = r.memory_kib
    say(f"{r.switch}: switch RSS start {m['start'] / 1024:.1f} MiB, end {m['end'] / 1024:.1f} "
        f"MiB, max {m['max'] / 1024:.1f} MiB")
    say(f"{r.switch}: served " + ", ".join(f"{k}={v}" for k, v in sorted(r.served.items()))
        + "; refused " + (", ".join(f"{k}={v}" for k, v in sorted(r.refused.items()) if v)
                          or "none"))
    c = r.client
    say(f"{r.switch}: actors: {c.get('inserts', 0)} inserts acked, {c.get('samples', 0)} "
        f"sampled ({c.get('samples_checked', 0)} checked), {c.get('updates', 0)} updates "
        f"({c.get('stale', 0)} stale); lost to UDP: {c.get('timeouts', 0)} timeouts, "
        f"{c.get('retries', 0)} retries")
    say(f"{r.switch}: SAMPLE replies NOT_READY (slot claimed, not yet written): "
        f"{r.not_ready} answered by the switch, {c.get('not_ready', 0)} received")
    say(f"{r.switch}: intruder sent {r.fuzz_sent} datagrams; answers "
        + (", ".join(f"{k}={v}" for k, v in sorted(r.fuzz_replies.items())) or "none"))
    if r.forged_sent:
        say(f"{r.switch}: intruder sent {r.forged_sent} requests in other hosts' names; "
            f"served {r.forged_served}, dropped as forged by the switch {r.forged_counted}")
    say(f"{r.switch}: slots " + ", ".join(f"{k}={v}" for k, v in sorted(r.slots.items())))
    say(f"{r.switch}: errors {r.error_count}"
        + "".join(f"\n    {n} x {what}" for what, n in r.errors.items()))


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m agent.orchestration.soak",
                       description=__doc__.splitlines()[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("--switch", choices=("all", "auto", *SWITCH_KINDS), default="all",
                   help="all: the Python switch and bmv2 where installed")
    p.add_argument("--seconds", type=positive_float, default=600.0,
                   help="total duration, shared out between the switches (default 600)")
    p.add_argument("--fuzz", type=int_range(0, 10**8), default=100_000,
                   help="fuzz datagrams per switch")
    p.add_argument("--forged", type=int_range(0, 10**8), default=10_000,
                   help="requests per switch the intruder sends in other hosts' names")
    p.add_argument("--actors", type=int_range(1, MAX_ACTORS), default=4,
                   help="at most the config's actor hosts")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    p.add_argument("--json", type=Path, default=None,
                   help="report file (default runs/soak-<time>.json)")
    args = p.parse_args(argv)
    ok, why = have_netns()
    if not ok:
        print(f"error: the soak needs the namespace testbed: {why}", file=sys.stderr)
        return 2
    try:
        kinds = (["python", "bmv2"] if find_bmv2() else ["python"]) if args.switch == "all" \
            else [resolve_kind(args.switch)]
        results = []
        for kind in kinds:
            run_dir = RUNS / f"soak-{kind}-{int(time.time())}"
            results.append(soak_switch(kind, args.seconds / len(kinds), args.fuzz,
                                       args.actors, args.config, run_dir / "logs",
                                       forged=args.forged))
            print_result(results[-1])
    except (cfgmod.ConfigError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = args.json or RUNS / f"soak-{int(time.time())}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    say(f"report: {path}")
    return 0 if all(r.error_count == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
