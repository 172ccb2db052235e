"""The corpus of P4Testgen Tofino tests the TNA model is checked against (testgen/).

For each TNA program: P4Testgen's own Tofino test programs (p4c's
``backends/p4tools/modules/testgen/targets/tofino/test/p4-programs``), the model's
small program (programs/tna_basics.p4) and the replay program, ``build`` writes
``testgen/<program>/`` with p4test's IR of the program (as bmv2.tna_artifacts makes
the replay program's) and the STF tests P4Testgen generates for it with Tofino 1's
semantics (``p4testgen --target tofino --arch tna --test-backend STF``, a fixed seed,
ports 0 to 63). The tests (test_testgen.py) run from the stored files, so they run
where neither p4c nor P4Testgen is installed::

    python -m tests.pyswitch.tna.testgen_corpus build [PROGRAM ...]

needs p4test and the TNA headers (bmv2.tna_artifacts finds them), P4Testgen built with
the Tofino target ($P4TESTGEN, or /opt/p4-tofino/install/bin/p4testgen) and p4c's
source tree with the Tofino back end ($P4C_TOFINO_SRC, or /opt/p4-tofino/src/p4c).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from agent.contract.cli_args import REPO
from bmv2.tna_artifacts import compile_ir, find_p4test, find_tna_include

HERE = Path(__file__).parent
CORPUS = HERE / "testgen"
IR_NAME = "program.ir.json.gz"
RECORD = "record.json"
TESTGEN_PROGRAMS = "backends/p4tools/modules/testgen/targets/tofino/test/p4-programs"
SEED = 1000           # P4Testgen's own Tofino suite uses this seed
MAX_TESTS = 12        # tests per program (P4Testgen stops earlier when it covered every path)
REPLAY_MAX_TESTS = 40
TIMEOUT = 600         # seconds P4Testgen may take on one program
# programs of P4Testgen's suite the model does not run, and why
SKIPPED = {
    "multipipe_simple": "two pipes: the model runs one pipeline",
    "tna_action_profile_1": "action profiles: the replay program uses none",
    "tna_action_profile_default": "action profiles: the replay program uses none",
    "tna_mirror_2": "mirroring: the replay program uses none",
    "tna_pvs_fixed": "parser value sets: the replay program uses none",
    "tna_emit_extern": "the Mirror and Resubmit externs: the replay program uses none",
    "tna_register_action_2": "DirectRegister (executed outside a table): the replay program "
                             "uses none",
    "tna_simple_switch": "header stacks and the parser's Checksum.verify (whose value "
                         "P4Testgen leaves unknown): the replay program uses neither",
}
# P4Testgen's known error, recognised in a test's own trace: its egress parser does not
# read the bits its ingress deparser wrote. The corpus is built with it corrected
# (docs/hardware.md); a test that shows it is refused at build time and fails the tests.
EGRESS_MISREAD = (
    "P4Testgen prepends egress_intrinsic_metadata_t.egress_rid as 1 bit (its "
    "tofino/cmd_stepper.cpp makes 'sixteenBitType' bit<1>) but extracts the document's "
    "bit<16>, so its egress parser reads what ingress deparsed 15 bits off (its trace: "
    "the first header egress extracts differs from the one ingress emitted) and expects "
    "a packet 15 bits short or a drop decided on those bits; build P4Testgen with that "
    "line made bit<16> (docs/hardware.md)")
_EMIT = re.compile(r"^# \[MethodCall\]: pkt\.emit<\w+>\(([\w.]+)\);\n# \[Emit\]: \{(.*)\}$", re.M)
_EXTRACT = re.compile(r"^# \[ExtractSuccess\] ([\w.]+)@\d+ .*? -> (.*)$", re.M)


def _emitted(fields: str) -> dict[str, int]:
    pairs = (f.strip().split(":", 1) for f in fields.split(";") if ":" in f)
    return {k: int(v) for k, v in pairs if not k.startswith("$") and v.strip().isdigit()}


def _extracted(name: str, fields: str) -> dict[str, int]:
    out = {}
    for f in fields.split(" | "):
        key, _, value = f.strip().partition(" = ")
        if value.startswith("0x"):
            out[key.removeprefix(name + ".")] = int(value.replace("_", ""), 16)
    return out


def egress_misreads_ingress(stf: str) -> bool:
    """Whether the test's trace shows P4Testgen's egress parser reading, as the first
    header after the intrinsic metadata, the header its ingress deparser emitted first,
    with other field values than it emitted."""
    ingress, sep, egress = stf.partition("*.StartEgress();")
    if not sep:
        return False
    deparser = ingress[ingress.rfind("*.copy_in("):]
    emit = _EMIT.search(deparser)
    extracts = _EXTRACT.findall(egress[:egress.find("*.copy_out(")])
    if emit is None or len(extracts) < 2 or extracts[1][0] != emit.group(1):
        return False
    sent, read = _emitted(emit.group(2)), _extracted(emit.group(1), extracts[1][1])
    return any(read[k] != v for k, v in sent.items() if k in read)


def find_p4testgen() -> Path | None:
    if os.environ.get("P4TESTGEN"):
        path = Path(os.environ["P4TESTGEN"])
        return path if path.is_file() else None
    path = Path("/opt/p4-tofino/install/bin/p4testgen")
    return path if path.is_file() else None


def tofino_source() -> Path:
    return Path(os.environ.get("P4C_TOFINO_SRC", "/opt/p4-tofino/src/p4c"))


def programs() -> dict[str, Path]:
    """Every program of the corpus by name: P4Testgen's, the model's own, the replay program."""
    found = {p.stem: p for p in sorted((tofino_source() / TESTGEN_PROGRAMS).glob("*.p4"))
             if p.stem not in SKIPPED}
    found["tna_basics"] = HERE / "programs" / "tna_basics.p4"
    found["replay_tna"] = REPO / "p4src" / "replay_tna.p4"
    return found


def _testgen(p4testgen: Path, include: Path, main: Path, out: Path, max_tests: int) -> str:
    """Run P4Testgen into `out`; "" or, where it stopped on an internal error after
    writing tests, that error (the tests it wrote are kept)."""
    cmd = [str(p4testgen), "--target", "tofino", "--arch", "tna", "--std", "p4-16",
           "-D__TARGET_TOFINO__=1", "-I", str(include), "--test-backend", "STF",
           "--port-ranges", "0:63", "--seed", str(SEED), "--max-tests", str(max_tests),
           "--out-dir", str(out), str(main)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, check=False,
                          cwd=main.parent)
    if proc.returncode == 0:
        return ""
    said = (proc.stderr or proc.stdout).strip()
    internal = [ln for ln in said.splitlines() if ln.startswith("Internal error")]
    if internal and list(out.glob("*.stf")):
        return internal[0]
    raise RuntimeError(f"p4testgen failed ({proc.returncode}): {said[-2000:]}")


def _clean(stf: str) -> str:
    """The test without the line that changes every run (its date)."""
    return "".join(ln for ln in stf.splitlines(keepends=True)
                   if not ln.startswith("# Date generated"))


def _tree_version(p4testgen: Path) -> str:
    """The p4c tree P4Testgen was built from (P4Testgen's own --version says
    <null>): the p4c driver's version beside it, where there is one."""
    driver = p4testgen.parent / "p4c"
    if not driver.is_file():
        return "unknown"
    return subprocess.run([str(driver), "--version"], capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"


def build_one(name: str, main: Path, p4test: Path, p4testgen: Path, include: Path) -> int:
    """Write testgen/<name>/; the number of tests."""
    out = CORPUS / name
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.stf"):
        old.unlink()
    compile_ir(main, out / IR_NAME, p4test, include)
    with tempfile.TemporaryDirectory() as tmp:
        limit = REPLAY_MAX_TESTS if name == "replay_tna" else MAX_TESTS
        stopped = _testgen(p4testgen, include, main, Path(tmp), limit)
        stfs = sorted(Path(tmp).glob("*.stf"),
                      key=lambda p: int(re.findall(r"\d+", p.stem)[-1]))
        if any(egress_misreads_ingress(stf.read_text()) for stf in stfs):
            raise RuntimeError(EGRESS_MISREAD)
        for i, stf in enumerate(stfs, 1):
            (out / f"test_{i:03d}.stf").write_text(_clean(stf.read_text()))
    version = _tree_version(p4testgen)
    record = {"program": str(main.relative_to(REPO) if main.is_relative_to(REPO)
                             else Path(TESTGEN_PROGRAMS) / main.name),
              "sha256": hashlib.sha256(main.read_bytes()).hexdigest(),
              "p4c": version, "seed": SEED, "tests": len(stfs)}
    if stopped:
        record["stopped"] = stopped   # P4Testgen's own error after the tests it wrote
    (out / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return len(stfs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["build"])
    parser.add_argument("programs", nargs="*", help="names (default: every program)")
    args = parser.parse_args(argv)
    p4test, include, p4testgen = find_p4test(), find_tna_include(), find_p4testgen()
    if p4test is None or include is None or p4testgen is None:
        print("error: needs p4test, the TNA headers and p4testgen (see this module's doc)",
              file=sys.stderr)
        return 2
    known = programs()
    unknown = [n for n in args.programs if n not in known]
    if unknown:
        print(f"error: no program {unknown[0]!r} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    failed = 0
    for name in args.programs or list(known):
        try:
            n = build_one(name, known[name], p4test, p4testgen, include)
            print(f"[testgen] {name}: {n} tests", flush=True)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            failed += 1
            print(f"[testgen] {name}: {str(exc).splitlines()[0]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
