"""The P4Runtime gRPC server of the Python switch, on the terms of simple_switch_grpc.

It answers like p4lang/PI's pi_server (the server inside simple_switch_grpc):
API version "1.3.0" in Capabilities; FAILED_PRECONDITION before a pipeline
is set; Write and SetForwardingPipelineConfig only from the primary client
(PERMISSION_DENIED "Not primary"), or from anyone while no stream is open and
the request carries no election id; Read and GetForwardingPipelineConfig from
anyone; batched Write errors as UNKNOWN with one p4.v1.Error per update in
the ``grpc-status-details-bin`` trailer; PacketOut only from the primary, and
PacketIn only to it. Messages up to 256 MB are accepted, as PI does.

Usage in-process::

    dataplane = Dataplane(cpu_port=255)
    server = P4RuntimeServer(dataplane, device_id=0, address="127.0.0.1:0")
    port = server.start()
    ...
    server.stop()
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass

import grpc

from bmv2.pyswitch.p4runtime.arbitration import (
    MAX_CONNECTIONS,
    Arbitration,
    Connection,
    election_id_of,
)
from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.device import DeviceManager
from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2, p4runtime_pb2_grpc, status_pb2
from bmv2.pyswitch.p4runtime.status import P4RuntimeError, grpc_status_code

log = logging.getLogger(__name__)

P4RUNTIME_API_VERSION = "1.3.0"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class _RpcStatus(grpc.Status):
    """A grpc.Status carrying a google.rpc.Status in the details trailer."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


def _abort(context: grpc.ServicerContext, error: P4RuntimeError) -> None:
    context.abort(error.grpc_code, error.message)


