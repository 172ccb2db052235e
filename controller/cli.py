"""replayctl: operate the in-network replay over P4Runtime.

Exit codes: 0 done, 1 the operation failed or did not verify, 2 bad usage or
config, 3 switch unreachable, 4 no pipeline loaded, 5 not the primary controller.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent.protocol import Op
from controller import config as config_mod
from controller import snapshot
from controller.config import OPS, AclRule, Config, ConfigError, ReplayTable
from controller.deploy import deploy
from controller.inband import InbandChannel, InbandTimeout
from controller.p4info import P4InfoError, P4InfoIndex, decode_value
from controller.p4runtime_session import (
    NotPrimary,
    P4RuntimeError,
    P4RuntimeSession,
    SwitchUnreachable,
)
from controller.recovery import Snapshotter, redeploy_and_restore
from controller.stats import OTHER_TABLE, read_stats

EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_NO_PIPELINE, EXIT_NOT_PRIMARY = 1, 2, 3, 4, 5
DEFAULT_ELECTION_ID = 100
STAT_OPS = (Op.INSERT.name, Op.SAMPLE.name, Op.UPDATE.name)


class NoPipeline(RuntimeError):
    """The switch runs no pipeline yet."""


def progress_bar(label: str) -> Callable[[int, int], None]:
    """A one-line progress bar on stderr."""
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) if n and c.replace(".", "").isdigit() else c.ljust(w)
                        for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


class Context:
    """The config, the session and the in-band channel of one replayctl call."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.cfg: Config = config_mod.load(args.config)
        if args.address:
            self.cfg = replace(self.cfg, switch=replace(self.cfg.switch, address=args.address))
        self.election_id, self.timeout = args.election_id, args.timeout
        self.new_session()

    def new_session(self) -> None:
        """A fresh, not yet connected session (after the old one's switch went away)."""
        self.session = P4RuntimeSession(self.cfg.switch.address, self.cfg.switch.device_id,
                                        election_id=self.election_id, timeout=self.timeout,
                                        tls=self.cfg.switch.tls)
        self.connected = False
        self._inband: InbandChannel | None = None

    def connect(self, need_pipeline: bool = True) -> P4RuntimeSession:
        self.session.connect()
        self.connected = True
        if need_pipeline:
            running = self.session.get_pipeline()
            if running is None:
                raise NoPipeline(f"{self.cfg.switch.address} runs no pipeline: "
                                 "run `replayctl deploy` first")
            self.session.p4info = P4InfoIndex(running.p4info)
        return self.session

    def require_primary(self) -> None:
        if not self.session.is_primary:
            raise NotPrimary(f"another controller with a higher election id is primary "
                             f"(ours is {self.session.election_id}); use --election-id")

    @property
    def inband(self) -> InbandChannel:
        if self._inband is None:
            self.require_primary()
            self._inband = InbandChannel(self.session, self.cfg.vip, self.cfg.vip_mac,
                                         timeout=self.session.timeout)
        return self._inband

    def table_ids(self, only: list[int] | None) -> list[int]:
        ids = [t.id for t in self.cfg.tables]
        for t in only or []:
            if t not in ids:
                raise ConfigError(f"{self.cfg.source}: no replay table {t}")
        return only or ids


