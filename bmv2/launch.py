"""Start and stop a switch process: bmv2's simple_switch_grpc or the Python
switch, with the same arguments, so callers treat both alike. The switch kinds
the launcher knows, and what each needs installed; tofino-model, Intel's model
and its driver, is two processes (bmv2/tofino_model.py)."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.contract.cli_args import REPO
from bmv2.sde import SdeMissing, find_sde
from bmv2.toolchain import find_tool
from controller.config import PI
from controller.target import BMV2, TNA_MODEL, TOFINO

# The kinds one SwitchProcess runs; tofino-model runs on the namespace testbed only.
PROCESS_KINDS = ("python", "bmv2", "tna")
SWITCH_KINDS = (*PROCESS_KINDS, "tofino-model")
# The program each kind runs: bmv2 and the Python switch the v1model program, "tna"
# the Python switch's TNA execution model running the Tofino program, "tofino-model"
# the Tofino program on Intel's model, pushed into bf_switchd in its own device
# config form (KIND_DEVICE_CONFIGS).
KIND_TARGETS = {"python": BMV2, "bmv2": BMV2, "tna": TNA_MODEL, "tofino-model": TOFINO}
KIND_DEVICE_CONFIGS = {"tofino-model": PI}
BMV2_BINARY = "simple_switch_grpc"
BMV2_ENV = "SIMPLE_SWITCH_GRPC"
BMV2_CLI = "simple_switch_CLI"
BMV2_CLI_ENV = "SIMPLE_SWITCH_CLI"
DEFAULT_CPU_PORT = 255
# Packets each bmv2 egress queue holds (bmv2's default is 64 and it drops the
# rest): a SAMPLE of n puts n replies into the requester's queue at once, and
# a Learner keeps several in flight. Set through bmv2's Thrift runtime CLI.
BMV2_QUEUE_DEPTH = 4096


class SwitchStartError(RuntimeError):
    """The switch process did not come up."""


def find_bmv2() -> Path | None:
    """simple_switch_grpc from $SIMPLE_SWITCH_GRPC, PATH or /opt/p4/install/bin."""
    return find_tool((BMV2_BINARY,), BMV2_ENV)


@functools.cache
def bmv2_has_thrift(binary: Path) -> bool:
    """Whether this simple_switch_grpc runs bmv2's Thrift runtime server. Its
    --help lists --thrift-port either way (the option belongs to bmv2's core);
    only a build configured --with-thrift links the Thrift runtime."""
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "libthrift" in out.stdout


def bmv2_cli(thrift_port: int, script: str, netns: str | None = None,
             timeout: float = 10.0) -> str:
    """Run `script` (runtime CLI commands, one per line) through simple_switch_CLI
    against the bmv2 at `thrift_port`; its output. Retries while the Thrift
    server is not up yet (it starts a moment after gRPC)."""
    cli = find_tool((BMV2_CLI,), BMV2_CLI_ENV)
    if cli is None:
        raise SwitchStartError(f"{BMV2_CLI} not found (set ${BMV2_CLI_ENV})")
    cmd = [os.environ.get("BMV2_CLI_PYTHON", "/usr/bin/python3"), str(cli),
           "--thrift-port", str(thrift_port)]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=timeout)
        said = out.stdout + out.stderr
        if out.returncode == 0 and "Could not connect" not in said:
            if "Error" in said or "Invalid" in said:
                raise SwitchStartError(f"{BMV2_CLI}: {said.strip()[-300:]}")
            return out.stdout
        if time.monotonic() >= deadline:
            raise SwitchStartError(f"{BMV2_CLI} cannot reach port {thrift_port}: "
                                   f"{said.strip()[-300:]}")
        time.sleep(0.2)


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
    if kind == "tofino-model":
        try:
            find_sde()
        except SdeMissing as exc:
            raise SwitchStartError(f"SWITCH=tofino-model needs Intel's SDE (docs/hardware.md): "
                                   f"{exc}") from None
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
    cpu_port: int | None = None   # None: the CPU port of the program the kind runs
    log_path: Path | None = None
    netns: str | None = None
    thrift_port: int | None = None
    tls: ServerTls | None = None
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        if self.cpu_port is None:
            target = KIND_TARGETS.get(self.kind)
            self.cpu_port = target.cpu_port if target is not None else DEFAULT_CPU_PORT

    def command(self) -> list[str]:
        if self.kind not in PROCESS_KINDS:
            raise SwitchStartError(f"the {self.kind} switch is not one process (choose from "
                                   f"{', '.join(PROCESS_KINDS)})")
        args = []
        for port, iface in sorted(self.ports.items()):
            args += ["-i", f"{port}@{iface}"]
        args += ["--device-id", str(self.device_id), "--no-p4"]
        tail = ["--", "--grpc-server-addr", self.grpc_addr, "--cpu-port", str(self.cpu_port)]
        if self.kind == "bmv2":
            binary = find_bmv2()
            if binary is None:
                raise SwitchStartError("simple_switch_grpc is not installed")
            if bmv2_has_thrift(binary):
                # Each switch its own Thrift port: the default 9090 would clash.
                self.thrift_port = self.thrift_port or free_tcp_port()
                args += ["--thrift-port", str(self.thrift_port)]
            cmd = [str(binary), *args, *tail]
        else:
            cmd = [sys.executable, "-m", "bmv2.pyswitch", *args, *tail]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        if self.tls is not None:
            cmd += self.tls.flags()  # target options, last on both switches' command lines
        return cmd

    def start(self, timeout: float = 20.0) -> SwitchProcess:
        """Start the process and wait until its gRPC port accepts connections (again
        after a stop: the log is appended to)."""
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=REPO, start_new_session=True)
        host, port = self.grpc_addr.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SwitchStartError(f"{self.kind} switch exited with {self.proc.returncode}"
                                       + (f"; see {self.log_path}" if self.log_path else ""))
            try:
                with socket.create_connection((host, int(port)), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            self.stop()
            raise SwitchStartError(
                f"{self.kind} switch did not open {self.grpc_addr} in {timeout} s")
        if self.kind == "bmv2":
            self._raise_queue_depth()
        return self

    def _raise_queue_depth(self) -> None:
        """bmv2's 64-packet egress queues drop SAMPLE replies: make them deeper."""
        if self.thrift_port is None:
            print(f"warning: this {BMV2_BINARY} has no Thrift server, so its egress queues "
                  "stay 64 packets deep and a SAMPLE of more replies than that can lose some",
                  file=sys.stderr)
            return
        try:
            bmv2_cli(self.thrift_port, f"set_queue_depth {BMV2_QUEUE_DEPTH}\n", self.netns)
        except (SwitchStartError, OSError, subprocess.TimeoutExpired):
            self.stop()
            raise

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
