"""The replay program as the controller sees it: where its compiled artifacts
are, the names of its tables, actions, action parameters, match fields and
counters, and its entries built and parsed by those names (P4Info names, never
ids or positions). When p4src/ renames something, this is the one controller
module that changes.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from agent.contract.cli_args import REPO
from agent.contract.protocol import mode_name
from controller import bf_pipeline, pi_device_config
from controller.config import PI, STRATUM, Config, InsertLimiter, ReplayTable
from controller.p4info import P4InfoIndex, decode_value
from controller.p4runtime_proto import p4runtime_pb2
from controller.p4runtime_session import P4RuntimeSession
from controller.replication import sample_bases
from controller.target import TNA_MODEL, TOFINO

# --- the compiled program (bmv2.artifacts builds and checks it) ----------------------------

BUILD = REPO / "p4src" / "build"
TOFINO_BUILD = BUILD / "tofino"
TNA_BUILD = BUILD / "tna"                      # the TNA program as the TNA model runs it
TNA_IR = TNA_BUILD / "replay_tna.ir.json.gz"   # p4test's IR (bmv2.tna_artifacts)


@dataclass(frozen=True)
class Artifacts:
    """Paths of the program p4c-bm2-ss compiled (bmv2 and the Python switch)."""

    bmv2_json: Path
    p4info: Path

    @classmethod
    def in_dir(cls, directory: str | Path) -> Artifacts:
        """The artifacts p4c writes into `directory`."""
        d = Path(directory)
        return cls(d / "replay.json", d / "replay.p4info.txtpb")

    def device_config(self) -> bytes:
        """P4Runtime's p4_device_config: the bmv2 JSON."""
        return self.bmv2_json.read_bytes()

    def device_config_file(self) -> Path:
        return self.bmv2_json

    def missing(self) -> str | None:
        """Why the program cannot be pushed, or None."""
        gone = [p for p in (self.p4info, self.bmv2_json) if not p.is_file()]
        return f"{gone[0]} is missing (`make p4` compiles it)" if gone else None


@dataclass(frozen=True)
class TofinoArtifacts:
    """The program bf-p4c compiled for Tofino (`p4c --target tofino --arch tna -o
    DIR --p4runtime-files DIR/replay_tna.p4info.txtpb`), pushed in the device
    config form `form` (config.DEVICE_CONFIGS)."""

    directory: Path
    form: str = STRATUM

    @property
    def p4info(self) -> Path:
        return self.directory / "replay_tna.p4info.txtpb"

    def device_config(self) -> bytes:
        """P4Runtime's p4_device_config as Stratum takes it (controller/bf_pipeline.py)
        or, form pi, as bf_switchd's P4Runtime server does (controller/pi_device_config.py)."""
        if self.form == PI:
            return pi_device_config.device_config(self.directory)
        return bf_pipeline.device_config(self.directory)

    def device_config_file(self) -> Path:
        """The device config written into the build folder: where Stratum's
        bf_pipeline_builder would put it, or beside it for bf_switchd."""
        name = "pi_device_config.bin" if self.form == PI else "bf_pipeline_config.pb.bin"
        path = self.directory / name
        path.write_bytes(self.device_config())
        return path

    def missing(self) -> str | None:
        """Why the program cannot be pushed, or None."""
        if not self.p4info.is_file():
            return (f"{self.p4info} is missing (compile p4src/replay_tna.p4 with bf-p4c: "
                    "docs/hardware.md)")
        return None


@dataclass(frozen=True)
class TnaModelArtifacts:
    """The TNA program for the Python switch's TNA model: p4test's IR of it, pushed as
    the device config, with the P4Info bf-p4c wrote (the names a Tofino serves)."""

    ir: Path = TNA_IR
    p4info: Path = TOFINO_BUILD / "replay_tna.p4info.txtpb"

    def device_config(self) -> bytes:
        """P4Runtime's p4_device_config: the gzipped IR."""
        return self.ir.read_bytes()

    def device_config_file(self) -> Path:
        return self.ir

    def missing(self) -> str | None:
        """Why the program cannot be pushed, or None."""
        gone = [p for p in (self.p4info, self.ir) if not p.is_file()]
        return f"{gone[0]} is missing (`make p4` compiles it)" if gone else None


DEFAULT = Artifacts.in_dir(BUILD)
Pipeline = Artifacts | TofinoArtifacts | TnaModelArtifacts   # .p4info, .device_config()


def artifacts_for(cfg: Config) -> Pipeline:
    """The compiled program `cfg`'s switch runs: its `pipeline` folder, else the target's
    folder in p4src/build."""
    if cfg.switch.target is TOFINO:
        return TofinoArtifacts(Path(cfg.switch.pipeline) if cfg.switch.pipeline else TOFINO_BUILD,
                               cfg.switch.device_config)
    if cfg.switch.target is TNA_MODEL:
        return TnaModelArtifacts()
    return Artifacts.in_dir(cfg.switch.pipeline) if cfg.switch.pipeline else DEFAULT


# --- names ---------------------------------------------------------------------------------