def cmd_deploy(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect(need_pipeline=False)
    ctx.require_primary()
    report = deploy(ctx.session, ctx.cfg)
    print(report.summary())
    if args.verbose:
        for kind in ("inserted", "modified", "deleted"):
            for item in getattr(report, kind):
                print(f"  {kind}: {item}")
    return 0


def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    role = "primary" if ctx.session.is_primary else "backup"
    print(f"switch {ctx.cfg.switch.address} device {ctx.cfg.switch.device_id}: pipeline loaded, "
          f"this controller is {role} (election id {ctx.session.election_id})")
    entries = ctx.session.read_table("ReplayIngress.replay.replay_table_config")
    configs = {decode_value(e.match[0].exact.value): [decode_value(x.value)
                                                      for x in e.action.action.params]
               for e in entries}
    # Occupancy is read in-band (PacketOut/PacketIn), which only the primary may do.
    stats = read_stats(ctx.session, sorted(configs), ctx.inband) if ctx.session.is_primary else {}
    rows = []
    for key, p in sorted(configs.items()):
        size = stats[key].size if key in stats and stats[key].size is not None else "-"
        rows.append([key, "yes" if p[0] else "no", p[1], p[2], p[3],
                     {1: "uniform", 2: "prioritized"}.get(p[4], p[4]),
                     size if size == "-" else f"{size}/{p[1]}"])
    print_table(["table", "enabled", "capacity", "min_size", "max_batch", "mode", "occupancy"],
                rows)
    return 0


def _stats_rows(ctx: Context, tables: list[int]) -> tuple[list[list[object]], dict]:
    inband = ctx.inband if ctx.session.is_primary else None
    stats = read_stats(ctx.session, tables, inband)
    rows = []
    for t, s in sorted(stats.items()):
        if t == OTHER_TABLE and not s.refused and not s.ok:
            continue
        refused = ", ".join(f"{k}={v}" for k, v in sorted(s.refused.items())) or "-"
        rows.append(["other" if t == OTHER_TABLE else t, *(s.ok.get(op, 0) for op in STAT_OPS),
                     "-" if s.size is None else s.size,
                     "-" if s.total_priority is None else f"{s.total_priority:.2f}", refused])
    return rows, {t: s.as_dict() for t, s in stats.items()}


def cmd_stats(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    tables = ctx.table_ids(args.table)
    deadline = time.monotonic() + args.duration
    while True:
        rows, raw = _stats_rows(ctx, tables)
        if args.json:
            print(json.dumps(raw, indent=1))
        else:
            if args.watch:
                print("\x1b[2J\x1b[H" + time.strftime("%H:%M:%S"))
            print_table(["table", "inserts", "samples", "updates", "size", "total_priority",
                         "refused"], rows)
        if not args.watch or time.monotonic() >= deadline:
            return 0
        time.sleep(args.watch)


def _config_params(table: ReplayTable) -> dict[str, int]:
    return {"enabled": int(table.enabled), "capacity": table.capacity,
            "min_size": table.min_size, "max_batch": table.max_batch,
            "default_mode": table.mode_code}


def cmd_table_set(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    ctx.require_primary()
    current = ctx.cfg.table(args.id)
    for e in ctx.session.read_table("ReplayIngress.replay.replay_table_config"):
        if decode_value(e.match[0].exact.value) == args.id:
            p = [decode_value(x.value) for x in e.action.action.params]
            mode = {1: "uniform", 2: "prioritized"}.get(p[4], current.mode)
            current = ReplayTable(args.id, p[1], p[2], p[3], mode, bool(p[0]))
    changes = {k: v for k, v in (("capacity", args.capacity), ("min_size", args.min_size),
                                 ("max_batch", args.max_batch), ("mode", args.mode),
                                 ("enabled", args.enabled)) if v is not None}
    if not changes:
        raise ConfigError("table set: nothing to change (give --capacity, --min-size, "
                          "--max-batch, --mode, --enable or --disable)")
    validated = config_mod.validate_table(replace(current, **changes), f"table set {args.id}")
    ctx.session.modify_entry("ReplayIngress.replay.replay_table_config",
                             {"hdr.replay.table_id": args.id}, "ReplayIngress.replay.configure",
                             _config_params(validated))
    print(f"table {args.id}: " + ", ".join(f"{k}={v}" for k, v in sorted(changes.items())))
    return 0


ACL_TABLE = "ReplayIngress.replay.replay_acl"


def _acl_entries(ctx: Context) -> dict[tuple[int, int], int]:
    out = {}
    for e in ctx.session.read_table(ACL_TABLE):
        fields = {m.field_id: decode_value(m.exact.value) for m in e.match}
        out[(fields[1], fields[2])] = decode_value(e.action.action.params[0].value)
    return out


def cmd_acl(ctx: Context, args: argparse.Namespace) -> int:
    import ipaddress

    ctx.connect()
    names = {int(ipaddress.IPv4Address(h.ip)): h.name for h in ctx.cfg.hosts}
    current = _acl_entries(ctx)
    if args.acl_command == "list":
        rows = [[names.get(ip, str(ipaddress.IPv4Address(ip))), str(ipaddress.IPv4Address(ip)),
                 table, ",".join(op for op, bit in OPS.items() if mask & bit)]
                for (ip, table), mask in sorted(current.items())]
        print_table(["host", "ip", "table", "ops"], rows)
        return 0
    ctx.require_primary()
    host = ctx.cfg.host(args.host)
    ctx.table_ids([args.table])
    key = (int(ipaddress.IPv4Address(host.ip)), args.table)
    match = {"hdr.ipv4.src_addr": host.ip, "hdr.replay.table_id": args.table}
    if args.acl_command == "add":
        rule = AclRule(host.name, args.table, tuple(args.ops))
        bad = [op for op in args.ops if op not in OPS]
        if bad:
            raise ConfigError(f"acl add: unknown op(s) {bad} (ops: {', '.join(OPS)})")
        mask = current.get(key, 0) | rule.mask
        if key in current:
            ctx.session.modify_entry(ACL_TABLE, match, "ReplayIngress.replay.allow", {"ops": mask})
        else:
            ctx.session.insert_entry(ACL_TABLE, match, "ReplayIngress.replay.allow", {"ops": mask})
        print(f"{host.name} may now {','.join(op for op, b in OPS.items() if mask & b)} "
              f"table {args.table}")
        return 0
    if key not in current:
        print(f"{host.name} has no ACL entry for table {args.table}", file=sys.stderr)
        return EXIT_FAILED
    ctx.session.delete_entry(ACL_TABLE, match)
    print(f"{host.name} may no longer use table {args.table}")
    return 0


def cmd_snapshot(ctx: Context, args: argparse.Namespace) -> int:
    tables = ctx.table_ids(args.table)
    if args.every is not None:
        return _snapshot_every(ctx, args, tables)
    ctx.connect()
    snaps = [snapshot.snapshot_table(ctx.inband, t, ctx.cfg.table(t).capacity,
                                     progress_bar(f"snapshot table {t}"), live=args.live)
             for t in tables]
    path = Path(args.path)
    if path.is_dir():
        path = snapshot.save_rotated(path, snaps, args.keep)
    else:
        snapshot.write_file(path, snaps)
    print(f"{path}: " + ", ".join(f"table {s['table']} {len(s['slots'])} slots" for s in snaps))
    return 0


SNAPSHOT_FAILURES = (SwitchUnreachable, NoPipeline, NotPrimary, P4RuntimeError, P4InfoError,
                     snapshot.SnapshotError, InbandTimeout)


def _snapshot_every(ctx: Context, args: argparse.Namespace, tables: list[int]) -> int:
    """Live snapshots into the directory every `args.every` seconds, riding through
    a switch that goes away (reconnecting) or comes back empty (not saving)."""
    if Path(args.path).exists() and not Path(args.path).is_dir():
        print(f"replayctl: {args.path} is a file: --every writes into a directory",
              file=sys.stderr)
        return EXIT_USAGE
    snapper = Snapshotter(args.path, {t: ctx.cfg.table(t).capacity for t in tables}, args.keep)
    taken, due = 0, time.monotonic()
    try:
        while args.count is None or taken < args.count:
            try:
                if not ctx.connected:
                    ctx.connect()
                done = snapper.take(ctx.inband)
                taken += 1
                seqs = ", ".join(f"table {t} sequence {q}" for t, q in done.sequences.items())
                print(f"{done.path}: {done.slots} slots ({seqs})", flush=True)
            except SNAPSHOT_FAILURES as exc:
                print(f"replayctl: snapshot skipped: {exc}", file=sys.stderr, flush=True)
                if not isinstance(exc, snapshot.SnapshotError):
                    ctx.session.close()
                    ctx.new_session()
            due += args.every
            time.sleep(max(0.0, due - time.monotonic()))
    except KeyboardInterrupt:
        print(f"stopped after {taken} snapshots in {args.path}", file=sys.stderr)
    return 0


def cmd_restore(ctx: Context, args: argparse.Namespace) -> int:
    snaps = [s for s in snapshot.read_file(args.path)
             if not args.table or s["table"] in args.table]
    if args.deploy:
        ctx.connect(need_pipeline=False)
        ctx.require_primary()
        report = redeploy_and_restore(ctx.session, ctx.cfg, snaps)
        print(f"deployed ({report.summary()})")
    else:
        ctx.connect()
        for snap in snaps:
            snapshot.restore_table(ctx.inband, snap,
                                   progress_bar(f"restore table {snap['table']}"))
    for snap in snaps:
        print(f"table {snap['table']}: restored and verified {len(snap['slots'])} slots")
    return 0


def cmd_reset(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    for t in ctx.table_ids(args.table):
        snapshot.reset_table(ctx.inband, t)
        print(f"table {t}: reset (verified empty)")
    return 0


def _positive(kind: type) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not positive")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replayctl", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", default="controller/testbed.yaml",
                   help="the switch config file (default: %(default)s)")
    p.add_argument("--address", help="override the config's switch address HOST:PORT")
    p.add_argument("--election-id", type=int, default=DEFAULT_ELECTION_ID,
                   help="P4Runtime election id (highest is primary; default %(default)s)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per operation")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("deploy", help="push the pipeline if needed and install the config")
    d.add_argument("-v", "--verbose", action="store_true", help="list every change")
    d.set_defaults(func=cmd_deploy)
    sub.add_parser("status", help="pipeline, arbitration and table config").set_defaults(
        func=cmd_status)
    s = sub.add_parser("stats", help="per-table requests, refusals and occupancy")
    s.add_argument("--table", type=int, action="append", help="only this table (repeatable)")
    s.add_argument("--watch", type=float, default=0, metavar="SECONDS", help="refresh every N s")
    s.add_argument("--duration", type=float, default=3600, help="stop watching after N s")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_stats)

    t = sub.add_parser("table", help="change a table's config at run time")
    tsub = t.add_subparsers(dest="table_command", required=True)
    ts = tsub.add_parser("set", help="set fields of one table's config")
    ts.add_argument("id", type=int)
    ts.add_argument("--capacity", type=int)
    ts.add_argument("--min-size", type=int)
    ts.add_argument("--max-batch", type=int)
    ts.add_argument("--mode", choices=["uniform", "prioritized"])
    ts.add_argument("--enable", dest="enabled", action="store_const", const=True)
    ts.add_argument("--disable", dest="enabled", action="store_const", const=False)
    ts.set_defaults(func=cmd_table_set)

    a = sub.add_parser("acl", help="which hosts may insert, sample, update")
    asub = a.add_subparsers(dest="acl_command", required=True)
    asub.add_parser("list").set_defaults(func=cmd_acl)
    aa = asub.add_parser("add")
    aa.add_argument("host")
    aa.add_argument("table", type=int)
    aa.add_argument("ops", nargs="+", help=", ".join(OPS))
    aa.set_defaults(func=cmd_acl)
    ar = asub.add_parser("remove")
    ar.add_argument("host")
    ar.add_argument("table", type=int)
    ar.set_defaults(func=cmd_acl)

    c = sub.add_parser("snapshot", help="save tables to PATH (a file, or a directory of "
                                         "timestamped snapshots)")
    c.add_argument("path")
    c.add_argument("--table", type=int, action="append", help="only this table")
    c.add_argument("--every", type=_positive(float), metavar="SECONDS",
                   help="keep taking live snapshots into the directory PATH, every SECONDS")
    c.add_argument("--keep", type=_positive(int), default=5,
                   help="snapshots kept in a directory, newest first (default %(default)s)")
    c.add_argument("--count", type=_positive(int), help="with --every: stop after N snapshots")
    c.add_argument("--live", action="store_true",
                   help="snapshot a table in use (each slot as read) instead of refusing")
    c.set_defaults(func=cmd_snapshot)
    c = sub.add_parser("restore", help="restore tables from PATH (a file, or the newest "
                                        "snapshot in a directory)")
    c.add_argument("path")
    c.add_argument("--table", type=int, action="append", help="only this table")
    c.add_argument("--deploy", action="store_true",
                   help="after a switch restart: deploy the config with these tables "
                        "disabled, restore them, enable them")
    c.set_defaults(func=cmd_restore)
    r = sub.add_parser("reset", help="clear tables (all configured, or --table)")
    r.add_argument("--table", type=int, action="append")
    r.set_defaults(func=cmd_reset)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ctx = None
    try:
        ctx = Context(args)
        return args.func(ctx, args)
    except ConfigError as exc:
        print(f"replayctl: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SwitchUnreachable as exc:
        print(f"replayctl: switch unreachable: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except NoPipeline as exc:
        print(f"replayctl: {exc}", file=sys.stderr)
        return EXIT_NO_PIPELINE
    except NotPrimary as exc:
        print(f"replayctl: not primary: {exc}", file=sys.stderr)
        return EXIT_NOT_PRIMARY
    except (P4RuntimeError, P4InfoError, snapshot.SnapshotError, InbandTimeout) as exc:
        print(f"replayctl: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if ctx is not None:
            ctx.session.close()


if __name__ == "__main__":
    sys.exit(main())
