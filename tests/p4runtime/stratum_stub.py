"""A stand-in for Stratum on a Tofino switch, for the deploy path: a P4Runtime
server that takes a pipeline as P4Info plus a BfPipelineConfig device config
(refusing anything else, as stratum_bfrt does), keeps table entries and
multicast groups, and answers reads. BfSwitchdStub stands in for bf_switchd's
own P4Runtime server the same way, taking the device config in the chunks
bf-drivers' _pi_update_device_start reads (split_pi_chunks). Neither has a data
plane: what they show is what a controller pushed."""

from __future__ import annotations

import gzip
import json
import struct
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.protobuf.message import DecodeError

from bmv2.launch import free_tcp_port
from controller.bf_pipeline import BfPipelineConfig
from controller.p4runtime_proto import code_pb2, p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc

Update = p4runtime_pb2.Update


@dataclass
class StubState:
    """What the controller has pushed so far."""

    p4info: p4info_pb2.P4Info | None = None
    device_config: BfPipelineConfig | list[bytes] | None = None
    entries: dict[tuple, p4runtime_pb2.TableEntry] = field(default_factory=dict)
    groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = field(default_factory=dict)
    writes: int = 0

    def table_ids(self) -> set[int]:
        return {t.preamble.id for t in self.p4info.tables} if self.p4info else set()


def _entry_key(entry: p4runtime_pb2.TableEntry) -> tuple:
    match = tuple(sorted(m.SerializeToString(deterministic=True) for m in entry.match))
    return (entry.table_id, entry.priority, match)


