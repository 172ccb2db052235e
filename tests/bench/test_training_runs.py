"""A training run the benchmark started is stopped so that it can tear down."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent.orchestration.benchmarks.training import stop_launch

# A stand-in for agent.orchestration.launch: it records a teardown when SIGTERM arrives.
CHILD = """
import signal, sys, time
from pathlib import Path
def down(*_):
    Path(sys.argv[1]).write_text("torn down")
    sys.exit(0)
signal.signal(signal.SIGTERM, down)
print("ready", flush=True)
time.sleep(30)
"""


def test_stop_launch_lets_the_launcher_tear_down(tmp_path: Path) -> None:
    marker = tmp_path / "teardown"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(marker)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    stop_launch(proc)
    assert proc.returncode == 0
    assert marker.read_text() == "torn down"
