"""Record the conformance corpus on real bmv2: ``python -m tests.pyswitch.record_traces``.

Each case runs in its own ``simple_switch --use-files`` process (pcap files, no
network): the switch waits a moment, the Thrift CLI (on 127.0.0.1) applies the
corpus setup, then the switch reads the input pcap and writes one output pcap
per port. The result is ``traces/<program>.json``. Needs simple_switch and
simple_switch_CLI (SIMPLE_SWITCH / SIMPLE_SWITCH_CLI, else /opt/p4/install/bin)
and a Python with the thrift module for the CLI (BMV2_CLI_PYTHON, else
/usr/bin/python3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bmv2.launch import free_tcp_port
from bmv2.pyswitch import Switch
from bmv2.pyswitch.tables import BM_MAX_PRIORITY

from .corpus import CORPORA, Case, Corpus
from .util import TRACES

BIN = Path("/opt/p4/install/bin")
PORTS = (*range(16), 255)
WAIT_S = 2
SETTLE_S = 1.0
CLI_S_PER_COMMAND = 0.06   # setup time allowed per runtime CLI command (loaded machines)
MAX_S = 30.0


def tool(env: str, name: str) -> str:
    """A bmv2 tool: ``$env`` if set, else ``name`` in /opt/p4/install/bin."""
    return os.environ.get(env) or str(BIN / name)


def write_pcap(path: Path, packets: list[bytes]) -> None:
    """A little-endian pcap (Ethernet link type) with ``packets``."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for p in packets:
        out.append(struct.pack("<IIII", 0, 0, len(p), len(p)) + p)
    path.write_bytes(b"".join(out))


def read_pcap(path: Path) -> list[bytes]:
    """Packets of a pcap file (empty or missing file: none)."""
    if not path.exists() or path.stat().st_size < 24:
        return []
    data = path.read_bytes()
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    pos, out = 24, []
    while pos + 16 <= len(data):
        _s, _us, caplen, _len = struct.unpack(endian + "IIII", data[pos:pos + 16])
        out.append(data[pos + 16:pos + 16 + caplen])
        pos += 16 + caplen
    return out


def _key(kind_width: tuple[str, int], m: list[Any] | None) -> str:
    mt, width = kind_width
    full = (1 << width) - 1
    if m is None:
        return {"lpm": "0/0", "ternary": "0&&&0", "range": f"0->{full}"}[mt]
    kind, *args = m
    if kind == "exact":
        return str(args[0])
    if kind == "lpm":
        return f"{args[0]}/{args[1]}"
    if kind == "ternary":
        return f"{args[0]}&&&{args[1]}"
    if kind == "optional":
        return f"{args[0]}&&&{full}"
    return f"{args[0]}->{args[1]}"


def cli_commands(sw: Switch, setup: list[dict[str, Any]]) -> list[str]:
    """simple_switch_CLI commands equivalent to the corpus setup."""
    cmds: list[str] = []
    nodes = 0
    for op in setup:
        kind = op["op"]
        if kind == "table_add":
            info = sw.info.tables[op["table"]]
            keys = " ".join(_key((k.match_type, k.bitwidth), m)
                            for k, m in zip(info.keys, op["matches"], strict=True))
            params = " ".join(str(p) for p in op["params"])
            prio = "" if op.get("priority") is None else f" {BM_MAX_PRIORITY - op['priority']}"
            cmds.append(f"table_add {op['table']} {op['action']} {keys} => {params}{prio}")
        elif kind == "table_set_default":
            params = " ".join(str(p) for p in op["params"])
            cmds.append(f"table_set_default {op['table']} {op['action']} {params}")
        elif kind == "mc_group_set":
            cmds.append(f"mc_mgrp_create {op['group']}")
            by_rid: dict[int, list[int]] = {}
            for port, rid in op["replicas"]:
                by_rid.setdefault(rid, []).append(port)
            for rid in sorted(by_rid):
                ports = " ".join(str(p) for p in sorted(set(by_rid[rid])))
                cmds += [f"mc_node_create {rid} {ports}",
                         f"mc_node_associate {op['group']} {nodes}"]
                nodes += 1
        elif kind == "clone_session_set":
            if op.get("port") is not None:
                cmds.append(f"mirroring_add {op['session']} {op['port']}")
            else:
                cmds.append(f"mirroring_add_mc {op['session']} {op['mc_group']}")
        elif kind == "register_write":
            cmds.append(f"register_write {op['name']} {op['index']} {op['value']}")
        else:
            raise ValueError(f"unknown setup op {kind!r}")
    return cmds


