"""p4c's STF samples as a regression suite: ``python -m tests.pyswitch.stf_corpus CMD``.

  build   compile every v1model STF sample of p4c's testdata with p4c-bm2-ss and
          store, per sample, the bmv2 JSON (without source_info) and what p4c's
          bmv2stf.py would do with the STF (``stf_samples/<name>.json``)
  record  run every built sample on simple_switch the way bmv2stf does (pcap
          FIFOs, --use-files 0, simple_switch_CLI) and store the outputs and the
          verdict; CLI lines are applied before the next packet is sent, and packets
          get a second before the next CLI line (bmv2stf's fixed pauses lose that race
          to a slow CLI start now and then)
  run     run every sample on the Python switch and print the verdicts and counts

Samples: testdata/p4_16_samples/**/*.stf whose P4 includes v1model.p4 (p4c
runs the parser-inline ones twice, without and with --parser-inline-opt; so do
we). Needs: p4c's source tree for build (P4C_SRC, default /opt/p4/src/p4c),
p4c-bm2-ss (P4C) for build, simple_switch and simple_switch_CLI for record
(see record_traces.py).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import queue
import socket
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bmv2.pyswitch import PySwitchError, Switch
from bmv2.toolchain import find_tool

from .record_traces import cli_command, read_pcap, tool
from .stf import Script, StfError, judge, parse_stf, run_on_pyswitch

SAMPLES = Path(__file__).parent / "stf_samples"
P4C_SRC = Path(os.environ.get("P4C_SRC", "/opt/p4/src/p4c"))
INLINE_OPT = "@parser-inline-opt"


def p4c_compiler() -> Path | None:
    """p4c-bm2-ss on this machine, if any."""
    return find_tool(("p4c-bm2-ss",), "P4C")


def discover(src: Path = P4C_SRC) -> dict[str, tuple[Path, list[str]]]:
    """Sample name -> (P4 file, extra compiler options), sorted by name."""
    root = src / "testdata" / "p4_16_samples"
    found: dict[str, tuple[Path, list[str]]] = {}
    for stf in sorted(root.glob("**/*.stf")):
        p4 = stf.with_suffix(".p4")
        if not p4.exists() or "v1model.p4" not in p4.read_text(errors="replace"):
            continue
        name = str(stf.relative_to(root).with_suffix(""))
        found[name] = (p4, [])
        if name.startswith("parser-inline/"):
            found[name + INLINE_OPT] = (p4, ["--parser-inline-opt"])
    return dict(sorted(found.items()))


def sample_path(name: str) -> Path:
    """Where the stored sample ``name`` lives."""
    return SAMPLES / (name.replace("/", "__") + ".json")


def strip_source_info(j: Any) -> Any:
    """The JSON without ``source_info`` (file positions: bmv2 only logs them)."""
    if isinstance(j, dict):
        return {k: strip_source_info(v) for k, v in j.items() if k != "source_info"}
    if isinstance(j, list):
        return [strip_source_info(v) for v in j]
    return j


def compile_sample(p4: Path, options: list[str], out: Path) -> str | None:
    """Compile as run-bmv2-test.py does; None, or p4c's complaint."""
    compiler = p4c_compiler()
    if compiler is None:
        raise RuntimeError("p4c-bm2-ss is not installed (set P4C)")
    r = subprocess.run([str(compiler), "-o", str(out), *options, str(p4)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        errors = [ln for ln in lines if "rror" in ln] or lines or ["p4c-bm2-ss failed"]
        return errors[0]
    return None


def build_one(name: str, p4: Path, options: list[str]) -> dict[str, Any]:
    """Compile one sample and translate its STF."""
    sample: dict[str, Any] = {"sample": name, "source": str(p4.relative_to(P4C_SRC)),
                              "p4c_options": options}
    with tempfile.TemporaryDirectory(prefix="stf-") as tmp:
        out = Path(tmp) / "prog.json"
        err = compile_sample(p4, options, out)
        if err is not None:
            sample["compile_error"] = err
            return sample
        program = strip_source_info(json.loads(out.read_text()))
    sample["compiler"] = program.get("__meta__", {}).get("compiler", "")
    sample["program"] = program
    try:
        script = Script.build(program, parse_stf(p4.with_suffix(".stf").read_text()))
    except StfError as e:
        script = Script(error=f"STF does not parse: {e}")
    sample["script"] = script_json(script)
    return sample


def script_json(s: Script) -> dict[str, Any]:
    """A Script as stored."""
    return {"ops": s.ops, "interfaces": s.interfaces,
            "expected": {str(k): v for k, v in s.expected.items()}, "error": s.error}


def script_of(sample: dict[str, Any]) -> Script:
    """The Script stored in a sample."""
    j = sample["script"]
    return Script(j["ops"], j["interfaces"], {int(k): v for k, v in j["expected"].items()},
                  j["error"])


def load_sample(path: Path) -> dict[str, Any]:
    """A stored sample."""
    return json.loads(path.read_text())


# ---- bmv2 -------------------------------------------------------------------------


class Bmv2Failed(Exception):
    """simple_switch exited or did not come up (bmv2stf fails such a test)."""


def _died(proc: subprocess.Popen[bytes], log: Path, what: str) -> Bmv2Failed:
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    why = next((ln for ln in lines if "rror" in ln or "xception" in ln), lines[-1:] or [""])
    state = "exited" if proc.poll() is not None else "is still running"
    return Bmv2Failed(f"simple_switch {state}, {what}: {str(why).strip()[:200]}")


def _open_fifo(path: Path, proc: subprocess.Popen[bytes], deadline: float) -> int:
    """Open a FIFO for writing once simple_switch has opened it for reading."""
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise _died(proc, path.parent / "switch.log",
                            f"{path.name} not opened") from None
            time.sleep(0.02)
            continue
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd


def _wait_port(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while proc.poll() is None and time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise Bmv2Failed("simple_switch's Thrift server did not come up")


def run_bmv2(program: dict[str, Any], script: Script, slot: int) -> dict[int, list[bytes]]:
    """Run the script on simple_switch as bmv2stf does, CLI lines applied in order with
    the packets; the packets that left each STF port."""
    with tempfile.TemporaryDirectory(prefix="stf-bmv2-") as tmp:
        d = Path(tmp)
        (d / "prog.json").write_text(json.dumps(program))
        for p in script.interfaces:
            os.mkfifo(d / f"pcap{p}_in.pcap")
        thrift = 19390 + slot
        args = [tool("SIMPLE_SWITCH", "simple_switch"), "--use-files", "0", "--thrift-port",
                str(thrift), "--device-id", str(90 + slot)]
        for p in script.interfaces:
            args += ["-i", f"{p}@pcap{p}"]
        with open(d / "switch.log", "wb") as log:
            sw = subprocess.Popen([*args, "prog.json"], cwd=d, stdout=log,
                                  stderr=subprocess.STDOUT)
        fds: dict[int, int] = {}
        try:
            deadline = time.monotonic() + 60
            for p in script.interfaces:
                fds[p] = _open_fifo(d / f"pcap{p}_in.pcap", sw, deadline)
                os.write(fds[p], struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            _wait_port(thrift, sw, deadline)
            argv, env = cli_command(thrift)
            pending: list[str] = []
            sent = False
            for op in script.ops:
                if op[0] == "cli":
                    if sent:  # let the packets sent so far go through first
                        time.sleep(1.0)
                        sent = False
                    pending.append(op[1])
                    continue
                _cli(argv, env, pending)
                data = bytes.fromhex(op[2])
                now = time.time()
                os.write(fds[op[1]], struct.pack("<IIII", int(now), int(now % 1 * 1e6),
                                                 len(data), len(data)) + data)
                sent = True
            _cli(argv, env, pending)
            for fd in fds.values():
                os.close(fd)
            fds.clear()
            _settle(d)
        finally:
            for fd in fds.values():
                os.close(fd)
            sw.terminate()
            sw.wait(timeout=10)
        return {p: read_pcap(d / f"pcap{p}_out.pcap") for p in script.interfaces}


def _cli(argv: list[str], env: dict[str, str], lines: list[str]) -> None:
    """Apply CLI lines and wait until they are applied (errors are the test's business)."""
    if lines:
        subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True,
                       env=env, timeout=120)
        lines.clear()


def _settle(d: Path) -> None:
    """Wait until no output pcap has grown for a second (two at least, ten at most)."""
    start = time.monotonic()
    last, since = -1, start
    while time.monotonic() - start < 10:
        size = sum(f.stat().st_size for f in d.glob("*_out.pcap"))
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= 1 and time.monotonic() - start >= 2:
            return
        time.sleep(0.1)


def record_one(path: Path, slot: int) -> str:
    """Record one stored sample on bmv2; returns a line for the log."""
    sample = load_sample(path)
    name = sample["sample"]
    if "program" not in sample:
        return f"{name}: not compiled ({sample.get('compile_error')})"
    script = script_of(sample)
    outputs: dict[int, list[bytes]] = {}
    if script.error:
        verdict: str | None = script.error
    else:
        try:
            outputs = run_bmv2(sample["program"], script, slot)
            verdict = judge(script, outputs)
        except Bmv2Failed as e:
            verdict = str(e)
    version = subprocess.run([tool("SIMPLE_SWITCH", "simple_switch"), "--version"],
                             capture_output=True, text=True).stdout.strip()
    sample["bmv2"] = {"recorded_with": f"simple_switch {version}", "verdict": verdict,
                      "outputs": {str(p): [d.hex() for d in v] for p, v in outputs.items()}}
    path.write_text(json.dumps(sample, separators=(",", ":")) + "\n")
    return f"{name}: {'PASS' if verdict is None else 'FAIL ' + verdict}"


# ---- the Python switch ----------------------------------------------------------


def run_python(sample: dict[str, Any]) -> tuple[str | None, dict[int, list[bytes]]]:
    """Verdict (None: pass) and outputs of one sample on the Python switch."""
    script = script_of(sample)
    if script.error:
        return script.error, {}
    try:
        sw = Switch(sample["program"])
    except PySwitchError as e:
        return f"refused at load: {e}", {}
    outputs = run_on_pyswitch(sample["program"], script, sw)
    return judge(script, outputs), outputs


def _selected(names: list[str]) -> list[Path]:
    paths = sorted(SAMPLES.glob("*.json"))
    if names:
        wanted = {sample_path(n).name for n in names}
        paths = [p for p in paths if p.name in wanted]
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("build", "record", "run"))
    ap.add_argument("samples", nargs="*", help="sample names (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--missing", action="store_true", help="record: only samples not recorded")
    args = ap.parse_args(argv)
    SAMPLES.mkdir(exist_ok=True)
    if args.command == "build":
        found = discover()
        names = args.samples or list(found)

        def build(name: str) -> str:
            p4, options = found[name]
            sample = build_one(name, p4, options)
            sample_path(name).write_text(json.dumps(sample, separators=(",", ":")) + "\n")
            return f"{name}: {sample.get('compile_error', 'ok')}"

        with ThreadPoolExecutor(args.jobs) as pool:
            for line in pool.map(build, names):
                print(line, flush=True)
        return 0
    paths = _selected(args.samples)
    if args.command == "record":
        if args.missing:
            paths = [p for p in paths if "bmv2" not in load_sample(p)]
        slots: queue.Queue[int] = queue.Queue()
        for slot in range(args.jobs):
            slots.put(slot)

        def record(path: Path) -> str:
            slot = slots.get()  # one switch per slot: ports and device ids stay distinct
            try:
                return record_one(path, slot)
            finally:
                slots.put(slot)

        with ThreadPoolExecutor(args.jobs) as pool:
            for line in pool.map(record, paths):
                print(line, flush=True)
        return 0
    counts = {"bmv2 pass": 0, "python pass": 0, "both": 0}
    for path in paths:
        sample = load_sample(path)
        if "program" not in sample:
            print(f"{sample['sample']}: SKIP p4c-bm2-ss: {sample['compile_error']}")
            continue
        bm = sample.get("bmv2", {}).get("verdict", "not recorded")
        py, _out = run_python(sample)
        counts["bmv2 pass"] += bm is None
        counts["python pass"] += py is None
        counts["both"] += bm is None and py is None
        print(f"{sample['sample']}: bmv2 {'PASS' if bm is None else 'FAIL'} / python "
              f"{'PASS' if py is None else 'FAIL ' + py}", flush=True)
    print(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
