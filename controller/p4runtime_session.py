"""A P4Runtime client session: arbitration, pipeline push, table entries,
multicast groups, clone sessions, counters and PacketOut / PacketIn.

It works the same against bmv2's simple_switch_grpc and the Python switch.
Everything is addressed by P4Info names (see controller.p4info).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from controller.p4info import P4InfoError, P4InfoIndex, decode_value, encode_value, to_int
from controller.p4runtime_proto import (
    code_pb2,
    p4info_pb2,
    p4runtime_pb2,
    p4runtime_pb2_grpc,
    status_pb2,
)

if TYPE_CHECKING:
    from controller.config import TlsConfig

MatchValue = int | str | bytes | tuple
DEFAULT_TIMEOUT = 5.0
# SetForwardingPipelineConfig's deadline: the switch loads the program before it
# answers (the Python switch generates and optimizes its code, about a second on
# an idle machine, more on a loaded one), so it gets longer than other calls.
PIPELINE_TIMEOUT = 60.0


class P4RuntimeError(RuntimeError):
    """A P4Runtime call that failed, with the gRPC code and per-update errors."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None,
                 details: list[str] | None = None) -> None:
        self.code = code
        self.details = details or []
        text = message if not self.details else f"{message}: {'; '.join(self.details)}"
        super().__init__(text)


class SwitchUnreachable(P4RuntimeError):
    """No P4Runtime server answered at the address."""


class NotPrimary(P4RuntimeError):
    """This session lost (or never won) arbitration, so it may not write."""


def _rpc_error(exc: grpc.RpcError, what: str) -> P4RuntimeError:
    code = exc.code() if hasattr(exc, "code") else None
    details = []
    for key, value in (exc.trailing_metadata() or []) if hasattr(exc, "trailing_metadata") else []:
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                err = p4runtime_pb2.Error()
                if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                    details.append(f"{code_pb2.Code.Name(err.canonical_code)}: {err.message}")
    text = exc.details() if hasattr(exc, "details") else str(exc)
    cls = SwitchUnreachable if code == grpc.StatusCode.UNAVAILABLE else P4RuntimeError
    return cls(f"{what} failed ({code.name if code else 'error'}): {text}", code, details)


@dataclass
class PacketIn:
    """A packet the switch sent to the controller, with its decoded metadata."""

    payload: bytes
    metadata: dict[str, int] = field(default_factory=dict)


