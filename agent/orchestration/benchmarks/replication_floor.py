"""The replication floor: the least a switch spends answering SAMPLE n in the
network with one packet per reply, whatever its egress program does.

p4src/experiments/replication_floor.p4 replaces the replay program on the
benchmark testbed. The client's datagram to the VIP is a whole SAMPLE reply
(`ReplyTemplateTransport` turns the client's SAMPLE request into one, with the
request's id and count); the switch turns it round and its PRE makes n copies
toward the Learner's port, and each copy's egress pass writes only its index.
The project's `ReplayClient` collects them as it collects a real batch (decode,
dispatch, `SampleBatch`), so the client's share is the real one. Against it, in
the same rounds, the host replay server's SAMPLE n through the same switch
(forwarded by destination). floor p50 / host p50 is about the lowest
in-network / host ratio any one-packet-per-reply design can reach with this
switch on this machine; the replay program's copies do their draw, tree walk
and record read on top of it. (tests/dataplane/bench_node_costs.py measures a
bare copy's CPU with raw frames, node by node; this puts it against the host
server, through the client every path uses.)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.contract import protocol
from agent.contract.protocol import REPLAY_UDP_PORT, Message, Op
from agent.orchestration.benchmarks.bed import (
    CLIENT_HOST,
    POLICY,
    SERVER_HOST,
    TABLE,
    NetworkBed,
)
from agent.orchestration.benchmarks.cpu import CpuMeter, per_reply
from agent.orchestration.benchmarks.harness import (
    Budget,
    Figures,
    latency_figures,
    medians,
    run_rounds,
    timed_calls,
)
from agent.orchestration.benchmarks.replay_ops import MODES, loss_counted
from agent.replay.client import ReplayClient, UdpTransport, make_client
from bmv2.artifacts import P4SRC, compile_program
from bmv2.testbed.netns import inside, ip
from bmv2.testbed.netns_bed import TESTBED_ELECTION_ID
from controller.config import Config
from controller.p4runtime_session import P4RuntimeSession
from controller.program import Artifacts

FLOOR_P4 = P4SRC / "experiments" / "replication_floor.p4"
INGRESS = "FloorIngress."
FILLED = 4096  # experiences the host server holds while it is sampled
TEMPLATE_PAYLOAD = bytes(range(protocol.PAYLOAD_BYTES))


def compile_floor(out_dir: Path) -> Artifacts:
    """replication_floor.p4 compiled into `out_dir` (ToolchainMissing without p4c)."""
    return compile_program(out_dir, main=FLOOR_P4)


class ReplyTemplateTransport(UdpTransport):
    """Sends each SAMPLE request as the reply the floor switch replicates: the
    request's id, count, table and mode, a reply's fields, a fixed payload."""

    def send(self, msg: Message) -> None:
        if msg.op == Op.SAMPLE and not msg.is_reply:
            msg = replace(msg, flags=msg.flags | protocol.Flag.REPLY, status=protocol.Status.OK,
                          slot=1, stamp=1, priority=protocol.PRIORITY_ONE, size=FILLED,
                          total=FILLED * protocol.PRIORITY_ONE, payload=TEMPLATE_PAYLOAD)
        super().send(msg)


class FloorBed(NetworkBed):
    """The benchmark testbed running replication_floor.p4: the VIP turns a reply
    round into group n (n replicas toward the Learner's port, rid 1..n), every
    host's address goes to its port, and the hosts know each other's and the
    VIP's MAC (the program answers no ARP)."""

    def __init__(self, cfg: Config, switch_kind: str, log_dir: Path, artifacts: Artifacts,
                 batch_sizes: tuple[int, ...]) -> None:
        super().__init__(cfg, switch_kind, log_dir, deploy_config=False)
        self.artifacts = artifacts
        self.batch_sizes = batch_sizes
        self.session: P4RuntimeSession | None = None

    def _bring_up(self) -> None:
        self.testbed.start()
        self.cfg = self.testbed.config
        self._program()
        self._neighbours()
        self._start_server()

    def _program(self) -> None:
        cfg = self.cfg
        self.session = P4RuntimeSession(cfg.switch.address, cfg.switch.device_id,
                                        election_id=TESTBED_ELECTION_ID, timeout=10).connect()
        self.session.set_pipeline(self.artifacts.p4info, self.artifacts.device_config())
        self.session.insert_entry(INGRESS + "floor_vip", {"hdr.ipv4.dst_addr": cfg.vip},
                                  INGRESS + "turn_round")
        for host in cfg.hosts:
            self.session.insert_entry(INGRESS + "floor_hosts", {"hdr.ipv4.dst_addr": host.ip},
                                      INGRESS + "forward", {"port": host.port})
        port = cfg.host(CLIENT_HOST).port
        for n in self.batch_sizes:
            self.session.multicast_group(n, [(port, rid) for rid in range(1, n + 1)])

    def _neighbours(self) -> None:
        """Static ARP entries: the client host for the VIP and the server host, the
        server host for the client host."""
        cfg = self.cfg
        client, server = cfg.host(CLIENT_HOST), cfg.host(SERVER_HOST)
        for host, peers in ((client, ((cfg.vip, cfg.vip_mac), (server.ip, server.mac))),
                            (server, ((client.ip, client.mac),))):
            for address, mac in peers:
                ip("neigh", "replace", address, "lladdr", mac, "dev",
                   self.testbed.host_iface(host.name), ns=self.testbed.ns_name(host.name))

    def floor_client(self) -> ReplayClient:
        """A client in the Learner's namespace whose SAMPLEs the switch replicates."""
        with inside(self.testbed.ns_name(CLIENT_HOST)):
            transport = ReplyTemplateTransport((self.cfg.vip, REPLAY_UDP_PORT),
                                               (self.cfg.host(CLIENT_HOST).ip, 0))
        return ReplayClient(transport, table=TABLE, policy=POLICY)

    def host_client(self) -> ReplayClient:
        """A client of the host replay server, which then holds FILLED experiences."""
        with inside(self.testbed.ns_name(CLIENT_HOST)):
            client = make_client("host", address=(self.cfg.host(SERVER_HOST).ip,
                                                   REPLAY_UDP_PORT),
                                 bind=(self.cfg.host(CLIENT_HOST).ip, 0), table=TABLE,
                                 ack_inserts=True, policy=POLICY, window=32)
        client.insert_many([i.to_bytes(4, "little") * (protocol.PAYLOAD_BYTES // 4)
                            for i in range(FILLED)],
                           [1.0 + i % 7 for i in range(FILLED)])
        return client

    def _tear_down(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
        super()._tear_down()


def sample_figures(client: ReplayClient, key: str, n: int, mode: int, reps: int,
                   seconds: float, meter: CpuMeter) -> Figures:
    """p50/p99 of up to `reps` SAMPLE n, retries and lost replies, and CPU per reply."""
    figs: Figures = {}
    before = meter.snapshot()
    with loss_counted(client, figs, key):
        lat = timed_calls(lambda: client.sample(n, mode), reps, seconds)
    cpu = per_reply(before, meter.snapshot(), n * len(lat), meter.cores)
    return figs | latency_figures(key, lat) | {f"{key}.{k}": v for k, v in cpu.items()}


def floor_rows(median: dict[str, Figures], batch_sizes: tuple[int, ...]) -> list[dict]:
    """Per batch size and host-server mode: floor p50, host p50 and their ratio, and
    each side's CPU per reply (None where a figure is missing)."""
    floor, host = median.get("floor", {}), median.get("host", {})
    rows = []
    for n in batch_sizes:
        for mode in MODES:
            f, h = floor.get(f"floor.{n}.p50_us"), host.get(f"host.{mode}.{n}.p50_us")
            rows.append({
                "n": n, "host_mode": mode, "floor_p50_us": f, "host_p50_us": h,
                "ratio": f / h if f and h else None,
                **{f"floor_{k}": floor.get(f"floor.{n}.cpu.{k}")
                   for k in ("switch", "switch_busiest", "client")},
                **{f"host_{k}": host.get(f"host.{mode}.{n}.cpu.{k}")
                   for k in ("switch", "switch_busiest", "client", "server")},
            })
    return rows


def measure_switch(kind: str, cfg: Config, artifacts: Artifacts, log_dir: Path,
                   batch_sizes: tuple[int, ...], rounds: int, reps: int, op_seconds: float,
                   budget: Budget) -> dict:
    """`rounds` interleaved rounds of the floor and the host server on a `kind` switch:
    every round's figures, their medians and the rows of floor_rows."""
    with FloorBed(cfg, kind, log_dir, artifacts, batch_sizes) as bed:
        meters = bed.cpu_meters()
        floor, host = bed.floor_client(), bed.host_client()
        try:
            for n in batch_sizes:  # adaptive timeouts learned, ARP and caches warm
                floor.sample(n)
                for mode in MODES.values():
                    host.sample(n, mode)

            def floor_job() -> Figures:
                return {k: v for n in batch_sizes
                        for k, v in sample_figures(floor, f"floor.{n}", n, protocol.Mode.DEFAULT,
                                                   reps, op_seconds, meters["switch"]).items()}

            def host_job() -> Figures:
                return {k: v for n in batch_sizes for name, mode in MODES.items()
                        for k, v in sample_figures(host, f"host.{name}.{n}", n, mode, reps,
                                                   op_seconds, meters["host"]).items()}

            per_round = run_rounds(rounds, {"floor": floor_job, "host": host_job}, budget,
                                   label=f"floor {kind}")
        finally:
            floor.close()
            host.close()
    median = medians(per_round)
    return {"switch": kind, "rounds": per_round, "median": median,
            "rows": floor_rows(median, batch_sizes)}
