"""Weight broadcast: chunking, versions, loss tolerance, sender restarts."""

from __future__ import annotations

import socket

import numpy as np
import torch

from agent.rl.dqn import QNetwork, flat_parameters, load_flat_parameters
from agent.rl.weights import (
    CHUNK_BYTES,
    MAX_DATAGRAM,
    WeightReceiver,
    WeightSender,
    WeightUpdate,
    chunk,
)


def vector(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n).astype(np.float32)


def deliver(receiver: WeightReceiver, datagrams: list[bytes]) -> WeightUpdate | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for d in datagrams:
            sock.sendto(d, receiver.address)
    return receiver.poll(timeout=0.5)


def test_chunks_fit_one_datagram_and_reassemble() -> None:
    r = WeightReceiver(("127.0.0.1", 0))
    s = WeightSender([r.address])
    v = vector(5000, 0)
    assert s.send(7, v) == -(-v.nbytes // CHUNK_BYTES)
    update = r.poll(timeout=1.0)
    assert update is not None and update.version == 7 and np.array_equal(update.flat, v)
    assert all(len(d) <= MAX_DATAGRAM for d in chunk(7, v, 1))
    r.close()
    s.close()


def test_incomplete_versions_are_never_applied() -> None:
    r = WeightReceiver(("127.0.0.1", 0))
    v1, v2 = vector(3000, 1), vector(3000, 2)
    assert deliver(r, chunk(1, v1, 9)[1:]) is None  # chunk 0 lost
    got = deliver(r, list(reversed(chunk(2, v2, 9))))  # out of order is fine
    assert got is not None and got.version == 2 and np.array_equal(got.flat, v2)
    assert deliver(r, chunk(1, v1, 9)[:1]) is None  # the old version's last chunk: too late
    assert deliver(r, chunk(2, v2, 9)) is None  # a repeat of the applied version
    assert r.version == 2 and r.applied == 1 and r.dropped == 1
    r.close()


def test_corrupt_chunks_are_rejected_and_a_restarted_sender_starts_over() -> None:
    r = WeightReceiver(("127.0.0.1", 0))
    v = vector(100, 3)
    bad = bytearray(chunk(5, v, 1)[0])
    bad[-1] ^= 0xFF
    assert deliver(r, [bytes(bad), b"junk", b"P4RW" + b"\x00" * 30]) is None
    assert r.bad >= 2
    assert deliver(r, chunk(5, v, 1)).version == 5
    assert deliver(r, chunk(1, v, 2)).version == 1  # new nonce: version 1 accepted
    r.close()


def test_flat_parameters_round_trip_into_a_network() -> None:
    torch.manual_seed(0)
    a, b = QNetwork(4, 2), QNetwork(4, 2)
    load_flat_parameters(b, flat_parameters(a))
    x = torch.randn(3, 4)
    assert torch.equal(a(x), b(x))