class StratumStub(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The RPCs `replayctl deploy` uses, on one device, for one controller."""

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id
        self.state = StubState()

    @staticmethod
    def parse_device_config(data: bytes) -> BfPipelineConfig:
        """The pushed device config; ValueError says why it is refused."""
        try:
            config = BfPipelineConfig.FromString(data)
        except DecodeError:
            raise ValueError("p4_device_config is not a BfPipelineConfig") from None
        if not config.p4_name or not config.profiles:
            raise ValueError("BfPipelineConfig without a program")
        return config

    def SetForwardingPipelineConfig(self, request, context):
        try:
            config = self.parse_device_config(request.config.p4_device_config)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        self.state = StubState(p4info=request.config.p4info, device_config=config)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if self.state.p4info is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline")
        resp.config.p4info.CopyFrom(self.state.p4info)
        return resp

    def Write(self, request, context):
        for update in request.updates:
            problem = self._apply(update)
            if problem:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        self.state.writes += 1
        return p4runtime_pb2.WriteResponse()

    def _apply(self, update: p4runtime_pb2.Update) -> str | None:
        kind = update.entity.WhichOneof("entity")
        if kind == "table_entry":
            entry = update.entity.table_entry
            if entry.table_id not in self.state.table_ids():
                return f"no table {entry.table_id}"
            store, key = self.state.entries, _entry_key(entry)
        elif kind == "packet_replication_engine_entry":
            entry = update.entity.packet_replication_engine_entry.multicast_group_entry
            store, key = self.state.groups, entry.multicast_group_id
        else:
            return f"the stub keeps no {kind}"
        if update.type == Update.INSERT and key in store:
            return f"{key} exists"
        if update.type in (Update.MODIFY, Update.DELETE) and key not in store:
            return f"{key} does not exist"
        if update.type == Update.DELETE:
            del store[key]
        else:
            store[key] = entry
        return None

    def Read(self, request, context):
        resp = p4runtime_pb2.ReadResponse()
        for wanted in request.entities:
            kind = wanted.WhichOneof("entity")
            if kind == "table_entry":
                for entry in self.state.entries.values():
                    if wanted.table_entry.table_id in (0, entry.table_id):
                        resp.entities.add().table_entry.CopyFrom(entry)
            elif kind == "packet_replication_engine_entry":
                for group in self.state.groups.values():
                    e = resp.entities.add()
                    e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(group)
        yield resp

    def StreamChannel(self, request_iterator, context):
        for req in request_iterator:
            if req.WhichOneof("update") == "arbitration":
                out = p4runtime_pb2.StreamMessageResponse()
                out.arbitration.CopyFrom(req.arbitration)
                out.arbitration.status.code = code_pb2.OK
                yield out


PI_MAX_NAME = 100   # _PI_UPDATE_MAX_NAME_SIZE


def split_pi_chunks(data: bytes) -> list[bytes]:
    """A PI device config read as bf-drivers' _pi_update_device_start reads it:
    chunks of a little-endian uint32 length and that many bytes, the program
    name, tofino.bin, context.json, the pipeline name and, when that is not
    empty, bf-rt.json. ValueError where the driver would read past the end of
    the buffer (it never checks its size) or refuse a name."""
    chunks: list[bytes] = []
    at = 0

    def take() -> None:
        nonlocal at
        number = len(chunks) + 1
        if at + 4 > len(data):
            raise ValueError(f"chunk {number}'s length lies past the end of the "
                             f"{len(data)} bytes")
        (size,) = struct.unpack_from("<I", data, at)
        if at + 4 + size > len(data):
            raise ValueError(f"chunk {number} ({size} bytes) runs past the end")
        if number in (1, 4) and size > PI_MAX_NAME:
            raise ValueError(f"chunk {number}: a name of {size} bytes")
        chunks.append(data[at + 4:at + 4 + size])
        at += 4 + size

    for _ in range(4):
        take()
    if chunks[3]:
        take()
    return chunks


class BfSwitchdStub(StratumStub):
    """bf_switchd's PI-based P4Runtime server, as far as the deploy path sees it:
    the device config is the chunks, which it keeps as a list."""

    @staticmethod
    def parse_device_config(data: bytes) -> list[bytes]:
        chunks = split_pi_chunks(data)
        if len(data) != sum(4 + len(c) for c in chunks):
            raise ValueError("bytes after the last chunk")
        return chunks


MAX_MESSAGE = 256 * 1024 * 1024   # what bf_switchd's P4Runtime server takes


class StratumStubServer:
    """A stub (Stratum's by default) on `address` (a free loopback port by
    default), for a `with` block."""

    def __init__(self, stub: type[StratumStub] = StratumStub, address: str | None = None) -> None:
        self.stub = stub()
        self.address = address or f"127.0.0.1:{free_tcp_port()}"
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                   options=[("grpc.max_receive_message_length", MAX_MESSAGE)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.stub, self._server)
        self._server.add_insecure_port(self.address)

    def __enter__(self) -> StratumStubServer:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop(grace=None)


# --- a bf-p4c output folder, for a switch the stub stands in for ------------------------

PROGRAM = "replay_tna"
PIPE_SCOPE = [0, 1, 2, 3]


def tna_p4info(bmv2_p4info: p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    """The replay program's P4Info as bf-p4c names it: arch tna, and every table,
    action and counter under the Pipeline instance `pipe` (NoAction aside)."""
    info = p4info_pb2.P4Info()
    info.CopyFrom(bmv2_p4info)
    info.pkg_info.arch = "tna"
    for group in (info.tables, info.actions, info.counters, info.registers):
        for item in group:
            if "." in item.preamble.name:
                item.preamble.name = f"pipe.{item.preamble.name}"
    return info


def fake_tofino_build(directory: Path, bmv2_p4info: p4info_pb2.P4Info,
                      layout: str = "conf") -> dict[str, bytes]:
    """bf-p4c's output for the replay program as `-o directory` lays it out, with
    its files listed by the driver's .conf (install-relative paths, as
    p4c-gen-conf writes them) or, layout "manifest", by bf-p4c's manifest.json
    alone, or as the manifest does with the context gzipped beside its listed
    path (layout "manifest, context gzipped"): {file: bytes} of what a
    BfPipelineConfig must carry."""
    files = {"bfrt.json": b'{"schema_version": "1.0.0", "tables": []}',
             "pipe/context.json": b'{"program_name": "replay_tna", "tables": []}',
             "pipe/tofino.bin": bytes(range(256)) * 4}
    for name, data in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        if name == "pipe/context.json" and layout.endswith("gzipped"):
            name, data = name + ".gz", gzip.compress(data)
        (directory / name).write_bytes(data)
    if layout == "conf":
        share = f"share/tofinopd/{PROGRAM}"
        conf = {"chip_list": [{"chip_family": "tofino", "instance": 0}],
                "p4_devices": [{"device-id": 0, "p4_programs": [{
                    "program-name": PROGRAM, "bfrt-config": f"{share}/bfrt.json",
                    "p4_pipelines": [{"p4_pipeline_name": "pipe", "pipe_scope": PIPE_SCOPE,
                                      "context": f"{share}/pipe/context.json",
                                      "config": f"{share}/pipe/tofino.bin"}]}]}]}
        (directory / f"{PROGRAM}.conf").write_text(json.dumps(conf, indent=2))
    else:
        manifest = {"target": "tofino", "compilation_succeeded": True,
                    "programs": [{"program_name": f"{PROGRAM}.p4", "pipes": [{
                        "pipe_id": 0, "pipe_name": "pipe",
                        "files": {"context": {"path": "pipe/context.json"}}}]}]}
        (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (directory / f"{PROGRAM}.p4info.txtpb").write_text(
        text_format.MessageToString(tna_p4info(bmv2_p4info)))
    return files
