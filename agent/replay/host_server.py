"""The baseline host replay server: the switch's replay service on a host.

One thread, one UDP socket. Each datagram goes through
`ReplayService.handle_datagram` (the switch's pipeline in Python) and every
reply goes back to the sender's address, so SAMPLE n gets n datagrams, ACKs and
error replies are sent exactly when the switch would send them, and nothing a
peer sends can crash the loop.

    python -m agent.replay.host_server --bind 198.18.0.10 --port 45000 \\
        --tables 0 --capacity 4096 --min-size 1000 --allow 198.18.0.2

Hosts listed with --admin are treated like the switch's CPU port (READ, WRITE,
RESET, GET_STATE, SET_STATE allowed, ACL bypassed), so the controller's
snapshot and restore work against the baseline too.

Pacing (--rate R --burst B): replies leave through a token bucket shared by
every request: at most B back to back, R per second sustained; a reply that
finds the bucket empty waits for its token. Unpaced (the default), SAMPLE n is
one burst of n datagrams, which a switch with shallow egress queues (bmv2: 64
packets) partly drops; paced within the queue's drain rate and depth, nothing
is dropped. Traffic sparser than R (single ACKs) never waits.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent.contract.cli_args import ArgumentParser, int_list, int_range
from agent.contract.protocol import (
    ACL_OPS,
    ALLOW_INSERT,
    INSERT_WINDOW_US,
    MAX_BATCH,
    MAX_INSERT_LIMIT,
    NUM_SLOTS,
    NUM_TABLES,
    REPLAY_UDP_PORT,
    SAMPLING_MODES,
    Op,
    Status,
)
from agent.replay.memory import ReplayService, TableConfig
from agent.replay.udp import udp_socket

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.05  # how soon serve_forever notices stop()
_OP_LETTERS = {name[0]: bit for name, bit in ACL_OPS.items()}  # --allow IP:isu


DEFAULT_BURST = 32
TOKEN_SLACK = 1e-9  # rounding in (now - last) * rate must not ask for another, tiny sleep


@dataclass(frozen=True)
class Pacing:
    """A token bucket for replies: `rate` per second (0: unpaced), `burst` back to back."""

    rate: float = 0.0
    burst: int = DEFAULT_BURST

    def __post_init__(self) -> None:
        if not (0 <= self.rate < math.inf) or self.burst < 1:
            raise ValueError(f"pacing wants rate >= 0 and burst >= 1: {self.rate}, {self.burst}")

    @property
    def paced(self) -> bool:
        return self.rate > 0

    def args(self) -> list[str]:
        """The host server's command-line options for this pacing."""
        return ["--rate", f"{self.rate:g}", "--burst", str(self.burst)] if self.paced else []

    def spec(self) -> str:
        """The text `parse` reads back: 'off' or 'RATE:BURST'."""
        return f"{self.rate:g}:{self.burst}" if self.paced else "off"

    def __str__(self) -> str:
        return f"{self.rate:g} replies/s, bursts of {self.burst}" if self.paced else "unpaced"

    @classmethod
    def parse(cls, text: str) -> Pacing:
        """'off' or 'RATE:BURST' (or 'RATE', with the default burst)."""
        if text == "off":
            return cls()
        rate, _, burst = text.partition(":")
        try:
            pacing = cls(float(rate), int(burst) if burst else DEFAULT_BURST)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"pacing wants 'off' or RATE[:BURST] with RATE > 0: {text!r}") from None
        if not pacing.paced:
            raise argparse.ArgumentTypeError(f"pacing: RATE must be > 0 (or 'off'): {text!r}")
        return pacing


