"""The TNA program as the Python switch's TNA execution model runs it: p4test's IR
of p4src/replay_tna.p4 (front and mid end of p4c, with the TNA headers of p4c's
Tofino back end), gzipped, in p4src/build/tna/, with the sources' hash.

`make p4` builds it where p4test and the TNA headers (tna.p4, tofino1_arch.p4,
tofino1_base.p4) are installed; everywhere the tests check the committed file
against the sources' hash, and where p4test is installed they recompile and
compare.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from agent.contract.cli_args import REPO
from bmv2.toolchain import find_tool
from controller.program import TNA_BUILD, TNA_IR

P4TEST_ENV = "P4TEST"
INCLUDE_ENV = "TNA_P4INCLUDE"
PREFIXES = (Path("/opt/p4-tofino/install"), Path("/opt/p4/install"), Path("/usr/local"))
RECORD = TNA_BUILD / "sources.json"
DROPPED_KEYS = ("Source_Info",)      # where in the P4 source each node came from
# p4test's own mid-end pass GlobalCopyPropagation (no back end runs it) takes a
# control-local value set by a table's action for its initialiser: it made the
# INSERT limiter's index the constant 0 (`limiter = (bit<32>)index` dropped), so
# every host shared one budget. bf-p4c keeps the assignment.
EXCLUDED_MIDEND_PASSES = ("GlobalCopyPropagation",)


def find_p4test() -> Path | None:
    """p4test: $P4TEST, PATH, or a p4c install."""
    found = find_tool(("p4test",), P4TEST_ENV)
    if found is None and not os.environ.get(P4TEST_ENV):
        for prefix in PREFIXES:
            if (prefix / "bin" / "p4test").is_file():
                return prefix / "bin" / "p4test"
    return found


def find_tna_include() -> Path | None:
    """The folder holding tna.p4: $TNA_P4INCLUDE, or a p4c install with the Tofino back end."""
    if os.environ.get(INCLUDE_ENV):
        path = Path(os.environ[INCLUDE_ENV])
        return path if (path / "tna.p4").is_file() else None
    for prefix in PREFIXES:
        path = prefix / "share" / "p4c" / "p4include"
        if (path / "tna.p4").is_file():
            return path
    return None


def _strip(node: object) -> object:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in DROPPED_KEYS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def compile_ir(main: Path, out: Path, p4test: Path, include: Path) -> None:
    """p4test --toJSON of `main` into `out` (gzipped, without source positions)."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "ir.json"
        cmd = [str(p4test), "--std", "p4-16", "-D__TARGET_TOFINO__=1", "-I", str(include),
               "--excludeMidendPasses", ",".join(EXCLUDED_MIDEND_PASSES),
               "--toJSON", str(raw), str(main)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
        if proc.returncode != 0 or not raw.is_file():
            raise RuntimeError(f"p4test failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        ir = _strip(json.loads(raw.read_text()))
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(ir, separators=(",", ":"), sort_keys=True).encode()
    out.write_bytes(gzip.compress(text, mtime=0))


def build(main: Path, digest: str, p4test: Path, include: Path) -> None:
    """Compile into p4src/build/tna and record the sources' hash."""
    compile_ir(main, TNA_IR, p4test, include)
    RECORD.write_text(json.dumps({"sources_sha256": digest,
                                  "ir_sha256": hashlib.sha256(TNA_IR.read_bytes()).hexdigest(),
                                  "p4test": version(p4test),
                                  "excluded_midend_passes": list(EXCLUDED_MIDEND_PASSES)},
                                 indent=2) + "\n")


def version(p4test: Path) -> str:
    out = subprocess.run([str(p4test), "--version"], capture_output=True, text=True,
                         check=False)
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[-1] if text else ""


def check(digest: str) -> list[str]:
    """Problems with the committed IR (empty = it matches the sources)."""
    where = TNA_BUILD.relative_to(REPO)
    if not RECORD.is_file() or not TNA_IR.is_file():
        return [f"{where} is missing the TNA model's program: run `make p4` with p4test "
                f"and the TNA headers (${INCLUDE_ENV})"]
    record = json.loads(RECORD.read_text())
    problems = []
    if record.get("sources_sha256") != digest:
        problems.append(f"{where}: the TNA sources changed since p4test compiled them: "
                        "run `make p4`")
    if record.get("excluded_midend_passes") != list(EXCLUDED_MIDEND_PASSES):
        problems.append(f"{where}: compiled with other p4test mid-end passes than "
                        "bmv2.tna_artifacts runs: run `make p4`")
    if record.get("ir_sha256") != hashlib.sha256(TNA_IR.read_bytes()).hexdigest():
        problems.append(f"{TNA_IR.relative_to(REPO)} was edited after compilation")
    return problems
