"""The Tofino program (p4src/replay_tna.p4) stays valid P4 against TNA's own
headers, and legal on a Tofino as far as it goes: `make p4` does not build it
yet (it does not fit Tofino 1's stages: docs/hardware.md), so without these a
change to the shared controls could break it unseen.

- p4c's front and mid end (p4test) accept it without a warning (but p4test's
  use-before-set ones). Needs p4test and a p4c installed with the Tofino back
  end, whose prefix holds share/p4c/p4include/tna.p4: $P4C_TOFINO names that
  p4c, else `p4c` on PATH and in the usual install prefixes are tried.
- bf-p4c compiles it through every pass (PHV allocation, table placement,
  instruction selection), so that the only errors left are the assembler's
  stage count. Needs bf-p4c ($BF_P4C); 5 to 20 minutes on 2 cores (its table
  placement tries several PHV allocations)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bmv2.artifacts import P4SRC
from bmv2.toolchain import find_tool
from tests import needs

TNA_MAIN = P4SRC / "replay_tna.p4"
PREFIXES = ("/opt/p4/install", "/opt/p4-tofino/install", "/usr/local")


def tna_include() -> Path | None:
    """The p4include directory of a p4c with the Tofino back end, if one is here."""
    drivers = [os.environ["P4C_TOFINO"]] if os.environ.get("P4C_TOFINO") else \
        [shutil.which("p4c") or "", *(f"{p}/bin/p4c" for p in PREFIXES)]
    for driver in filter(None, drivers):
        include = Path(driver).resolve().parent.parent / "share" / "p4c" / "p4include"
        if (include / "tna.p4").is_file():
            return include
    return None


@pytest.mark.p4c
def test_the_tna_program_passes_p4cs_front_and_mid_end_without_warnings() -> None:
    p4test = find_tool(("p4test",), "P4TEST")
    include = tna_include()
    if p4test is None or include is None:
        pytest.skip("needs p4test and a p4c with the Tofino back end (tna.p4); "
                    "set P4TEST / P4C_TOFINO")
    proc = subprocess.run([str(p4test), "-D__TARGET_TOFINO__=1", "-I", str(include),
                           str(TNA_MAIN)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # p4test's use-before-set analysis does not see control-local values read in
    # a RegisterAction's body, nor TNA parsers' metadata: those warnings are not kept.
    warnings = [line for line in proc.stderr.splitlines()
                if "warning" in line and "uninitialized" not in line]
    assert warnings == [], proc.stderr


STAGE_COUNT = re.compile(r"error: tofino supports up to 12 stages, using (\d+)")
# The stages the program needs today (docs/hardware.md, the stage map): a change
# that needs more fails here; lower it as the program shrinks toward 12.
STAGES_AT_MOST = 13


@pytest.mark.tofino
def test_bf_p4c_compiles_the_tna_program_up_to_the_stage_count(tmp_path: Path) -> None:
    """Either it compiles, or every pass of the compiler proper reports 0 errors and
    the assembler refuses the stage count alone, and no more stages than
    STAGES_AT_MOST (docs/hardware.md: where it stands)."""
    compiler = needs.bf_p4c()
    proc = subprocess.run([str(compiler), "--target", "tofino", "--arch", "tna",
                           "-o", str(tmp_path / "out"), str(TNA_MAIN)],
                          capture_output=True, text=True, timeout=2400)
    log = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return
    assert re.search(r"^0 errors, \d+ warnings generated", log, re.M), log[-4000:]
    stages = STAGE_COUNT.search(log)
    assert stages, log[-4000:]
    errors = [line for line in log.splitlines() if "error:" in line
              and not STAGE_COUNT.search(line) and "no binary will be generated" not in line]
    assert errors == [], log[-4000:]
    assert int(stages.group(1)) <= STAGES_AT_MOST, (
        f"the program now needs {stages.group(1)} stages, more than the "
        f"{STAGES_AT_MOST} it needed (docs/hardware.md)")
