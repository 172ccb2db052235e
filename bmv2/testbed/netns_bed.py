"""The namespace testbed: one network namespace per configured host, a veth
from each to the switch, the switch process (bmv2 or the Python switch; or
Intel's model and its driver, bmv2/tofino_model.py) in the root namespace, and
the controller's deploy of the config. Torn down on exit,
error or signal, leaving no namespaces, links or processes behind. Also the host
replay server (the baseline) in a bed's namespace, serving a table as the config
sets it."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from agent.replay.host_server import Pacing
from agent.replay.memory import TableConfig
from agent.replay.server_process import ServerProcess
from bmv2 import tofino_model
from bmv2.launch import (
    KIND_DEVICE_CONFIGS,
    KIND_TARGETS,
    SwitchProcess,
    free_tcp_port,
    resolve_kind,
)
from bmv2.sde import find_sde
from bmv2.testbed.netns import (
    Namespace,
    VethPair,
    cleanup_prefix,
    configure_host,
    delete_links,
    ip,
    link_loss,
    segmentation_offloads_off,
    tx_checksum_off,
)
from controller.config import Config, ReplayTable
from controller.deploy import DeployReport, deploy
from controller.p4runtime_session import P4RuntimeSession

PREFIX = "p4r"
TESTBED_ELECTION_ID = 10  # below replayctl's default, so an operator's replayctl is primary
HOST_PREFIX_LEN = 15  # every host address is in 198.18.0.0/15
MININET_SWITCH = "s1"  # the P4 switch's node in bmv2.testbed.mininet_bed; ports s1-eth<port>


class Bed(Protocol):
    """What the launcher needs of a testbed: this one, or bmv2.testbed.mininet_bed's."""

    config: Config
    session: P4RuntimeSession | None
    deploy_report: DeployReport | None

    def ns_name(self, host: str) -> str:
        """`host`'s network namespace, as agent.rl.namespace.enter takes it."""
        ...

    def exec_prefix(self, host: str) -> list[str]:
        """Prefix that runs a command inside `host`'s namespace."""
        ...

    def __enter__(self) -> Bed: ...

    def __exit__(self, *exc_info: object) -> None: ...


class BedLifecycle:
    """Bring-up and teardown, written once for every bed (Testbed,
    bmv2.testbed.mininet_bed.MininetBed, the benchmarks' NetworkBed): start() runs
    _bring_up() and, if anything in it fails or is interrupted, stop()s what it
    made and re-raises; stop() closes the bed's P4Runtime session (if it has
    one), then runs _tear_down(), and is safe to call twice and after a partial
    start. A bed is also a context manager: up on entry, down on exit."""

    def _bring_up(self) -> None:
        raise NotImplementedError

    def _tear_down(self) -> None:
        raise NotImplementedError

    def start(self):  # -> the bed itself
        try:
            self._bring_up()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        session = getattr(self, "session", None)
        if session is not None:
            session.close()
            self.session = None
        self._tear_down()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def host_table_config(table: ReplayTable) -> TableConfig:
    """A config table as the host replay server and an in-process ReplayService serve it."""
    return TableConfig(capacity=table.capacity, min_size=table.min_size,
                       max_batch=table.max_batch, default_mode=table.mode_code)


def start_host_server(bed: Bed, host: str, table: int, allow: list[str], log_path: Path, *,
                      seed: int = 1, pacing: Pacing | None = None) -> ServerProcess:
    """The host replay server started in `host`'s namespace, serving `table` as the
    bed's config sets it to the sources `allow` names (ServerProcess's --allow specs)."""
    cfg = bed.config
    return ServerProcess(cfg.host(host).ip, [table], host_table_config(cfg.table(table)), allow,
                         log_path, seed=seed, prefix=tuple(bed.exec_prefix(host)),
                         pacing=pacing or Pacing()).start()


def _tag() -> str:
    return f"{os.getpid() % 100000:05d}"


