"""Intel's Tofino model as the testbed's switch (switch kind tofino-model), where
the SDE is installed (bmv2/sde.py): tofino-model, whose port map attaches the
testbed's links, and bf_switchd with no program and its P4Runtime server on
(`--skip-p4 --p4rt-server ADDR`), the same command lines as the SDE's
run_tofino_model.sh and run_switchd.sh give them. The controller then pushes
the Tofino build in bf_switchd's device config form
(controller/pi_device_config.py).

The model attaches device port N to interface veth<A> for each entry
{"device_port": N, "veth1": A, "veth2": B} of its port map (`-f ports.json`);
B names the far end, where the SDE's own tests send and receive. The testbed
names its links so: port N's switch end is veth(1000 + 2N) in the root
namespace, its host's end veth(1001 + 2N) in the host's namespace. Numbering
from 1000 keeps clear of the veth0 .. veth127 and veth250/251 the SDE's
veth_setup.sh makes. One model runs per machine (bf_switchd reaches it on fixed
TCP ports from 8001), so one such testbed at a time.

bf_switchd writes a pushed pipeline's files into its working folder (the
driver's temporary copies of tofino.bin, context.json and bf-rt.json), the run
folder here, where the port map, the driver's conf and both logs are too.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bmv2.launch import SwitchStartError, free_tcp_port
from bmv2.sde import Sde

KIND = "tofino-model"
VETH_BASE = 1000
CHIP_TYPE = 2              # run_tofino_model.sh: tofino 2, tofino2 5, tofino3 6
STARTUP_TIMEOUT = 180.0    # the SDE's README: one to two minutes until both are up
DEPLOY_TIMEOUT = 300.0     # a P4Runtime call's bound: the push programs the model's pipes
PORT_MAP, SWITCHD_CONF = "ports.json", "bf_switchd.conf"
MODEL_LOG, SWITCHD_LOG = "tofino-model.log", "bf_switchd.log"


def veth_numbers(port: int) -> tuple[int, int]:
    """The port map's veth1 and veth2 of device port `port`."""
    return VETH_BASE + 2 * port, VETH_BASE + 2 * port + 1


def switch_veth(port: int) -> str:
    """The switch end of `port`'s link: the interface the model attaches."""
    return f"veth{veth_numbers(port)[0]}"


def host_veth(port: int) -> str:
    """The host's end of `port`'s link."""
    return f"veth{veth_numbers(port)[1]}"


def port_map(ports: list[int]) -> dict:
    """tofino-model's `-f` file for these device ports."""
    return {"PortToVeth": [{"device_port": port, "veth1": veth_numbers(port)[0],
                            "veth2": veth_numbers(port)[1]} for port in sorted(ports)]}


def switchd_conf(device_id: int) -> dict:
    """bf_switchd's --conf-file for one Tofino with no program (bf_switchd/
    switch_config.c reads it): the program comes over P4Runtime. No platform
    library is named, so bf_switchd runs the device as the model."""
    return {"chip_list": [{"instance": device_id, "chip_family": "tofino"}],
            "p4_devices": [{"device-id": device_id, "p4_programs": []}]}


@dataclass
class TofinoModelSwitch:
    """tofino-model and bf_switchd, started and stopped together; `proc` is
    bf_switchd, the P4Runtime server. `ports` maps device ports to the switch
    ends of their links, named by switch_veth."""

    sde: Sde
    ports: dict[int, str]
    run_dir: Path
    grpc_addr: str = field(default_factory=lambda: f"127.0.0.1:{free_tcp_port()}")
    device_id: int = 0
    kind: str = KIND
    model: subprocess.Popen | None = None
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        wrong = {port: name for port, name in self.ports.items() if name != switch_veth(port)}
        if wrong:
            raise ValueError(f"tofino-model attaches device port N to veth({VETH_BASE} + 2N); "
                             f"these are named otherwise: {wrong}")

    def model_command(self) -> list[str]:
        """run_tofino_model.sh's command line for one Tofino 1 without a program
        (its --conf-disable), packet logs off (its -q)."""
        return [str(self.sde.tofino_model), "--port-monitor", "-d", "1", "-k", "1",
                "-f", str(self.run_dir / PORT_MAP), "--install-dir", str(self.sde.install),
                "--chip-type", str(CHIP_TYPE), "--logs-disable"]

    def switchd_command(self) -> list[str]:
        """run_switchd.sh's command line with --skip-p4, in the background (no
        driver shell), with the P4Runtime server on grpc_addr."""
        return [str(self.sde.bf_switchd), "--install-dir", str(self.sde.install),
                "--conf-file", str(self.run_dir / SWITCHD_CONF), "--init-mode=cold",
                "--skip-p4", "--background", "--p4rt-server", self.grpc_addr]

    def write_files(self) -> None:
        """The port map and the driver's conf, in the run folder."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for name, doc in ((PORT_MAP, port_map(list(self.ports))),
                          (SWITCHD_CONF, switchd_conf(self.device_id))):
            (self.run_dir / name).write_text(json.dumps(doc, indent=1) + "\n")

    def _spawn(self, cmd: list[str], log_name: str) -> subprocess.Popen:
        """`cmd` in the run folder, its output (after the command line) in `log_name`."""
        with open(self.run_dir / log_name, "ab") as log:
            log.write(("$ " + " ".join(cmd) + "\n").encode())
            log.flush()
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.run_dir,
                                    env=self.sde.env(), start_new_session=True)

    def start(self, timeout: float = STARTUP_TIMEOUT) -> TofinoModelSwitch:
        """Start the model (unless it runs), then bf_switchd, and wait until the
        P4Runtime port accepts connections."""
        self.write_files()
        if self.model is None or self.model.poll() is not None:
            self.model = self._spawn(self.model_command(), MODEL_LOG)
        self.proc = self._spawn(self.switchd_command(), SWITCHD_LOG)
        host, port = self.grpc_addr.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc, log in (("tofino-model", self.model, MODEL_LOG),
                                    ("bf_switchd", self.proc, SWITCHD_LOG)):
                if proc.poll() is not None:
                    self.stop()
                    raise SwitchStartError(f"{name} exited with {proc.returncode}; see "
                                           f"{self.run_dir / log}")
            try:
                with socket.create_connection((host, int(port)), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise SwitchStartError(f"bf_switchd did not open P4Runtime on {self.grpc_addr} in "
                               f"{timeout:.0f} s; see {self.run_dir / SWITCHD_LOG}")

    def stop(self, timeout: float = 10.0) -> None:
        """bf_switchd, then the model: terminated by PID and waited for."""
        for proc in (self.proc, self.model):
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)

    def __enter__(self) -> TofinoModelSwitch:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