class P4RuntimeSession:
    """One controller's connection to one switch (device)."""

    def __init__(self, address: str, device_id: int = 0, election_id: int = 1,
                 timeout: float = DEFAULT_TIMEOUT, tls: TlsConfig | None = None) -> None:
        self.address = address
        self.tls = tls
        self.device_id = device_id
        self.election_id = election_id
        self.timeout = timeout
        self.p4info: P4InfoIndex | None = None
        self.is_primary = False
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue = queue.Queue()
        self._arbitration: queue.Queue = queue.Queue()
        self._packets: queue.Queue[PacketIn] = queue.Queue()
        self._stream_thread: threading.Thread | None = None
        self._stream_error: Exception | None = None

    # --- connection -------------------------------------------------------

    def open_channel(self) -> None:
        """Open the gRPC channel (over TLS if configured) only: enough for reads and
        GetForwardingPipelineConfig, with no stream and no arbitration."""
        self._channel = self._open_channel()
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise SwitchUnreachable(
                f"no P4Runtime server at {self.address} (waited {self.timeout:.0f} s"
                + (", TLS: a switch without TLS, or a certificate that did not verify, "
                   "looks the same)" if self.tls else ")")) from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)

    def connect(self) -> P4RuntimeSession:
        """Open the channel and the stream, and run arbitration."""
        self.open_channel()
        self._stream_thread = threading.Thread(target=self._run_stream, daemon=True,
                                               name=f"p4rt-stream-{self.address}")
        self._stream_thread.start()
        self.arbitrate(self.election_id)
        return self

    def _open_channel(self) -> grpc.Channel:
        if self.tls is None:
            return grpc.insecure_channel(self.address)
        def read(path: str | None) -> bytes | None:
            return Path(path).read_bytes() if path else None
        try:
            creds = grpc.ssl_channel_credentials(read(self.tls.ca_cert), read(self.tls.key),
                                                 read(self.tls.cert))
        except OSError as exc:
            raise P4RuntimeError(f"TLS: cannot read {exc.filename}: {exc.strerror}") from None
        options = ([("grpc.ssl_target_name_override", self.tls.server_name)]
                   if self.tls.server_name else [])
        return grpc.secure_channel(self.address, creds, options)

    def arbitrate(self, election_id: int) -> bool:
        """Send a MasterArbitrationUpdate; return whether this session is primary."""
        self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = election_id >> 64
        req.arbitration.election_id.low = election_id & ((1 << 64) - 1)
        while not self._arbitration.empty():  # notifications from earlier role changes
            self._arbitration.get_nowait()
        self._requests.put(req)
        try:
            update = self._arbitration.get(timeout=self.timeout)
        except queue.Empty:
            raise P4RuntimeError(
                f"{self.address}: no arbitration answer"
                + (f" ({self._stream_error})" if self._stream_error else "")) from None
        if isinstance(update, Exception):
            raise update
        self.is_primary = update.status.code == code_pb2.OK
        return self.is_primary

    def wait_primary(self, timeout: float | None = None) -> bool:
        """Wait until the server names this session primary (after another one left)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.is_primary and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.is_primary

    def _stream_requests(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._requests.get()
            if item is None:
                return
            yield item

    def _run_stream(self) -> None:
        assert self._stub is not None
        try:
            for msg in self._stub.StreamChannel(self._stream_requests()):
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    # the server also tells us when another controller takes over or leaves
                    self.is_primary = msg.arbitration.status.code == code_pb2.OK
                    self._arbitration.put(msg.arbitration)
                elif kind == "packet":
                    self._packets.put(self._decode_packet_in(msg.packet))
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                self._stream_error = _rpc_error(exc, "stream channel")
                self._arbitration.put(self._stream_error)

    def close(self) -> None:
        """Close the stream, then the channel (the switch keeps its pipeline). The
        stream is ended from our side and its end awaited before the channel goes,
        so that the switch has let go of our election id when close() returns: a
        session opened right after, with the same id, is not refused (a cancelled
        stream is dropped by the switch some time later)."""
        self._requests.put(None)
        if self._stream_thread is not None:
            self._stream_thread.join(timeout=2)
        if self._channel is not None:
            self._channel.close()

    def __enter__(self) -> P4RuntimeSession:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, what: str, method, request, timeout: float | None = None):
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            raise _rpc_error(exc, what) from None

    def _info(self) -> P4InfoIndex:
        if self.p4info is None:
            raise P4RuntimeError("no P4Info: call set_pipeline() or load_p4info() first")
        return self.p4info

    # --- pipeline -------------------------------------------------------------

    def load_p4info(self, p4info_path: str | Path) -> P4InfoIndex:
        self.p4info = P4InfoIndex.from_file(p4info_path)
        return self.p4info

    def set_pipeline(self, p4info_path: str | Path, device_config: bytes,
                     cookie: int = 0) -> None:
        """Push P4Info and the target's device config (VERIFY_AND_COMMIT)."""
        self.load_p4info(p4info_path)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self._set_election(req.election_id)
        req.config.p4info.CopyFrom(self._info().p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        self._call("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, req,
                   timeout=max(self.timeout, PIPELINE_TIMEOUT))

    def get_pipeline(self) -> p4runtime_pb2.ForwardingPipelineConfig | None:
        """The switch's P4Info and cookie, or None when no pipeline is loaded."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            resp = self._stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise _rpc_error(exc, "GetForwardingPipelineConfig") from None
        if not resp.config.HasField("p4info") or not resp.config.p4info.tables:
            return None
        return resp.config

    def _set_election(self, election: p4runtime_pb2.Uint128) -> None:
        election.high = self.election_id >> 64
        election.low = self.election_id & ((1 << 64) - 1)

    # --- writes ---------------------------------------------------------------

    def write(self, updates: Iterable[p4runtime_pb2.Update]) -> None:
        """Send one batched WriteRequest."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._set_election(req.election_id)
        req.updates.extend(updates)
        if not req.updates:
            return
        try:
            self._stub.Write(req, timeout=self.timeout)
        except grpc.RpcError as exc:
            err = _rpc_error(exc, "Write")
            if exc.code() == grpc.StatusCode.PERMISSION_DENIED:
                raise NotPrimary(str(err), err.code, err.details) from None
            raise err from None

    @staticmethod
    def update(kind: str, entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
        """An Update of kind 'insert', 'modify' or 'delete'."""
        types = {"insert": p4runtime_pb2.Update.INSERT, "modify": p4runtime_pb2.Update.MODIFY,
                 "delete": p4runtime_pb2.Update.DELETE}
        return p4runtime_pb2.Update(type=types[kind], entity=entity)

    def table_entry(self, table: str, match: dict[str, MatchValue] | None = None,
                    action: str | None = None, params: dict[str, int | str] | None = None,
                    priority: int = 0, default: bool = False) -> p4runtime_pb2.Entity:
        """Build a table-entry Entity from names and plain values."""
        info = self._info()
        t = info.table(table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority,
                                         is_default_action=default)
        for name, value in (match or {}).items():
            fm = self._field_match(table, name, value)
            if fm is not None:
                entry.match.append(fm)
        if action is not None:
            a = info.action(action)
            if info.name_of(a.preamble.id) not in info.table_actions(table):
                raise P4InfoError(f"action '{action}' is not an action of table '{table}' "
                                  f"(actions: {', '.join(info.table_actions(table))})")
            entry.action.action.action_id = a.preamble.id
            given = dict(params or {})
            for p in a.params:
                if p.name not in given:
                    raise P4InfoError(f"action '{action}' needs parameter '{p.name}'")
                entry.action.action.params.add(param_id=p.id,
                                               value=encode_value(given.pop(p.name), p.bitwidth))
            if given:
                raise P4InfoError(f"action '{action}' has no parameter(s) {sorted(given)}")
        return p4runtime_pb2.Entity(table_entry=entry)

    def _field_match(self, table: str, name: str,
                     value: MatchValue) -> p4runtime_pb2.FieldMatch | None:
        mf = self._info().match_field(table, name)
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        kind = mf.match_type
        width = mf.bitwidth
        if kind == p4info_pb2.MatchField.EXACT:
            fm.exact.value = encode_value(value, width)
        elif kind == p4info_pb2.MatchField.LPM:
            addr, plen = _split_prefix(value, width)
            if plen == 0:
                return None
            masked = to_int(addr) & (((1 << plen) - 1) << (width - plen))
            fm.lpm.value = encode_value(masked, width)
            fm.lpm.prefix_len = plen
        elif kind == p4info_pb2.MatchField.TERNARY:
            val, mask = value if isinstance(value, tuple) else (value, (1 << width) - 1)
            if to_int(mask) == 0:
                return None
            fm.ternary.value = encode_value(to_int(val) & to_int(mask), width)
            fm.ternary.mask = encode_value(mask, width)
        elif kind == p4info_pb2.MatchField.RANGE:
            low, high = value
            fm.range.low = encode_value(low, width)
            fm.range.high = encode_value(high, width)
        elif kind == p4info_pb2.MatchField.OPTIONAL:
            if value is None:
                return None
            fm.optional.value = encode_value(value, width)
        else:
            raise P4InfoError(f"match kind {kind} of '{table}.{name}' is not supported")
        return fm

    def insert_entry(self, table: str, match: dict[str, MatchValue], action: str,
                     params: dict[str, int | str] | None = None, priority: int = 0) -> None:
        entity = self.table_entry(table, match, action, params, priority)
        self.write([self.update("insert", entity)])

    def modify_entry(self, table: str, match: dict[str, MatchValue], action: str,
                     params: dict[str, int | str] | None = None, priority: int = 0) -> None:
        entity = self.table_entry(table, match, action, params, priority)
        self.write([self.update("modify", entity)])

    def delete_entry(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None:
        self.write([self.update("delete", self.table_entry(table, match, priority=priority))])

    def set_default(self, table: str, action: str,
                    params: dict[str, int | str] | None = None) -> None:
        entity = self.table_entry(table, None, action, params, default=True)
        self.write([self.update("modify", entity)])

    @staticmethod
    def multicast_group_entity(group_id: int,
                               replicas: Iterable[tuple[int, int]]) -> p4runtime_pb2.Entity:
        """A multicast group entity with (egress port, instance) replicas."""
        entity = p4runtime_pb2.Entity()
        mg = entity.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = group_id
        for port, instance in replicas:
            mg.replicas.add(egress_port=port, instance=instance)
        return entity

    def multicast_group(self, group_id: int, replicas: Iterable[tuple[int, int]],
                        kind: str = "insert") -> None:
        """Insert/modify/delete a multicast group of (egress port, instance) replicas."""
        self.write([self.update(kind, self.multicast_group_entity(group_id, replicas))])

    # --- reads ----------------------------------------------------------------

    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out: list[p4runtime_pb2.Entity] = []
        try:
            for resp in self._stub.Read(req, timeout=self.timeout):
                out.extend(resp.entities)
        except grpc.RpcError as exc:
            raise _rpc_error(exc, "Read") from None
        return out

    def read_table(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self._info().table(table).preamble.id
        return [e.table_entry for e in self.read([entity])]

    def read_counter(self, counter: str, index: int | None = None) -> dict[int, tuple[int, int]]:
        """{index: (packets, bytes)} for one cell or, with index None, every cell."""
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._info().counter(counter).preamble.id
        if index is not None:
            entity.counter_entry.index.index = index
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                              e.counter_entry.data.byte_count)
                for e in self.read([entity])}

    def read_multicast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """{group id: sorted (egress port, instance) replicas} of every group."""
        entity = p4runtime_pb2.Entity()
        entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        groups = {}
        for e in self.read([entity]):
            mg = e.packet_replication_engine_entry.multicast_group_entry
            groups[mg.multicast_group_id] = sorted((r.egress_port or _port_number(r.port),
                                                    r.instance) for r in mg.replicas)
        return groups

    # --- packets --------------------------------------------------------------

    def packet_out(self, payload: bytes, **metadata: int) -> None:
        """Send a PacketOut; metadata fields not given are 0."""
        meta = self._info().packet_metadata("packet_out")
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for m in meta.metadata:
            req.packet.metadata.add(metadata_id=m.id,
                                    value=encode_value(metadata.get(m.name, 0), m.bitwidth))
        self._requests.put(req)

    def packet_in(self, timeout: float | None = None) -> PacketIn | None:
        """The next PacketIn, or None after `timeout` seconds."""
        try:
            return self._packets.get(timeout=self.timeout if timeout is None else timeout)
        except queue.Empty:
            return None

    def drain_packet_ins(self) -> int:
        drained = 0
        while True:
            try:
                self._packets.get_nowait()
                drained += 1
            except queue.Empty:
                return drained

    def _decode_packet_in(self, packet: p4runtime_pb2.PacketIn) -> PacketIn:
        names = {}
        if self.p4info is not None:
            try:
                names = {m.id: m.name for m in self.p4info.packet_metadata("packet_in").metadata}
            except P4InfoError:
                names = {}
        meta = {names.get(m.metadata_id, str(m.metadata_id)): decode_value(m.value)
                for m in packet.metadata}
        return PacketIn(payload=bytes(packet.payload), metadata=meta)


def _port_number(port: bytes) -> int:
    """A replica's port given as P4Runtime bytes (0 when absent)."""
    return int.from_bytes(port, "big") if port else 0


def _split_prefix(value: MatchValue, width: int) -> tuple[int | str, int]:
    if isinstance(value, tuple):
        return value[0], int(value[1])
    if isinstance(value, str) and "/" in value:
        addr, plen = value.split("/")
        return addr, int(plen)
    return value, width