IN, EG = "ReplayIngress.", "ReplayEgress."

# Tables the controller manages (deploy makes their entries equal to the config's).
IPV4_TABLE = IN + "ipv4.ipv4_lpm"
ARP_TABLE = IN + "arp.arp_responder"
VIP_TABLE = IN + "replay_vip"
CONFIG_TABLE = IN + "replay.replay_table_config"
ACL_TABLE = IN + "replay.replay_acl"
SAMPLE_REPLICATION_TABLE = IN + "replay.sample_replication"
REWRITE_TABLE = EG + "broadcast.broadcast_rewrite"
SOURCE_GUARD_TABLE = IN + "source.source_guard"
BROADCAST_SENDERS_TABLE = IN + "ipv4.broadcast_senders"
INSERT_LIMIT_TABLE = IN + "replay.limiter.insert_limit"
TABLES = {
    "ipv4": IPV4_TABLE,
    "arp": ARP_TABLE,
    "vip": VIP_TABLE,
    "config": CONFIG_TABLE,
    "acl": ACL_TABLE,
    "sample_replication": SAMPLE_REPLICATION_TABLE,
    "rewrite": REWRITE_TABLE,
    "source_guard": SOURCE_GUARD_TABLE,
    "broadcast_senders": BROADCAST_SENDERS_TABLE,
    "insert_limit": INSERT_LIMIT_TABLE,
}
MANAGED_TABLES = tuple(TABLES.values())

# Actions, and the parameters the controller sets.
FORWARD = IN + "ipv4.forward"                 # port
BROADCAST = IN + "ipv4.broadcast"             # group
MAY_BROADCAST = IN + "ipv4.may_broadcast"
ARP_ANSWER = IN + "arp.answer"                # mac
VIP_HIT = IN + "replay_vip_hit"
CONFIGURE = IN + "replay.configure"           # CONFIG_PARAMS
ALLOW = IN + "replay.allow"                   # ops (agent.contract.protocol.ACL_OPS bits)
REPLICATE = IN + "replay.replicate"           # group_base
SOURCE_BOUND = IN + "source.bound"
LIMIT = IN + "replay.limiter.limit"          # index, max_inserts
READDRESS = EG + "broadcast.readdress"        # mac, ip
CONFIG_PARAMS = ("enabled", "capacity", "min_size", "max_batch", "default_mode")
OPS_PARAM = "ops"

# Match fields.
TABLE_ID = "hdr.replay.table_id"
SRC_ADDR = "hdr.ipv4.src_addr"
DST_ADDR = "hdr.ipv4.dst_addr"
SRC_MAC = "hdr.ethernet.src_addr"
ARP_TPA = "hdr.arp.tpa"
INGRESS_PORT = "ingress_port"
EGRESS_PORT = "egress_port"
ORIG_PORT = "meta.orig_port"

# Counters (controller.stats reads them).
REQUESTS_COUNTER = EG + "replay.replay_requests"
SAMPLED_COUNTER = EG + "replay.replay_sampled"
NOT_READY_COUNTER = EG + "replay.replay_not_ready"
FORGED_COUNTER = IN + "source.forged_sources"
BROADCAST_COUNTER = IN + "ipv4.refused_broadcasts"
RATE_LIMITED_COUNTER = IN + "replay.limiter.rate_limited"

# --- building entries ----------------------------------------------------------------------


def config_params(table: ReplayTable) -> dict[str, int]:
    """The CONFIGURE parameters of a table's config."""
    return {"enabled": int(table.enabled), "capacity": table.capacity,
            "min_size": table.min_size, "max_batch": table.max_batch,
            "default_mode": table.mode_code}


def config_match(table_id: int) -> dict[str, int]:
    return {TABLE_ID: table_id}


def acl_match(ip: str, table_id: int) -> dict[str, int | str]:
    return {SRC_ADDR: ip, TABLE_ID: table_id}


def sample_replication_entity(session: P4RuntimeSession, port: int,
                              base: int) -> p4runtime_pb2.Entity:
    """SAMPLE n from `port` goes to group `base` + 2^k (controller/replication.py)."""
    return session.table_entry(SAMPLE_REPLICATION_TABLE, {ORIG_PORT: port}, REPLICATE,
                               {"group_base": base})


def insert_limit_entity(session: P4RuntimeSession, lim: InsertLimiter) -> p4runtime_pb2.Entity:
    return session.table_entry(INSERT_LIMIT_TABLE, {TABLE_ID: lim.table, SRC_ADDR: lim.ip}, LIMIT,
                               {"index": lim.index, "max_inserts": lim.max_inserts})