def run_case(json_path: Path, cmds: list[str], case: Case) -> list[list[Any]]:
    """Run one case on a fresh simple_switch; the packets that left each port."""
    thrift_port = free_tcp_port()  # not a fixed one: another recording may hold it
    wait = WAIT_S + CLI_S_PER_COMMAND * len(cmds)  # the input waits for the whole setup
    with tempfile.TemporaryDirectory(prefix="bmv2trace-") as tmp:
        d = Path(tmp)
        for p in PORTS:
            write_pcap(d / f"p{p}_in.pcap", [case.data] if p == case.port else [])
        args = [tool("SIMPLE_SWITCH", "simple_switch"), "--use-files", str(round(wait)),
                "--thrift-port", str(thrift_port), "--device-id", str(thrift_port)]
        for p in PORTS:
            args += ["-i", f"{p}@p{p}"]
        args.append(str(json_path))
        started = time.monotonic()
        proc = subprocess.Popen(args, cwd=d, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            if cmds:
                _configure(cmds, thrift_port)
            time.sleep(max(0.0, round(wait) + SETTLE_S - (time.monotonic() - started)))
            _settle(d, started)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        return [[p, pkt.hex()] for p in PORTS for pkt in read_pcap(d / f"p{p}_out.pcap")]


def _settle(d: Path, started: float) -> None:
    """Wait until no output pcap has grown for SETTLE_S (at most MAX_S in all)."""
    last, since = -1, time.monotonic()
    while time.monotonic() - started < MAX_S:
        size = sum(f.stat().st_size for f in d.glob("*_out.pcap"))
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            return
        time.sleep(0.1)


def cli_command(thrift_port: int) -> tuple[list[str], dict[str, str]]:
    """argv and environment of simple_switch_CLI talking to ``thrift_port``."""
    env = dict(os.environ)
    site = next(Path(BIN.parent / "lib").glob("python3*/site-packages"), None)
    if site is not None:
        env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}"
    return [os.environ.get("BMV2_CLI_PYTHON", "/usr/bin/python3"),
            tool("SIMPLE_SWITCH_CLI", "simple_switch_CLI"), "--thrift-port",
            str(thrift_port)], env


def _configure(cmds: list[str], thrift_port: int) -> None:
    cli, env = cli_command(thrift_port)
    deadline = time.monotonic() + 30  # a big program loads slowly on a busy machine
    while True:
        r = subprocess.run(cli, input="\n".join(cmds) + "\n", capture_output=True, text=True,
                           env=env, timeout=60)
        if "Could not connect" not in r.stdout + r.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    bad = [ln for ln in (r.stdout + r.stderr).splitlines() if "Error" in ln or "Invalid" in ln]
    if r.returncode != 0 or bad:
        raise RuntimeError(f"simple_switch_CLI failed: {bad or r.stderr}")


def record(corpus: Corpus, jobs: int) -> dict[str, Any]:
    """The trace of one corpus."""
    json_path = corpus.path
    sw = Switch(json.loads(json_path.read_text()))
    cmds = cli_commands(sw, corpus.setup)
    with ThreadPoolExecutor(jobs) as pool:
        outputs = list(pool.map(lambda case: run_case(json_path, cmds, case), corpus.cases))
    version = subprocess.run([tool("SIMPLE_SWITCH", "simple_switch"), "--version"],
                             capture_output=True, text=True).stdout.strip()
    return {
        "program": corpus.program,
        "json_sha256": hashlib.sha256(json_path.read_bytes()).hexdigest(),
        "recorded_with": f"simple_switch {version} --use-files",
        "setup": corpus.setup,
        "cases": [{"name": c.name, "port": c.port, "input": c.data.hex(), "outputs": out}
                  for c, out in zip(corpus.cases, outputs, strict=True)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("programs", nargs="*", default=sorted(CORPORA))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    TRACES.mkdir(exist_ok=True)
    for name in args.programs:
        t0 = time.monotonic()
        trace = record(CORPORA[name], args.jobs)
        (TRACES / f"{name}.json").write_text(json.dumps(trace, indent=1) + "\n")
        print(f"{name}: {len(trace['cases'])} cases in {time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