def _abort_with_status(context: grpc.ServicerContext, status: status_pb2.Status) -> None:
    context.abort_with_status(
        _RpcStatus(
            grpc_status_code(status.code),
            status.message,
            ((STATUS_DETAILS_KEY, status.SerializeToString()),),
        )
    )


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The p4.v1.P4Runtime service."""

    def __init__(self, device: DeviceManager, arbitration: Arbitration) -> None:
        self.device = device
        self.arbitration = arbitration

    def _check_primary(
        self,
        request: p4runtime_pb2.WriteRequest | p4runtime_pb2.SetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> None:
        election_id = (
            election_id_of(request.election_id) if request.HasField("election_id") else None
        )
        try:
            self.arbitration.check_write_access(request.device_id, election_id)
        except P4RuntimeError as exc:
            _abort(context, exc)

    def Capabilities(
        self, request: p4runtime_pb2.CapabilitiesRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.CapabilitiesResponse:
        """The P4Runtime version PI announces."""
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_API_VERSION)

    def SetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        """Load, save or commit a pipeline (primary only)."""
        self._check_primary(request, context)
        try:
            self.device.set_pipeline(request.device_id, request.action, request.config)
        except P4RuntimeError as exc:
            _abort(context, exc)
        log.info("pipeline set (%s)", p4runtime_pb2.SetForwardingPipelineConfigRequest.Action.Name(
            request.action))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.GetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        """The pipeline config, or the parts the response type asks for."""
        try:
            config = self.device.get_pipeline(request.device_id, request.response_type)
        except P4RuntimeError as exc:
            _abort(context, exc)
        return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=config)

    def Write(
        self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.WriteResponse:
        """A batch of updates (primary only)."""
        self._check_primary(request, context)
        try:
            status = self.device.write(request)
        except P4RuntimeError as exc:
            _abort(context, exc)
        if status.code != code_pb2.OK:
            _abort_with_status(context, status)
        return p4runtime_pb2.WriteResponse()

    def Read(
        self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.ReadResponse]:
        """One response with every entity read; on an error, those before it, then the error."""
        try:
            response, error = self.device.read(request)
        except P4RuntimeError as exc:
            _abort(context, exc)
        yield response
        if error is not None:
            _abort(context, error)

    def StreamChannel(
        self,
        request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
        context: grpc.ServicerContext,
    ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        """Arbitration, PacketOut from the primary, PacketIn and arbitration updates to it."""
        stream = _Stream(self, request_iterator)
        context.add_callback(stream.wake)
        stream.start()
        try:
            while True:
                message = stream.outbox.get()
                if message is None:
                    break
                yield message
        finally:
            stream.finish()
        if stream.error is not None:
            _abort(context, stream.error)

    def packet_in(self, frame: bytes) -> None:
        """Hand a frame the switch sent to the CPU port to the primary client."""
        packet = self.device.packet_in(frame)
        if packet is None:
            return
        primary = self.arbitration.primary(self.device.device_id)
        if primary is not None:
            primary.send(p4runtime_pb2.StreamMessageResponse(packet=packet))


class _Stream:
    """One StreamChannel: a thread reads the client's messages, the RPC thread writes."""

    def __init__(
        self,
        servicer: P4RuntimeServicer,
        requests: Iterator[p4runtime_pb2.StreamMessageRequest],
    ) -> None:
        self._servicer = servicer
        self._requests = requests
        self.connection: Connection | None = None
        self.outbox: queue.Queue[p4runtime_pb2.StreamMessageResponse | None] = queue.Queue()
        self.error: P4RuntimeError | None = None
        self._thread = threading.Thread(target=self._read_loop, name="p4rt-stream", daemon=True)

    def start(self) -> None:
        """Start reading the client's messages."""
        self._thread.start()

    def wake(self) -> None:
        """End the RPC's write loop (the RPC ended or the client stopped sending)."""
        self.outbox.put(None)

    def finish(self) -> None:
        """Forget the connection; the next primary, if any, is told."""
        if self.connection is not None:
            self._servicer.arbitration.remove(self.connection)
            self.connection = None

    def _read_loop(self) -> None:
        try:
            for request in self._requests:
                kind = request.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitrate(request.arbitration)
                elif kind == "packet" and self._is_primary():
                    self._servicer.device.packet_out(request.packet)
        except P4RuntimeError as exc:
            self.error = exc
        except grpc.RpcError:
            pass
        finally:
            self.wake()

    def _is_primary(self) -> bool:
        arbitration = self._servicer.arbitration
        connection = self.connection
        return connection is not None and arbitration.primary(connection.device_id) is connection

    def _arbitrate(self, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        election_id = election_id_of(update.election_id)
        arbitration = self._servicer.arbitration
        if self.connection is None:
            connection = Connection(update.device_id, election_id, self.outbox)
            arbitration.add(connection)
            self.connection = connection
            return
        if update.device_id != self.connection.device_id:
            raise P4RuntimeError(code_pb2.FAILED_PRECONDITION, "Invalid device id")
        try:
            arbitration.update(self.connection, election_id)
        except P4RuntimeError:
            self.connection = None
            raise


class P4RuntimeServer:
    """A gRPC server with the P4Runtime service of one switch."""

    def __init__(self, dataplane: Dataplane, device_id: int = 0,
                 address: str = "0.0.0.0:9559",
                 credentials: grpc.ServerCredentials | None = None) -> None:
        self.dataplane = dataplane
        self.address = address
        self.credentials = credentials
        self.arbitration = Arbitration()
        self.device = DeviceManager(dataplane, device_id)
        self.servicer = P4RuntimeServicer(self.device, self.arbitration)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_CONNECTIONS + 8,
                                       thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)],
            maximum_concurrent_rpcs=MAX_CONNECTIONS + 64,
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.servicer, self._server)
        self.port = 0

    def start(self) -> int:
        """Listen and serve (over TLS with `credentials`); returns the bound TCP
        port (useful with port 0)."""
        try:
            if self.credentials is None:
                self.port = self._server.add_insecure_port(self.address)
            else:
                self.port = self._server.add_secure_port(self.address, self.credentials)
        except RuntimeError as exc:
            raise OSError(f"cannot listen on {self.address}: {exc}") from exc
        if self.port == 0:
            raise OSError(f"cannot listen on {self.address}")
        self.dataplane.set_packet_in(self.servicer.packet_in)
        self._server.start()
        log.info("P4Runtime server listening on %s", self.address)
        return self.port

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving: open streams end, pending RPCs get ``grace`` seconds."""
        self.dataplane.set_packet_in(None)
        self._server.stop(grace).wait()
