"""ACL changes on a running switch (`replayctl acl add / remove`), carried out
whole: an op is granted with what the data plane needs to serve it, and what no
remaining grant needs goes with the last grant that needed it.

  sample   the requester's port needs a sample_replication entry and its nine
           groups (controller/replication.py): a port without them gets a free
           block of group ids, and gives it back when no host bound to it may
           sample any table (the CPU port keeps its block);
  insert   on a table with an insert_limit, the host's insert_limit entry: the
           limiter deploy gives it (Config.insert_limiter);
  any op   the table configured on the switch and the host bound to a port
           (source_guard): without them every request is refused or dropped.

A grant the switch cannot carry out raises Refused before anything is written.
P4Runtime may apply one batch's updates in any order, so the writes go in
steps: groups, then entries, then the ACL entry, then what the change frees
(entries, then groups). The ACL never lets a host ask what the switch refuses.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from agent.contract.protocol import ALLOW_INSERT, ALLOW_REPLICATED, acl_op_names
from controller import program
from controller.config import Config, Host
from controller.p4runtime_proto import p4runtime_pb2
from controller.p4runtime_session import P4RuntimeSession
from controller.refusals import Refused
from controller.replication import (
    COPIES,
    SAMPLE_BLOCKS,
    Replicas,
    free_sample_base,
    sample_groups,
)

Updates = list[p4runtime_pb2.Update]


@dataclass
class AclChange:
    """One host's ops on one table as the switch now serves them, and what else changed."""

    host: str
    table: int
    mask: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: what the host may do now, then what was installed or removed for it."""
        if self.mask:
            line = f"{self.host} may now {','.join(acl_op_names(self.mask))} table {self.table}"
        else:
            line = f"{self.host} may no longer use table {self.table}"
        return "; ".join([line, *self.notes])


@dataclass
class _Plan:
    """The updates of one change, in the steps they are written in."""

    add_groups: Updates = field(default_factory=list)
    add_entries: Updates = field(default_factory=list)
    acl: Updates = field(default_factory=list)
    drop_entries: Updates = field(default_factory=list)
    drop_groups: Updates = field(default_factory=list)

    def write(self, session: P4RuntimeSession) -> None:
        for step in (self.add_groups, self.add_entries, self.acl, self.drop_entries,
                     self.drop_groups):
            if step:
                session.write(step)


def _address(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def _why_not_served(session: P4RuntimeSession, host: Host, table: int,
                    bound: dict[int, set[int]]) -> str | None:
    """Why no request of `host` on `table` could be served, or None."""
    if table not in program.read_configs(session):
        return (f"table {table} is not configured on the switch, which refuses every request "
                "to it (replayctl deploy configures the file's tables)")
    if _address(host.ip) not in bound:
        return (f"{host.name} ({host.ip}) is not bound to a port on the switch, which drops "
                "its packets as forged (replayctl deploy binds the file's hosts)")
    return None


class _Replication:
    """The switch's sample blocks and groups, and the updates that change them."""

    def __init__(self, session: P4RuntimeSession, cfg: Config, plan: _Plan) -> None:
        self.session, self.cfg, self.plan = session, cfg, plan
        self.bases = program.read_sample_replication(session)
        self.groups: dict[int, Replicas] = session.read_multicast_groups()

    def install(self, port: int) -> str | None:
        """Plan `port`'s block (a free one if it has none) and its groups; a note if
        anything was missing. Refused when no block is free."""
        s = self.session
        base = self.bases.get(port)
        if base is None:
            base = free_sample_base(self.bases.values(), self.groups)
            if base is None:
                raise Refused(f"no free block of multicast group ids for port {port}'s SAMPLE "
                              f"replication: all {len(SAMPLE_BLOCKS)} are in use")
            self.bases[port] = base
            entry = program.sample_replication_entity(s, port, base)
            self.plan.add_entries.append(s.update("insert", entry))
        wanted = sample_groups(self.cfg.switch.target.replica_port(port), base)
        missing = {gid: r for gid, r in sorted(wanted.items()) if self.groups.get(gid) != r}
        for gid, replicas in missing.items():
            kind = "modify" if gid in self.groups else "insert"
            self.plan.add_groups.append(s.update(kind, s.multicast_group_entity(gid, replicas)))
            self.groups[gid] = replicas
        if not missing:
            return None
        return f"installed port {port}'s SAMPLE groups (base {base})"

    def remove(self, port: int) -> str | None:
        """Plan removing `port`'s block and groups; a note if it had them."""
        base = self.bases.pop(port, None)
        if base is None:
            return None
        s = self.session
        entry = s.table_entry(program.SAMPLE_REPLICATION_TABLE, {program.ORIG_PORT: port})
        self.plan.drop_entries.append(s.update("delete", entry))
        for gid in (base + c for c in COPIES if base + c in self.groups):
            self.plan.drop_groups.append(s.update("delete", s.multicast_group_entity(gid, [])))
        return (f"removed port {port}'s SAMPLE groups (no grant samples or updates from that "
                "port)")


