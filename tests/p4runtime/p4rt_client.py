"""A bare P4Runtime client for the tests: plain grpc stubs plus P4Info name lookups."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import text_format

from bmv2.pyswitch.p4runtime.proto import p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc, status_pb2

PROGRAMS = Path(__file__).with_name("programs")
TEST_JSON = PROGRAMS / "p4rt_test.json"
TEST_P4INFO = PROGRAMS / "p4rt_test.p4info.txtpb"
STATUS_DETAILS_KEY = "grpc-status-details-bin"
TIMEOUT = 10.0

Update = p4runtime_pb2.Update
VERIFY_AND_COMMIT = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT


def load_p4info(path: Path = TEST_P4INFO) -> p4info_pb2.P4Info:
    """A P4Info text file."""
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


def pipeline_config(
    json_path: Path = TEST_JSON, p4info_path: Path = TEST_P4INFO, cookie: int | None = None
) -> p4runtime_pb2.ForwardingPipelineConfig:
    """A ForwardingPipelineConfig for bmv2: P4Info plus the bmv2 JSON bytes."""
    config = p4runtime_pb2.ForwardingPipelineConfig(
        p4info=load_p4info(p4info_path), p4_device_config=json_path.read_bytes()
    )
    if cookie is not None:
        config.cookie.cookie = cookie
    return config


def uint128(value: int) -> p4runtime_pb2.Uint128:
    """An election id."""
    return p4runtime_pb2.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def write_errors(error: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Error details of a failed Write."""
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
            errors = []
            for detail in status.details:
                error_detail = p4runtime_pb2.Error()
                detail.Unpack(error_detail)
                errors.append(error_detail)
            return errors
    return []


