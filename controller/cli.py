"""replayctl: operate the in-network replay over P4Runtime.

Exit codes: 0 done, 1 the operation failed, did not verify or was refused (a
change the switch cannot carry out), 2 bad usage or config, 3 switch unreachable,
4 no pipeline loaded, 5 not the primary controller, 130 interrupted (Ctrl-C ends
`stats --watch` with 0). Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent.contract.cli_args import (
    ArgumentParser,
    doc_parts,
    host_port,
    int_range,
    join_host_port,
    positive_float,
)
from agent.contract.protocol import ACL_OPS, SAMPLING_MODES, Op, acl_mask, acl_op_names
from controller import acl, program, snapshot
from controller import config as config_mod
from controller.config import DEFAULT_CONFIG, Config, ConfigError, ReplayTable
from controller.deploy import deploy
from controller.inband import InbandChannel, InbandTimeout
from controller.p4info import P4InfoError, P4InfoIndex
from controller.p4runtime_session import (
    NotPrimary,
    P4RuntimeError,
    P4RuntimeSession,
    SwitchUnreachable,
)
from controller.recovery import Snapshotter, redeploy_and_restore
from controller.refusals import Refused, refuse_capacity_cut
from controller.stats import OTHER_TABLE, GuardDrops, read_guard_drops, read_stats

EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_NO_PIPELINE, EXIT_NOT_PRIMARY = 1, 2, 3, 4, 5
EXIT_INTERRUPTED = 130
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


def format_table(headers: list[str], rows: list[list[object]]) -> str:
    """Columns padded to their widest cell, numbers right-aligned, a rule under the headers."""
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if n and c.replace(".", "").isdigit() else c.ljust(w)
                               for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    print(format_table(headers, rows))


class Context:
    """The config, the session and the in-band channel of one replayctl call."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.cfg: Config = config_mod.load(args.config)
        if args.address:
            self.cfg = replace(self.cfg, switch=replace(self.cfg.switch,
                                                        address=join_host_port(*args.address)))
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
    configs = program.read_configs(ctx.session)
    # Occupancy is read in-band (PacketOut/PacketIn), which only the primary may do.
    stats = read_stats(ctx.session, sorted(configs), ctx.inband) if ctx.session.is_primary else {}
    rows = []
    for key, c in sorted(configs.items()):
        size = stats[key].size if key in stats and stats[key].size is not None else "-"
        rows.append([key, "yes" if c.enabled else "no", c.capacity, c.min_size, c.max_batch,
                     c.mode, size if size == "-" else f"{size}/{c.capacity}"])
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
                     s.sampled, s.not_ready, "-" if s.size is None else s.size,
                     "-" if s.total_priority is None else f"{s.total_priority:.2f}", refused])
    return rows, {t: s.as_dict() for t, s in stats.items()}


STATS_HEADERS = ["table", "inserts", "samples", "updates", "sampled", "not_ready", "size",
                 "total_priority", "refused"]


def _guard_lines(ctx: Context, drops: GuardDrops) -> str:
    """What the source and broadcast guards dropped, by port and host ('' if nothing)."""
    names = {h.port: h.name for h in ctx.cfg.hosts}

    def per_port(counts: dict[int, int]) -> str:
        return ", ".join(f"port {p} ({names.get(p, '?')}) {n}" for p, n in sorted(counts.items()))
    lines = []
    if drops.forged:
        lines.append(f"forged sources dropped: {per_port(drops.forged)}")
    if drops.broadcasts:
        lines.append(f"broadcasts refused: {per_port(drops.broadcasts)}")
    if drops.rate_limited:
        limiters = {lim.index: f"table {lim.table} {lim.host}" for lim in ctx.cfg.insert_limiters()}
        lines.append("inserts rate-limited: " + ", ".join(
            f"{limiters.get(i, f'limiter {i}')} {n}"
            for i, n in sorted(drops.rate_limited.items())))
    return "\n".join(lines)


