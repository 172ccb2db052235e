"""The compiled data plane: how its artifacts are built, and whether they still
match the P4 sources they came from (where they live is controller.program's).

`make p4` runs ``python -m bmv2.artifacts build``: the v1model program for bmv2
and the Python switch, the TNA program's IR for the Python switch's TNA model
where p4test and the TNA headers are installed (bmv2.tna_artifacts), and the
TNA program where bf-p4c is installed (bmv2.tofino_artifacts). The test suite
runs ``check`` (and, where a compiler is installed, recompiles into a temporary
folder).
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
from bmv2 import tna_artifacts, tofino_artifacts
from bmv2.toolchain import find_tool
from controller.program import BUILD, DEFAULT, Artifacts

P4SRC = REPO / "p4src"
MAIN_P4 = P4SRC / "replay.p4"
TNA_P4 = P4SRC / "replay_tna.p4"
BMV2_JSON = DEFAULT.bmv2_json
P4INFO = DEFAULT.p4info
MANIFEST = BUILD / "manifest.json"

P4C_ENV = "P4C"
P4C_NAMES = ("p4c-bm2-ss",)


class ToolchainMissing(RuntimeError):
    """p4c (or bmv2) is not installed where we look for it."""


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def p4_sources(root: Path = P4SRC, main: str = MAIN_P4.name) -> list[Path]:
    """The program's P4 sources: `main` and every file it includes with
    #include "...", transitively, sorted (another architecture's files are
    not part of it)."""
    seen: set[Path] = set()
    todo = [root / main]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _INCLUDE.findall(path.read_text()):
            todo.append(_resolve(root, path.parent / name))
    return sorted(seen)


def _resolve(root: Path, path: Path) -> Path:
    """`path` inside `root`, spelled from `root` (no ..)."""
    return root / path.resolve().relative_to(root.resolve())


def source_digest(root: Path = P4SRC, main: str = MAIN_P4.name) -> str:
    """sha256 over the relative path and bytes of every P4 source of `main`."""
    h = hashlib.sha256()
    for path in p4_sources(root, main):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def find_p4c() -> Path:
    """Locate p4c-bm2-ss ($P4C, then PATH, then /opt/p4/install/bin)."""
    found = find_tool(P4C_NAMES, P4C_ENV)
    if found is not None:
        return found
    if os.environ.get(P4C_ENV):
        raise ToolchainMissing(f"${P4C_ENV}={os.environ[P4C_ENV]} does not exist")
    raise ToolchainMissing(
        "p4c-bm2-ss not found: install p4c (see README, 'Installing p4c and bmv2') "
        f"or set ${P4C_ENV}"
    )


def p4c_version(p4c: Path) -> str:
    out = subprocess.run([str(p4c), "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).strip().splitlines()[-1] if (out.stdout or out.stderr) else ""


def compile_program(out_dir: Path, p4c: Path | None = None, main: Path = MAIN_P4) -> Artifacts:
    """Compile `main` with p4c-bm2-ss into out_dir; raise with p4c's output on failure."""
    p4c = p4c or find_p4c()
    out_dir.mkdir(parents=True, exist_ok=True)
    arts = Artifacts.in_dir(out_dir)
    cmd = [str(p4c), "--std", "p4-16", "--arch", "v1model",
           "--p4runtime-files", str(arts.p4info), "-o", str(arts.bmv2_json), str(main)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"p4c failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    if proc.stderr.strip():
        print(proc.stderr.strip(), file=sys.stderr)
    _normalize_json(arts.bmv2_json, main.parent)
    return arts


def _normalize_json(path: Path, src_root: Path) -> None:
    """Make source paths in the JSON relative so builds are reproducible anywhere."""
    text = path.read_text()
    text = text.replace(str(src_root.resolve()) + "/", "").replace(str(src_root) + "/", "")
    program = json.loads(text)
    path.write_text(json.dumps(program, indent=1, sort_keys=False) + "\n")


def build() -> dict:
    """Compile p4src/ into p4src/build/ and write the manifest."""
    p4c = find_p4c()
    print(f"[p4] compiling {MAIN_P4.relative_to(REPO)} with {p4c}", flush=True)
    compile_program(BUILD, p4c)
    manifest = {
        "sources_sha256": source_digest(),
        "sources": [p.relative_to(P4SRC).as_posix() for p in p4_sources()],
        "p4c": p4c_version(p4c),
        "bmv2_json_sha256": file_digest(BMV2_JSON),
        "p4info_sha256": file_digest(P4INFO),
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"[p4] wrote {BMV2_JSON.relative_to(REPO)}, {P4INFO.relative_to(REPO)}, "
          f"{MANIFEST.relative_to(REPO)}", flush=True)
    build_tna()
    build_tna_model()
    return manifest


def build_tna() -> None:
    """The TNA program with bf-p4c into p4src/build/tofino, where bf-p4c is installed
    and the build there does not match the sources already (a compile stamps a new
    date and run id into its files: not rewritten for nothing)."""
    bf_p4c = tofino_artifacts.find_bf_p4c()
    if bf_p4c is None:
        print("[p4] bf-p4c not found: p4src/build/tofino left as it is (set $BF_P4C; "
              "docs/hardware.md)", flush=True)
        return
    digest = source_digest(main=TNA_P4.name)
    if not tofino_artifacts.check(digest):
        print("[p4] p4src/build/tofino matches the TNA program's sources: not recompiled",
              flush=True)
        return
    print(f"[p4] compiling {TNA_P4.relative_to(REPO)} with {bf_p4c} for Tofino 1 "
          "(a few minutes)", flush=True)
    tofino_artifacts.build(TNA_P4, digest, bf_p4c)
    print(f"[p4] wrote {tofino_artifacts.TOFINO_BUILD.relative_to(REPO)}", flush=True)


def build_tna_model() -> None:
    """The TNA program's IR for the Python switch's TNA model, where p4test and the
    TNA headers are installed and the committed IR does not match the sources."""
    p4test, include = tna_artifacts.find_p4test(), tna_artifacts.find_tna_include()
    if p4test is None or include is None:
        print("[p4] p4test or the TNA headers not found: p4src/build/tna left as it is "
              f"(set ${tna_artifacts.P4TEST_ENV} and ${tna_artifacts.INCLUDE_ENV})", flush=True)
        return
    digest = source_digest(main=TNA_P4.name)
    if not tna_artifacts.check(digest):
        print("[p4] p4src/build/tna matches the TNA program's sources: not recompiled",
              flush=True)
        return
    print(f"[p4] compiling {TNA_P4.relative_to(REPO)} with {p4test} for the TNA model",
          flush=True)
    tna_artifacts.build(TNA_P4, digest, p4test, include)
    print(f"[p4] wrote {tna_artifacts.RECORD.parent.relative_to(REPO)}", flush=True)


def check() -> list[str]:
    """Problems that make the committed artifacts untrustworthy (empty = fine)."""
    if not MANIFEST.exists():
        return [f"{MANIFEST.relative_to(REPO)} is missing: run `make p4`"]
    manifest = json.loads(MANIFEST.read_text())
    problems = []
    if manifest.get("sources_sha256") != source_digest():
        problems.append("P4 sources changed since the artifacts were compiled: run `make p4`")
    for key, path in (("bmv2_json_sha256", BMV2_JSON), ("p4info_sha256", P4INFO)):
        if not path.exists():
            problems.append(f"{path.relative_to(REPO)} is missing: run `make p4`")
        elif manifest.get(key) != file_digest(path):
            problems.append(f"{path.relative_to(REPO)} was edited after compilation")
    tna_digest = source_digest(main=TNA_P4.name)
    return problems + tofino_artifacts.check(tna_digest) + tna_artifacts.check(tna_digest)


def recompile_matches() -> list[str]:
    """Recompile into a temporary folder and compare with the committed artifacts."""
    with tempfile.TemporaryDirectory() as tmp:
        arts = compile_program(Path(tmp))
        problems = []
        if json.loads(arts.bmv2_json.read_text()) != json.loads(BMV2_JSON.read_text()):
            problems.append("recompiled bmv2 JSON differs from p4src/build/replay.json")
        if arts.p4info.read_text() != P4INFO.read_text():
            problems.append("recompiled P4Info differs from p4src/build/replay.p4info.txtpb")
        return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["build", "check"])
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build()
            return 0
        problems = check()
    except ToolchainMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print("p4src/build matches the P4 sources")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