@dataclass
class Names:
    """P4Info lookups by name (tests never hard-code ids)."""

    p4info: p4info_pb2.P4Info

    def _find(self, items: object, name: str) -> object:
        for item in items:
            if name in (item.preamble.name, item.preamble.alias):
                return item
        raise KeyError(name)

    def table(self, name: str) -> p4info_pb2.Table:
        """A table by name or alias."""
        return self._find(self.p4info.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        """An action by name or alias."""
        return self._find(self.p4info.actions, name)

    def table_id(self, name: str) -> int:
        """A table's id."""
        return self.table(name).preamble.id

    def action_id(self, name: str) -> int:
        """An action's id."""
        return self.action(name).preamble.id

    def field_id(self, table: str, field: str) -> int:
        """A match field's id."""
        return next(mf.id for mf in self.table(table).match_fields if mf.name == field)

    def counter_id(self, name: str) -> int:
        """An indirect counter's id."""
        return self._find(self.p4info.counters, name).preamble.id

    def register_id(self, name: str) -> int:
        """A register's id."""
        return self._find(self.p4info.registers, name).preamble.id

    def metadata_id(self, header: str, name: str) -> int:
        """A controller header field's id."""
        cpm = self._find(self.p4info.controller_packet_metadata, header)
        return next(m.id for m in cpm.metadata if m.name == name)

    def act(self, name: str, **params: bytes) -> p4runtime_pb2.Action:
        """An action call with parameters by name."""
        action = self.action(name)
        ids = {p.name: p.id for p in action.params}
        return p4runtime_pb2.Action(
            action_id=action.preamble.id,
            params=[p4runtime_pb2.Action.Param(param_id=ids[k], value=v)
                    for k, v in params.items()],
        )

    def entry(self, table: str, match: dict[str, p4runtime_pb2.FieldMatch] | None = None,
              action: p4runtime_pb2.Action | None = None, priority: int = 0,
              is_default: bool = False) -> p4runtime_pb2.TableEntry:
        """A table entry; ``match`` maps field names to FieldMatch (field_id filled in)."""
        entry = p4runtime_pb2.TableEntry(table_id=self.table_id(table), priority=priority,
                                         is_default_action=is_default)
        for name, fm in (match or {}).items():
            fm.field_id = self.field_id(table, name)
            entry.match.append(fm)
        if action is not None:
            entry.action.action.CopyFrom(action)
        return entry


def exact(value: bytes) -> p4runtime_pb2.FieldMatch:
    """An exact FieldMatch (field_id set by Names.entry)."""
    return p4runtime_pb2.FieldMatch(exact=p4runtime_pb2.FieldMatch.Exact(value=value))


def lpm(value: bytes, prefix_len: int) -> p4runtime_pb2.FieldMatch:
    """An LPM FieldMatch."""
    return p4runtime_pb2.FieldMatch(lpm=p4runtime_pb2.FieldMatch.LPM(value=value,
                                                                      prefix_len=prefix_len))


def ternary(value: bytes, mask: bytes) -> p4runtime_pb2.FieldMatch:
    """A ternary FieldMatch."""
    return p4runtime_pb2.FieldMatch(ternary=p4runtime_pb2.FieldMatch.Ternary(value=value,
                                                                              mask=mask))


def range_(low: bytes, high: bytes) -> p4runtime_pb2.FieldMatch:
    """A range FieldMatch."""
    return p4runtime_pb2.FieldMatch(range=p4runtime_pb2.FieldMatch.Range(low=low, high=high))


def optional(value: bytes) -> p4runtime_pb2.FieldMatch:
    """An optional FieldMatch."""
    return p4runtime_pb2.FieldMatch(optional=p4runtime_pb2.FieldMatch.Optional(value=value))


class Stream:
    """A StreamChannel: requests sent from a queue, responses collected in another."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self.responses: queue.Queue[p4runtime_pb2.StreamMessageResponse] = queue.Queue()
        self.error: grpc.RpcError | None = None
        self._call = stub.StreamChannel(self._iter())
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            request = self._requests.get()
            if request is None:
                return
            yield request

    def _collect(self) -> None:
        try:
            for response in self._call:
                self.responses.put(response)
        except grpc.RpcError as exc:
            self.error = exc

    def send(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        """Queue a request."""
        self._requests.put(request)

    def arbitrate(self, device_id: int, election_id: int) -> None:
        """Send a MasterArbitrationUpdate."""
        self.send(p4runtime_pb2.StreamMessageRequest(
            arbitration=p4runtime_pb2.MasterArbitrationUpdate(
                device_id=device_id, election_id=uint128(election_id))))

    def next(self, kind: str | None = None, timeout: float = TIMEOUT
             ) -> p4runtime_pb2.StreamMessageResponse:
        """The next response (of ``kind``, skipping others); queue.Empty on timeout."""
        while True:
            response = self.responses.get(timeout=timeout)
            if kind is None or response.WhichOneof("update") == kind:
                return response

    def wait_closed(self, timeout: float = TIMEOUT) -> None:
        """Wait until the server ended the stream."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Half-close and cancel the stream."""
        self._requests.put(None)
        self._call.cancel()
        self._thread.join(TIMEOUT)


class Client:
    """One P4Runtime client: stub, optional stream, and helpers."""

    def __init__(self, address: str, device_id: int = 0, election_id: int | None = 1) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.stream: Stream | None = None

    def arbitrate(self, election_id: int | None = None) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Open the stream (if needed), send arbitration, return the server's answer."""
        if election_id is not None:
            self.election_id = election_id
        if self.stream is None:
            self.stream = Stream(self.stub)
        self.stream.arbitrate(self.device_id, self.election_id or 0)
        return self.stream.next("arbitration").arbitration

    def set_pipeline(self, config: p4runtime_pb2.ForwardingPipelineConfig | None = None,
                     action: int = VERIFY_AND_COMMIT,
                     device_id: int | None = None) -> None:
        """SetForwardingPipelineConfig (the test program by default)."""
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id if device_id is None else device_id, action=action,
            config=config if config is not None else pipeline_config())
        if self.election_id is not None:
            request.election_id.CopyFrom(uint128(self.election_id))
        self.stub.SetForwardingPipelineConfig(request, timeout=TIMEOUT)

    def get_pipeline(self, response_type: int = 0) -> p4runtime_pb2.ForwardingPipelineConfig:
        """GetForwardingPipelineConfig."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=response_type)
        return self.stub.GetForwardingPipelineConfig(request, timeout=TIMEOUT).config

    def write(self, *updates: tuple[int, p4runtime_pb2.Entity]) -> None:
        """Write a batch of (type, entity)."""
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        if self.election_id is not None:
            request.election_id.CopyFrom(uint128(self.election_id))
        for update_type, entity in updates:
            request.updates.add(type=update_type, entity=entity)
        self.stub.Write(request, timeout=TIMEOUT)

    def insert(self, entity: p4runtime_pb2.Entity) -> None:
        """INSERT one entity."""
        self.write((Update.INSERT, entity))

    def modify(self, entity: p4runtime_pb2.Entity) -> None:
        """MODIFY one entity."""
        self.write((Update.MODIFY, entity))

    def delete(self, entity: p4runtime_pb2.Entity) -> None:
        """DELETE one entity."""
        self.write((Update.DELETE, entity))

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        """Read; the entities of every response."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=list(entities))
        out: list[p4runtime_pb2.Entity] = []
        for response in self.stub.Read(request, timeout=TIMEOUT):
            out.extend(response.entities)
        return out

    def packet_out(self, payload: bytes, **metadata: bytes) -> None:
        """Send a PacketOut with packet_out metadata by field name."""
        assert self.stream is not None, "arbitrate first"
        names = Names(self.get_pipeline(
            p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE).p4info)
        packet = p4runtime_pb2.PacketOut(payload=payload)
        for name, value in metadata.items():
            packet.metadata.add(metadata_id=names.metadata_id("packet_out", name), value=value)
        self.stream.send(p4runtime_pb2.StreamMessageRequest(packet=packet))

    def close(self) -> None:
        """Close the stream and the channel."""
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        self.channel.close()


def table_entity(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Entity:
    """Wrap a TableEntry."""
    return p4runtime_pb2.Entity(table_entry=entry)
