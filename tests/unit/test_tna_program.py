"""The Tofino program (p4src/replay_tna.p4) stays valid P4 against TNA's own
headers: p4c's front and mid end (p4test) accept it without a warning (but
p4test's use-before-set ones). Needs p4test and a p4c installed with the Tofino
back end, whose prefix holds share/p4c/p4include/tna.p4: $P4C_TOFINO names that
p4c, else `p4c` on PATH and in the usual install prefixes are tried.

bf-p4c's compile of it (it fits Tofino 1) is tests/bmv2/test_artifacts.py's:
the committed build in p4src/build/tofino, recompiled and compared."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bmv2.artifacts import P4SRC
from bmv2.toolchain import find_tool

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
