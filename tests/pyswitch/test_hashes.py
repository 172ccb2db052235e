"""Hash algorithms give the standard check values (input b"123456789")."""

from __future__ import annotations

import pytest

from bmv2.pyswitch.errors import UnsupportedConstruct
from bmv2.pyswitch.hashes import csum16, make_hash, xxh64

CHECK = b"123456789"


@pytest.mark.parametrize(("algo", "value"), [
    ("crc16", 0xBB3D),           # CRC-16/ARC
    ("crc16_custom", 0xBB3D),
    ("crcCCITT", 0x29B1),        # CRC-16/CCITT-FALSE
    ("crc8_custom", 0xF4),       # CRC-8 (poly 0x07)
    ("crc32", 0xCBF43926),
    ("crc32_custom", 0xCBF43926),
    ("identity", 0x3132333435363738),
    ("xor16", 0x3132 ^ 0x3334 ^ 0x3536 ^ 0x3738 ^ 0x3900),
    ("toeplitz", 0),
])
def test_check_values(algo: str, value: int) -> None:
    assert make_hash(algo, "test")(CHECK) == value


def test_csum16() -> None:
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert csum16(header) == 0xB861
    assert csum16(b"") == 0xFFFF
    assert csum16(b"\xff\xff") == 0


def test_xxh64_reference_values() -> None:
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert make_hash("xxh64", "test")(b"a") == 0xD24EC4F1A98C6E5B


def test_round_robin_state_is_per_calculation() -> None:
    a, b = make_hash("round_robin", "a"), make_hash("round_robin", "b")
    assert [a(b"x"), a(b"y"), b(b"z")] == [0, 1, 0]
    c = make_hash("round_robin_consistent", "c")
    assert [c(b"x"), c(b"y"), c(b"x")] == [0, 1, 0]


def test_unknown_algorithm() -> None:
    with pytest.raises(UnsupportedConstruct, match="hash algorithm 'random' in test"):
        make_hash("random", "test")
