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
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.contract.cli_args import RUNS, ArgumentParser, int_range, positive_float
from agent.orchestration.soak.audit import PREFILL, PREFILL_ACTOR, compare, prefill
from agent.orchestration.soak.load import Forger, Worker, actor_load, forger_load, intruder_load
from agent.orchestration.soak.payloads import SOAK_TABLE, WITNESS_TABLE
from agent.rl.hparams import MAX_ACTORS
from bmv2.launch import SWITCH_KINDS, find_bmv2, resolve_kind
from bmv2.testbed.netns import have_netns
from bmv2.testbed.netns_bed import Testbed
from controller import config as cfgmod
from controller import snapshot
from controller.config import DEFAULT_CONFIG, AclRule, Config, Host, ReplayTable
from controller.inband import InbandChannel
from controller.stats import OTHER_TABLE, read_guard_drops, read_stats

INTRUDER = Host("intruder", "198.18.2.1", "02:00:00:00:02:01", 20, "host")
MAX_EXAMPLES = 10                      # error messages kept per process


def say(text: str) -> None:
    print(f"[soak] {text}", flush=True)


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
    sent[PREFILL_ACTOR] = sum(PREFILL)
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

