"""The soak's load, one process each until a deadline: every actor INSERTs,
SAMPLEs (checking each reply) and UPDATEs at full rate; the intruder sends fuzz
(random bytes, mutated and valid requests) and counts its answers; the forger
sends valid requests in other hosts' names from the intruder's port and counts
the answers that come back (there must be none). Each reports on a queue."""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from agent.contract import protocol
from agent.contract.protocol import REPLAY_UDP_PORT, Message, Op, ProtocolError, Status
from agent.orchestration.soak.payloads import (
    BATCH,
    SOAK_TABLE,
    WITNESS_TABLE,
    sample_errors,
    sign,
    soak_priority,
)
from agent.replay.client import ReplayRefused, ReplayTimeout, RetryPolicy, make_client
from agent.rl.namespace import enter
from bmv2.testbed.netns import raw_socket
from controller import udp_frame

FORGED_SPORT = 31999                   # forged requests' source port (not an ephemeral one)
PACKET_OUTGOING = 4                    # AF_PACKET: a frame this socket's host sent


# --- the actors' load ----------------------------------------------------------------

@dataclass(frozen=True)
class Worker:
    """What one load process needs (picklable)."""

    index: int
    netns: str
    ip: str
    vip: str
    key: bytes
    deadline: float                # time.monotonic() (system-wide on Linux)
    seed: int


def actor_load(w: Worker, out: Any) -> None:
    """INSERT, SAMPLE and UPDATE table 0 until the deadline; report to `out`."""
    enter(w.netns)
    rng = random.Random(w.seed)
    client = make_client("switch", address=(w.vip, REPLAY_UDP_PORT), bind=(w.ip, 0),
                         table=SOAK_TABLE, ack_inserts=True, ack_updates=True,
                         policy=RetryPolicy(timeout=0.5, retries=3))
    sent, errors, checked = 0, Counter[str](), 0
    while time.monotonic() < w.deadline:
        payloads = [sign(w.key, w.index, sent + i, rng.randbytes(40)) for i in range(BATCH)]
        sent += BATCH
        try:
            client.insert_many(payloads, [soak_priority(rng) for _ in payloads])
            pending = client.sample_async(BATCH)
            batch = client.wait(pending)
            for reply in pending.replies.values():
                errors.update(sample_errors(w.key, reply))
            checked += len(batch)
            client.update(batch.slot, batch.stamp, [soak_priority(rng) for _ in batch.slot])
        except ReplayTimeout:
            continue  # counted in the client's stats
        except ReplayRefused as exc:
            if exc.status != Status.NOT_READY:  # NOT_READY: in the client's not_ready
                errors[f"actor {w.index}: valid request refused: {exc}"] += 1
    out.put({"actor": w.index, "sent": sent, "checked": checked, "errors": dict(errors),
             "client": client.stats()})
    client.close()


# --- the intruder's fuzz ----------------------------------------------------------------

def random_request(rng: random.Random) -> Message:
    """A well-formed request of any op, for any table (valid or not)."""
    table, slot, rid = rng.randrange(6), rng.randrange(1 << 13), rng.getrandbits(32)
    payload = rng.randbytes(protocol.PAYLOAD_BYTES)
    op = rng.choice(list(Op))
    n = rng.randrange(1, protocol.MAX_UPDATE_BATCH + 1)   # an UPDATE_BATCH's entries
    msg = {Op.INSERT: lambda: protocol.insert(table, payload, ack=rng.random() < 0.5),
           Op.SAMPLE: lambda: protocol.sample(table, rng.randrange(1, 65)),
           Op.UPDATE: lambda: protocol.update(table, slot, rng.getrandbits(16), 2.0, ack=True),
           Op.UPDATE_BATCH: lambda: protocol.update_batch(
               table, [rng.randrange(1 << 13) for _ in range(n)],
               [rng.getrandbits(16) for _ in range(n)], [2.0] * n, ack=True),
           Op.READ: lambda: protocol.read(table, slot),
           Op.WRITE: lambda: protocol.write(table, slot, rng.getrandbits(20), 1 << 16, payload),
           Op.RESET: lambda: protocol.reset(table),
           Op.GET_STATE: lambda: protocol.get_state(table),
           Op.SET_STATE: lambda: protocol.set_state(table, pointer=slot, sequence=0,
                                                    max_priority_fixed=0, size=0)}[op]()
    return protocol.with_request_id(msg, rid)


