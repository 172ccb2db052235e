"""Controller headers for PacketOut / PacketIn, as p4lang/PI packs them.

The P4Info ``controller_packet_metadata`` named "packet_out" (resp.
"packet_in") lists the header's fields in order. PI packs them MSB first, each
at the bit offset where the previous one ended, into ``ceil(total bits / 8)``
bytes, and puts the header in front of the payload; missing PacketOut fields
are zero. A packet to the CPU port shorter than the packet_in header is
dropped; without a "packet_in" entry the whole frame is the payload.
"""

from __future__ import annotations

from dataclasses import dataclass

from bmv2.pyswitch.p4runtime.p4info import (
    P4InfoIndex,
    PacketMetadataInfo,
    int_to_canonical,
    nbytes,
    to_target,
)
from bmv2.pyswitch.p4runtime.proto import p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import invalid_argument

PACKET_OUT = "packet_out"
PACKET_IN = "packet_in"


@dataclass(frozen=True)
class ControllerHeader:
    """One controller header: its fields in wire order."""

    fields: tuple[PacketMetadataInfo, ...]

    @property
    def size(self) -> int:
        """Header length in bytes."""
        return nbytes(sum(f.bitwidth for f in self.fields))

    @property
    def total_bits(self) -> int:
        """Header length in bits before padding to bytes."""
        return sum(f.bitwidth for f in self.fields)

    def pack(self, metadata: list[p4runtime_pb2.PacketMetadata]) -> bytes:
        """The header bytes for PacketOut metadata (INVALID_ARGUMENT on unknown ids)."""
        values: dict[int, int] = {}
        by_id = {f.id: f for f in self.fields}
        for item in metadata:
            info = by_id.get(item.metadata_id)
            if info is None:
                raise invalid_argument("Unknown metadata id in PacketOut message")
            values[info.id] = int.from_bytes(to_target(item.value, info.bitwidth), "big")
        word = 0
        for info in self.fields:
            word = (word << info.bitwidth) | values.get(info.id, 0)
        word <<= self.size * 8 - self.total_bits
        return word.to_bytes(self.size, "big")

    def unpack(self, frame: bytes) -> list[p4runtime_pb2.PacketMetadata] | None:
        """PacketIn metadata read from the front of ``frame``; None if it is too short."""
        if len(frame) < self.size:
            return None
        word = int.from_bytes(frame[: self.size], "big") >> (self.size * 8 - self.total_bits)
        metadata = []
        shift = self.total_bits
        for info in self.fields:
            shift -= info.bitwidth
            value = (word >> shift) & ((1 << info.bitwidth) - 1)
            metadata.append(
                p4runtime_pb2.PacketMetadata(metadata_id=info.id, value=int_to_canonical(value))
            )
        return metadata


@dataclass(frozen=True)
class PacketIo:
    """PacketOut encoding and PacketIn decoding for one P4Info."""

    packet_out: ControllerHeader | None
    packet_in: ControllerHeader | None

    @classmethod
    def from_index(cls, index: P4InfoIndex) -> PacketIo:
        """The controller headers the P4Info declares."""
        out = index.controller_headers.get(PACKET_OUT)
        into = index.controller_headers.get(PACKET_IN)
        return cls(
            ControllerHeader(out) if out is not None else None,
            ControllerHeader(into) if into is not None else None,
        )

    def frame_out(self, packet: p4runtime_pb2.PacketOut) -> bytes:
        """The frame to inject on the CPU port for a PacketOut."""
        if self.packet_out is None:
            if len(packet.metadata) > 0:
                raise invalid_argument("Unexpected metadata in PacketOut message")
            return packet.payload
        return self.packet_out.pack(list(packet.metadata)) + packet.payload

    def packet_in_of(self, frame: bytes) -> p4runtime_pb2.PacketIn | None:
        """The PacketIn for a frame sent to the CPU port; None to drop it."""
        if self.packet_in is None:
            return p4runtime_pb2.PacketIn(payload=frame)
        metadata = self.packet_in.unpack(frame)
        if metadata is None:
            return None
        return p4runtime_pb2.PacketIn(payload=frame[self.packet_in.size :], metadata=metadata)
