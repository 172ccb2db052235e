"""The thin layer between the P4Runtime server and the Python switch engine.

It owns the live ``Switch`` and, between a VERIFY_AND_SAVE and its COMMIT, the
saved one (control-plane writes go to the saved pipeline then, as with bmv2);
serializes every use of the engine behind one lock; turns engine errors into
``TargetError``; converts match keys between the server's form (see
``tables``) and the engine's match objects; and routes the frames the
switch emits: to the CPU port's packet-in sink or to the port transmitter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bmv2.pyswitch.engine import OutputHook
from bmv2.pyswitch.errors import PySwitchError
from bmv2.pyswitch.p4runtime.p4info import MatchType, TableInfo
from bmv2.pyswitch.p4runtime.status import TargetError
from bmv2.pyswitch.p4runtime.tables import FieldValue, MatchKey, dont_care
from bmv2.pyswitch.switch import Switch
from bmv2.pyswitch.tables import Exact, Lpm, Match, Optional_, Range, Ternary


def engine_matches(table: TableInfo, key: MatchKey) -> list[Match]:
    """The engine's match objects for a match key (None for don't-care fields)."""
    matches: list[Match] = []
    for mf, value in zip(table.match_fields, key.fields, strict=True):
        if mf.match_type == MatchType.EXACT:
            matches.append(Exact(value[0]))
        elif value == dont_care(mf):
            matches.append(None)
        elif mf.match_type == MatchType.LPM:
            matches.append(Lpm(*value))
        elif mf.match_type == MatchType.TERNARY:
            matches.append(Ternary(*value))
        elif mf.match_type == MatchType.RANGE:
            matches.append(Range(*value))
        else:
            matches.append(Optional_(value[0]))
    return matches


def key_of_matches(table: TableInfo, matches: tuple[Match, ...], priority: int | None) -> MatchKey:
    """The match key of an entry the engine reports."""
    values: list[FieldValue] = []
    for mf, m in zip(table.match_fields, matches, strict=True):
        if m is None:
            values.append(dont_care(mf))
        elif isinstance(m, Exact):
            values.append((m.value,))
        elif isinstance(m, Lpm):
            values.append((m.value, m.prefix_len) if m.prefix_len else (0, 0))
        elif isinstance(m, Range):
            values.append((m.low, m.high))
        elif mf.match_type == MatchType.OPTIONAL:
            values.append((m.value, 1) if m.mask else (0, 0))
        else:
            values.append((m.value & m.mask, m.mask))
    return MatchKey(tuple(values), priority or 0)


class Dataplane:
    """The switch the server drives, and where its output frames go."""

    def __init__(self, cpu_port: int = 0) -> None:
        self.cpu_port = cpu_port
        self._lock = threading.RLock()
        self._live: Switch | None = None
        self._saved: Switch | None = None
        self._transmit: OutputHook = lambda port, frame: None
        self._packet_in: Callable[[bytes], None] | None = None

    # -- pipelines ---------------------------------------------------------

    @property
    def switch(self) -> Switch | None:
        """The switch processing packets (None before any program is loaded)."""
        return self._live

    def build(self, program: dict[str, Any]) -> Switch:
        """A new switch running ``program`` (TargetError if it is not a valid bmv2 JSON)."""
        try:
            return Switch(program, cpu_port=self.cpu_port or None)
        except PySwitchError as exc:
            raise TargetError(str(exc)) from exc

    def run(self, switch: Switch) -> None:
        """Make ``switch`` the one processing packets, dropping any saved one."""
        with self._lock:
            self._live = switch
            self._saved = None

    def save(self, switch: Switch) -> None:
        """Hold ``switch`` until ``commit``; control-plane calls go to it meanwhile."""
        with self._lock:
            self._saved = switch

    def discard(self) -> None:
        """Drop the saved switch, if any."""
        with self._lock:
            self._saved = None

    def commit(self) -> None:
        """Start the saved switch (TargetError when nothing was saved)."""
        with self._lock:
            if self._saved is None:
                raise TargetError("no saved pipeline to commit")
            self.run(self._saved)

    @contextmanager
    def control(self) -> Iterator[Switch]:
        """The switch control-plane calls apply to, locked, engine errors as TargetError."""
        with self._lock:
            switch = self._saved or self._live
            if switch is None:
                raise TargetError("no P4 program loaded")
            try:
                yield switch
            except PySwitchError as exc:
                raise TargetError(str(exc)) from exc

    # -- packet replication (the PreTarget of pre) ----------------------

    def mc_group_set(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        """Create or replace a multicast group of (port, instance) replicas."""
        with self.control() as switch:
            switch.mc_group_set(group_id, replicas)

    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        with self.control() as switch:
            switch.mc_group_delete(group_id)

    def clone_session_set(
        self, session_id: int, replicas: list[tuple[int, int]], packet_length: int
    ) -> None:
        """Create or replace a clone session whose copies go to ``replicas``.

        Like bmv2's PI target, a session that truncates copies (packet_length
        not 0) is refused.
        """
        if packet_length:
            raise TargetError("clone session truncation (packet_length_bytes) is not supported")
        with self.control() as switch:
            if replicas:
                switch.clone_session_set(session_id, replicas=replicas)
            elif session_id in switch.clone_sessions():
                # The engine wants somewhere to send copies; no session makes none too.
                switch.clone_session_delete(session_id)

    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session (one without replicas is not in the engine)."""
        with self.control() as switch:
            if session_id in switch.clone_sessions():
                switch.clone_session_delete(session_id)

    # -- packets -------------------------------------------------------------

    def set_transmit(self, transmit: OutputHook) -> None:
        """Where frames for ports other than the CPU port go."""
        self._transmit = transmit

    def set_packet_in(self, sink: Callable[[bytes], None] | None) -> None:
        """Where frames for the CPU port go (None: dropped)."""
        self._packet_in = sink

    def receive(self, port: int, frame: bytes) -> None:
        """Run a frame received on ``port`` through the live switch. Frames for the
        ports leave as each egress pass ends; frames for the CPU port go to the
        packet-in sink once the switch is released (it takes the stream's locks)."""
        to_cpu: list[bytes] = []
        cpu_port, transmit = self.cpu_port, self._transmit

        def emit(out_port: int, out_frame: bytes) -> None:
            if cpu_port and out_port == cpu_port:
                to_cpu.append(out_frame)
            else:
                transmit(out_port, out_frame)

        with self._lock:
            switch = self._live
            if switch is None:
                return
            switch.process(port, frame, emit)
        if self._packet_in is not None:
            for out_frame in to_cpu:
                self._packet_in(out_frame)

    def packet_out(self, frame: bytes) -> None:
        """Inject a controller frame on the CPU port (TargetError if there is none)."""
        if not self.cpu_port:
            raise TargetError("no CPU port: start the switch with --cpu-port")
        self.receive(self.cpu_port, frame)
