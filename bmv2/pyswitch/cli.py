"""``python -m bmv2.pyswitch``: the Python switch, started like simple_switch_grpc.

The command line has simple_switch_grpc's layout, so that launch code treats
both switches alike::

    python -m bmv2.pyswitch [options] <bmv2 JSON | --no-p4> [-- target options]
    python -m bmv2.pyswitch -i 1@veth1 -i 2@veth2 --device-id 0 --no-p4 \\
        -- --grpc-server-addr 127.0.0.1:9559 --cpu-port 255

bmv2 options (before ``--``): ``-i/--interface PORT@IFACE`` (repeatable),
``--device-id``, ``-L/--log-level``, ``--log-console``, ``--log-file``,
``--no-p4``, ``--thrift-port`` (accepted and ignored: there is no Thrift
server). Target options (after ``--``; accepted before it too):
``--grpc-server-addr`` (default 0.0.0.0:9559), ``--cpu-port`` (for
PacketIn / PacketOut; not 0, not a port given to ``-i``), and P4Runtime over
TLS as simple_switch_grpc has it: ``--grpc-server-ssl`` with
``--grpc-server-cert`` and ``--grpc-server-key`` (PEM files), and
``--grpc-server-with-client-auth`` to require client certificates signed by
the CA in ``--grpc-server-cacert``.

As with simple_switch_grpc, a JSON given on the command line runs in the data
plane, but P4Runtime clients still have to push a pipeline (with its P4Info)
before Write and Read are served. "Server listening on ADDRESS" is printed on
stdout once the server is up; SIGINT / SIGTERM stop the switch.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import grpc

from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.server import P4RuntimeServer
from bmv2.pyswitch.p4runtime.status import TargetError
from bmv2.pyswitch.ports import PortError, PortSet, check_port_specs, parse_port_spec

log = logging.getLogger("bmv2.pyswitch")

LOG_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "off": logging.CRITICAL + 10,
}
MAX_PORT = 511


class UsageError(Exception):
    """A bad command line; the message says what to change."""


def _port_number(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0..{MAX_PORT})")
    return value


def _uint(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _tcp_port(text: str) -> int:
    value = _uint(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (0..65535)")
    return value


def _address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:9559")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (bmv2 and target options together)."""
    parser = argparse.ArgumentParser(
        prog="python -m bmv2.pyswitch",
        description="The Python switch: runs a bmv2 JSON and serves P4Runtime like "
        "simple_switch_grpc.",
        epilog="Target options may follow '--', as with simple_switch_grpc.",
    )
    parser.add_argument("json", nargs="?", metavar="JSON",
                        help="bmv2 JSON to run (or --no-p4)")
    parser.add_argument("--no-p4", action="store_true",
                        help="start without a program and wait for SetForwardingPipelineConfig")
    parser.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                        help="bind switch port PORT to interface IFACE (repeatable)")
    parser.add_argument("--device-id", type=_uint, default=0, help="device id (default 0)")
    parser.add_argument("--thrift-port", type=_tcp_port,
                        help="accepted for compatibility and ignored (no Thrift server)")
    parser.add_argument("-L", "--log-level", choices=sorted(LOG_LEVELS), default="info",
                        help="log level (default info)")
    parser.add_argument("--log-console", action="store_true",
                        help="log to the console (always done; accepted for compatibility)")
    parser.add_argument("--log-file", type=Path, help="also log to this file")
    target = parser.add_argument_group("target options (after --)")
    target.add_argument("--grpc-server-addr", type=_address, default="0.0.0.0:9559",
                        help="P4Runtime server address (default 0.0.0.0:9559)")
    target.add_argument("--cpu-port", type=_port_number,
                        help="CPU port for PacketIn / PacketOut (not 0)")
    target.add_argument("--grpc-server-ssl", action="store_true",
                        help="serve P4Runtime over TLS (needs --grpc-server-cert and -key)")
    target.add_argument("--grpc-server-cacert", type=Path, metavar="PEM",
                        help="CA certificate that client certificates are verified against")
    target.add_argument("--grpc-server-cert", type=Path, metavar="PEM",
                        help="the server's certificate")
    target.add_argument("--grpc-server-key", type=Path, metavar="PEM",
                        help="the server's private key")
    target.add_argument("--grpc-server-with-client-auth", action="store_true",
                        help="require a client certificate signed by --grpc-server-cacert")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse a command line; UsageError for combinations argparse cannot check."""
    if "--" in argv:
        cut = argv.index("--")
        argv = argv[:cut] + argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    if args.no_p4 and args.json is not None:
        raise UsageError("give either a bmv2 JSON or --no-p4, not both")
    if not args.no_p4 and args.json is None:
        raise UsageError("give a bmv2 JSON to run, or --no-p4 to wait for a pipeline")
    try:
        args.ports = check_port_specs(parse_port_spec(i) for i in args.interface)
    except PortError as exc:
        raise UsageError(str(exc)) from None
    if args.cpu_port == 0:
        raise UsageError("--cpu-port 0 is not valid (0 means no CPU port)")
    if args.cpu_port is not None and args.cpu_port in args.ports:
        raise UsageError(f"CPU port {args.cpu_port} is used as a data port (-i)")
    return args


def load_json(path: Path) -> dict[str, Any]:
    """Read a bmv2 JSON file (UsageError if it is missing or not JSON)."""
    try:
        program = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(program, dict):
        raise UsageError(f"{path} is not a bmv2 JSON (not an object)")
    return program


def server_credentials(args: argparse.Namespace) -> grpc.ServerCredentials | None:
    """TLS credentials from the --grpc-server-* options (None: plain text)."""
    if not args.grpc_server_ssl:
        if args.grpc_server_cert or args.grpc_server_key or args.grpc_server_cacert:
            log.warning("TLS is off (no --grpc-server-ssl): the .pem files given are ignored")
        if args.grpc_server_with_client_auth:
            raise UsageError("--grpc-server-with-client-auth needs --grpc-server-ssl")
        return None
    if args.grpc_server_cert is None or args.grpc_server_key is None:
        raise UsageError("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    if args.grpc_server_with_client_auth and args.grpc_server_cacert is None:
        raise UsageError("--grpc-server-with-client-auth needs --grpc-server-cacert")

    def read(path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None

    ca = read(args.grpc_server_cacert) if args.grpc_server_cacert else None
    return grpc.ssl_server_credentials([(read(args.grpc_server_key), read(args.grpc_server_cert))],
                                       root_certificates=ca,
                                       require_client_auth=args.grpc_server_with_client_auth)


def _setup_logging(level: str, log_file: Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(
        level=LOG_LEVELS[level],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
    )


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    """Start the switch, serve until ``stop`` is set, then shut down."""
    credentials = server_credentials(args)
    if args.thrift_port is not None:
        log.info("--thrift-port %d ignored: the Python switch has no Thrift server",
                 args.thrift_port)
    dataplane = Dataplane(cpu_port=args.cpu_port or 0)
    if args.json is not None:
        try:
            dataplane.run(dataplane.build(load_json(Path(args.json))))
        except TargetError as exc:
            raise UsageError(f"{args.json}: {exc}") from None
    ports = PortSet(args.ports, dataplane.receive)
    dataplane.set_transmit(ports.send)
    server = P4RuntimeServer(dataplane, args.device_id, args.grpc_server_addr, credentials)
    try:
        server.start()
    except OSError as exc:
        ports.close()
        raise UsageError(str(exc)) from None
    ports.start()
    print(f"Server listening on {args.grpc_server_addr}", flush=True)
    try:
        stop.wait()
    finally:
        log.info("shutting down")
        server.stop()
        ports.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        _setup_logging(args.log_level, args.log_file)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        return run(args, stop)
    except (UsageError, PortError) as exc:
        print(f"pyswitch: error: {exc}", file=sys.stderr)
        return 2