def cmd_stats(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    tables = ctx.table_ids(args.table)
    if not args.watch:
        rows, raw = _stats_rows(ctx, tables)
        drops = read_guard_drops(ctx.session)
        if args.json:
            print(json.dumps({**raw, "guard": drops.as_dict()}, indent=1))
        else:
            print(format_table(STATS_HEADERS, rows))
            guard = _guard_lines(ctx, drops)
            if guard:
                print(guard)
        return 0
    return watch_stats(ctx, tables, args)


def watch_stats(ctx: Context, tables: list[int], args: argparse.Namespace) -> int:
    """Print the stats every args.watch seconds until args.duration or Ctrl-C (exit 0).
    On a terminal the table is redrawn in place; otherwise each one is printed
    below the last (with --json: one JSON object per line)."""
    redraw = sys.stdout.isatty() and not args.json
    deadline = time.monotonic() + args.duration
    shown = 0  # lines of the last table on the terminal
    try:
        while True:
            rows, raw = _stats_rows(ctx, tables)
            if args.json:
                print(json.dumps({"time": time.time(), "tables": raw}), flush=True)
            else:
                text = (f"{time.strftime('%H:%M:%S')}  every {args.watch:g} s, Ctrl-C stops\n"
                        + format_table(STATS_HEADERS, rows))
                if shown:  # back to the last table's first line, and clear from there
                    sys.stdout.write(f"\x1b[{shown}F\x1b[J")
                print(text, flush=True)
                shown = text.count("\n") + 1 if redraw else 0
            if time.monotonic() >= deadline:
                return 0
            time.sleep(args.watch)
    except KeyboardInterrupt:
        print()  # the shell's prompt on a line of its own, after the terminal's ^C
        return 0


def cmd_table_set(ctx: Context, args: argparse.Namespace) -> int:
    ctx.connect()
    ctx.require_primary()
    current = ctx.cfg.table(args.id)
    running = program.read_configs(ctx.session).get(args.id)
    if running is not None:
        mode = running.mode if running.mode in SAMPLING_MODES else current.mode
        current = ReplayTable(args.id, running.capacity, running.min_size, running.max_batch,
                              mode, running.enabled)
    changes = {k: v for k, v in (("capacity", args.capacity), ("min_size", args.min_size),
                                 ("max_batch", args.max_batch), ("mode", args.mode),
                                 ("enabled", args.enabled)) if v is not None}
    if not changes:
        raise ConfigError("table set: nothing to change (give --capacity, --min-size, "
                          "--max-batch, --mode, --enable or --disable)")
    validated = config_mod.validate_table(replace(current, **changes), f"table set {args.id}")
    if running is not None and validated.capacity < running.capacity:
        refuse_capacity_cut(ctx.inband, args.id, validated.capacity)
    ctx.session.modify_entry(program.CONFIG_TABLE, program.config_match(args.id),
                             program.CONFIGURE, program.config_params(validated))
    print(f"table {args.id}: " + ", ".join(f"{k}={v}" for k, v in sorted(changes.items())))
    return 0


def cmd_acl(ctx: Context, args: argparse.Namespace) -> int:
    import ipaddress

    ctx.connect()
    names = {int(ipaddress.IPv4Address(h.ip)): h.name for h in ctx.cfg.hosts}
    current = program.read_acl(ctx.session)
    if args.acl_command == "list":
        rows = [[names.get(ip, str(ipaddress.IPv4Address(ip))), str(ipaddress.IPv4Address(ip)),
                 table, ",".join(acl_op_names(mask))]
                for (ip, table), mask in sorted(current.items())]
        print_table(["host", "ip", "table", "ops"], rows)
        return 0
    ctx.require_primary()
    host = ctx.cfg.host(args.host)
    ctx.table_ids([args.table])
    bad = [op for op in args.ops if op not in ACL_OPS]
    if bad:
        raise ConfigError(f"acl {args.acl_command}: unknown op(s) {', '.join(bad)} "
                          f"(ops: {', '.join(ACL_OPS)})")
    ops_mask = acl_mask(args.ops)
    key = (int(ipaddress.IPv4Address(host.ip)), args.table)
    if args.acl_command == "add":
        mask = current.get(key, 0) | ops_mask
    elif key not in current:
        print(f"replayctl: {host.name} has no ACL entry for table {args.table}",
              file=sys.stderr)
        return EXIT_FAILED
    else:  # remove the ops given, or every op
        mask = current[key] & ~ops_mask if args.ops else 0
    print(acl.set_ops(ctx.session, ctx.cfg, host, args.table, mask).summary())
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


def shell_command(ctx: Context, push: bool) -> list[str]:
    """The p4runtime-shell command line for the config's switch and this election id."""
    eid = ctx.session.election_id
    cmd = [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", ctx.cfg.switch.address,
           "--device-id", str(ctx.cfg.switch.device_id),
           "--election-id", f"{eid >> 64},{eid & ((1 << 64) - 1)}"]
    if push:
        artifacts = program.artifacts_for(ctx.cfg)
        cmd += ["--config", f"{artifacts.p4info},{artifacts.device_config_file()}"]
    return cmd


def cmd_shell(ctx: Context, args: argparse.Namespace) -> int:
    """Replace this process with p4runtime-shell on the configured switch."""
    ctx.session.open_channel()  # no arbitration: the shell arbitrates with our election id
    if not args.push and ctx.session.get_pipeline() is None:
        raise NoPipeline(f"{ctx.cfg.switch.address} runs no pipeline: run `replayctl deploy` "
                         "first, or `replayctl shell --push`")
    ctx.session.close()
    cmd = shell_command(ctx, args.push)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


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
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(prog="replayctl", description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--config", default=DEFAULT_CONFIG,
                   help="the switch config file (default: controller/testbed.yaml)")
    p.add_argument("--address", type=host_port(), metavar="HOST:PORT",
                   help="override the config's switch address")
    p.add_argument("--election-id", type=int_range(1, (1 << 128) - 1, "2**128-1"),
                   default=DEFAULT_ELECTION_ID,
                   help="P4Runtime election id (highest is primary; default %(default)s)")
    p.add_argument("--timeout", type=positive_float, default=5.0,
                   help="seconds per operation")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("deploy", help="push the pipeline if needed and install the config")
    d.add_argument("-v", "--verbose", action="store_true", help="list every change")
    d.set_defaults(func=cmd_deploy)
    sub.add_parser("status", help="pipeline, arbitration and table config").set_defaults(
        func=cmd_status)
    s = sub.add_parser("stats", help="per-table requests, refusals and occupancy")
    s.add_argument("--table", type=int, action="append", help="only this table (repeatable)")
    s.add_argument("--watch", type=positive_float, metavar="SECONDS",
                   help="refresh every N s until Ctrl-C (in place on a terminal)")
    s.add_argument("--duration", type=positive_float, default=3600,
                   help="stop watching after N s")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_stats)

    t = sub.add_parser("table", help="change a table's config at run time")
    tsub = t.add_subparsers(dest="table_command", required=True)
    ts = tsub.add_parser("set", help="set fields of one table's config")
    ts.add_argument("id", type=int)
    ts.add_argument("--capacity", type=int)
    ts.add_argument("--min-size", type=int)
    ts.add_argument("--max-batch", type=int)
    ts.add_argument("--mode", choices=list(SAMPLING_MODES))
    ts.add_argument("--enable", dest="enabled", action="store_const", const=True)
    ts.add_argument("--disable", dest="enabled", action="store_const", const=False)
    ts.set_defaults(func=cmd_table_set)

    a = sub.add_parser("acl", help="which hosts may insert, sample, update")
    asub = a.add_subparsers(dest="acl_command", required=True)
    asub.add_parser("list").set_defaults(func=cmd_acl)
    aa = asub.add_parser("add", help="let HOST do OPS on TABLE (added to what it may do)")
    aa.add_argument("host")
    aa.add_argument("table", type=int)
    aa.add_argument("ops", nargs="+", help=", ".join(ACL_OPS))
    aa.set_defaults(func=cmd_acl)
    ar = asub.add_parser("remove", help="withdraw OPS (default: every op) of HOST on TABLE")
    ar.add_argument("host")
    ar.add_argument("table", type=int)
    ar.add_argument("ops", nargs="*", help=f"{', '.join(ACL_OPS)}; none: all")
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
    sh = sub.add_parser("shell", help="open p4runtime-shell on the switch",
                        description="Open p4runtime-shell connected to the config's switch "
                        "(address, device id, this election id). Its objects work as usual: "
                        "TableEntry, CounterEntry, MulticastGroupEntry, packet_out, packet_in.")
    sh.add_argument("--push", action="store_true",
                    help="first push the project's pipeline (p4src/build); this clears every "
                         "entry: `replayctl deploy` installs the config again")
    sh.set_defaults(func=cmd_shell)
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
    except (P4RuntimeError, P4InfoError, snapshot.SnapshotError, InbandTimeout,
            Refused) as exc:
        print(f"replayctl: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("replayctl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if ctx is not None:
            ctx.session.close()


if __name__ == "__main__":
    sys.exit(main())