def _sampling_ports(cfg: Config, acl: dict[tuple[int, int], int],
                    bound: dict[int, set[int]]) -> set[int]:
    """Ports a SAMPLE or UPDATE_BATCH the ACL allows can come from, and the CPU port."""
    ports = {cfg.switch.cpu_port}
    for (ip, _table), mask in acl.items():
        if mask & ALLOW_REPLICATED:
            ports |= bound.get(ip, set())
    return ports


def set_ops(session: P4RuntimeSession, cfg: Config, host: Host, table: int,
            mask: int) -> AclChange:
    """Let `host` do exactly the ops of `mask` on `table` (0: none), installing what
    they need and removing what only the ops taken away needed."""
    ip = _address(host.ip)
    acl = program.read_acl(session)
    had_entry, before = (ip, table) in acl, acl.get((ip, table), 0)
    bound = program.read_bound_ports(session)
    added = mask & ~before
    if added:
        reason = _why_not_served(session, host, table, bound)
        if reason:
            raise Refused(f"cannot let {host.name} {','.join(acl_op_names(added))} "
                          f"table {table}: {reason}")
    if mask:
        acl[(ip, table)] = mask
    else:
        acl.pop((ip, table), None)

    plan, change = _Plan(), AclChange(host.name, table, mask)
    notes = _plan_replication(_Replication(session, cfg, plan), host, table, before, mask,
                              _sampling_ports(cfg, acl, bound), bound.get(ip, set()))
    notes += _plan_insert_limit(session, cfg, host, table, before, mask, plan)
    match = program.acl_match(host.ip, table)
    if not mask and had_entry:
        plan.acl.append(session.update("delete", session.table_entry(program.ACL_TABLE, match)))
    elif mask and (mask != before or not had_entry):
        entry = session.table_entry(program.ACL_TABLE, match, program.ALLOW,
                                    {program.OPS_PARAM: mask})
        plan.acl.append(session.update("modify" if had_entry else "insert", entry))
    plan.write(session)
    change.notes = [n for n in notes if n]
    return change


def _plan_replication(replication: _Replication, host: Host, table: int, before: int, mask: int,
                      sampling: set[int], ports: set[int]) -> list[str | None]:
    """SAMPLE or UPDATE granted (both replicated: SAMPLE n, UPDATE_BATCH): the groups
    of every port `host` is bound to. Both taken away: remove those of its ports (and
    its configured port) no grant samples or updates from."""
    if mask & ALLOW_REPLICATED:
        try:
            return [replication.install(port) for port in sorted(ports)]
        except Refused as exc:
            ops = ",".join(acl_op_names(mask & ALLOW_REPLICATED))
            raise Refused(f"cannot let {host.name} {ops} table {table}: {exc}") from None
    if before & ALLOW_REPLICATED:
        return [replication.remove(port) for port in sorted((ports | {host.port}) - sampling)]
    return []


def _plan_insert_limit(session: P4RuntimeSession, cfg: Config, host: Host, table: int,
                       before: int, mask: int, plan: _Plan) -> list[str | None]:
    """INSERT granted on a table with an insert_limit: the host's limiter. INSERT
    taken away: its limiter goes."""
    limited = (table, _address(host.ip)) in program.read_insert_limits(session)
    limiter = cfg.insert_limiter(host.name, table)
    if mask & ALLOW_INSERT and limiter is not None and not limited:
        plan.add_entries.append(session.update(
            "insert", program.insert_limit_entity(session, limiter)))
        return [f"installed its insert limit ({limiter.max_inserts} per window)"]
    if before & ALLOW_INSERT and not mask & ALLOW_INSERT and limited:
        entry = session.table_entry(program.INSERT_LIMIT_TABLE,
                                    {program.TABLE_ID: table, program.SRC_ADDR: host.ip})
        plan.drop_entries.append(session.update("delete", entry))
        return ["removed its insert limit"]
    return []
