"""TableEntry and DirectCounterEntry writes and reads, as p4lang/PI's DeviceMgr does them.

Entries are read back from the switch (so const entries of the program show
too); the server keeps, per match key, the engine handle and what the client
attached (controller_metadata, metadata). bmv2 reports both packet and byte
counts whatever the counter unit, and has no direct counter on default entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from bmv2.pyswitch.p4runtime.dataplane import Dataplane, engine_matches, key_of_matches
from bmv2.pyswitch.p4runtime.p4info import P4InfoIndex, TableInfo
from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import (
    P4RuntimeError,
    TargetError,
    check_update_type,
    invalid_argument,
    unimplemented,
)
from bmv2.pyswitch.p4runtime.tables import (
    DEFAULT_KEY,
    ActionCall,
    MatchKey,
    StoredEntry,
    TableStore,
    action_call,
    action_message,
    match_fields_of,
    match_key,
    validate_action,
)
from bmv2.pyswitch.switch import Switch

Update = p4runtime_pb2.Update
NO_DEFAULT_DIRECT_COUNTER = "bmv2 does not support direct counters for default entries"


@dataclass
class TableOps:
    """Table entries and direct counters of one pipeline."""

    index: P4InfoIndex
    store: TableStore
    dataplane: Dataplane

    @classmethod
    def create(cls, index: P4InfoIndex, dataplane: Dataplane) -> TableOps:
        """The table state of a new pipeline: only the default entries."""
        store = TableStore()
        for table_id in index.tables:
            store.table(table_id)[DEFAULT_KEY] = StoredEntry(None)
        return cls(index, store, dataplane)

    # -- writes --------------------------------------------------------------

    def write(self, update_type: int, entry: p4runtime_pb2.TableEntry) -> None:
        """One TableEntry update."""
        table = self.index.table(entry.table_id)
        if entry.HasField("time_since_last_hit"):
            raise invalid_argument("has_time_since_last_hit must not be set in WriteRequest")
        check_update_type(update_type)
        if update_type == Update.INSERT:
            self._insert(table, entry)
        elif update_type == Update.MODIFY:
            self._modify(table, entry)
        else:
            self._delete(table, entry)

    def _call(self, entry: p4runtime_pb2.TableEntry) -> ActionCall:
        return action_call(self.index.action(entry.action.action.action_id), entry.action.action)

    def _check_resources(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> None:
        if entry.HasField("meter_config"):
            if self.index.has_direct_meter(table):
                raise unimplemented("The Python switch has no meters")
            raise invalid_argument("Table has no direct meters")
        if entry.HasField("counter_data") and self.index.direct_counter_of(table) is None:
            raise invalid_argument("Table has no direct counters")
        if entry.idle_timeout_ns < 0:
            raise invalid_argument("idle_timeout_ns must be a positive value")
        if entry.idle_timeout_ns > 0:
            raise invalid_argument(
                "idle_timeout_ns must be set to 0 for tables which do not support idle timeout"
            )

    def _insert(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> None:
        if entry.is_default_action:
            raise invalid_argument("Cannot use INSERT for default entry")
        if not entry.HasField("action"):
            raise invalid_argument("'action' field must be set")
        key = match_key(table, entry)
        validate_action(self.index, table, entry)
        call = self._call(entry)
        self._check_resources(table, entry)
        entries = self.store.table(table.id)
        if key in entries:
            raise P4RuntimeError(
                code_pb2.ALREADY_EXISTS,
                "Match entry exists, use MODIFY if you wish to change action",
            )
        try:
            with self.dataplane.control() as switch:
                handle = switch.table_add(
                    table.name,
                    engine_matches(table, key),
                    self.index.actions[call.action_id].name,
                    list(call.args),
                    priority=key.priority if table.needs_priority else None,
                )
                if entry.HasField("counter_data"):
                    self._set_direct_counter(switch, table, handle, entry.counter_data)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when adding match entry to target") from exc
        entries[key] = StoredEntry(handle, entry.controller_metadata, entry.metadata)

    def _modify(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> None:
        key = match_key(table, entry)
        validate_action(self.index, table, entry)
        call = None
        if entry.HasField("action"):
            call = self._call(entry)
        elif not entry.is_default_action:
            raise invalid_argument("'action' field must be set for non-default entries")
        self._check_resources(table, entry)
        stored = self.store.get(table.id, key)
        if stored is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Cannot find match entry")
        try:
            with self.dataplane.control() as switch:
                if call is None:
                    switch.table_reset_default(table.name)
                elif key.is_default:
                    switch.table_set_default(
                        table.name, self.index.actions[call.action_id].name, list(call.args)
                    )
                else:
                    switch.table_modify(
                        table.name,
                        stored.handle,
                        self.index.actions[call.action_id].name,
                        list(call.args),
                    )
                if entry.HasField("counter_data"):
                    if stored.handle is None:
                        raise TargetError(NO_DEFAULT_DIRECT_COUNTER)
                    self._set_direct_counter(switch, table, stored.handle, entry.counter_data)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when modifying match entry in target") from exc
        stored.controller_metadata = entry.controller_metadata if call else 0
        stored.metadata = entry.metadata if call else b""

    def _delete(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> None:
        if entry.is_default_action:
            raise invalid_argument("Cannot use DELETE for default entry")
        key = match_key(table, entry)
        entries = self.store.table(table.id)
        stored = entries.get(key)
        if stored is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, "Cannot find match entry")
        try:
            with self.dataplane.control() as switch:
                switch.table_delete(table.name, stored.handle)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when deleting match entry in target") from exc
        del entries[key]

    @staticmethod
    def _set_direct_counter(
        switch: Switch, table: TableInfo, handle: int, data: p4runtime_pb2.CounterData
    ) -> None:
        switch.direct_counter_write(table.name, handle, data.packet_count, data.byte_count)

    # -- reads ---------------------------------------------------------------

    def read(self, requested: p4runtime_pb2.TableEntry) -> list[p4runtime_pb2.Entity]:
        """The entries a TableEntry read selects (table_id 0: every table)."""
        if requested.table_id == 0:
            out: list[p4runtime_pb2.Entity] = []
            for table in self.index.tables.values():
                out.extend(self._read_table(table, requested))
            return out
        return self._read_table(self.index.table(requested.table_id), requested)

    def _read_table(
        self, table: TableInfo, requested: p4runtime_pb2.TableEntry
    ) -> list[p4runtime_pb2.Entity]:
        if requested.is_default_action:
            return [self._read_default(table, requested)]
        if requested.HasField("time_since_last_hit"):
            raise invalid_argument(
                "Do not set time_since_last_hit for a ReadRequest if the table does not "
                "support idle timeout; yes, that includes wildcard reads"
            )
        wanted = match_key(table, requested) if len(requested.match) > 0 else None
        try:
            with self.dataplane.control() as switch:
                entries = switch.table_entries(table.name)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when reading table entries from target") from exc
        out = []
        for engine_entry in entries:
            key = key_of_matches(table, engine_entry.matches, engine_entry.priority)
            if wanted is not None and key != wanted:
                continue
            message = self._entry_message(table, key)
            info = self.index.action_by_name(engine_entry.action)
            message.action.action.CopyFrom(
                action_message(info, ActionCall(info.id, engine_entry.params))
            )
            if requested.HasField("counter_data"):
                message.counter_data.packet_count = engine_entry.packets
                message.counter_data.byte_count = engine_entry.bytes
            if not table.is_const:
                stored = self.store.get(table.id, key)
                if stored is None:
                    raise P4RuntimeError(code_pb2.INTERNAL, "Table state out-of-sync with target")
                message.controller_metadata = stored.controller_metadata
                message.metadata = stored.metadata
            out.append(p4runtime_pb2.Entity(table_entry=message))
        return out

    def _entry_message(self, table: TableInfo, key: MatchKey) -> p4runtime_pb2.TableEntry:
        message = p4runtime_pb2.TableEntry(table_id=table.id, match=match_fields_of(table, key))
        if key.priority > 0:
            message.priority = key.priority
        return message

    def _read_default(
        self, table: TableInfo, requested: p4runtime_pb2.TableEntry
    ) -> p4runtime_pb2.Entity:
        if requested.HasField("time_since_last_hit"):
            raise invalid_argument(
                "Default table entries do not support entry ageing, do not set "
                "'time_since_last_hit' in your ReadRequest"
            )
        try:
            with self.dataplane.control() as switch:
                action, args = switch.table_get_default(table.name)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when reading default entry from target") from exc
        message = p4runtime_pb2.TableEntry(table_id=table.id, is_default_action=True)
        if action is not None:
            info = self.index.action_by_name(action)
            message.action.action.CopyFrom(action_message(info, ActionCall(info.id, args)))
        stored = self.store.get(table.id, DEFAULT_KEY)
        if stored is None:
            raise P4RuntimeError(code_pb2.INTERNAL, "Cannot find default entry in table info store")
        message.controller_metadata = stored.controller_metadata
        message.metadata = stored.metadata
        return p4runtime_pb2.Entity(table_entry=message)

    # -- direct counters -----------------------------------------------------

    def _direct_counter_table(
        self, entry: p4runtime_pb2.DirectCounterEntry
    ) -> tuple[TableInfo, p4runtime_pb2.TableEntry]:
        if not entry.HasField("table_entry"):
            raise invalid_argument("Missing table_entry field in DirectCounterEntry")
        return self.index.table(entry.table_entry.table_id), entry.table_entry

    def _handle(self, table: TableInfo, table_entry: p4runtime_pb2.TableEntry) -> int | None:
        stored = self.store.get(table.id, match_key(table, table_entry))
        if stored is None:
            raise invalid_argument("Cannot map table entry to handle")
        return stored.handle

    def direct_counter_write(
        self, update_type: int, entry: p4runtime_pb2.DirectCounterEntry
    ) -> None:
        """Set (MODIFY) or zero (DELETE) the direct counter of an entry."""
        table, table_entry = self._direct_counter_table(entry)
        handle = self._handle(table, table_entry)
        if self.index.direct_counter_of(table) is None:
            raise invalid_argument("Table has no direct counters")
        check_update_type(update_type)
        if update_type == Update.INSERT:
            raise invalid_argument("INSERT update type not supported for counters")
        data = entry.data if update_type == Update.MODIFY else p4runtime_pb2.CounterData()
        try:
            if handle is None:
                raise TargetError(NO_DEFAULT_DIRECT_COUNTER)
            with self.dataplane.control() as switch:
                self._set_direct_counter(switch, table, handle, data)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when writing to direct counter") from exc

    def direct_counter_read(
        self, entry: p4runtime_pb2.DirectCounterEntry
    ) -> list[p4runtime_pb2.Entity]:
        """One entry's direct counter, or those of every entry of the table."""
        if entry.HasField("table_entry") and entry.table_entry.table_id == 0:
            raise P4RuntimeError(
                code_pb2.UNIMPLEMENTED,
                "Reading all direct counters for ALL tables is not supported yet",
            )
        table, table_entry = self._direct_counter_table(entry)
        if self.index.direct_counter_of(table) is None:
            raise invalid_argument("Table has no direct counters")
        single = len(table_entry.match) > 0 or table_entry.is_default_action
        handle = self._handle(table, table_entry) if single else None
        try:
            if single and handle is None:
                raise TargetError(NO_DEFAULT_DIRECT_COUNTER)
            with self.dataplane.control() as switch:
                entries = switch.table_entries(table.name)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when reading counter from target") from exc
        out = []
        for engine_entry in entries:
            if single and engine_entry.handle != handle:
                continue
            if single:
                counted_entry = table_entry
            else:
                key = key_of_matches(table, engine_entry.matches, engine_entry.priority)
                counted_entry = self._entry_message(table, key)
            counted = p4runtime_pb2.DirectCounterEntry(
                table_entry=counted_entry,
                data=p4runtime_pb2.CounterData(
                    packet_count=engine_entry.packets, byte_count=engine_entry.bytes
                ),
            )
            out.append(p4runtime_pb2.Entity(direct_counter_entry=counted))
        return out
