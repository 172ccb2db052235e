"""Bit-width semantics: wrap-around, signed values, shifts, slices, concat, saturation."""

from __future__ import annotations

import random
import struct

import pytest

from bmv2.pyswitch import Switch

from .util import program_json

IN_FMT = "!BBbbHIB"
RES_FMT = "!BBBBBHHBBBBBHBBBBBBHBbB"


def reference(a: int, b: int, s: int, t: int, w: int, x: int, sh: int) -> tuple[int, ...]:
    """What P4_16 says each result field holds (as it appears on the wire)."""
    flags = ((s < t) | (a < b) << 1 | (s == -1 or a == 0) << 2
             | (not w > 1000 and x != 0) << 3)
    return (
        (a + b) & 255, (a - b) & 255, (a * b) & 255, (a << 3) & 255, a >> 2,
        (w << (sh & 15)) & 0xFFFF, w >> sh,
        (s + t) & 255, (s - t) & 255, (s >> 2) & 255, (s * t) & 255,
        (x >> 8) & 255, a << 8 | b, ~a & 255, (a & 0xF0) | (b ^ 0x0F),
        min(a + b, 255), max(a - b, 0), max(-128, min(127, s + t)) & 255,
        (x & 15) << 4 | flags, s & 0xFFFF, max(a, b),
        ((s - 100 + 128) & 255) - 128, (b & 0x0F) | (a & 0x0F) << 4,
    )


@pytest.fixture(scope="module")
def sw() -> Switch:
    return Switch(program_json("arith"))


def run(sw: Switch, values: tuple[int, ...]) -> tuple[int, ...]:
    pkt = struct.pack(IN_FMT, *values) + b"tail"
    out = sw.process(0, pkt)
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    n_in, n_res = struct.calcsize(IN_FMT), struct.calcsize(RES_FMT)
    assert data[:n_in] == pkt[:n_in] and data[n_in + n_res:] == b"tail"
    res = struct.unpack(RES_FMT, data[n_in:n_in + n_res])
    return res


EDGES = [
    (0, 0, 0, 0, 0, 0, 0),
    (255, 255, -128, -128, 0xFFFF, 0xFFFFFFFF, 255),
    (255, 1, 127, 1, 1001, 1, 15),
    (1, 255, -1, 127, 1000, 0, 16),
    (128, 128, -128, 127, 0x8001, 0x12345678, 3),
    (0, 7, -1, -1, 0x00FF, 0x80000000, 200),
]


@pytest.mark.parametrize("values", EDGES)
def test_edge_values(sw: Switch, values: tuple[int, ...]) -> None:
    assert run(sw, values) == reference(*values)


def test_random_values(sw: Switch) -> None:
    rng = random.Random(1)
    for _ in range(500):
        values = (rng.randrange(256), rng.randrange(256), rng.randrange(-128, 128),
                  rng.randrange(-128, 128), rng.randrange(1 << 16), rng.randrange(1 << 32),
                  rng.randrange(256))
        assert run(sw, values) == reference(*values), values