class Pacer:
    """Applies a Pacing: `wait()` before each reply returns when its token is free.

    Tokens accrue at `rate` per second up to `burst`; `clock` and `sleep` are
    injectable so the schedule can be tested without real time."""

    def __init__(self, pacing: Pacing, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.pacing = pacing
        self.pauses = 0
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(pacing.burst)
        self._last: float | None = None

    def _refill(self) -> None:
        now = self._clock()
        if self._last is not None:
            gained = (now - self._last) * self.pacing.rate
            self._tokens = min(float(self.pacing.burst), self._tokens + gained)
        self._last = now

    def wait(self) -> None:
        """Take one token, sleeping until there is one (no-op when unpaced)."""
        if not self.pacing.paced:
            return
        self._refill()
        while self._tokens < 1.0 - TOKEN_SLACK:
            self._sleep((1.0 - self._tokens) / self.pacing.rate)
            self.pauses += 1
            self._refill()
        self._tokens -= 1.0


class HostServer:
    """A UDP replay server around a ReplayService, its replies paced by `pacing`."""

    def __init__(self, service: ReplayService, bind: tuple[str, int],
                 admins: Iterable[str] = (), pacing: Pacing | None = None) -> None:
        self.service = service
        self.admins = frozenset(admins)
        self.pacer = Pacer(pacing or Pacing())
        self.internal_errors = 0
        self._stop = threading.Event()
        self._sock = udp_socket(bind)
        self._sock.settimeout(POLL_INTERVAL)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The bound (ip, port)."""
        return self._sock.getsockname()

    def serve_one(self, data: bytes, addr: tuple[str, int]) -> None:
        """Answer one datagram from `addr`."""
        try:
            replies = self.service.handle_datagram(data, addr[0], from_cpu=addr[0] in self.admins)
        except Exception:  # a bug here must not take the server down
            self.internal_errors += 1
            log.exception("internal error serving %d bytes from %s", len(data), addr)
            return
        for reply in replies:
            self.pacer.wait()
            try:
                self._sock.sendto(reply, addr)
            except OSError as exc:
                log.debug("reply to %s not sent: %s", addr, exc)

    def serve_forever(self) -> None:
        """Receive and answer datagrams until stop() is called."""
        while not self._stop.is_set():
            try:
                data, addr = self._sock.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError as exc:  # e.g. ICMP errors reported on the socket
                log.debug("recvfrom: %s", exc)
                continue
            self.serve_one(data, addr)

    def start(self) -> HostServer:
        """Serve in a background thread (tests, in-process runs)."""
        self._thread = threading.Thread(target=self.serve_forever, name="host-replay-server",
                                        daemon=True)
        self._thread.start()
        return self

    def request_stop(self) -> None:
        """Make serve_forever return within its poll interval (signal-safe)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._sock.close()


def parse_allow(spec: str) -> tuple[str, int]:
    """'IP' or 'IP:OPS' with OPS letters from 'isu' -> (ip, ALLOW_* bits)."""
    ip, _, letters = spec.partition(":")
    letters = letters or "isu"
    try:
        ipaddress.IPv4Address(ip)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--allow: {ip!r} is not an IPv4 address") from None
    if any(c not in _OP_LETTERS for c in letters):
        raise argparse.ArgumentTypeError(f"--allow wants IP or IP:OPS (OPS from 'isu'): {spec!r}")
    bits = 0
    for c in letters:
        bits |= _OP_LETTERS[c]
    return ip, bits


def allow_spec(ip: str, ops: Iterable[str]) -> str:
    """The --allow text that parse_allow reads back as (ip, the bits of these ACL op names)."""
    return f"{ip}:{''.join(op[0] for op in ops)}"


def build_service(tables: list[int], config: TableConfig, allow: list[tuple[str, int]],
                  seed: int | None = None, insert_limit: int | None = None) -> ReplayService:
    """A service with `config` on each of `tables` and the ACL entries on all of them;
    with `insert_limit`, each allowed host's INSERTs per window on each table are
    limited as the switch's insert_limit entries do."""
    service = ReplayService(seed=seed)
    for table in tables:
        service.configure(table, config)
        for ip, ops in allow:
            service.allow(ip, table, ops)
            if insert_limit is not None and ops & ALLOW_INSERT:
                service.limit_inserts(ip, table, insert_limit)
    return service


def _ipv4(text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IPv4 address") from None


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m agent.replay.host_server",
                            description=__doc__.splitlines()[0],
                            epilog=__doc__[__doc__.index("Pacing ("):])
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int_range(0, 65535), default=REPLAY_UDP_PORT)
    parser.add_argument("--tables", type=int_list(0, NUM_TABLES - 1), default=[0],
                        help="table ids, e.g. 0,1")
    parser.add_argument("--capacity", type=int_range(1, NUM_SLOTS), default=NUM_SLOTS)
    parser.add_argument("--min-size", type=int_range(0, NUM_SLOTS), default=1,
                        help="0..capacity")
    parser.add_argument("--max-batch", type=int_range(1, MAX_BATCH), default=MAX_BATCH)
    parser.add_argument("--mode", choices=list(SAMPLING_MODES), default="prioritized",
                        help="default sampling mode")
    parser.add_argument("--disabled", action="store_true", help="configure tables disabled")
    parser.add_argument("--allow", type=parse_allow, action="append", default=[],
                        metavar="IP[:OPS]", help="ACL entry for every table (default deny)")
    parser.add_argument("--admin", type=_ipv4, action="append", default=[], metavar="IP",
                        help="host treated as the controller (CPU-port ops)")
    parser.add_argument("--insert-limit", type=int_range(0, MAX_INSERT_LIMIT), default=None,
                        metavar="N",
                        help=f"at most N INSERTs per --allow'ed host and table per window of "
                             f"{INSERT_WINDOW_US} us, as the switch's insert_limit "
                             f"(0..{MAX_INSERT_LIMIT}; default: unlimited); more are refused "
                             "RATE_LIMITED")
    parser.add_argument("--seed", type=int_range(0, 2**32 - 1), default=None)
    parser.add_argument("--rate", type=float, default=0.0,
                        help="pace replies to this many per second, over all requests "
                             "(default 0: unpaced, SAMPLE n is one burst of n)")
    parser.add_argument("--burst", type=int, default=DEFAULT_BURST,
                        help="with --rate: replies that may leave back to back (token bucket "
                             "depth; keep it below the switch's egress queue)")
    args = parser.parse_args(argv)
    try:
        pacing = Pacing(args.rate, args.burst)
    except ValueError as exc:
        parser.error(str(exc))
    if args.min_size > args.capacity:
        parser.error(f"--min-size {args.min_size}: must be 0..capacity ({args.capacity})")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    config = TableConfig(enabled=not args.disabled, capacity=args.capacity,
                         min_size=args.min_size, max_batch=args.max_batch,
                         default_mode=SAMPLING_MODES[args.mode])
    service = build_service(args.tables, config, args.allow, args.seed, args.insert_limit)
    try:
        server = HostServer(service, (args.bind, args.port), admins=args.admin, pacing=pacing)
    except OSError as exc:   # an address this host does not have, a port in use
        parser.exit(2, f"{parser.prog}: error: cannot listen on {args.bind}:{args.port}: "
                       f"{exc.strerror or exc}\n")
    signal.signal(signal.SIGTERM, lambda *_: server.request_stop())
    ip, port = server.address
    print(f"host replay server on {ip}:{port} tables={args.tables} {config} pacing: {pacing}",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print(f"pacing: {pacing}, {server.pacer.pauses} pauses", flush=True)
        for (bucket, op, status), n in sorted(service.counters.items()):
            op_name = Op(op).name if op else "-"
            print(f"table {bucket} {op_name} {Status(status).name}: {n}", flush=True)
        for table, n in sorted(service.not_ready.items()):
            print(f"table {table} SAMPLE replies NOT_READY: {n}", flush=True)


if __name__ == "__main__":
    main()
