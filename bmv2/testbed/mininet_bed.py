"""The testbed as a Mininet network: each configured host a Mininet host, the
P4 switch (bmv2 or the Python switch) a Mininet switch node whose ports are the
Mininet links, and the controller's deploy of the config on top.

It offers what the launcher needs of a testbed (bmv2.testbed.netns_bed.Bed), so
the launcher (agent.orchestration.launch.run) trains through it unchanged.
Mininet hosts' namespaces have no names: they are addressed as /proc/PID/ns/net
of each host's shell, and commands run in them through `mnexec -a PID`. Import
this module only once Mininet is importable (agent.orchestration.mininet_topo's
load_mininet() makes it so).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from mininet.net import Mininet
from mininet.node import Host, Switch
from mininet.topo import Topo

from bmv2.launch import SwitchProcess, free_tcp_port
from bmv2.testbed.netns import (
    netns_id,
    segmentation_offloads_off,
    stop_processes_in,
    sysctl,
    tx_checksum_off,
)
from bmv2.testbed.netns_bed import HOST_PREFIX_LEN, MININET_SWITCH, BedLifecycle, connect_and_deploy
from controller.config import Config
from controller.deploy import DeployReport
from controller.p4runtime_session import P4RuntimeSession

CONTROL_PORT = 0  # Mininet's loopback "control interface" of a root-namespace switch


class P4Switch(Switch):
    """The P4 switch as a Mininet node, in the root namespace: one
    simple_switch_grpc or Python switch process (bmv2.launch.SwitchProcess)
    with `-i PORT@IFACE` for each Mininet link, the pipeline pushed later by the
    controller over P4Runtime."""

    def __init__(self, name: str, kind: str = "python", grpc_addr: str = "",
                 device_id: int = 0, cpu_port: int | None = None,
                 log_path: Path | None = None, **params: object) -> None:
        super().__init__(name, **params)
        self.process = SwitchProcess(kind, {}, grpc_addr=grpc_addr, device_id=device_id,
                                     cpu_port=cpu_port, log_path=log_path)

    def data_ports(self) -> dict[int, str]:
        """Port number -> interface name of every link to a host."""
        return {self.ports[intf]: intf.name for intf in self.intfList()
                if self.ports[intf] != CONTROL_PORT}

    def start(self, controllers: list) -> None:  # Mininet's signature; no controllers
        self.process.ports = self.data_ports()
        for iface in self.process.ports.values():
            sysctl(f"net.ipv6.conf.{iface}.disable_ipv6", "1")
            segmentation_offloads_off(iface)
        self.process.start()

    def stop(self, deleteIntfs: bool = True) -> None:
        self.process.stop()
        super().stop(deleteIntfs)


class ReplayTopo(Topo):
    """One switch and the config's hosts, each on its configured switch port,
    with its configured address and MAC."""

    def build(self, config: Config) -> None:
        self.addSwitch(MININET_SWITCH)
        for h in config.hosts:
            self.addHost(h.name, ip=f"{h.ip}/{HOST_PREFIX_LEN}", mac=h.mac,
                         defaultRoute=f"dev {h.name}-eth0")
            self.addLink(h.name, MININET_SWITCH, port1=0, port2=h.port)


@dataclass
class MininetBed(BedLifecycle):
    """A Mininet network around one P4 switch, deployed from a Config."""

    config: Config
    switch_kind: str
    log_dir: Path | None = None
    net: Mininet | None = None
    session: P4RuntimeSession | None = None
    deploy_report: DeployReport | None = None
    _netns: dict[str, tuple[int, int]] = field(default_factory=dict)

    def host(self, name: str) -> Host:
        assert self.net is not None, "the network is not started"
        return self.net.get(name)

    def ns_name(self, host: str) -> str:
        return f"/proc/{self.host(host).pid}/ns/net"

    def exec_prefix(self, host: str) -> list[str]:
        return ["mnexec", "-a", str(self.host(host).pid)]

    def _bring_up(self) -> None:
        """Build and start the network, then deploy (BedLifecycle undoes a failure)."""
        grpc_addr = f"127.0.0.1:{free_tcp_port()}"
        self.config = replace(self.config, switch=replace(self.config.switch, address=grpc_addr))
        if self.log_dir:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"switch-{self.switch_kind}.log" if self.log_dir else None
        switch = partial(P4Switch, kind=self.switch_kind, grpc_addr=grpc_addr,
                         device_id=self.config.switch.device_id,
                         cpu_port=self.config.switch.cpu_port, log_path=log)
        # cleanup=False: Mininet's own cleanup (`mn -c`) would stop every
        # switch and controller on the machine, not only ours.
        self.net = Mininet(topo=ReplayTopo(self.config), switch=switch, controller=None,
                           autoSetMacs=False, autoStaticArp=False, cleanup=False,
                           build=False)
        self.net.start()  # builds the nodes and links, then starts the switch
        for h in self.config.hosts:
            node = self.host(h.name)
            self._netns[h.name] = netns_id(self.ns_name(h.name))
            node.cmd("sysctl -q -w net.ipv6.conf.all.disable_ipv6=1")
            tx_checksum_off(self.ns_name(h.name), node.defaultIntf().name)
        self.session, self.deploy_report = connect_and_deploy(self.config)

    def _tear_down(self) -> None:
        """Stop the network (switch, hosts, links), then anything still running in
        a host's namespace (after the session is closed)."""
        if self.net is not None:
            self.net.stop()
            self.net = None
        for ns in self._netns.values():
            stop_processes_in(ns)
        self._netns.clear()
