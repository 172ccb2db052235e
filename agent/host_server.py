"""The baseline host replay server: the switch's replay service on a host.

One thread, one UDP socket. Each datagram goes through
`ReplayService.handle_datagram` (the switch's pipeline in Python) and every
reply goes back to the sender's address, so SAMPLE n gets n datagrams, ACKs and
error replies are sent exactly when the switch would send them, and nothing a
peer sends can crash the loop.

    python -m agent.host_server --bind 198.18.0.10 --port 45000 \\
        --tables 0 --capacity 4096 --min-size 1000 --allow 198.18.0.2

Hosts listed with --admin are treated like the switch's CPU port (READ, WRITE,
RESET, GET_STATE, SET_STATE allowed, ACL bypassed), so the controller's
snapshot and restore work against the baseline too.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import threading
from collections.abc import Iterable

from agent.protocol import MAX_BATCH, NUM_SLOTS, REPLAY_UDP_PORT, Mode, Op, Status
from agent.replay_memory import (
    ALLOW_INSERT,
    ALLOW_SAMPLE,
    ALLOW_UPDATE,
    ReplayService,
    TableConfig,
)
from agent.udp import udp_socket

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.05  # how soon serve_forever notices stop()
_OP_LETTERS = {"i": ALLOW_INSERT, "s": ALLOW_SAMPLE, "u": ALLOW_UPDATE}


class HostServer:
    """A UDP replay server around a ReplayService."""

    def __init__(self, service: ReplayService, bind: tuple[str, int],
                 admins: Iterable[str] = ()) -> None:
        self.service = service
        self.admins = frozenset(admins)
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


def build_service(tables: list[int], config: TableConfig, allow: list[tuple[str, int]],
                  seed: int | None = None) -> ReplayService:
    """A service with `config` on each of `tables` and the ACL entries on all of them."""
    service = ReplayService(seed=seed)
    for table in tables:
        service.configure(table, config)
        for ip, ops in allow:
            service.allow(ip, table, ops)
    return service


def _table_ids(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=REPLAY_UDP_PORT)
    parser.add_argument("--tables", type=_table_ids, default=[0], help="table ids, e.g. 0,1")
    parser.add_argument("--capacity", type=int, default=NUM_SLOTS)
    parser.add_argument("--min-size", type=int, default=1)
    parser.add_argument("--max-batch", type=int, default=MAX_BATCH)
    parser.add_argument("--mode", choices=["uniform", "prioritized"], default="prioritized",
                        help="default sampling mode")
    parser.add_argument("--disabled", action="store_true", help="configure tables disabled")
    parser.add_argument("--allow", type=parse_allow, action="append", default=[],
                        metavar="IP[:OPS]", help="ACL entry for every table (default deny)")
    parser.add_argument("--admin", action="append", default=[], metavar="IP",
                        help="host treated as the controller (CPU-port ops)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    config = TableConfig(enabled=not args.disabled, capacity=args.capacity,
                         min_size=args.min_size, max_batch=args.max_batch,
                         default_mode=Mode[args.mode.upper()])
    service = build_service(args.tables, config, args.allow, args.seed)
    server = HostServer(service, (args.bind, args.port), admins=args.admin)
    signal.signal(signal.SIGTERM, lambda *_: server.request_stop())
    ip, port = server.address
    print(f"host replay server on {ip}:{port} tables={args.tables} {config}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        for (bucket, op, status), n in sorted(service.counters.items()):
            op_name = Op(op).name if op else "-"
            print(f"table {bucket} {op_name} {Status(status).name}: {n}", flush=True)


if __name__ == "__main__":
    main()
