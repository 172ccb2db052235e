"""csum16 verify/update (IPv4, UDP with payload) and the v1model hash algorithms."""

from __future__ import annotations

import struct
import zlib

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from bmv2.pyswitch import Switch

HASHES_FMT = "!HIHIHHB"


def crc16_arc(data: bytes) -> int:
    """Bit-by-bit CRC-16/ARC (bmv2 'crc16'), independent of the switch's tables."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def ones_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    out = 0
    for (w,) in struct.iter_unpack("!H", data):
        out ^= w
    return out


@pytest.fixture
def sw(load) -> Switch:
    return load("checksum")


def packet(**ip: object) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
                 / IP(src="198.18.0.1", dst="198.18.1.2", ttl=64, **ip)
                 / UDP(sport=1234, dport=5678) / (b"hello world!" * 3))


def split(data: bytes) -> tuple[tuple[int, ...], bytes]:
    n = struct.calcsize(HASHES_FMT)
    return struct.unpack(HASHES_FMT, data[:n]), data[n:]


def test_hashes_and_updated_checksums(sw: Switch) -> None:
    pkt = packet()
    out = sw.process(0, pkt)
    assert [p for p, _d in out] == [1]
    hashes, rest = split(out[0][1])
    key = bytes.fromhex("c6120001c612010211")  # src, dst, protocol
    assert hashes == (crc16_arc(key), zlib.crc32(key), ~ones_sum(key) & 0xFFFF, 0xC6120102,
                      xor16(key), crc16_arc(key[:8]) % 100 + 10, 0)
    expect = Ether(pkt)
    expect[IP].ttl = 63
    del expect[IP].chksum
    del expect[UDP].chksum
    assert rest == bytes(expect)
    assert IP(rest[14:])[UDP].chksum == Ether(pkt)[UDP].chksum


def test_bad_ipv4_checksum_sets_checksum_error(sw: Switch) -> None:
    pkt = bytearray(packet())
    pkt[24] ^= 0xFF  # corrupt hdr_checksum
    out = sw.process(0, bytes(pkt))
    assert [p for p, _d in out] == [2]
    hashes, rest = split(out[0][1])
    assert hashes[-1] == 1
    assert Ether(rest)[IP].ttl == 64
    assert rest == packet()  # the deparser recomputed the checksum


def test_checksum_verify_ignores_invalid_header(sw: Switch) -> None:
    arp = bytes.fromhex("020000000001020000000002") + b"\x08\x06" + bytes(28)
    assert sw.process(0, arp) == []
    assert sw.stats.dropped == 1


def test_checksum_code_knows_its_widths(sw: Switch) -> None:
    """A one's complement sum over inputs whose absent parts are multiples of 16 bits
    shifts by a constant (no bit count at run time), its 16-bit result is stored
    without a mask, and the deparser computes its checksums inline (no call)."""
    src = sw.generated_source
    assert "_csum_int(_v << 8)" in src and "_csum_int(_v)" in src, src
    assert "-_n % 16" not in src, src
    deparse = src.split("def deparse(", 1)[1].split("\ndef ", 1)[0]
    assert "(F, pk)" not in deparse, deparse
    stores = [line for line in deparse.splitlines() if "= _csum_int(" in line or "= HASH" in line]
    assert len(stores) == 2 and not any("&" in line for line in stores), deparse