def table_entities(session: P4RuntimeSession, cfg: Config) -> list[p4runtime_pb2.Entity]:
    """Every table entry the config asks for."""
    e = session.table_entry
    out = []
    for h in cfg.hosts:
        out.append(e(SOURCE_GUARD_TABLE, {INGRESS_PORT: h.port, SRC_MAC: h.mac, SRC_ADDR: h.ip},
                     SOURCE_BOUND))
        out.append(e(IPV4_TABLE, {DST_ADDR: (h.ip, 32)}, FORWARD, {"port": h.port}))
        out.append(e(ARP_TABLE, {ARP_TPA: h.ip}, ARP_ANSWER, {"mac": h.mac}))
    out.append(e(ARP_TABLE, {ARP_TPA: cfg.vip}, ARP_ANSWER, {"mac": cfg.vip_mac}))
    out.append(e(VIP_TABLE, {DST_ADDR: cfg.vip}, VIP_HIT))
    for t in cfg.tables:
        out.append(e(CONFIG_TABLE, config_match(t.id), CONFIGURE, config_params(t)))
    masks: dict[tuple[str, int], int] = {}
    for rule in cfg.acl:
        key = (cfg.host(rule.host).ip, rule.table)
        masks[key] = masks.get(key, 0) | rule.mask
    for (ip, table), mask in sorted(masks.items()):
        out.append(e(ACL_TABLE, acl_match(ip, table), ALLOW, {OPS_PARAM: mask}))
    out += [insert_limit_entity(session, lim) for lim in cfg.insert_limiters()]
    out += [sample_replication_entity(session, port, base)
            for port, base in sample_bases(cfg).items()]
    if cfg.broadcast:
        out.append(e(IPV4_TABLE, {DST_ADDR: (cfg.broadcast.address, 32)}, BROADCAST,
                     {"group": cfg.broadcast.group}))
        for port in sorted({cfg.host(name).port for name in cfg.broadcast.senders}):
            out.append(e(BROADCAST_SENDERS_TABLE, {INGRESS_PORT: port}, MAY_BROADCAST))
        for name in cfg.broadcast.members:
            h = cfg.host(name)
            out.append(e(REWRITE_TABLE, {EGRESS_PORT: h.port}, READDRESS,
                         {"mac": h.mac, "ip": h.ip}))
    return out


# --- parsing entries -----------------------------------------------------------------------


def match_values(info: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> dict[str, int]:
    """{match field name: value} of an entry's exact match fields."""
    names = {mf.id: mf.name for mf in info.match_fields(info.name_of(entry.table_id))}
    return {names[m.field_id]: decode_value(m.exact.value) for m in entry.match
            if m.WhichOneof("field_match_type") == "exact"}


def param_values(info: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> dict[str, int]:
    """{parameter name: value} of an entry's action."""
    action = entry.action.action
    names = {p.id: p.name for p in info.action(info.name_of(action.action_id)).params}
    return {names[p.param_id]: decode_value(p.value) for p in action.params}


@dataclass(frozen=True)
class ConfigEntry:
    """One CONFIG_TABLE entry as the switch holds it (default_mode as the number)."""

    table: int
    enabled: bool
    capacity: int
    min_size: int
    max_batch: int
    default_mode: int

    @property
    def mode(self) -> str:
        """The mode's name ('uniform', 'prioritized'), or the number if it has none."""
        return mode_name(self.default_mode)


def read_configs(session: P4RuntimeSession) -> dict[int, ConfigEntry]:
    """{table id: its config entry} as the switch holds them."""
    out = {}
    for entry in session.read_table(CONFIG_TABLE):
        table = match_values(session.p4info, entry)[TABLE_ID]
        p = param_values(session.p4info, entry)
        out[table] = ConfigEntry(table, bool(p["enabled"]), p["capacity"], p["min_size"],
                                 p["max_batch"], p["default_mode"])
    return out


def read_acl(session: P4RuntimeSession) -> dict[tuple[int, int], int]:
    """{(source IPv4 address as an int, table id): ops mask} of every ACL entry."""
    out = {}
    for entry in session.read_table(ACL_TABLE):
        m = match_values(session.p4info, entry)
        out[(m[SRC_ADDR], m[TABLE_ID])] = param_values(session.p4info, entry)[OPS_PARAM]
    return out


def read_sample_replication(session: P4RuntimeSession) -> dict[int, int]:
    """{port: group base} of every sample_replication entry."""
    out = {}
    for entry in session.read_table(SAMPLE_REPLICATION_TABLE):
        port = match_values(session.p4info, entry)[ORIG_PORT]
        out[port] = param_values(session.p4info, entry)["group_base"]
    return out


def read_bound_ports(session: P4RuntimeSession) -> dict[int, set[int]]:
    """{source IPv4 address as an int: the ports source_guard lets it come from}."""
    out: dict[int, set[int]] = {}
    for entry in session.read_table(SOURCE_GUARD_TABLE):
        m = match_values(session.p4info, entry)
        out.setdefault(m[SRC_ADDR], set()).add(m[INGRESS_PORT])
    return out


def read_insert_limits(session: P4RuntimeSession) -> set[tuple[int, int]]:
    """(table id, source IPv4 address as an int) of every insert_limit entry."""
    return {(m[TABLE_ID], m[SRC_ADDR]) for m in
            (match_values(session.p4info, e) for e in session.read_table(INSERT_LIMIT_TABLE))}


def ip_text(address: int) -> str:
    return str(ipaddress.IPv4Address(address))
