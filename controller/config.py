"""The declarative switch configuration (one YAML file), validated with errors
that name the file, line and field. docs/config.md describes every field."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.contract.protocol import (
    ACL_OPS,
    MAX_BATCH,
    MAX_INSERT_LIMIT,
    NUM_INSERT_LIMITERS,
    NUM_SLOTS,
    NUM_TABLES,
    REPLAY_UDP_PORT,
    RESET_GROUP,
    SAMPLING_MODES,
    acl_mask,
)
from agent.contract.storage import STORAGE_MODES
from controller.target import BMV2, TARGETS, TOFINO, Target

DEFAULT_CONFIG = Path(__file__).resolve().with_name("testbed.yaml")  # every tool's default
MAC_RE = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
ROLES = ("learner", "actor", "replay_server", "host")
MAX_PORT = 510
LIMITERS_PER_TABLE = NUM_INSERT_LIMITERS // NUM_TABLES   # hosts a table's limit covers
# The forms of a Tofino's device config: Stratum's BfPipelineConfig (controller/bf_pipeline.py)
# or the chunks bf_switchd's own P4Runtime server reads (controller/pi_device_config.py).
STRATUM, PI = "stratum", "pi"
DEVICE_CONFIGS = (STRATUM, PI)


class ConfigError(ValueError):
    """A configuration file that cannot be used, naming where and why."""


@dataclass(frozen=True)
class Host:
    name: str
    ip: str
    mac: str
    port: int
    role: str = "host"


@dataclass(frozen=True)
class ReplayTable:
    id: int
    capacity: int = NUM_SLOTS
    min_size: int = 1
    max_batch: int = 128
    mode: str = "prioritized"
    enabled: bool = True
    insert_limit: int | None = None     # INSERTs per host per window; None: unlimited
    storage: str = "auto"               # how payloads are kept (STORAGE_MODES); not on the switch

    @property
    def mode_code(self) -> int:
        return int(SAMPLING_MODES[self.mode])


@dataclass(frozen=True)
class InsertLimiter:
    """One insert_limit entry: `host` may INSERT into `table` `max_inserts` times per
    window, counted in limiter `index` (p4src/include/insert_limit.p4)."""

    index: int
    table: int
    host: str
    ip: str
    max_inserts: int


@dataclass(frozen=True)
class AclRule:
    host: str
    table: int
    ops: tuple[str, ...]

    @property
    def mask(self) -> int:
        return acl_mask(self.ops)


@dataclass(frozen=True)
class Broadcast:
    address: str
    group: int = 1
    members: tuple[str, ...] = ()
    senders: tuple[str, ...] = ()


@dataclass(frozen=True)
class TlsConfig:
    """P4Runtime over TLS, the controller's side: the CA that signed the switch's
    certificate, optionally the controller's own certificate and key (for a
    switch that requires client certificates) and the name to expect in the
    switch's certificate when it is not the address's host."""

    ca_cert: str
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None


@dataclass(frozen=True)
class SwitchConfig:
    address: str = "127.0.0.1:9559"
    device_id: int = 0
    cpu_port: int = BMV2.cpu_port
    tls: TlsConfig | None = None
    target: Target = BMV2
    pipeline: str | None = None   # the compiled program's folder; None: the target's in p4src/build
    device_config: str = STRATUM  # target tofino: the device config's form (DEVICE_CONFIGS)


@dataclass(frozen=True)
class Config:
    switch: SwitchConfig
    vip: str
    vip_mac: str
    hosts: tuple[Host, ...]
    tables: tuple[ReplayTable, ...]
    acl: tuple[AclRule, ...] = ()
    broadcast: Broadcast | None = None
    source: str = field(default="<config>", compare=False)

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise ConfigError(f"{self.source}: no host named '{name}'")

    def table(self, table_id: int) -> ReplayTable:
        for t in self.tables:
            if t.id == table_id:
                return t
        raise ConfigError(f"{self.source}: no replay table {table_id}")

    def insert_limiter(self, host: str, table_id: int) -> InsertLimiter | None:
        """The insert_limit entry of `host` inserting into table `table_id`, None when
        the table has no insert_limit: limiter index = table * LIMITERS_PER_TABLE + the
        host's position in `hosts` (stable while the hosts list is)."""
        t = self.table(table_id)
        if t.insert_limit is None:
            return None
        h = self.host(host)
        return InsertLimiter(t.id * LIMITERS_PER_TABLE + self.hosts.index(h), t.id, h.name, h.ip,
                             t.insert_limit)

    def insert_limiters(self) -> list[InsertLimiter]:
        """The insert_limit entries: one per (table with an insert_limit, host the ACL
        lets insert into it)."""
        inserters = {(rule.host, rule.table) for rule in self.acl if "insert" in rule.ops}
        limiters = (self.insert_limiter(h.name, t.id)
                    for t in sorted(self.tables, key=lambda t: t.id) for h in self.hosts
                    if (h.name, t.id) in inserters)
        return [lim for lim in limiters if lim is not None]


