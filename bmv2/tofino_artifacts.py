"""The Tofino build: what bf-p4c compiles from p4src/replay_tna.p4 into
p4src/build/tofino (controller.program's TOFINO_BUILD), and whether it still
matches the P4 sources it came from.

`make p4` builds it where bf-p4c is installed (p4c built with ENABLE_TOFINO:
docs/hardware.md); everywhere the tests check the committed files against the
sources' hash, and where bf-p4c is installed they recompile and compare. Only
what a deployment needs is kept: bf-p4c's manifest.json, bfrt.json,
pipe/context.json (gzipped: 12 MB of JSON, 0.4 MB so) and pipe/tofino.bin
(Stratum's device config, controller/bf_pipeline.py, which reads it either
way), the P4Info, and the compiler's resource summary.

A compile stamps its date and a run id into several files, and lists bf-p4c's
own snapshot tables in bfrt.json in no fixed order; the comparison leaves
those out and nothing else.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agent.contract.cli_args import REPO
from bmv2.toolchain import find_tool
from controller.bf_pipeline import GZIPPED, read_kept
from controller.program import TOFINO_BUILD

BF_P4C_ENV = "BF_P4C"
BF_P4C_PREFIX = Path("/opt/p4-tofino/install/bin")   # where docs/hardware.md's build puts it
P4INFO_NAME = "replay_tna.p4info.txtpb"
RESOURCES = "pipe/logs/mau.resources.log"
CONTEXT = "pipe/context.json"
KEPT_GZIPPED = (CONTEXT,)                             # bf_switchd wants it gunzipped
KEPT = ("manifest.json", "bfrt.json", CONTEXT + GZIPPED, "pipe/tofino.bin", P4INFO_NAME,
        RESOURCES)
RECORD = "sources.json"
VOLATILE_CONTEXT = ("build_date", "run_id")          # context.json: new on every compile
VOLATILE_RESOURCE_LINES = ("Created on:", "Run ID:")  # mau.resources.log's header
SNAPSHOT_TABLES = "pipe.snapshot."                    # bfrt.json: bf-p4c's, in no fixed order


def find_bf_p4c() -> Path | None:
    """bf-p4c: $BF_P4C, PATH, the usual prefixes, or docs/hardware.md's install."""
    found = find_tool(("bf-p4c",), BF_P4C_ENV)
    if found is None and not os.environ.get(BF_P4C_ENV) and (BF_P4C_PREFIX / "bf-p4c").is_file():
        found = BF_P4C_PREFIX / "bf-p4c"
    return found


