"""Start and stop a switch process: bmv2's simple_switch_grpc or the Python
switch, with the same arguments, so callers treat both alike."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bmv2.toolchain import find_tool

SWITCH_KINDS = ("python", "bmv2")
BMV2_BINARY = "simple_switch_grpc"
BMV2_ENV = "SIMPLE_SWITCH_GRPC"
DEFAULT_CPU_PORT = 255


class SwitchStartError(RuntimeError):
    """The switch process did not come up."""


def find_bmv2() -> Path | None:
    """simple_switch_grpc from $SIMPLE_SWITCH_GRPC, PATH or /opt/p4/install/bin."""
    return find_tool((BMV2_BINARY,), BMV2_ENV)


def resolve_kind(kind: str) -> str:
    """'auto' picks bmv2 when installed, else the Python switch."""
    if kind == "auto":
        return "bmv2" if find_bmv2() else "python"
    if kind not in SWITCH_KINDS:
        raise ValueError(f"unknown switch '{kind}' (choose from auto, {', '.join(SWITCH_KINDS)})")
    if kind == "bmv2" and find_bmv2() is None:
        raise SwitchStartError(
            "SWITCH=bmv2 but simple_switch_grpc is not installed (see README, "
            "'Installing p4c and bmv2'), or set $SIMPLE_SWITCH_GRPC")
    return kind


def free_tcp_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class ServerTls:
    """P4Runtime over TLS, the switch's side: its certificate and key, and the CA
    that client certificates must be signed by when `client_auth` requires them.
    Both switches take simple_switch_grpc's --grpc-server-ssl flags."""

    cert: Path
    key: Path
    ca_cert: Path | None = None
    client_auth: bool = False

    def __post_init__(self) -> None:
        if self.client_auth and self.ca_cert is None:
            raise ValueError("client_auth needs the CA (ca_cert) that client certificates "
                             "are verified against")

    def flags(self) -> list[str]:
        out = ["--grpc-server-ssl", "--grpc-server-cert", str(self.cert),
               "--grpc-server-key", str(self.key)]
        if self.ca_cert is not None:
            out += ["--grpc-server-cacert", str(self.ca_cert)]
        if self.client_auth:
            out.append("--grpc-server-with-client-auth")
        return out


@dataclass
class SwitchProcess:
    """One switch process. `ports` maps port numbers to interface names."""

    kind: str
    ports: dict[int, str]
    grpc_addr: str = field(default_factory=lambda: f"127.0.0.1:{free_tcp_port()}")
    device_id: int = 0
    cpu_port: int = DEFAULT_CPU_PORT
    log_path: Path | None = None
    netns: str | None = None
    tls: ServerTls | None = None
    proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        args = []
        for port, iface in sorted(self.ports.items()):
            args += ["-i", f"{port}@{iface}"]
        args += ["--device-id", str(self.device_id), "--no-p4", "--",
                 "--grpc-server-addr", self.grpc_addr, "--cpu-port", str(self.cpu_port)]
        if self.kind == "bmv2":
            binary = find_bmv2()
            if binary is None:
                raise SwitchStartError("simple_switch_grpc is not installed")
            cmd = [str(binary), *args]
        else:
            cmd = [sys.executable, "-m", "bmv2.pyswitch", *args]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        if self.tls is not None:
            cmd += self.tls.flags()  # target options, last on both switches' command lines
        return cmd

    def start(self, timeout: float = 20.0) -> SwitchProcess:
        """Start the process and wait until its gRPC port accepts connections (again
        after a stop: the log is appended to)."""
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        repo = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=repo, start_new_session=True)
        host, port = self.grpc_addr.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SwitchStartError(f"{self.kind} switch exited with {self.proc.returncode}"
                                       + (f"; see {self.log_path}" if self.log_path else ""))
            try:
                with socket.create_connection((host, int(port)), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise SwitchStartError(f"{self.kind} switch did not open {self.grpc_addr} in {timeout} s")

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the process (by its PID) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=timeout)

    def __enter__(self) -> SwitchProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