class _Node:
    """A YAML mapping with line numbers, for error messages."""

    def __init__(self, node: yaml.Node, source: str, path: str) -> None:
        self.node, self.source, self.path = node, source, path

    def where(self, node: yaml.Node | None = None) -> str:
        mark = (node or self.node).start_mark
        return f"{self.source}:{mark.line + 1}"

    def fail(self, key: str, message: str, node: yaml.Node | None = None) -> ConfigError:
        name = f"{self.path}.{key}" if self.path else key
        return ConfigError(f"{self.where(node)}: {name}: {message}")

    def mapping(self) -> dict[str, tuple[yaml.Node, yaml.Node, Any]]:
        """{key: (key node, value node, value)}."""
        if not isinstance(self.node, yaml.MappingNode):
            raise ConfigError(f"{self.where()}: {self.path or 'config'}: expected a mapping")
        out = {}
        for key_node, value_node in self.node.value:
            out[key_node.value] = (key_node, value_node,
                                   yaml.safe_load(yaml.serialize(value_node)))
        return out


def _fields(node: _Node, allowed: dict[str, type], required: tuple[str, ...]) -> dict[str, Any]:
    """{key: (value node, value)}, each key allowed and of its type; errors name the
    key's line (a block value starts on the line after it)."""
    items = node.mapping()
    for key, (key_node, _, _) in items.items():
        if key not in allowed:
            raise node.fail(key, f"unknown field (allowed: {', '.join(allowed)})", key_node)
    for key in required:
        if key not in items:
            raise ConfigError(f"{node.where()}: {node.path or 'config'}: missing field '{key}'")
    out = {}
    for key, (key_node, value_node, value) in items.items():
        kind = allowed[key]
        if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
            raise node.fail(key, f"expected an integer, got {value!r}", key_node)
        if kind is bool and not isinstance(value, bool):
            raise node.fail(key, f"expected true or false, got {value!r}", key_node)
        if kind is str and not isinstance(value, str):
            raise node.fail(key, f"expected a string, got {value!r}", key_node)
        if kind is list and not isinstance(value, list):
            raise node.fail(key, f"expected a list, got {value!r}", key_node)
        out[key] = (value_node, value)
    return out


def _check(cond: bool, node: _Node, key: str, message: str, value_node: yaml.Node) -> None:
    if not cond:
        raise node.fail(key, message, value_node)


def _ipv4(node: _Node, key: str, value_node: yaml.Node, value: str) -> str:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        raise node.fail(key, f"'{value}' is not an IPv4 address", value_node) from None
    return value


def _mac(node: _Node, key: str, value_node: yaml.Node, value: str) -> str:
    _check(bool(MAC_RE.match(value)), node, key, f"'{value}' is not a MAC address", value_node)
    return value.lower()


def _items(parent: _Node, key: str, value_node: yaml.Node) -> list[_Node]:
    if not isinstance(value_node, yaml.SequenceNode):
        raise parent.fail(key, "expected a list", value_node)
    return [_Node(n, parent.source, f"{key}[{i}]") for i, n in enumerate(value_node.value)]


def _config_dir(node: _Node) -> Path:
    """The folder paths in the config are relative to."""
    return Path(node.source).parent if node.source != "<config>" else Path()


def _tls(node: _Node) -> TlsConfig:
    f = _fields(node, {"ca_cert": str, "cert": str, "key": str, "server_name": str}, ("ca_cert",))
    _check(("cert" in f) == ("key" in f), node, "cert" if "cert" in f else "key",
           "give both cert and key (the controller's certificate and its key), or neither",
           f.get("cert", f.get("key", f["ca_cert"]))[0])
    base = _config_dir(node)
    paths = {}
    for key in ("ca_cert", "cert", "key"):
        if key in f:
            path = base / f[key][1]
            _check(path.is_file(), node, key, f"cannot read '{path}'", f[key][0])
            paths[key] = str(path)
    return TlsConfig(**paths, server_name=f["server_name"][1] if "server_name" in f else None)


