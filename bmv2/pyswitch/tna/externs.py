"""The TNA externs the model runs, as the TNA document defines them (Open-Tofino
``PUBLIC_Tofino-Native-Arch.pdf``, and the comments of p4c's
``bf-p4c/p4include/tofino1_base.p4``): register arrays whose cells a
RegisterAction reads, changes and writes back once per packet, Hash, Random,
Counter and the deparser's Checksum.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..errors import UnsupportedConstruct
from ..hashes import _Crc, csum16_of_int

# HashAlgorithm_t in tofino1_base.p4, in declaration order (enums are numbered so).
HASH_ALGORITHMS = ("IDENTITY", "RANDOM", "XOR8", "XOR16", "XOR32", "CRC8", "CRC16", "CRC32",
                   "CRC64", "CUSTOM")
# The standard CRCs bf-p4c gives these names (bf-utils dynamic_hash's standard_crc_algs:
# crc_8, crc_16, crc_32, crc_64): (width, polynomial, reflected, init, final xor).
CRCS = {"CRC8": (8, 0x07, False, 0, 0), "CRC16": (16, 0x8005, True, 0, 0),
        "CRC32": (32, 0x04C11DB7, True, 0xFFFFFFFF, 0xFFFFFFFF),
        "CRC64": (64, 0x42F0E1EBA9EA3693, False, 0, 0)}

# Tofino parser error bits (tofino1_base.p4, PARSER_ERROR_*).
PARSER_ERROR_NO_MATCH = 0x0001
PARSER_ERROR_PARTIAL_HDR = 0x0002


class RegisterConflict(RuntimeError):
    """A register array touched twice in one pass: Tofino's stateful ALU cannot."""


@dataclass
class RegisterArray:
    """A Register<T, I>: ``size`` cells, each an int or, for a struct T, a tuple."""

    name: str
    size: int
    width: int                      # bits of one cell (a pair: both halves)
    fields: tuple[tuple[str, int], ...] = ()   # a struct cell's fields (name, width)
    initial: int | tuple[int, ...] = 0
    cells: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.cells = [self.initial] * self.size

    def index(self, i: int) -> int:
        """The cell an index addresses: the low address bits, as the ALU uses them."""
        return i % self.size

    def read_int(self, i: int) -> int:
        """A cell as one integer (a struct's fields concatenated, first field high)."""
        v = self.cells[self.index(i)]
        if not self.fields:
            return v
        acc = 0
        for (_, w), part in zip(self.fields, v, strict=True):
            acc = (acc << w) | part
        return acc

    def write_int(self, i: int, value: int) -> None:
        """Set a cell from one integer (as read_int gives it)."""
        if not self.fields:
            self.cells[self.index(i)] = value & ((1 << self.width) - 1)
            return
        parts = []
        for _, w in reversed(self.fields):
            parts.append(value & ((1 << w) - 1))
            value >>= w
        self.cells[self.index(i)] = tuple(reversed(parts))


def make_hash_fn(algorithm: str, width: int, where: str):
    """An ``(value, nbits) -> int`` function: the hash of the data's bits, ``width`` wide."""
    mask = (1 << width) - 1
    if algorithm == "IDENTITY":
        return lambda value, nbits: value & mask
    if algorithm in CRCS:
        cw, poly, reflected, init, xorout = CRCS[algorithm]
        crc = _Crc(cw, poly, init, xorout, reflected)

        def crc_fn(value: int, nbits: int) -> int:
            # A CRC narrower than the output repeats across it (bf-p4c extends the
            # standard CRCs: output bit i is CRC bit i mod the CRC's width).
            return (crc(value.to_bytes((nbits + 7) // 8, "big")) * repeat) & mask
        repeat = sum(1 << shift for shift in range(0, width, cw))
        return crc_fn
    if algorithm.startswith("XOR"):
        chunk = int(algorithm[3:])
        cmask = (1 << chunk) - 1

        def xor_fn(value: int, nbits: int) -> int:
            acc = 0
            while value:                  # W-bit words from the least significant end
                acc ^= value & cmask
                value >>= chunk
            return acc & mask
        return xor_fn
    if algorithm == "RANDOM":
        rng = random.Random(0)
        return lambda value, nbits: rng.getrandbits(width)
    raise UnsupportedConstruct(f"TNA model: Hash algorithm {algorithm} ({where})")


def checksum16(value: int, nbits: int) -> int:
    """The deparser Checksum's update(): the Internet checksum of the data's bytes."""
    if nbits % 16:
        value <<= 16 - nbits % 16
    return csum16_of_int(value)
