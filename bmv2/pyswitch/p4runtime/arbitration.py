"""Client arbitration (MasterArbitrationUpdate), as p4lang/PI's pi_server does it.

Per device id, the connections are ordered by election id; the highest is the
primary. Every change of primary notifies all connections, otherwise only the
one that changed: the primary gets status OK "Is primary", the others
ALREADY_EXISTS "Is backup", and each notification carries the primary's
election id. A second connection with an election id already in use is refused
with INVALID_ARGUMENT, a 17th with RESOURCE_EXHAUSTED. PI ignores roles, and so
does this server. State is kept for any device id a client names, exactly as
PI does: only the switch's own device id ever gets a pipeline.
"""

from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import dataclass, field

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import P4RuntimeError, invalid_argument

MAX_CONNECTIONS = 16

_connection_ids = itertools.count(1)


def election_id_of(uint128: p4runtime_pb2.Uint128) -> int:
    """A p4.v1.Uint128 as an int."""
    return (uint128.high << 64) | uint128.low


def uint128_of(value: int) -> p4runtime_pb2.Uint128:
    """An int as a p4.v1.Uint128."""
    return p4runtime_pb2.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


@dataclass(eq=False)
class Connection:
    """One StreamChannel: its election id and the queue of messages to send it."""

    device_id: int
    election_id: int
    outbox: queue.Queue[p4runtime_pb2.StreamMessageResponse | None] = field(
        default_factory=queue.Queue
    )
    id: int = field(default_factory=lambda: next(_connection_ids))

    def send(self, message: p4runtime_pb2.StreamMessageResponse) -> None:
        """Queue a message for the client."""
        self.outbox.put(message)

    def close(self) -> None:
        """Wake the sender so that the stream ends."""
        self.outbox.put(None)


class Arbitration:
    """The connections of every device id, and which one is primary."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._devices: dict[int, list[Connection]] = {}

    def _connections(self, device_id: int) -> list[Connection]:
        return self._devices.setdefault(device_id, [])

    def _sort(self, device_id: int) -> None:
        self._connections(device_id).sort(key=lambda c: c.election_id, reverse=True)

    def primary(self, device_id: int) -> Connection | None:
        """The primary connection of a device, if any."""
        with self._lock:
            connections = self._connections(device_id)
            return connections[0] if connections else None

    def connection_count(self, device_id: int) -> int:
        """How many streams are open for a device."""
        with self._lock:
            return len(self._connections(device_id))

    def is_primary(self, device_id: int, election_id: int) -> bool:
        """Whether ``election_id`` is the primary's election id for the device."""
        primary = self.primary(device_id)
        return primary is not None and primary.election_id == election_id

    def check_write_access(self, device_id: int, election_id: int | None) -> None:
        """PI's rule for Write and SetForwardingPipelineConfig: only the primary.

        With no stream open, requests without an election id are accepted.
        """
        with self._lock:
            count = self.connection_count(device_id)
            if (count == 0 and election_id is not None) or (
                count > 0 and not self.is_primary(device_id, election_id or 0)
            ):
                raise P4RuntimeError(code_pb2.PERMISSION_DENIED, "Not primary")

    def add(self, connection: Connection) -> None:
        """Register a new stream's first arbitration update."""
        with self._lock:
            connections = self._connections(connection.device_id)
            if len(connections) >= MAX_CONNECTIONS:
                raise P4RuntimeError(code_pb2.RESOURCE_EXHAUSTED, "Too many connections")
            if any(c.election_id == connection.election_id for c in connections):
                raise invalid_argument("Election id already exists")
            connections.append(connection)
            self._sort(connection.device_id)
            if connections[0] is connection:
                self._notify_all(connection.device_id)
            else:
                self._notify_one(connection)

    def update(self, connection: Connection, election_id: int) -> None:
        """A later arbitration update on the same stream."""
        with self._lock:
            if election_id == connection.election_id:
                return
            device_id = connection.device_id
            connections = self._connections(device_id)
            was_primary = connections[0] is connection
            connections.remove(connection)
            if any(c.election_id == election_id for c in connections):
                # PI has already taken the connection out of its set here.
                raise invalid_argument("New election id already exists")
            connection.election_id = election_id
            connections.append(connection)
            self._sort(device_id)
            if (connections[0] is connection) != was_primary:
                self._notify_all(device_id)
            else:
                self._notify_one(connection)

    def remove(self, connection: Connection) -> None:
        """A stream ended: a new primary, if any, is told to everyone."""
        with self._lock:
            connections = self._connections(connection.device_id)
            if connection not in connections:
                return
            was_primary = connections[0] is connection
            connections.remove(connection)
            if was_primary:
                self._notify_all(connection.device_id)

    def _notify_all(self, device_id: int) -> None:
        for connection in self._connections(device_id):
            self._notify_one(connection)

    def _notify_one(self, connection: Connection) -> None:
        primary = self._connections(connection.device_id)[0]
        update = p4runtime_pb2.MasterArbitrationUpdate(
            device_id=connection.device_id, election_id=uint128_of(primary.election_id)
        )
        if connection is primary:
            update.status.code = code_pb2.OK
            update.status.message = "Is primary"
        else:
            update.status.code = code_pb2.ALREADY_EXISTS
            update.status.message = "Is backup"
        connection.send(p4runtime_pb2.StreamMessageResponse(arbitration=update))
