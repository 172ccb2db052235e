"""Deploy a Config onto a switch: push the pipeline if needed, then make the
switch's entries, multicast groups and clone sessions equal to the config's,
changing only what differs (a second deploy of the same config changes nothing).
A config that lowers a table's capacity below the experiences the table holds is
refused (controller/refusals.py) before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.config import Config, ConfigError
from controller.inband import InbandChannel
from controller.p4info import P4InfoIndex, decode_value
from controller.p4runtime_proto import p4info_pb2, p4runtime_pb2
from controller.p4runtime_session import P4RuntimeSession
from controller.program import (
    MANAGED_TABLES,
    Pipeline,
    artifacts_for,
    read_configs,
    table_entities,
)
from controller.refusals import refuse_capacity_cut
from controller.replication import wanted_groups


@dataclass
class DeployReport:
    """What a deploy changed."""

    pipeline_pushed: bool = False
    inserted: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.pipeline_pushed or bool(self.inserted or self.modified or self.deleted)

    def summary(self) -> str:
        if not self.changed:
            return "switch already matches the config: nothing changed"
        parts = []
        if self.pipeline_pushed:
            parts.append("pipeline pushed")
        for name, items in (("inserted", self.inserted), ("modified", self.modified),
                            ("deleted", self.deleted)):
            if items:
                parts.append(f"{len(items)} {name}")
        return ", ".join(parts)


def _match_key(entry: p4runtime_pb2.TableEntry) -> tuple:
    fields = []
    for fm in sorted(entry.match, key=lambda m: m.field_id):
        kind = fm.WhichOneof("field_match_type")
        msg = getattr(fm, kind)
        values = tuple(decode_value(v) if isinstance(v, bytes) else v for _, v in msg.ListFields())
        fields.append((fm.field_id, kind, *values))
    return (entry.table_id, entry.priority, tuple(fields))


def _action_key(entry: p4runtime_pb2.TableEntry) -> tuple:
    a = entry.action.action
    return (a.action_id, tuple(sorted((p.param_id, decode_value(p.value)) for p in a.params)))


def _describe(session: P4RuntimeSession, entry: p4runtime_pb2.TableEntry) -> str:
    return f"{session.p4info.name_of(entry.table_id)} {_match_key(entry)[2]}"


def sync_tables(session: P4RuntimeSession, cfg: Config, report: DeployReport) -> None:
    """Insert, modify and delete entries of the managed tables to match the config."""
    desired = {_match_key(ent.table_entry): ent.table_entry for ent in table_entities(session, cfg)}
    current = {}
    for table in MANAGED_TABLES:
        for entry in session.read_table(table):
            if not entry.is_default_action:
                current[_match_key(entry)] = entry
    updates = []
    for key, entry in desired.items():
        have = current.get(key)
        if have is None:
            updates.append(session.update("insert", p4runtime_pb2.Entity(table_entry=entry)))
            report.inserted.append(_describe(session, entry))
        elif _action_key(have) != _action_key(entry):
            updates.append(session.update("modify", p4runtime_pb2.Entity(table_entry=entry)))
            report.modified.append(_describe(session, entry))
    for key, entry in current.items():
        if key not in desired:
            stripped = p4runtime_pb2.TableEntry(table_id=entry.table_id, priority=entry.priority)
            stripped.match.extend(entry.match)
            updates.append(session.update("delete", p4runtime_pb2.Entity(table_entry=stripped)))
            report.deleted.append(_describe(session, entry))
    session.write(updates)


def sync_replication(session: P4RuntimeSession, cfg: Config, report: DeployReport) -> None:
    """The multicast groups of controller/replication.py, in one write."""
    have = session.read_multicast_groups()
    wanted = wanted_groups(cfg)
    updates = []
    for gid, replicas in sorted(wanted.items()):
        if have.get(gid) == replicas:
            continue
        kind = "insert" if gid not in have else "modify"
        updates.append(session.update(kind, session.multicast_group_entity(gid, replicas)))
        (report.inserted if kind == "insert" else report.modified).append(f"multicast group {gid}")
    for gid in sorted(set(have) - set(wanted)):
        updates.append(session.update("delete", session.multicast_group_entity(gid, [])))
        report.deleted.append(f"multicast group {gid}")
    session.write(updates)


def same_p4info(a: p4info_pb2.P4Info, b: p4info_pb2.P4Info) -> bool:
    """Whether two P4Infos are one, compared as bytes: bf-p4c's carries `Any` fields of
    types this process does not know (`barefoot.PortMetadata`), which protobuf's `==`
    would have to unpack."""
    return a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


def ensure_pipeline(session: P4RuntimeSession, artifacts: Pipeline) -> bool:
    """Push the pipeline unless the switch already runs this P4Info; True if pushed."""
    problem = artifacts.missing()
    if problem:
        raise ConfigError(f"no compiled program to push: {problem}")
    wanted = P4InfoIndex.from_file(artifacts.p4info)
    running = session.get_pipeline()
    if running is not None and same_p4info(running.p4info, wanted.p4info):
        session.p4info = wanted
        return False
    session.set_pipeline(artifacts.p4info, artifacts.device_config())
    return True


def check_capacity_cuts(session: P4RuntimeSession, cfg: Config) -> None:
    """Refuse (Refused) a config that lowers the capacity of a table that holds more
    experiences than the new capacity (their sizes read in band, for those tables only)."""
    running = read_configs(session)
    cuts = [t for t in cfg.tables if t.id in running and t.capacity < running[t.id].capacity]
    if cuts:
        inband = InbandChannel(session, cfg.vip, cfg.vip_mac, timeout=session.timeout)
        for t in cuts:
            refuse_capacity_cut(inband, t.id, t.capacity)


def deploy(session: P4RuntimeSession, cfg: Config,
           artifacts: Pipeline | None = None) -> DeployReport:
    """Make the switch match `cfg` (its target's compiled program unless `artifacts`
    names another); return what changed."""
    report = DeployReport(pipeline_pushed=ensure_pipeline(session, artifacts or artifacts_for(cfg)))
    if not report.pipeline_pushed:
        check_capacity_cuts(session, cfg)
    sync_tables(session, cfg, report)
    sync_replication(session, cfg, report)
    return report
