"""The multicast groups the replay program replicates by, derived from the config.

docs/protocol.md ("Replication") is the contract with the data plane:
  SAMPLE n from port p  group sample_base(p) + 2^k, 2^k >= n: 2^k replicas
                        (p, rid 0 .. 2^k - 1), k = 0 .. 8; egress drops the copies
                        past n. The ingress table sample_replication maps p to its base.
                        An UPDATE_BATCH of n entries is replicated the same way.
  RESET                 RESET_GROUP: RESET_FANOUT replicas (CPU port, rid 0 .. F-1).
On Tofino every replay copy goes to the loop port instead (controller/target.py),
where the replay state is; it reaches p (or the CPU port) on its next pass.
  weight broadcast      the config's group: one replica per member port.
Every port whose host may sample or update some table (and the CPU port, for
the controller) gets a block of GROUP_BLOCK group ids with the nine groups, 511
replicas in all, so any batch a table's max_batch admits, now or after
`replayctl table set`, has its group. Group ids stay below 2^15 (bmv2's
P4Runtime server reserves the upper half), which leaves SAMPLE_BLOCKS blocks:
that many ports may sample. `replayctl acl add` gives a port that gains its
first SAMPLE grant a free block on the running switch (controller/acl.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.contract.protocol import ALLOW_REPLICATED, MAX_BATCH, RESET_FANOUT, RESET_GROUP
from controller.config import Config, ConfigError

GROUP_BLOCK = 512          # sample group ids of one port: base + 1, 2, 4, .., 256
FIRST_SAMPLE_BLOCK = 1     # block 0 (ids 1 .. 511) holds the broadcast and RESET groups
COPIES = tuple(1 << k for k in range(MAX_BATCH.bit_length() + 1))  # 1 .. 256 >= MAX_BATCH
GROUP_ID_LIMIT = 1 << 15   # group ids a switch takes: 1 .. 2^15 - 1
SAMPLE_BLOCKS = range(FIRST_SAMPLE_BLOCK, (GROUP_ID_LIMIT - 1 - COPIES[-1]) // GROUP_BLOCK + 1)

Replicas = list[tuple[int, int]]


def sampling_ports(cfg: Config) -> list[int]:
    """Ports that replicated requests (SAMPLE, UPDATE_BATCH) may come from: hosts the
    ACL lets sample or update, and the CPU port."""
    ports = {cfg.host(rule.host).port for rule in cfg.acl if rule.mask & ALLOW_REPLICATED}
    ports.add(cfg.switch.cpu_port)
    return sorted(ports)


def sample_bases(cfg: Config) -> dict[int, int]:
    """{port: group base}: SAMPLE n from the port goes to group base + 2^k, 2^k >= n."""
    ports = sampling_ports(cfg)
    if len(ports) > len(SAMPLE_BLOCKS):
        raise ConfigError(f"{cfg.source}: acl: {len(ports) - 1} hosts' ports may sample or "
                          f"update; the "
                          f"switch's group ids have room for {len(SAMPLE_BLOCKS) - 1}")
    return {port: block * GROUP_BLOCK for block, port in zip(SAMPLE_BLOCKS, ports, strict=False)}


def free_sample_base(bases_in_use: Iterable[int], group_ids: Iterable[int]) -> int | None:
    """The lowest block base no port uses and none of whose sample group ids holds a
    group, or None when every block is taken."""
    taken = set(bases_in_use) | {gid - c for gid in group_ids for c in COPIES}
    return next((b * GROUP_BLOCK for b in SAMPLE_BLOCKS if b * GROUP_BLOCK not in taken), None)


def sample_groups(port: int, base: int) -> dict[int, Replicas]:
    """Groups base + c, c = 1, 2, 4, .., 256: c copies to `port`, rid = reply index."""
    return {base + c: [(port, rid) for rid in range(c)] for c in COPIES}


def wanted_groups(cfg: Config) -> dict[int, Replicas]:
    """Every multicast group the config needs, with sorted (port, rid) replicas."""
    target = cfg.switch.target
    reset_port = target.reset_port(cfg.switch.cpu_port)
    groups: dict[int, Replicas] = {RESET_GROUP: [(reset_port, rid) for rid in range(RESET_FANOUT)]}
    if cfg.broadcast:
        ports = sorted(cfg.host(m).port for m in cfg.broadcast.members)
        groups[cfg.broadcast.group] = [(p, i) for i, p in enumerate(ports, start=1)]
    for port, base in sample_bases(cfg).items():
        groups.update(sample_groups(target.replica_port(port), base))
    return groups
