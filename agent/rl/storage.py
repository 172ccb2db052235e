"""How transitions travel through a replay table, one class per storage mode
(docs/protocol.md, "Storage modes"):

    slot       the transition in the slot's 16 float32 words (agent/rl/transition.py)
    float16    the same, observations as float16: D + 5 words, D <= 11 (lossy)
    reference  the slot holds a reference (agent/replay/reference.py) with the small
               fields inline; the Actor's payload store keeps the observations' bytes
               and the Learner's resolver fetches them

An Actor turns transitions into slot payloads with a writer; the Learner turns a
sampled batch back into transitions with a reader, which for references fetches the
bytes, drops the missing samples (counted by the resolver) and tops the batch up
with a new SAMPLE for as many, at most TOPUP_ATTEMPTS times.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from typing import Protocol

import numpy as np

from agent.contract import protocol
from agent.contract.protocol import PAYLOAD_BYTES, PAYLOAD_WORDS, ProtocolError, SampleBatch
from agent.replay.client import ReplayError
from agent.replay.payload_store import PayloadStore
from agent.replay.reference import (
    INLINE_BYTES,
    Reference,
    decode_reference,
    encode_reference,
    rows_to_payloads,
)
from agent.replay.resolver import PayloadResolver
from agent.rl import transition
from agent.rl.envs import EnvInfo
from agent.rl.transition import EXTRA_WORDS, Transitions

TOPUP_ATTEMPTS = 2
HALF_WORD = ">f2"
# The inline fields of a transition's reference: action, n-step return, done, discount.
_INLINE = struct.Struct("!Ifff")


class Writer(Protocol):
    """Actor side: transitions to slot payloads."""

    def payloads(self, t: Transitions) -> list[bytes]: ...


class Reader(Protocol):
    """Learner side: a sampled batch to transitions (the rows kept, in order)."""

    def transitions(self, batch: SampleBatch) -> tuple[SampleBatch, Transitions]: ...

    def stats(self) -> dict[str, int]: ...


# --- slot: float32 words -----------------------------------------------------------------

class SlotWriter:
    def payloads(self, t: Transitions) -> list[bytes]:
        return protocol.to_payloads(transition.encode(t))


class SlotReader:
    def __init__(self, obs_dim: int) -> None:
        self.obs_dim = obs_dim

    def transitions(self, batch: SampleBatch) -> tuple[SampleBatch, Transitions]:
        return batch, transition.decode(batch.payload, self.obs_dim)

    def stats(self) -> dict[str, int]:
        return {}


# --- float16: observations as halves ------------------------------------------------------

def encode_f16(t: Transitions) -> list[bytes]:
    """Slot payloads: obs then next_obs as 2D big-endian float16 (words 0 .. D-1), then
    action, ret, done, discount, actor as float32 (words D .. D+4), zeros after."""
    n, d = t.obs.shape
    if d + EXTRA_WORDS > PAYLOAD_WORDS:
        raise ValueError(f"observation of {d} floats does not fit as float16 "
                         f"(max {PAYLOAD_WORDS - EXTRA_WORDS})")
    halves = np.concatenate([t.obs, t.next_obs], axis=1).astype(HALF_WORD)
    extra = np.stack([t.action, t.ret, t.done, t.discount, t.actor], axis=1).astype(
        protocol.FLOAT_WORD)
    pad = bytes(PAYLOAD_BYTES - 4 * (d + EXTRA_WORDS))
    return [halves[i].tobytes() + extra[i].tobytes() + pad for i in range(n)]


def decode_f16(rows: np.ndarray, obs_dim: int) -> Transitions:
    """Transitions from float16 slot payloads (SampleBatch.payload rows)."""
    raw = np.frombuffer(b"".join(rows_to_payloads(rows)), dtype=np.uint8).reshape(
        -1, PAYLOAD_BYTES)
    d = obs_dim
    halves = raw[:, :4 * d].copy().view(HALF_WORD).astype(np.float32)
    extra = raw[:, 4 * d:4 * (d + EXTRA_WORDS)].copy().view(protocol.FLOAT_WORD).astype(
        np.float32)
    return Transitions(obs=halves[:, :d].copy(), action=extra[:, 0].astype(np.int64),
                       ret=extra[:, 1].copy(), next_obs=halves[:, d:].copy(),
                       done=extra[:, 2].copy(), discount=extra[:, 3].copy(),
                       actor=extra[:, 4].astype(np.int64))


class Float16Writer:
    def payloads(self, t: Transitions) -> list[bytes]:
        return encode_f16(t)


class Float16Reader(SlotReader):
    def transitions(self, batch: SampleBatch) -> tuple[SampleBatch, Transitions]:
        return batch, decode_f16(batch.payload, self.obs_dim)


# --- reference: the Actor keeps the bytes ---------------------------------------------------

def observation_bytes(t: Transitions, i: int) -> bytes:
    """What a store keeps of transition i: obs then next_obs, little-endian."""
    obs, nxt = t.obs[i], t.next_obs[i]
    dtype = obs.dtype.newbyteorder("<")
    return obs.astype(dtype, copy=False).tobytes() + nxt.astype(dtype, copy=False).tobytes()


class ReferenceWriter:
    """Stores each transition's observations in the Actor's store; the slot payload is
    the reference, with action, return, done and discount inline."""

    def __init__(self, store: PayloadStore, owner: tuple[str, int], actor: int) -> None:
        self.store = store
        self.owner = owner
        self.actor = actor

    def payloads(self, t: Transitions) -> list[bytes]:
        out = []
        for i in range(len(t)):
            inline = _INLINE.pack(int(t.action[i]), float(t.ret[i]), float(t.done[i]),
                                  float(t.discount[i]))
            ref = self.store.reference(observation_bytes(t, i), self.owner, self.actor,
                                       inline.ljust(INLINE_BYTES, b"\0"))
            out.append(encode_reference(ref))
        return out


def select(batch: SampleBatch, rows: np.ndarray) -> SampleBatch:
    """The batch's rows `rows` (a boolean mask or indices), every field alike."""
    return SampleBatch(**{f.name: getattr(batch, f.name)[rows] for f in fields(batch)})


