"""The P4Runtime device: forwarding pipeline, Write and Read, packet I/O.

Mirrors p4lang/PI's DeviceMgr as simple_switch_grpc runs it. Every check and
status code follows PI; where PI has no answer for the Python switch (meters,
action profiles, digests, which the engine does not run) the request is
refused with UNIMPLEMENTED. Deviations from PI, all for the client's benefit:
RECONCILE_AND_COMMIT also keeps multicast groups, clone sessions, counter
values and default entries (PI replays only what it reads back, and its
counter replay fails), and target errors carry the engine's reason.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
from dataclasses import dataclass

from bmv2.pyswitch.p4runtime.counters import CounterOps
from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.p4info import P4InfoIndex, Prefix
from bmv2.pyswitch.p4runtime.packet_io import PacketIo
from bmv2.pyswitch.p4runtime.pre import PreManager
from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2, status_pb2
from bmv2.pyswitch.p4runtime.status import (
    P4RuntimeError,
    TargetError,
    WriteErrorReporter,
    invalid_argument,
    invalid_p4_id,
    unimplemented,
)
from bmv2.pyswitch.p4runtime.table_ops import TableOps

log = logging.getLogger(__name__)

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest.Action
ResponseType = p4runtime_pb2.GetForwardingPipelineConfigRequest.ResponseType
Update = p4runtime_pb2.Update

# Entities the engine cannot serve: the id field, its P4Info id prefix and P4Info list.
_UNSUPPORTED = {
    "meter_entry": ("meter_id", Prefix.METER, "meters"),
    "action_profile_member": ("action_profile_id", Prefix.ACTION_PROFILE, "action_profiles"),
    "action_profile_group": ("action_profile_id", Prefix.ACTION_PROFILE, "action_profiles"),
    "digest_entry": ("digest_id", Prefix.DIGEST, "digests"),
}


def _unknown(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.UNKNOWN, message)


@dataclass
class Pipeline:
    """Everything that belongs to one forwarding pipeline config."""

    config: p4runtime_pb2.ForwardingPipelineConfig
    index: P4InfoIndex
    tables: TableOps
    counters: CounterOps
    pre: PreManager
    packet_io: PacketIo

    @classmethod
    def create(
        cls, config: p4runtime_pb2.ForwardingPipelineConfig, index: P4InfoIndex,
        dataplane: Dataplane,
    ) -> Pipeline:
        """The P4Runtime state of a freshly loaded pipeline."""
        return cls(
            config=config,
            index=index,
            tables=TableOps.create(index, dataplane),
            counters=CounterOps(index, dataplane),
            pre=PreManager(dataplane),
            packet_io=PacketIo.from_index(index),
        )


class DeviceManager:
    """The P4Runtime state of the switch's device id."""

    def __init__(self, dataplane: Dataplane, device_id: int) -> None:
        self.dataplane = dataplane
        self.device_id = device_id
        self.pipeline: Pipeline | None = None
        self._lock = threading.RLock()
        # PI creates a DeviceMgr for any device id a SetForwardingPipelineConfig
        # names; GetForwardingPipelineConfig on one answers an empty config.
        self._managed: set[int] = set()

    # -- pipeline ------------------------------------------------------------

    def has_pipeline(self, device_id: int) -> bool:
        """Whether Write / Read can be served for this device id."""
        return device_id == self.device_id and self.pipeline is not None

    def set_pipeline(
        self, device_id: int, action: int, config: p4runtime_pb2.ForwardingPipelineConfig
    ) -> None:
        """SetForwardingPipelineConfig."""
        with self._lock:
            self._managed.add(device_id)
            if action == SetAction.UNSPECIFIED or action not in SetAction.values():
                raise invalid_argument("Invalid SetForwardingPipeline action")
            index = None
            if action != SetAction.COMMIT:
                try:
                    index = P4InfoIndex.build(config.p4info)
                except (ValueError, KeyError) as exc:
                    raise _unknown("Error when importing p4info") from exc
            if action == SetAction.VERIFY:
                return
            if device_id != self.device_id:
                if action == SetAction.COMMIT:
                    raise _unknown("Error in second phase of device update")
                raise _unknown("Error when trying to assign device")
            saved = self._forwarding_state() if action == SetAction.RECONCILE_AND_COMMIT else None
            previous = self.pipeline
            if index is not None:
                self._load(config, index)
            if saved is not None and self._write(saved).code != code_pb2.OK:
                self.pipeline = previous
                self.dataplane.discard()
                raise _unknown("Error when reconciling config")
            if action != SetAction.VERIFY_AND_SAVE:
                try:
                    self.dataplane.commit()
                except TargetError as exc:
                    raise _unknown("Error in second phase of device update") from exc

    def _load(self, config: p4runtime_pb2.ForwardingPipelineConfig, index: P4InfoIndex) -> None:
        try:
            raw = config.p4_device_config
            if raw[:2] == b"\x1f\x8b":          # a gzipped program (the TNA model's IR)
                raw = gzip.decompress(raw)
            program = json.loads(raw)
            if not isinstance(program, dict):
                raise TargetError("the device config is not a bmv2 JSON object")
            switch = self.dataplane.build(program)
        except (ValueError, OSError, TargetError) as exc:
            log.error("SetForwardingPipelineConfig: bad device config: %s", exc)
            raise _unknown(f"Error in first phase of device update: {exc}") from exc
        self.dataplane.save(switch)
        kept = p4runtime_pb2.ForwardingPipelineConfig()
        kept.CopyFrom(config)
        self.pipeline = Pipeline.create(kept, index, self.dataplane)

    def _forwarding_state(self) -> p4runtime_pb2.WriteRequest:
        """The current state as the writes that rebuild it on a new pipeline."""
        request = p4runtime_pb2.WriteRequest()
        pipeline = self.pipeline
        if pipeline is None:
            return request
        for entity in pipeline.tables.read(p4runtime_pb2.TableEntry()):
            if not pipeline.index.tables[entity.table_entry.table_id].is_const:
                request.updates.add(type=Update.INSERT, entity=entity)
        for table in pipeline.index.tables.values():
            if table.const_default_action_id == 0 and table.implementation_id == 0:
                wanted = p4runtime_pb2.TableEntry(table_id=table.id, is_default_action=True)
                for entity in pipeline.tables.read(wanted):
                    request.updates.add(type=Update.MODIFY, entity=entity)
        for entry in pipeline.pre.entries():
            entity = p4runtime_pb2.Entity(packet_replication_engine_entry=entry)
            request.updates.add(type=Update.INSERT, entity=entity)
        for entity in pipeline.counters.read(p4runtime_pb2.CounterEntry()):
            request.updates.add(type=Update.MODIFY, entity=entity)
        return request

    def get_pipeline(
        self, device_id: int, response_type: int
    ) -> p4runtime_pb2.ForwardingPipelineConfig:
        """GetForwardingPipelineConfig (FAILED_PRECONDITION if never set for the device)."""
        with self._lock:
            if device_id not in self._managed:
                raise no_pipeline()
            out = p4runtime_pb2.ForwardingPipelineConfig()
            if not self.has_pipeline(device_id):
                return out
            config = self.pipeline.config
            if response_type not in ResponseType.values():
                raise invalid_argument(
                    "Invalid response_type in GetForwardingPipelineConfigRequest"
                )
            if response_type in (ResponseType.ALL, ResponseType.P4INFO_AND_COOKIE):
                out.p4info.CopyFrom(config.p4info)
            if response_type in (ResponseType.ALL, ResponseType.DEVICE_CONFIG_AND_COOKIE):
                out.p4_device_config = config.p4_device_config
            if config.HasField("cookie"):
                out.cookie.CopyFrom(config.cookie)
            return out

    # -- write / read ----------------------------------------------------------

    def write(self, request: p4runtime_pb2.WriteRequest) -> status_pb2.Status:
        """Write: the google.rpc.Status PI returns (UNKNOWN + details on any error)."""
        with self._lock:
            if not self.has_pipeline(request.device_id):
                raise no_pipeline()
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise unimplemented("Support for atomic write modes has not been implemented yet")
            return self._write(request)

    def _write(self, request: p4runtime_pb2.WriteRequest) -> status_pb2.Status:
        reporter = WriteErrorReporter()
        for update in request.updates:
            try:
                self._write_one(update.type, update.entity)
            except P4RuntimeError as exc:
                log.info("Write refused (%s): %s", code_pb2.Code.Name(exc.code), exc.message)
                reporter.push(exc)
            else:
                reporter.push(None)
        return reporter.status()

    def _write_one(self, update_type: int, entity: p4runtime_pb2.Entity) -> None:
        pipeline = self.pipeline
        assert pipeline is not None
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            pipeline.tables.write(update_type, entity.table_entry)
        elif kind == "counter_entry":
            pipeline.counters.write(update_type, entity.counter_entry)
        elif kind == "direct_counter_entry":
            pipeline.tables.direct_counter_write(update_type, entity.direct_counter_entry)
        elif kind == "packet_replication_engine_entry":
            pipeline.pre.write(update_type, entity.packet_replication_engine_entry)
        elif kind == "extern_entry":
            raise P4RuntimeError(code_pb2.UNIMPLEMENTED, "")
        elif kind == "register_entry":
            raise unimplemented("Register writes are not supported yet")
        elif kind == "value_set_entry":
            raise unimplemented("ValueSet writes are not supported yet")
        elif kind is None:
            raise _unknown("Incorrect entity type")
        else:
            self._unsupported(pipeline.index, entity, kind, reading=False)

    def read(
        self, request: p4runtime_pb2.ReadRequest
    ) -> tuple[p4runtime_pb2.ReadResponse, P4RuntimeError | None]:
        """Read: the entities read up to the first error, and that error."""
        with self._lock:
            if not self.has_pipeline(request.device_id):
                raise no_pipeline()
            response = p4runtime_pb2.ReadResponse()
            for entity in request.entities:
                try:
                    response.entities.extend(self._read_one(entity))
                except P4RuntimeError as exc:
                    return response, exc
            return response, None

    def _read_one(self, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        pipeline = self.pipeline
        assert pipeline is not None
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            return pipeline.tables.read(entity.table_entry)
        if kind == "counter_entry":
            return pipeline.counters.read(entity.counter_entry)
        if kind == "direct_counter_entry":
            return pipeline.tables.direct_counter_read(entity.direct_counter_entry)
        if kind == "packet_replication_engine_entry":
            return [
                p4runtime_pb2.Entity(packet_replication_engine_entry=e)
                for e in pipeline.pre.read(entity.packet_replication_engine_entry)
            ]
        if kind == "register_entry":
            raise unimplemented("Register reads are not supported yet")
        if kind == "value_set_entry":
            raise unimplemented("ValueSet reads are not supported yet")
        if kind in (None, "extern_entry"):
            raise _unknown("Incorrect entity type")
        return self._unsupported(pipeline.index, entity, kind, reading=True)

    @staticmethod
    def _unsupported(
        index: P4InfoIndex, entity: p4runtime_pb2.Entity, kind: str, reading: bool
    ) -> list[p4runtime_pb2.Entity]:
        """Meters, action profiles, digests: bad ids answered as PI does, else UNIMPLEMENTED.

        A wildcard read of a kind the P4Info declares none of is empty, as in PI.
        """
        message = getattr(entity, kind)
        if kind == "direct_meter_entry":
            if not message.HasField("table_entry"):
                raise invalid_argument("Missing table_entry field in DirectMeterEntry")
            if reading and message.table_entry.table_id == 0:
                raise unimplemented(
                    "Reading all direct meters for ALL tables is not supported yet"
                )
            if not index.has_direct_meter(index.table(message.table_entry.table_id)):
                raise invalid_argument("Table has no direct meters")
            raise unimplemented("The Python switch has no meters")
        id_field, prefix, declared = _UNSUPPORTED[kind]
        p4_id = getattr(message, id_field)
        if kind == "digest_entry":
            if reading and p4_id == 0:
                raise unimplemented("digest_id must be set when reading DigestEntry")
            if not index.is_valid(p4_id, prefix):
                raise P4RuntimeError(code_pb2.NOT_FOUND, f"{p4_id} is not a valid digest id")
        elif reading and p4_id == 0:
            if len(getattr(index.p4info, declared)) == 0:
                return []
        elif not index.is_valid(p4_id, prefix):
            raise invalid_p4_id()
        raise unimplemented(f"The Python switch does not support {declared.replace('_', ' ')}")

    # -- packet I/O ------------------------------------------------------------

    def packet_out(self, packet: p4runtime_pb2.PacketOut) -> None:
        """Send a PacketOut into the switch through the CPU port (errors are logged)."""
        pipeline = self.pipeline
        if pipeline is None:
            return
        try:
            frame = pipeline.packet_io.frame_out(packet)
            self.dataplane.packet_out(frame)
        except P4RuntimeError as exc:
            log.warning("PacketOut dropped: %s", exc.message)
        except TargetError as exc:
            log.warning("PacketOut dropped: %s", exc)

    def packet_in(self, frame: bytes) -> p4runtime_pb2.PacketIn | None:
        """The PacketIn for a frame the switch sent to the CPU port (None: dropped)."""
        pipeline = self.pipeline
        if pipeline is None:
            return None
        packet = pipeline.packet_io.packet_in_of(frame)
        if packet is None:
            log.warning("frame of %d bytes to the CPU port is shorter than packet_in", len(frame))
        return packet


def no_pipeline() -> P4RuntimeError:
    """PI's answer to a request before any pipeline config was set."""
    return P4RuntimeError(
        code_pb2.FAILED_PRECONDITION, "No forwarding pipeline config set for this device"
    )