def _switch(node: _Node) -> SwitchConfig:
    f = _fields(node, {"address": str, "device_id": int, "cpu_port": int, "tls": dict,
                       "target": str, "pipeline": str, "device_config": str}, ())
    kwargs = {k: v for k, (_, v) in f.items() if k not in ("tls", "target", "pipeline")}
    if "tls" in f:
        kwargs["tls"] = _tls(_Node(f["tls"][0], node.source, "switch.tls"))
    if "target" in f:
        _check(f["target"][1] in TARGETS, node, "target",
               f"unknown target '{f['target'][1]}' (known: {', '.join(TARGETS)})", f["target"][0])
        kwargs["target"] = TARGETS[f["target"][1]]
    target = kwargs.get("target", BMV2)
    if "cpu_port" in f:
        _check(0 < f["cpu_port"][1] <= 511, node, "cpu_port", "must be a port number 1..511",
               f["cpu_port"][0])
        _check(target is BMV2 or f["cpu_port"][1] == target.cpu_port, node, "cpu_port",
               f"must be {target.cpu_port}, CPU_PORT of the {target.name} build "
               f"(p4src/{target.arch}/arch.p4)", f["cpu_port"][0])
    else:
        kwargs["cpu_port"] = target.cpu_port
    if "device_config" in f:
        value_node, value = f["device_config"]
        _check(target is TOFINO, node, "device_config",
               f"only for target {TOFINO.name} (the {target.name} target's device config has "
               "one form)", value_node)
        _check(value in DEVICE_CONFIGS, node, "device_config",
               f"'{value}' is not one of {', '.join(DEVICE_CONFIGS)}", value_node)
    if "pipeline" in f:
        path = _config_dir(node) / f["pipeline"][1]
        _check(path.is_dir(), node, "pipeline", f"no folder '{path}'", f["pipeline"][0])
        kwargs["pipeline"] = str(path)
    if "address" in f:
        _check(":" in f["address"][1], node, "address", "expected HOST:PORT", f["address"][0])
    return SwitchConfig(**kwargs)


def _host(node: _Node) -> Host:
    f = _fields(node, {"name": str, "ip": str, "mac": str, "port": int, "role": str},
                ("name", "ip", "mac", "port"))
    ip = _ipv4(node, "ip", *f["ip"])
    mac = _mac(node, "mac", *f["mac"])
    port_node, port = f["port"]
    _check(1 <= port <= MAX_PORT, node, "port", f"must be 1..{MAX_PORT}", port_node)
    role = f.get("role", (None, "host"))[1]
    if "role" in f:
        _check(role in ROLES, node, "role", f"'{role}' is not one of {', '.join(ROLES)}",
               f["role"][0])
    return Host(f["name"][1], ip, mac, port, role)


def table_problems(t: ReplayTable) -> list[tuple[str, str]]:
    """(field, problem) for every out-of-range field of a table config."""
    problems = []
    if not 0 <= t.id < NUM_TABLES:
        problems.append(("id", f"must be 0..{NUM_TABLES - 1}"))
    if not 1 <= t.capacity <= NUM_SLOTS:
        problems.append(("capacity", f"must be 1..{NUM_SLOTS}"))
    if not 0 <= t.min_size <= t.capacity:
        problems.append(("min_size", "must be 0..capacity"))
    if not 1 <= t.max_batch <= MAX_BATCH:
        problems.append(("max_batch", f"must be 1..{MAX_BATCH}"))
    if t.mode not in SAMPLING_MODES:
        problems.append(("mode", f"'{t.mode}' is not one of {', '.join(SAMPLING_MODES)}"))
    if t.storage not in STORAGE_MODES:
        problems.append(("storage", f"'{t.storage}' is not one of {', '.join(STORAGE_MODES)}"))
    if t.insert_limit is not None and not 0 <= t.insert_limit <= MAX_INSERT_LIMIT:
        problems.append(("insert_limit", f"must be 0..{MAX_INSERT_LIMIT} INSERTs per host per "
                                         "window (omit it for no limit)"))
    return problems


def validate_table(t: ReplayTable, where: str) -> ReplayTable:
    """Raise ConfigError naming the first bad field of a table config."""
    for key, problem in table_problems(t):
        raise ConfigError(f"{where}: {key}: {problem}")
    return t


def _table(node: _Node) -> ReplayTable:
    f = _fields(node, {"id": int, "capacity": int, "min_size": int, "max_batch": int,
                       "mode": str, "enabled": bool, "insert_limit": int, "storage": str},
                ("id",))
    t = ReplayTable(**{k: v for k, (_, v) in f.items()})
    for key, problem in table_problems(t):
        raise node.fail(key, problem, f.get(key, f["id"])[0])
    return t


