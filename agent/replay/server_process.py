"""The host replay server as a child process: started (optionally inside a
namespace), awaited until it listens, stopped by its PID. Used by the training
runner (loopback), the testbed launcher and the benchmarks alike."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.contract.cli_args import REPO
from agent.contract.protocol import REPLAY_UDP_PORT, Mode
from agent.replay.host_server import Pacing
from agent.replay.memory import TableConfig

READY_LINE = b"host replay server on"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0


@dataclass
class ServerProcess:
    """`python -m agent.replay.host_server` serving `tables` with `config`.

    `allow` holds --allow specs ('IP' or 'IP:OPS'); `prefix` runs it elsewhere
    (e.g. `ip netns exec NS`); its output goes to `log_path`; `pacing` spaces its
    replies (agent.replay.host_server.Pacing; unpaced by default).
    """

    bind: str
    tables: list[int]
    config: TableConfig
    allow: list[str]
    log_path: Path
    port: int = REPLAY_UDP_PORT
    seed: int = 1
    prefix: tuple[str, ...] = ()
    pacing: Pacing = field(default_factory=Pacing)
    proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        c = self.config
        cmd = [*self.prefix, sys.executable, "-m", "agent.replay.host_server", "--bind", self.bind,
               "--port", str(self.port), "--tables", ",".join(map(str, self.tables)),
               "--capacity", str(c.capacity), "--min-size", str(c.min_size),
               "--max-batch", str(c.max_batch), "--mode", Mode(c.default_mode).name.lower(),
               "--seed", str(self.seed)]
        for spec in self.allow:
            cmd += ["--allow", spec]
        return cmd + self.pacing.args()

    def start(self) -> ServerProcess:
        """Start it and wait for its ready line; raises RuntimeError naming the log."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         cwd=REPO)
        deadline = time.monotonic() + START_TIMEOUT
        while READY_LINE not in self.log_path.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"host replay server did not start; see {self.log_path}")
            time.sleep(0.05)
        return self

    @property
    def address(self) -> tuple[str, int]:
        return self.bind, self.port

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT (safe to call twice)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)
        self.proc = None
