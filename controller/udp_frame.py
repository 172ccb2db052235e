"""Ethernet / IPv4 / UDP frames built and parsed with struct: what the
controller sends through the CPU port and what tests put on the wire fast."""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP = struct.Struct("!HHHH")
ETH_BYTES, IPV4_BYTES, UDP_BYTES = ETH.size, IPV4.size, UDP.size
HEADERS_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES
ETHERTYPE_IPV4 = 0x0800
PROTO_UDP = 17


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class UdpFrame:
    """The addresses and payload of an Ethernet/IPv4/UDP frame."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    src_port: int
    dst_port: int
    payload: bytes
    ttl: int = 64


def build(frame: UdpFrame) -> bytes:
    """Serialize a frame (UDP checksum 0, IPv4 checksum computed)."""
    udp_len = UDP_BYTES + len(frame.payload)
    ip_wo_sum = IPV4.pack(0x45, 0, IPV4_BYTES + udp_len, 0, 0, frame.ttl, PROTO_UDP, 0,
                          ipaddress.IPv4Address(frame.src_ip).packed,
                          ipaddress.IPv4Address(frame.dst_ip).packed)
    ip_hdr = ip_wo_sum[:10] + struct.pack("!H", ipv4_checksum(ip_wo_sum)) + ip_wo_sum[12:]
    return (ETH.pack(mac_bytes(frame.dst_mac), mac_bytes(frame.src_mac), ETHERTYPE_IPV4)
            + ip_hdr + UDP.pack(frame.src_port, frame.dst_port, udp_len, 0) + frame.payload)


def parse(data: bytes) -> UdpFrame | None:
    """Parse an option-less IPv4/UDP frame; None for anything else."""
    if len(data) < HEADERS_BYTES:
        return None
    dst, src, ethertype = ETH.unpack_from(data)
    if ethertype != ETHERTYPE_IPV4 or data[ETH_BYTES] != 0x45:
        return None
    fields = IPV4.unpack_from(data, ETH_BYTES)
    if fields[6] != PROTO_UDP:
        return None
    sport, dport, length, _ = UDP.unpack_from(data, ETH_BYTES + IPV4_BYTES)
    start = HEADERS_BYTES
    end = ETH_BYTES + IPV4_BYTES + max(length, UDP_BYTES)
    return UdpFrame(mac_str(src), mac_str(dst), str(ipaddress.IPv4Address(fields[8])),
                    str(ipaddress.IPv4Address(fields[9])), sport, dport, bytes(data[start:end]),
                    fields[5])
