"""Packet replication engine: multicast groups and clone (mirroring) sessions.

Replication order follows bmv2's PRE as P4Runtime programs it: one node per
replication id (ascending), the ports of a node ascending.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import InvalidEntryError, UnknownNameError

MAX_MGID = 0xFFFF
MAX_SESSION_ID = (1 << 15) - 1
MAX_PORT = (1 << 9) - 1
MAX_RID = 0xFFFF

Replica = tuple[int, int]


def _check_replicas(replicas: Iterable[Replica], what: str) -> tuple[Replica, ...]:
    out = []
    for item in replicas:
        try:
            port, rid = item
        except (TypeError, ValueError):
            raise InvalidEntryError(
                f"{what}: a replica is a (port, rid) pair, not {item!r}") from None
        if not isinstance(port, int) or not 0 <= port <= MAX_PORT:
            raise InvalidEntryError(f"{what}: port {port!r} out of range 0..{MAX_PORT}")
        if not isinstance(rid, int) or not 0 <= rid <= MAX_RID:
            raise InvalidEntryError(f"{what}: rid {rid!r} out of range 0..{MAX_RID}")
        out.append((int(port), int(rid)))
    return tuple(out)


def _expand(replicas: tuple[Replica, ...]) -> tuple[Replica, ...]:
    """bmv2 order: by rid, then by port; duplicates collapse."""
    return tuple(sorted(set(replicas), key=lambda r: (r[1], r[0])))


@dataclass(frozen=True, slots=True)
class CloneSession:
    """Where the copies of a clone session go: a port, a multicast group and/or replicas."""

    port: int | None = None
    mc_group: int | None = None
    replicas: tuple[Replica, ...] = ()


class Pre:
    """Multicast groups and clone sessions of one switch."""

    def __init__(self) -> None:
        self._groups: dict[int, tuple[Replica, ...]] = {}
        self._expanded: dict[int, tuple[Replica, ...]] = {}
        self._sessions: dict[int, CloneSession] = {}
        self._session_copies: dict[int, tuple[Replica, ...]] = {}

    def group_set(self, group_id: int, replicas: Iterable[Replica]) -> None:
        """Create or replace multicast group ``group_id``."""
        if not isinstance(group_id, int) or not 1 <= group_id <= MAX_MGID:
            raise InvalidEntryError(f"multicast group id {group_id!r} out of range 1..{MAX_MGID}")
        reps = _check_replicas(replicas, f"multicast group {group_id}")
        self._groups[group_id] = reps
        self._expanded[group_id] = _expand(reps)

    def group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        if group_id not in self._groups:
            raise UnknownNameError(f"no multicast group {group_id}")
        del self._groups[group_id]
        del self._expanded[group_id]

    def groups(self) -> dict[int, list[Replica]]:
        """All groups with their replicas as configured."""
        return {g: list(r) for g, r in sorted(self._groups.items())}

    def replicate(self, group_id: int) -> tuple[Replica, ...]:
        """The (port, rid) copies of a group; none for an unknown group (bmv2 warns)."""
        return self._expanded.get(group_id, ())

    def session_set(self, session_id: int, port: int | None = None,
                    mc_group: int | None = None,
                    replicas: Iterable[Replica] | None = None) -> None:
        """Create or replace clone session ``session_id``."""
        if not isinstance(session_id, int) or not 0 <= session_id <= MAX_SESSION_ID:
            raise InvalidEntryError(
                f"clone session id {session_id!r} out of range 0..{MAX_SESSION_ID}")
        if port is not None and (not isinstance(port, int) or not 0 <= port <= MAX_PORT):
            raise InvalidEntryError(f"clone session {session_id}: port {port!r} out of range")
        if mc_group is not None and (not isinstance(mc_group, int)
                                     or not 1 <= mc_group <= MAX_MGID):
            raise InvalidEntryError(
                f"clone session {session_id}: multicast group {mc_group!r} out of range")
        reps = _check_replicas(replicas or (), f"clone session {session_id}")
        if port is None and mc_group is None and not reps:
            raise InvalidEntryError(
                f"clone session {session_id} needs a port, a multicast group or replicas")
        self._sessions[session_id] = CloneSession(port, mc_group, reps)
        self._session_copies[session_id] = _expand(reps)

    def session_delete(self, session_id: int) -> None:
        """Delete a clone session."""
        if session_id not in self._sessions:
            raise UnknownNameError(f"no clone session {session_id}")
        del self._sessions[session_id]
        del self._session_copies[session_id]

    def sessions(self) -> dict[int, CloneSession]:
        """All clone sessions."""
        return dict(sorted(self._sessions.items()))

    def session(self, session_id: int) -> CloneSession | None:
        """One session, or None."""
        return self._sessions.get(session_id)

    def session_copies(self, session_id: int) -> tuple[Replica, ...]:
        """The (port, rid) copies made for a session's replicas list."""
        return self._session_copies.get(session_id, ())

    def clear(self) -> None:
        """Forget all groups and sessions."""
        self._groups.clear()
        self._expanded.clear()
        self._sessions.clear()
        self._session_copies.clear()