def fuzz_datagram(rng: random.Random) -> bytes:
    """40 % random bytes, 40 % a mutated request, 20 % a valid request."""
    r = rng.random()
    if r < 0.4:
        return rng.randbytes(rng.randrange(0, 121))
    data = bytearray(protocol.encode(random_request(rng)))
    if r >= 0.8:
        return bytes(data)
    for _ in range(rng.randrange(1, 5)):
        how = rng.randrange(4)
        if how == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == 1 and data:
            data[rng.randrange(min(len(data), protocol.HEADER_BYTES))] = rng.randrange(256)
        elif how == 2:
            del data[rng.randrange(len(data) + 1):]
        else:
            data += rng.randbytes(rng.randrange(1, 40))
    return bytes(data)


def intruder_load(netns: str, ip: str, vip: str, count: int, deadline: float, seed: int,
                  out: Any) -> None:
    """Send `count` fuzz datagrams paced until the deadline; count the answers."""
    enter(netns)
    rng = random.Random(seed)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip, 0))
    sock.setblocking(False)
    statuses: Counter[str] = Counter()
    start = time.monotonic()
    span = max(deadline - start, 0.1) * 0.9
    sent = 0
    while sent < count and time.monotonic() < deadline:
        if sent > count * (time.monotonic() - start) / span:
            time.sleep(0.001)
        else:
            try:
                sock.sendto(fuzz_datagram(rng), (vip, REPLAY_UDP_PORT))
                sent += 1
            except OSError:
                time.sleep(0.001)  # a full socket buffer: the same as a loss
        _count_replies(sock, statuses)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        _count_replies(sock, statuses)
        time.sleep(0.01)
    out.put({"fuzz_sent": sent, "fuzz_replies": dict(statuses)})


def _count_replies(sock: socket.socket, statuses: Counter[str]) -> None:
    while True:
        try:
            data = sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            continue
        try:
            statuses[protocol.decode(data).status_name()] += 1
        except ProtocolError:
            statuses["undecodable"] += 1


# --- the forger: the intruder in other hosts' names --------------------------------------

@dataclass(frozen=True)
class Forger:
    """What the forging process needs (picklable): the intruder's namespace, interface
    and MAC, the (IPv4, MAC) of the hosts it poses as, the VIP and its MAC."""

    netns: str
    iface: str
    mac: str
    victims: tuple[tuple[str, str], ...]
    vip: str
    vip_mac: str
    count: int
    deadline: float
    seed: int


def forged_frame(f: Forger, rng: random.Random) -> bytes:
    """A valid INSERT, SAMPLE or UPDATE of either table in a victim's IPv4 address,
    from the intruder's MAC or the victim's."""
    ip, mac = rng.choice(f.victims)
    table, rid = rng.choice((SOAK_TABLE, WITNESS_TABLE)), rng.getrandbits(32)
    msg = rng.choice((
        lambda: protocol.insert(table, rng.randbytes(protocol.PAYLOAD_BYTES), ack=True),
        lambda: protocol.sample(table, rng.randrange(1, 33)),
        lambda: protocol.update(table, rng.randrange(4096), rng.getrandbits(16), 2.0,
                                ack=True)))()
    return udp_frame.build(udp_frame.UdpFrame(
        mac if rng.random() < 0.5 else f.mac, f.vip_mac, ip, f.vip, FORGED_SPORT,
        REPLAY_UDP_PORT, protocol.encode(protocol.with_request_id(msg, rid))))


def forger_load(f: Forger, out: Any) -> None:
    """Send `count` forged requests paced until the deadline; count the answers (any
    reply comes back out of the intruder's port, to FORGED_SPORT)."""
    sock = raw_socket(f.iface, f.netns)
    sock.setblocking(False)
    rng = random.Random(f.seed)
    start = time.monotonic()
    span = max(f.deadline - start, 0.1) * 0.9
    sent = served = 0

    def answers() -> int:
        n = 0
        while True:
            try:
                data, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return n
            except OSError:
                continue
            frame = udp_frame.parse(data)
            n += (addr[2] != PACKET_OUTGOING and frame is not None
                  and frame.src_port == REPLAY_UDP_PORT and frame.dst_port == FORGED_SPORT)

    while sent < f.count and time.monotonic() < f.deadline:
        if sent > f.count * (time.monotonic() - start) / span:
            time.sleep(0.001)
        else:
            try:
                sock.send(forged_frame(f, rng))
                sent += 1
            except OSError:
                time.sleep(0.001)
        served += answers()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        served += answers()
        time.sleep(0.01)
    sock.close()
    out.put({"forged_sent": sent, "forged_served": served})