def concat(batches: list[SampleBatch]) -> SampleBatch:
    """Batches one after the other, every field alike."""
    return SampleBatch(**{f.name: np.concatenate([getattr(b, f.name) for b in batches])
                          for f in fields(batches[0])})


class ReferenceReader:
    """Resolves sampled references into transitions; `sample_more(k)` draws k more
    experiences for the missing ones (None: no top-up)."""

    def __init__(self, info: EnvInfo, resolver: PayloadResolver,
                 sample_more: Callable[[int], SampleBatch] | None = None) -> None:
        self.info = info
        self.resolver = resolver
        self.sample_more = sample_more
        self.counts: Counter[str] = Counter()

    def stats(self) -> dict[str, int]:
        return {**self.resolver.stats(), "topups": self.counts["topups"],
                "not_references": self.counts["not_references"]}

    def transitions(self, batch: SampleBatch) -> tuple[SampleBatch, Transitions]:
        want = len(batch)
        kept, refs, data = self._resolve(batch)
        for _ in range(TOPUP_ATTEMPTS):
            missing = want - len(kept)
            if not missing or self.sample_more is None:
                break
            self.counts["topups"] += 1
            try:
                more = self.sample_more(missing)
            except ReplayError:
                break
            more_kept, more_refs, more_data = self._resolve(more)
            kept, refs, data = concat([kept, more_kept]), refs + more_refs, data + more_data
        return kept, self._decode(refs, data)

    def _resolve(self, batch: SampleBatch) -> tuple[SampleBatch, list[Reference], list[bytes]]:
        refs: list[Reference | None] = []
        for payload in rows_to_payloads(batch.payload):
            try:
                refs.append(decode_reference(payload))
            except ProtocolError:
                self.counts["not_references"] += 1
                refs.append(None)
        found = [r for r in refs if r is not None]
        fetched = iter(self.resolver.fetch(found))
        data = [next(fetched) if r is not None else None for r in refs]
        ok = np.array([d is not None for d in data], dtype=bool)
        return (select(batch, ok), [r for r, d in zip(refs, data, strict=True) if d is not None],
                [d for d in data if d is not None])

    def _decode(self, refs: list[Reference], data: list[bytes]) -> Transitions:
        shape, dtype = self.info.obs_shape, self.info.obs_dtype.newbyteorder("<")
        n = len(refs)
        obs = np.frombuffer(b"".join(data), dtype=dtype).reshape(n, 2, *shape)
        inline = [_INLINE.unpack_from(r.inline) for r in refs]
        cols = np.array(inline, dtype=np.float64).reshape(n, 4)
        native = self.info.obs_dtype
        return Transitions(obs=obs[:, 0].astype(native), next_obs=obs[:, 1].astype(native),
                           action=cols[:, 0].astype(np.int64), ret=cols[:, 1].astype(np.float32),
                           done=cols[:, 2].astype(np.float32),
                           discount=cols[:, 3].astype(np.float32),
                           actor=np.array([r.actor for r in refs], dtype=np.int64))


def make_writer(storage: str, store: PayloadStore | None = None,
                owner: tuple[str, int] | None = None, actor: int = 0) -> Writer:
    """The Actor's writer for a resolved storage mode (reference: its store and address)."""
    if storage == "slot":
        return SlotWriter()
    if storage == "float16":
        return Float16Writer()
    if storage == "reference":
        if store is None or owner is None:
            raise ValueError("storage reference needs the actor's payload store and address")
        return ReferenceWriter(store, owner, actor)
    raise ValueError(f"storage {storage!r}: resolve it first (agent.rl.envs.storage_for)")


def make_reader(storage: str, info: EnvInfo, resolver: PayloadResolver | None = None,
                sample_more: Callable[[int], SampleBatch] | None = None) -> Reader:
    """The Learner's reader for a resolved storage mode (reference: its resolver)."""
    d = int(np.prod(info.obs_shape))
    if storage == "slot":
        return SlotReader(d)
    if storage == "float16":
        return Float16Reader(d)
    if storage == "reference":
        if resolver is None:
            raise ValueError("storage reference needs a payload resolver")
        return ReferenceReader(info, resolver, sample_more)
    raise ValueError(f"storage {storage!r}: resolve it first (agent.rl.envs.storage_for)")