def compile_tna(main: Path, out_dir: Path, bf_p4c: Path) -> None:
    """bf-p4c for Tofino 1 into `out_dir`; raise with the compiler's last lines. The
    P4Info has P4Runtime's own Counter and Register messages, not Tofino's extern
    ones, as Stratum takes it and the controller reads it."""
    cmd = [str(bf_p4c), "--target", "tofino", "--arch", "tna", "--std", "p4-16",
           "--verbose", "1", "--p4runtime-files", str(out_dir / P4INFO_NAME),
           "--p4runtime-force-std-externs", "-o", str(out_dir), str(main)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"bf-p4c failed ({proc.returncode}):\n{tail}")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(main: Path, sources_sha256: str, bf_p4c: Path, into: Path = TOFINO_BUILD) -> dict:
    """Compile `main` and keep the deployment's files in `into`, with sources.json."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_tna(main, Path(tmp), bf_p4c)
        if into.exists():
            shutil.rmtree(into)
        for name in KEPT:
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            if name.removesuffix(GZIPPED) in KEPT_GZIPPED:
                data = (Path(tmp) / name.removesuffix(GZIPPED)).read_bytes()
                (into / name).write_bytes(gzip.compress(data, 9, mtime=0))
            else:
                shutil.copyfile(Path(tmp) / name, into / name)
        _relative_paths(into / "manifest.json", {tmp: _shown(into), f"{REPO}/": ""})
    compiler = json.loads((into / "manifest.json").read_text())["compiler_version"]
    return write_record(into, sources_sha256, compiler)


def _shown(path: Path) -> str:
    """`path` as the repository names it, else as it is."""
    try:
        return path.resolve().relative_to(REPO.resolve()).as_posix()
    except ValueError:
        return str(path)


def _relative_paths(path: Path, replacements: dict[str, str]) -> None:
    """The manifest's compile command and source root without this machine's
    folders (the temporary output folder, the clone's place)."""
    text = path.read_text()
    for old, new in replacements.items():
        text = text.replace(old, new)
    path.write_text(text)


def write_record(into: Path, sources_sha256: str, compiler: str) -> dict:
    """sources.json: the sources' hash, the compiler, and each kept file's hash."""
    record = {"sources_sha256": sources_sha256, "bf_p4c": compiler,
              "files_sha256": {name: _digest(into / name) for name in KEPT}}
    (into / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return record


def check(sources_sha256: str, into: Path = TOFINO_BUILD) -> list[str]:
    """Problems that make the committed Tofino build untrustworthy (empty = fine)."""
    where = _shown(into)
    record_path = into / RECORD
    if not record_path.is_file():
        return [f"{where}/{RECORD} is missing: run `make p4` where bf-p4c is installed"]
    record = json.loads(record_path.read_text())
    problems = []
    if record.get("sources_sha256") != sources_sha256:
        problems.append(f"the TNA program's P4 sources changed since {where} was compiled: "
                        "run `make p4` where bf-p4c is installed")
    for name in KEPT:
        path = into / name
        if not path.is_file():
            problems.append(f"{where}/{name} is missing: run `make p4` where bf-p4c is installed")
        elif record.get("files_sha256", {}).get(name) != _digest(path):
            problems.append(f"{where}/{name} was edited after compilation")
    return problems


def _kept(path: Path) -> bytes:
    data = read_kept(path)
    if data is None:
        raise FileNotFoundError(path)
    return data


def _comparable_context(path: Path) -> dict:
    context = json.loads(_kept(path))
    for key in VOLATILE_CONTEXT:
        context.pop(key, None)
    return context


def _comparable_bfrt(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc["tables"] = sorted((t for t in doc["tables"]
                            if not t["name"].startswith(SNAPSHOT_TABLES)),
                           key=lambda t: t["name"])
    return doc


def _comparable_resources(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines()
            if not any(mark in line for mark in VOLATILE_RESOURCE_LINES)]


def _binary_without_run_id(build_dir: Path) -> bytes:
    run_id = json.loads(_kept(build_dir / CONTEXT))["run_id"]
    return (build_dir / "pipe/tofino.bin").read_bytes().replace(run_id.encode(), b"RUN_ID")


def differences(built: Path, committed: Path) -> list[str]:
    """Where two bf-p4c builds of a program differ, bar what every compile stamps."""
    where = _shown(committed)
    problems = []
    if (built / P4INFO_NAME).read_bytes() != (committed / P4INFO_NAME).read_bytes():
        problems.append(f"recompiled {P4INFO_NAME} differs from {where}")
    for name, comparable in (("bfrt.json", _comparable_bfrt),
                             (CONTEXT, _comparable_context),
                             (RESOURCES, _comparable_resources)):
        if comparable(built / name) != comparable(committed / name):
            problems.append(f"recompiled {name} differs from {where}")
    if _binary_without_run_id(built) != _binary_without_run_id(committed):
        problems.append(f"recompiled pipe/tofino.bin differs from {where}")
    return problems


def recompile_matches(main: Path, bf_p4c: Path, into: Path = TOFINO_BUILD) -> list[str]:
    """Recompile into a temporary folder and compare with the committed build."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_tna(main, Path(tmp), bf_p4c)
        return differences(Path(tmp), into)
