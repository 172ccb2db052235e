"""Packet replication engine entries: multicast groups and clone sessions.

Follows p4lang/PI's pre_mc_mgr / pre_clone_mgr: multicast group ids live in
]0, 32768[ (PI keeps the ids above for the groups behind clone sessions),
clone session ids in [1, 32768[. Replicas are read back ordered by instance,
then by port, as PI's maps and sets order them. The Python switch takes a
clone session's replicas directly, so no hidden multicast group is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import (
    P4RuntimeError,
    TargetError,
    invalid_argument,
    unimplemented,
)

FIRST_RESERVED_GROUP_ID = 1 << 15
MAX_CLONE_SESSION_ID = 1 << 15

Update = p4runtime_pb2.Update


@dataclass(frozen=True, order=True)
class ReplicaKey:
    """One replica as PI orders them: instance, port kind, port, port bytes."""

    instance: int
    kind: int
    port: int
    port_bytes: int

    def to_proto(self) -> p4runtime_pb2.Replica:
        """The replica as the client wrote it."""
        replica = p4runtime_pb2.Replica(instance=self.instance)
        if self.kind == p4runtime_pb2.Replica.EGRESS_PORT_FIELD_NUMBER:
            replica.egress_port = self.port
        else:
            replica.port = self.port.to_bytes(self.port_bytes, "big")
        return replica


def port_of_bytes(value: bytes) -> int:
    """PI's bytestring_to_pi_port: 1 to 4 bytes holding a positive int32."""
    if not value:
        raise invalid_argument("Port must not be the empty string")
    if len(value) > 4:
        raise unimplemented(f"Got port of {len(value)} bytes, but only 4 bytes are supported")
    port = int.from_bytes(value, "big", signed=False)
    if port == 0 or port >= 1 << 31:
        raise invalid_argument("Port must be non-negative.")
    return port


def replicas_of(replicas: list[p4runtime_pb2.Replica]) -> tuple[ReplicaKey, ...]:
    """Validated, PI-ordered replicas of a group or session."""
    keys: set[ReplicaKey] = set()
    for replica in replicas:
        kind = replica.WhichOneof("port_kind")
        if kind == "egress_port":
            key = ReplicaKey(
                replica.instance, p4runtime_pb2.Replica.EGRESS_PORT_FIELD_NUMBER,
                replica.egress_port, 0,
            )
        elif kind == "port":
            key = ReplicaKey(
                replica.instance, p4runtime_pb2.Replica.PORT_FIELD_NUMBER,
                port_of_bytes(replica.port), len(replica.port),
            )
        else:
            raise invalid_argument("Missing port in multicast group replica")
        if key in keys:
            raise invalid_argument("Duplicate replica in multicast group")
        keys.add(key)
    return tuple(sorted(keys))


