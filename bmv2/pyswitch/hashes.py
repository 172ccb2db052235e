"""Hash algorithms of bmv2 (src/bm_sim/calculations.cpp), bit-exact.

Each algorithm is a factory returning a ``bytes -> int`` function; a new
function is made for every calculation so that stateful ones (round_robin)
keep their own state, as bmv2 does.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from .errors import UnsupportedConstruct

HashFn = Callable[[bytes], int]

_M64 = (1 << 64) - 1


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


class _Crc:
    """Table-driven CRC with reflected input and output (all bmv2 CRCs but CCITT/crc8)."""

    def __init__(self, width: int, poly: int, init: int, xorout: int, reflected: bool) -> None:
        self.width = width
        self.mask = (1 << width) - 1
        self.init = init
        self.xorout = xorout
        self.reflected = reflected
        if reflected:
            rpoly = _reflect(poly, width)
            self.table = [self._entry_reflected(i, rpoly) for i in range(256)]
        else:
            self.table = [self._entry_normal(i, poly) for i in range(256)]

    def _entry_reflected(self, byte: int, rpoly: int) -> int:
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ rpoly if crc & 1 else crc >> 1
        return crc

    def _entry_normal(self, byte: int, poly: int) -> int:
        top = 1 << (self.width - 1)
        crc = byte << (self.width - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ poly) & self.mask if crc & top else (crc << 1) & self.mask
        return crc

    def __call__(self, data: bytes) -> int:
        table = self.table
        crc = self.init
        if self.reflected:
            for b in data:
                crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
        else:
            shift = self.width - 8
            mask = self.mask
            for b in data:
                crc = table[((crc >> shift) ^ b) & 0xFF] ^ ((crc << 8) & mask)
        return (crc ^ self.xorout) & self.mask


def csum16(data: bytes) -> int:
    """Internet checksum (ones' complement of the ones' complement sum)."""
    if len(data) & 1:
        data += b"\x00"
    value = int.from_bytes(data, "big")
    return csum16_of_int(value)


def csum16_of_int(value: int) -> int:
    """csum16 of the bytes whose big-endian value is ``value`` (an even number of bytes)."""
    s = value % 0xFFFF
    if s == 0 and value:
        s = 0xFFFF
    return ~s & 0xFFFF


def identity(data: bytes) -> int:
    """The first (up to) 8 bytes, big-endian."""
    return int.from_bytes(data[:8], "big")


def _xor_words(nbytes: int) -> HashFn:
    def xor_hash(data: bytes) -> int:
        out = 0
        for i in range(0, len(data), nbytes):
            chunk = data[i:i + nbytes]
            out ^= int.from_bytes(chunk, "big") << (8 * (nbytes - len(chunk)))
        return out
    return xor_hash


_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M64
    return (_rotl(acc, 31) * _P1) & _M64


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 as bmv2 uses it (seed 0)."""
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M64
        v2 = (seed + _P2) & _M64
        v3 = seed
        v4 = (seed - _P1) & _M64
        while i + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[i:i + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 8:i + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 16:i + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 24:i + 32], "little"))
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M64
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


def _round_robin() -> HashFn:
    state = [0]

    def round_robin(data: bytes) -> int:
        value = state[0]
        state[0] = (value + 1) & _M64
        return value
    return round_robin


def _round_robin_consistent() -> HashFn:
    seen: dict[bytes, int] = {}

    def round_robin_consistent(data: bytes) -> int:
        return seen.setdefault(bytes(data), len(seen))
    return round_robin_consistent


def _toeplitz() -> HashFn:
    # bmv2's default Toeplitz key is 4 zero bytes: every input hashes to 0.
    return lambda data: 0


def _crc(width: int, poly: int, init: int, xorout: int, reflected: bool) -> Callable[[], HashFn]:
    return lambda: _Crc(width, poly, init, xorout, reflected)


_FACTORIES: dict[str, Callable[[], HashFn]] = {
    "crc16": _crc(16, 0x8005, 0, 0, True),
    "crc16_custom": _crc(16, 0x8005, 0, 0, True),
    "crc32": lambda: zlib.crc32,
    "crc32_custom": lambda: zlib.crc32,
    "crcCCITT": _crc(16, 0x1021, 0xFFFF, 0, False),
    "crc8_custom": _crc(8, 0x07, 0, 0, False),
    "crc64_custom": _crc(64, 0x1B, 0, 0, True),
    "csum16": lambda: csum16,
    "cksum16": lambda: csum16,
    "identity": lambda: identity,
    "xor16": lambda: _xor_words(2),
    "xor32": lambda: _xor_words(4),
    "xxh64": lambda: xxh64,
    "round_robin": _round_robin,
    "round_robin_consistent": _round_robin_consistent,
    "toeplitz": _toeplitz,
}


def make_hash(algo: str, where: str) -> HashFn:
    """A fresh hash function for ``algo``; UnsupportedConstruct if bmv2 has no such algorithm."""
    factory = _FACTORIES.get(algo)
    if factory is None:
        raise UnsupportedConstruct(f"hash algorithm '{algo}' in {where}")
    return factory()
