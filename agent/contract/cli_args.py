"""Command-line helpers shared by the project's tools: where they run and write
(the repository root, runs/), usage errors on one line with exit code 2, help
descriptions taken whole from a module docstring, and argument types that check
ranges and addresses before anything starts."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parents[2]  # the repository root: `python -m` children run here
RUNS = REPO / "runs"                         # the tools' run directories go below it
EXIT_USAGE = 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `PROG: error: MESSAGE (see --help)`,
    with exit code 2 (its subcommand parsers too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def doc_parts(doc: str | None) -> tuple[str, str]:
    """A module docstring as (description, epilog) for RawDescriptionHelpFormatter:
    its whole first paragraph, and everything after it, as written."""
    paragraphs = (doc or "").strip().split("\n\n", 1)
    return paragraphs[0], paragraphs[1] if len(paragraphs) > 1 else ""


def int_range(low: int, high: int, high_text: str | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in low..high (high written as high_text)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}..{high_text or high} (got {value})")
        return value
    return parse


def int_list(low: int, high: int, high_text: str | None = None) -> Callable[[str], list[int]]:
    """An argparse type: a comma list of one or more integers, each in low..high."""
    item = int_range(low, high, high_text)

    def parse(text: str) -> list[int]:
        values = [item(v.strip()) for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"'{text}' lists no integer")
        return values
    return parse


def join_host_port(host: str, port: int) -> str:
    """HOST:PORT, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def positive_float(text: str) -> float:
    """An argparse type: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 (got {text})")
    return value


def host_port(default_port: int | None = None) -> Callable[[str], tuple[str, int]]:
    """An argparse type: HOST:PORT or [IPv6]:PORT (the port may be left out when
    there is a default) as (host, port), with a port in 1..65535 and a host name
    that resolves."""
    def parse(text: str) -> tuple[str, int]:
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, ""
        if not port:
            if default_port is None:
                raise argparse.ArgumentTypeError(f"'{text}' has no port: expected HOST:PORT")
            port = str(default_port)
        host = host.removeprefix("[").removesuffix("]")  # [IPv6]:PORT
        if not host:
            raise argparse.ArgumentTypeError(f"'{text}' has no host: expected HOST:PORT")
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise argparse.ArgumentTypeError(f"'{port}' is not a port number (1..65535)")
        try:
            socket.getaddrinfo(host, int(port))
        except (socket.gaierror, UnicodeError):
            raise argparse.ArgumentTypeError(f"cannot resolve host '{host}'") from None
        return host, int(port)
    return parse
