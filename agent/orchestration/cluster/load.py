"""The Ray side of the scaling benchmark (agent.orchestration.cluster.scale): load Actors
placed over the Actor hosts' nodes, stepping a cheap environment at full rate and
inserting what they make, and one sampling Learner on the Learner's node, each point
of the sweep a bounded window against one replay backend.

    python -m agent.orchestration.cluster.load --address 198.19.250.1:6379 \\
        --host learner=198.18.0.1 --host actor1=198.18.1.1 ... --target switch=198.18.0.100:45000 \\
        --target host=198.18.0.2:45000 --actors 1,2,4 --seconds 6 --out points.json

A load Actor is the training Actor's loop without its network: CartPole-v1 with random
actions, 3-step returns, the training's encoding, INSERT batches of 32 with ACKs (a
window of 32 in flight, 3 retries of 0.25 s), so INSERTs arriving, lost and retried
are counted by the sender. The sampler asks for one batch of 64 at a time. CPU is
read from /proc: each role's own, the switch's and the host server's (by PID), Ray's
own processes (the rest of the cluster's namespaces) and the machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import ray

from agent.contract import protocol
from agent.contract.cli_args import ArgumentParser, doc_parts, host_port, int_list
from agent.orchestration.cluster.driver import host_ip
from agent.orchestration.cluster.placement import resource
from agent.replay.client import ReplayClient, ReplayError, RetryPolicy, make_client
from agent.rl import transition
from agent.rl.nstep import NStepAccumulator, stack
from bmv2.testbed.netns import netns_id, pids_in

TABLE = 0
INSERT_BATCH = 32
SAMPLE_BATCH = 64
WINDOW = 32
POLICY = RetryPolicy(timeout=0.25, retries=3)
SHARE = 1 / 64          # of a host's resource per load Actor: up to 64 on one host
CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds a process and its reaped children used (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / CLK_TCK


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / CLK_TCK, sum(values) / CLK_TCK


def _client(target: tuple[str, int], ip: str) -> ReplayClient:
    return make_client("switch", address=target, bind=(ip, 0), table=TABLE, ack_inserts=True,
                       window=WINDOW, policy=POLICY)


class LoadActor:
    """One load Actor on its host's node, sending from the host's address."""

    def __init__(self, index: int, ip: str) -> None:
        self.index, self.ip = index, ip
        self.env = gym.make("CartPole-v1")
        self.rng = np.random.default_rng(index)

    def where(self) -> dict[str, object]:
        return {"node_ip": ray.util.get_node_ip_address(), "pid": os.getpid()}

    def run(self, target: tuple[str, int], seconds: float) -> dict[str, float]:
        """Step and insert for `seconds`; what was sent, what arrived, CPU used."""
        client = _client(target, self.ip)
        nstep = NStepAccumulator(3, 0.99)
        obs, _ = self.env.reset(seed=int(self.rng.integers(2**31)))
        pending, steps, sent, failed = [], 0, 0, 0
        cpu0, t0 = time.process_time(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            action = int(self.rng.integers(2))
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            steps += 1
            pending.extend(nstep.push(obs, action, float(reward), next_obs, terminated,
                                      truncated))
            obs = self.env.reset()[0] if terminated or truncated else next_obs
            if len(pending) >= INSERT_BATCH:
                payloads = protocol.to_payloads(transition.encode(stack(pending, self.index)))
                pending = []
                sent += len(payloads)
                try:
                    client.insert_many(payloads)
                except ReplayError:
                    failed += 1     # the lost ones are sent - inserts
        elapsed = time.monotonic() - t0
        stats = client.stats()
        client.close()
        return {"env_steps": steps, "sent": sent, "inserts": stats["inserts"],
                "retries": stats["retries"], "timeouts": stats["timeouts"],
                "failed_batches": failed, "elapsed": elapsed,
                "cpu": time.process_time() - cpu0}


class Sampler:
    """The Learner's sampling, on the Learner's node: SAMPLE 64, one at a time."""

    def __init__(self, ip: str) -> None:
        self.ip = ip

    def where(self) -> dict[str, object]:
        return {"node_ip": ray.util.get_node_ip_address(), "pid": os.getpid()}

    def run(self, target: tuple[str, int], seconds: float) -> dict[str, float]:
        client = _client(target, self.ip)
        sampled, refused = 0, 0
        cpu0, t0 = time.process_time(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            try:
                sampled += len(client.sample(SAMPLE_BATCH))
            except ReplayError:
                refused += 1
                time.sleep(0.01)   # the table below its min size at the start
        elapsed = time.monotonic() - t0
        stats = client.stats()
        client.close()
        return {"sampled": sampled, "refused": refused, "retries": stats["retries"],
                "timeouts": stats["timeouts"], "elapsed": elapsed,
                "cpu": time.process_time() - cpu0}


def ray_pids(namespaces: list[str], roles: set[int]) -> list[int]:
    """Ray's own processes: everything in the cluster's namespaces but the roles and
    this driver."""
    found = {pid for ns in namespaces for pid in pids_in(netns_id(ns))}
    return sorted(found - roles - {os.getpid()})


def measure(loads: list, sampler, target: tuple[str, int], seconds: float,
            pids: dict[str, int], ray_procs: list[int]) -> dict[str, float]:
    """One point: `loads` and the sampler against `target` for `seconds`."""
    cpu0 = {name: process_cpu(pid) for name, pid in pids.items()}
    ray0 = {pid: process_cpu(pid) for pid in ray_procs}
    busy0, total0 = machine_busy()
    refs = [a.run.remote(target, seconds) for a in loads]
    sample_ref = sampler.run.remote(target, seconds)
    actors = ray.get(refs)
    sampled = ray.get(sample_ref)
    busy1, total1 = machine_busy()
    ray_cpu = sum(max(0.0, process_cpu(pid) - c) for pid, c in ray0.items())
    wall = max(r["elapsed"] for r in [*actors, sampled])
    cores = os.cpu_count() or 1
    window = (total1 - total0) / cores   # the wall time /proc/stat saw
    sent = sum(r["sent"] for r in actors)
    arrived = sum(r["inserts"] for r in actors)
    out = {"actors": len(loads), "seconds": round(wall, 2),
           "env_steps_per_s": sum(r["env_steps"] for r in actors) / wall,
           "inserts_sent_per_s": sent / wall, "inserts_per_s": arrived / wall,
           "insert_loss": (sent - arrived) / sent if sent else 0.0,
           "insert_retries": sum(r["retries"] for r in actors),
           "sampled_per_s": sampled["sampled"] / wall,
           "sample_retries": sampled["retries"],
           "actors_cpu": sum(r["cpu"] for r in actors) / wall,
           "learner_cpu": sampled["cpu"] / wall,
           "machine_cpu": (busy1 - busy0) / window if window > 0 else float("nan"),
           "cores": cores}
    for name, pid in pids.items():
        out[f"{name}_cpu"] = (process_cpu(pid) - cpu0[name]) / wall
    served = sum(out[f"{n}_cpu"] for n in pids) + out["learner_cpu"]
    out["ray_cpu"] = ray_cpu / wall     # raylets, GCS, log monitors, agents, idle workers
    # the rest of the machine: this driver, the kernel's share, any other load
    out["other_cpu"] = max(0.0, out["machine_cpu"] - out["actors_cpu"] - served
                           - out["ray_cpu"])
    out["idle_cpu"] = max(0.0, cores - out["machine_cpu"])
    out["cpu_left_to_actors"] = out["actors_cpu"] + out["idle_cpu"]
    return out


def sweep(args: argparse.Namespace) -> dict:
    """Every point of the sweep, backends alternating at each Actor count."""
    learner, actor_hosts = args.host[0], args.host[1:]
    sampler = ray.remote(Sampler).options(
        num_cpus=0, resources={resource(learner[0]): SHARE}).remote(learner[1])
    loads = []
    for i in range(max(args.actors)):
        name, ip = actor_hosts[i % len(actor_hosts)]
        loads.append(ray.remote(LoadActor).options(
            num_cpus=0, resources={resource(name): SHARE}, name=f"load-{i}").remote(i, ip))
    placed = ray.get([a.where.remote() for a in [sampler, *loads]])
    ray_procs = ray_pids(args.netns, {int(p["pid"]) for p in placed})
    print(f"[scale] {len(loads)} load actors placed on "
          f"{len({p['node_ip'] for p in placed[1:]})} nodes", flush=True)
    pids = {"switch": args.switch_pid} | ({"server": args.server_pid} if args.server_pid else {})
    points = []
    for k, n in enumerate(args.actors):
        order = args.target if k % 2 == 0 else list(reversed(args.target))
        for backend, target in order:
            point = measure(loads[:n], sampler, target, args.seconds,
                            {k: v for k, v in pids.items() if backend == "host" or k != "server"},
                            ray_procs)
            point["backend"] = backend
            points.append(point)
            print(f"[scale] {backend:6s} actors={n:2d}: {point['inserts_per_s']:8.0f} "
                  f"INSERT/s arriving ({point['insert_loss']:.1%} lost, "
                  f"{point['insert_retries']} retries), {point['sampled_per_s']:7.0f} "
                  f"sampled/s; cores: Actors {point['actors_cpu']:.2f}, idle "
                  f"{point['idle_cpu']:.2f}, Ray {point['ray_cpu']:.2f}", flush=True)
    return {"points": points, "placement": placed}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="python -m agent.orchestration.cluster.load",
                       description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", required=True)
    p.add_argument("--host", type=host_ip, action="append", required=True, metavar="NAME=IP")
    p.add_argument("--target", action="append", required=True, metavar="BACKEND=IP:PORT",
                   type=lambda t: (t.partition("=")[0], host_port()(t.partition("=")[2])))
    p.add_argument("--actors", type=int_list(1, 64), default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--switch-pid", type=int, required=True)
    p.add_argument("--server-pid", type=int, default=0)
    p.add_argument("--netns", action="append", default=[], metavar="NS",
                   help="the cluster's namespaces, whose other processes are Ray's")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("RAY_COLOR_PREFIX", "0")
    ray.init(address=args.address, log_to_driver=True, namespace="p4replay-scale",
             logging_level="WARNING")
    try:
        result = sweep(args)
    finally:
        ray.shutdown()
    args.out.write_text(json.dumps(result, indent=1))
    sys.exit(0)


if __name__ == "__main__":
    main()