@dataclass
class Testbed(BedLifecycle):
    """Hosts in namespaces around one switch, deployed from a Config."""

    __test__ = False  # not a pytest test class

    config: Config
    switch_kind: str = "auto"
    ip_stack: bool = True          # give hosts addresses (False: raw frames only)
    log_dir: Path | None = None
    tag: str = field(default_factory=_tag)
    grpc_addr: str | None = None   # None: a free port on 127.0.0.1
    deploy_config: bool = True     # False: leave the switch without a pipeline
    switch: SwitchProcess | tofino_model.TofinoModelSwitch | None = None
    session: P4RuntimeSession | None = None
    deploy_report: DeployReport | None = None
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    links: list[VethPair] = field(default_factory=list)

    def ns_name(self, host: str) -> str:
        return f"{PREFIX}{self.tag}-{host}"

    def switch_iface(self, port: int) -> str:
        if self.switch_kind == tofino_model.KIND:
            return tofino_model.switch_veth(port)   # the names the model's port map gives
        return f"{PREFIX}{self.tag}s{port}"

    def host_iface(self, host: str) -> str:
        port = self.config.host(host).port
        if self.switch_kind == tofino_model.KIND:
            return tofino_model.host_veth(port)
        return f"{PREFIX}{self.tag}h{port}"

    def start(self) -> Testbed:
        """Create everything; on any failure tear down what was made and re-raise."""
        self._kind = resolve_kind(self.switch_kind)
        return super().start()

    def _bring_up(self) -> None:
        kind = self._kind
        self._create_hosts()
        grpc_addr = self.grpc_addr or f"127.0.0.1:{free_tcp_port()}"
        switch_cfg = replace(self.config.switch, address=grpc_addr)
        target = KIND_TARGETS[kind]
        if switch_cfg.target is not target:   # the program this kind runs, at its ports
            switch_cfg = replace(switch_cfg, target=target, cpu_port=target.cpu_port)
        switch_cfg = replace(switch_cfg, device_config=KIND_DEVICE_CONFIGS.get(
            kind, switch_cfg.device_config))
        self.config = replace(self.config, switch=switch_cfg)
        log = self.log_dir / f"switch-{kind}.log" if self.log_dir else None
        if self.log_dir:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        ports = {h.port: self.switch_iface(h.port) for h in self.config.hosts}
        if kind == tofino_model.KIND:
            run_dir = (self.log_dir or Path(tempfile.gettempdir())) / f"{PREFIX}{self.tag}-{kind}"
            self.switch = tofino_model.TofinoModelSwitch(
                find_sde(), ports, run_dir, grpc_addr=grpc_addr,
                device_id=self.config.switch.device_id).start()
        else:
            self.switch = SwitchProcess(kind, ports, grpc_addr=grpc_addr,
                                        device_id=self.config.switch.device_id,
                                        cpu_port=self.config.switch.cpu_port,
                                        log_path=log).start()
        if self.deploy_config:
            self.session, self.deploy_report = connect_and_deploy(
                self.config, tofino_model.DEPLOY_TIMEOUT if kind == tofino_model.KIND else 10)

    def _create_hosts(self) -> None:
        delete_links(self._link_names())   # a crashed bed of the same tag
        for h in self.config.hosts:
            ns = Namespace(self.ns_name(h.name)).create()
            self.namespaces[h.name] = ns
            pair = VethPair(self.switch_iface(h.port), self.host_iface(h.name),
                            None, ns.name).create()
            self.links.append(pair)
            segmentation_offloads_off(self.switch_iface(h.port))
            if self.ip_stack:
                configure_host(ns.name, self.host_iface(h.name), f"{h.ip}/{HOST_PREFIX_LEN}", h.mac)
                tx_checksum_off(ns.name, self.host_iface(h.name))
            else:
                ip("link", "set", self.host_iface(h.name), "address", h.mac, ns=ns.name)
                ip("link", "set", self.host_iface(h.name), "up", ns=ns.name)

    def _link_names(self) -> list[str]:
        """Both ends' names of every host link, as they are in this namespace."""
        return [name for h in self.config.hosts
                for name in (self.switch_iface(h.port), self.host_iface(h.name))]

    def exec_prefix(self, host: str) -> list[str]:
        return self.namespaces[host].exec_prefix()

    def crash_switch(self) -> None:
        """Kill the switch process as a crash would (SIGKILL): its tables, registers
        and pipeline are gone; hosts and links stay. The session is closed."""
        assert self.switch is not None and self.switch.proc is not None
        if self.session is not None:
            self.session.close()
            self.session = None
        self.switch.proc.kill()
        self.switch.proc.wait()

    def restart_switch(self) -> None:
        """Start the switch process again on the same ports and address, without a
        pipeline (deploy, then restore, is the caller's)."""
        assert self.switch is not None
        self.switch.start()

    def link_loss(self, percent: float) -> str:
        """Drop `percent` % of the frames each way on every host's link; the tool used."""
        return {link_loss(self.host_iface(h.name), self.ns_name(h.name),
                          self.switch_iface(h.port), percent) for h in self.config.hosts}.pop()

    def _tear_down(self) -> None:
        """The switch, the links, the namespaces (after the session is closed)."""
        if self.switch is not None:
            self.switch.stop()
            self.switch = None
        for pair in self.links:
            pair.delete()
        self.links.clear()
        for ns in self.namespaces.values():
            ns.delete()
        self.namespaces.clear()
        cleanup_prefix(f"{PREFIX}{self.tag}-")
        delete_links(self._link_names())


def connect_and_deploy(config: Config,
                       timeout: float = 10) -> tuple[P4RuntimeSession, DeployReport]:
    """A primary P4Runtime session to the config's switch (each call bounded by
    `timeout` seconds), and the deploy of the config."""
    session = P4RuntimeSession(config.switch.address, config.switch.device_id,
                               election_id=TESTBED_ELECTION_ID, timeout=timeout,
                               tls=config.switch.tls).connect()
    return session, deploy(session, config)


def wait_for(predicate, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