class PreTarget(Protocol):
    """What the PRE manager needs from the switch (which raises TargetError)."""

    def mc_group_set(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        """Create or replace a multicast group of (port, instance) replicas."""

    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""

    def clone_session_set(
        self, session_id: int, replicas: list[tuple[int, int]], packet_length: int
    ) -> None:
        """Create or replace a clone session (packet_length 0: no truncation)."""

    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session."""


@dataclass(frozen=True)
class CloneSession:
    """A clone session as the client wrote it (class of service is always 0)."""

    packet_length_bytes: int
    replicas: tuple[ReplicaKey, ...]


class PreManager:
    """Multicast groups and clone sessions of one pipeline."""

    def __init__(self, target: PreTarget) -> None:
        self._target = target
        self._groups: dict[int, tuple[ReplicaKey, ...]] = {}
        self._sessions: dict[int, CloneSession] = {}

    def write(self, update_type: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        """One PRE update."""
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            self._write_group(update_type, entry.multicast_group_entry)
        elif kind == "clone_session_entry":
            self._write_session(update_type, entry.clone_session_entry)
        else:
            raise invalid_argument("Invalid PRE operation")

    def read(
        self, entry: p4runtime_pb2.PacketReplicationEngineEntry
    ) -> list[p4runtime_pb2.PacketReplicationEngineEntry]:
        """The PRE entries a read request selects."""
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            return self._read_groups(entry.multicast_group_entry.multicast_group_id)
        if kind == "clone_session_entry":
            return self._read_sessions(entry.clone_session_entry.session_id)
        raise invalid_argument("Invalid PRE operation")

    def _write_group(self, update_type: int, entry: p4runtime_pb2.MulticastGroupEntry) -> None:
        group_id = entry.multicast_group_id
        if group_id == 0:
            raise invalid_argument("0 is not a valid group id")
        if group_id >= FIRST_RESERVED_GROUP_ID:
            raise P4RuntimeError(code_pb2.OUT_OF_RANGE, "Group id value is too high")
        if update_type == Update.INSERT:
            self._group_create(group_id, entry.replicas)
        elif update_type == Update.MODIFY:
            self._group_modify(group_id, entry.replicas)
        elif update_type == Update.DELETE:
            self._group_delete(group_id)
        elif update_type == Update.UNSPECIFIED:
            raise invalid_argument("Update type is not set")
        else:
            raise invalid_argument("Invalid update type")

    def _group_create(self, group_id: int, replicas: list[p4runtime_pb2.Replica]) -> None:
        if group_id in self._groups:
            raise P4RuntimeError(code_pb2.ALREADY_EXISTS, "Multicast group already exists")
        keys = replicas_of(replicas)
        self._program_group(group_id, keys, "Error when creating multicast group in target")
        self._groups[group_id] = keys

    def _group_modify(self, group_id: int, replicas: list[p4runtime_pb2.Replica]) -> None:
        if group_id not in self._groups:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Multicast group does not exist")
        keys = replicas_of(replicas)
        self._program_group(group_id, keys, "Error when modifying multicast group in target")
        self._groups[group_id] = keys

    def _group_delete(self, group_id: int) -> None:
        if group_id not in self._groups:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Multicast group does not exist")
        try:
            self._target.mc_group_delete(group_id)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when deleting multicast group in target") from exc
        del self._groups[group_id]

    def _program_group(self, group_id: int, keys: tuple[ReplicaKey, ...], message: str) -> None:
        try:
            self._target.mc_group_set(group_id, [(k.port, k.instance) for k in keys])
        except TargetError as exc:
            raise exc.as_p4runtime(message) from exc

    def _read_groups(self, group_id: int) -> list[p4runtime_pb2.PacketReplicationEngineEntry]:
        if group_id >= FIRST_RESERVED_GROUP_ID:
            raise P4RuntimeError(code_pb2.OUT_OF_RANGE, "Group id value is too high")
        if group_id == 0:
            ids = sorted(self._groups)
        elif group_id in self._groups:
            ids = [group_id]
        else:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Multicast group does not exist")
        return [
            p4runtime_pb2.PacketReplicationEngineEntry(
                multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(
                    multicast_group_id=g, replicas=[k.to_proto() for k in self._groups[g]]
                )
            )
            for g in ids
        ]

    # -- clone sessions ---------------------------------------------------

    def _write_session(self, update_type: int, entry: p4runtime_pb2.CloneSessionEntry) -> None:
        session_id = entry.session_id
        if session_id == 0:
            raise invalid_argument("0 is not a valid session id")
        if update_type == Update.UNSPECIFIED:
            raise invalid_argument("Update type is not set")
        if update_type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
            raise invalid_argument("Invalid update type")
        if session_id >= MAX_CLONE_SESSION_ID:
            raise invalid_argument("Clone session id out-of-range")
        exists = session_id in self._sessions
        if update_type == Update.INSERT and exists:
            raise P4RuntimeError(code_pb2.ALREADY_EXISTS, "Clone session id already exists")
        if update_type != Update.INSERT and not exists:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Clone session id does not exist")
        if update_type == Update.DELETE:
            try:
                self._target.clone_session_delete(session_id)
            except TargetError as exc:
                raise exc.as_p4runtime("Error when resetting clone session in target") from exc
            del self._sessions[session_id]
            return
        keys = replicas_of(entry.replicas)
        if entry.class_of_service != 0:
            raise unimplemented("COS for clone sessions not supported yet")
        try:
            self._target.clone_session_set(
                session_id, [(k.port, k.instance) for k in keys], entry.packet_length_bytes
            )
        except TargetError as exc:
            raise exc.as_p4runtime("Error when creating clone session in target") from exc
        self._sessions[session_id] = CloneSession(entry.packet_length_bytes, keys)

    def _read_sessions(self, session_id: int) -> list[p4runtime_pb2.PacketReplicationEngineEntry]:
        if session_id == 0:
            ids = sorted(self._sessions)
        elif session_id in self._sessions:
            ids = [session_id]
        else:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Clone session id does not exist")
        entries = []
        for sid in ids:
            session = self._sessions[sid]
            entries.append(
                p4runtime_pb2.PacketReplicationEngineEntry(
                    clone_session_entry=p4runtime_pb2.CloneSessionEntry(
                        session_id=sid,
                        packet_length_bytes=session.packet_length_bytes,
                        replicas=[k.to_proto() for k in session.replicas],
                    )
                )
            )
        return entries

    def entries(self) -> list[p4runtime_pb2.PacketReplicationEngineEntry]:
        """Every group and session, for reconciling a new pipeline."""
        return self._read_groups(0) + self._read_sessions(0)
