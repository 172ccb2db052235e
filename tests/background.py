"""End-to-end runs long enough to overlap with the rest of the suite. A test marked
`@pytest.mark.background(ARGS)` names a launcher run (`python -m
agent.orchestration.launch ARGS --run-dir ...`); tests/conftest.py puts such tests
last and starts their runs once the other slow tests are done, so that each run
goes on while the light tests run (`background(ARGS, group=NAME)`: runs of one group
one at a time, as two Ray clusters at once are too much for a small machine); the test
gets it finished from the `background_run` fixture and checks it as it would a run of
its own."""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.contract.cli_args import REPO
from bmv2.testbed.netns import have_netns
from tests.signals import ctrl_c_as_from_a_terminal

FINISH_TIMEOUT = 1000.0  # seconds a run may take from its start (its --max-seconds is less)
STOP_TIMEOUT = 60.0      # seconds a run not waited for gets to tear down after Ctrl-C


@dataclass
class BackgroundRun:
    """One launcher run in a subprocess, its output in files in `directory`."""

    args: list[str]
    group: str | None = None      # runs of one group go one at a time (tests/conftest.py)
    directory: Path | None = None
    proc: subprocess.Popen | None = None
    result: subprocess.CompletedProcess | None = None

    @property
    def run_dir(self) -> Path:
        assert self.directory is not None
        return self.directory / "run"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the run (once; not where namespaces cannot be made: the test skips)."""
        if self.proc is not None or self.directory is None or not have_netns()[0]:
            return
        cmd = [sys.executable, "-m", "agent.orchestration.launch", *self.args,
               "--run-dir", str(self.run_dir)]
        with (self.directory / "stdout").open("w") as out, \
                (self.directory / "stderr").open("w") as err:
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, text=True,
                                         preexec_fn=ctrl_c_as_from_a_terminal)

    def finish(self) -> subprocess.CompletedProcess:
        """Wait for the run (starting it if nothing did) and return what it printed."""
        self.start()
        if self.result is None:
            assert self.proc is not None and self.directory is not None
            code = self.proc.wait(timeout=FINISH_TIMEOUT)
            self.result = subprocess.CompletedProcess(
                self.proc.args, code, (self.directory / "stdout").read_text(),
                (self.directory / "stderr").read_text())
        return self.result

    def stop(self) -> None:
        """Interrupt a run nobody waited for (the session ended early): the launcher
        tears its testbed down on Ctrl-C."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