def parse(text: str, source: str = "<config>") -> Config:
    """Parse and validate a configuration document."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if root is None:
        raise ConfigError(f"{source}: the file is empty")
    top = _Node(root, source, "")
    f = _fields(top, {"switch": dict, "replay": dict, "hosts": list, "tables": list,
                      "acl": list, "broadcast": dict}, ("replay", "hosts", "tables"))
    switch = _switch(_Node(f["switch"][0], source, "switch")) if "switch" in f else SwitchConfig()

    replay = _Node(f["replay"][0], source, "replay")
    rf = _fields(replay, {"vip": str, "vip_mac": str, "udp_port": int}, ("vip", "vip_mac"))
    vip = _ipv4(replay, "vip", *rf["vip"])
    vip_mac = _mac(replay, "vip_mac", *rf["vip_mac"])
    if "udp_port" in rf:
        _check(rf["udp_port"][1] == REPLAY_UDP_PORT, replay, "udp_port",
               f"the data plane listens on {REPLAY_UDP_PORT} (a compile-time constant)",
               rf["udp_port"][0])

    hosts = [_host(n) for n in _items(top, "hosts", f["hosts"][0])]
    seen: dict[str, str] = {}
    for n, h in zip(_items(top, "hosts", f["hosts"][0]), hosts, strict=True):
        for key, value in (("name", h.name), ("ip", h.ip), ("mac", h.mac), ("port", str(h.port))):
            tag = f"{key}={value}"
            if tag in seen:
                raise n.fail(key, f"'{value}' is already used by host {seen[tag]}", n.node)
            seen[tag] = h.name
        if h.ip == vip:
            raise n.fail("ip", "a host cannot use the replay VIP", n.node)
        if h.port == switch.cpu_port:
            raise n.fail("port", "the CPU port cannot be a host port", n.node)

    tables = [_table(n) for n in _items(top, "tables", f["tables"][0])]
    ids = [t.id for t in tables]
    if len(set(ids)) != len(ids):
        raise top.fail("tables", f"duplicate table id in {ids}", f["tables"][0])

    names = {h.name for h in hosts}
    acl = []
    for n in _items(top, "acl", f["acl"][0]) if "acl" in f else []:
        af = _fields(n, {"host": str, "table": int, "ops": list}, ("host", "table", "ops"))
        _check(af["host"][1] in names, n, "host", f"no host named '{af['host'][1]}'", af["host"][0])
        _check(af["table"][1] in ids, n, "table", f"no replay table {af['table'][1]}",
               af["table"][0])
        ops = af["ops"][1]
        bad = [op for op in ops if op not in ACL_OPS]
        _check(not bad and bool(ops), n, "ops", f"ops must be a non-empty list of "
               f"{', '.join(ACL_OPS)} (got {ops})", af["ops"][0])
        acl.append(AclRule(af["host"][1], af["table"][1], tuple(ops)))

    if any(t.insert_limit is not None for t in tables) and len(hosts) > LIMITERS_PER_TABLE:
        raise top.fail("hosts", f"at most {LIMITERS_PER_TABLE} hosts when a table has an "
                       "insert_limit (one limiter per table and host)", f["hosts"][0])

    broadcast = None
    if "broadcast" in f:
        bn = _Node(f["broadcast"][0], source, "broadcast")
        bf = _fields(bn, {"address": str, "group": int, "members": list, "senders": list},
                     ("address",))
        address = _ipv4(bn, "address", *bf["address"])
        members = tuple(bf["members"][1]) if "members" in bf else tuple(
            h.name for h in hosts if h.role == "actor")
        senders = tuple(bf["senders"][1]) if "senders" in bf else tuple(
            h.name for h in hosts if h.role == "learner")
        for key, listed in (("members", members), ("senders", senders)):
            for m in listed:
                _check(m in names, bn, key, f"no host named '{m}'",
                       bf.get(key, bf["address"])[0])
        group = bf["group"][1] if "group" in bf else 1
        _check(1 <= group < RESET_GROUP, bn, "group",
               f"must be 1..{RESET_GROUP - 1} (group {RESET_GROUP} and up replicate replay "
               "requests)", bf.get("group", bf["address"])[0])
        broadcast = Broadcast(address, group, members, senders)

    return Config(switch, vip, vip_mac, tuple(hosts), tuple(tables), tuple(acl), broadcast, source)


def load(path: str | Path) -> Config:
    """Read and validate a configuration file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return parse(text, str(path))
