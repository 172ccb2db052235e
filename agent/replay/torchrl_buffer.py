"""A TorchRL replay buffer whose memory is the in-network replay (or the host
replay server, or an in-process table): the calls of TorchRL's
``TensorDictReplayBuffer`` with a prioritized sampler, served by a ReplayClient.

    rb = InNetworkReplayBuffer.connect("switch", address=(vip, 45000), batch_size=64,
                                       layout=PayloadLayout.of(data, KEYS))
    rb.extend(data)                       # one INSERT per row; sets data["index"]
    batch = rb.sample()                   # the KEYS, "index" (slot, stamp), "priority_weight"
    loss = dqn_loss(batch)                # TorchRL's DQNLoss writes batch["td_error"]
    rb.update_tensordict_priority(batch)  # stamp-guarded UPDATEs

What differs from a local TorchRL buffer, because the memory is elsewhere:

* Each row travels as one experience of PAYLOAD_WORDS float32 words: a
  PayloadLayout names the keys kept and their shapes (integers and booleans
  are stored exactly up to 2**24). Keys outside the layout are not stored.
* ``index`` is an (n, 2) int64 tensor of (slot, stamp). An UPDATE carries the
  stamp, and the replay ignores it if the slot was overwritten since the sample.
* The sampling (uniform, or proportional to priority from the switch's sum
  tree) happens in the replay. ``priority_weight`` is the importance weight
  (N P(i))^-beta of each reply's priority, total and size, normalised by the
  batch's largest (TorchRL normalises by the whole buffer's, which the replay
  does not report).
* Stored priorities are (|p| + eps) ** alpha, as TorchRL's PrioritizedSampler
  stores them; rows extended without a priority get the table's running
  maximum (the PER rule, done by the replay).
* ``len(rb)`` is the table size the replay last reported (in an insert ACK or
  a sample reply); ``write_count`` the rows this buffer inserted. Emptying a
  table is the controller's job (``replayctl reset``).

Not thread-safe, like the ReplayClient under it: one buffer per thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from agent.contract import protocol
from agent.contract.protocol import (
    ALLOW_ALL,
    NUM_SLOTS,
    PAYLOAD_WORDS,
    REPLAY_UDP_PORT,
    SAMPLING_MODES,
)
from agent.replay.client import PrefetchingSampler, ReplayClient, make_client
from agent.replay.importance import importance_weights
from agent.replay.memory import ReplayService, TableConfig

NestedKey = str | tuple[str, ...]
EXACT_INT = 1 << 24      # float32 holds every integer of smaller magnitude


def _key(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


@dataclass(frozen=True)
class Field:
    """One stored entry: its key, per-row shape and dtype."""

    key: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def words(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class PayloadLayout:
    """Which entries of a row are stored, in which payload words."""

    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        if self.words > PAYLOAD_WORDS:
            sizes = ", ".join(f"{'.'.join(f.key)}={f.words}" for f in self.fields)
            raise ValueError(f"a row of {self.words} words does not fit the {PAYLOAD_WORDS} "
                             f"payload words of a slot ({sizes}): store fewer keys")

    @classmethod
    def of(cls, data: TensorDictBase, keys: Sequence[NestedKey]) -> PayloadLayout:
        """The layout of `keys` in `data`, a batch of rows (batch dimensions first)."""
        fields = []
        for key in keys:
            value = data.get(_key(key))
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"{key!r} is not a tensor entry of the data")
            fields.append(Field(_key(key), tuple(value.shape[data.batch_dims:]), value.dtype))
        return cls(tuple(fields))

    @property
    def words(self) -> int:
        return sum(f.words for f in self.fields)

    @property
    def keys(self) -> list[tuple[str, ...]]:
        return [f.key for f in self.fields]

    def encode(self, data: TensorDictBase) -> np.ndarray:
        """(rows, PAYLOAD_WORDS) float32 words of a one-dimensional batch."""
        rows = data.batch_size[0]
        words = np.zeros((rows, PAYLOAD_WORDS), dtype=np.float32)
        at = 0
        for f in self.fields:
            value = data.get(f.key).detach().cpu().reshape(rows, f.words)
            exact = value.dtype == torch.bool or value.dtype.is_floating_point
            if not exact and value.numel() and int(value.abs().max()) >= EXACT_INT:
                raise ValueError(f"{'.'.join(f.key)}: integers of magnitude {EXACT_INT} "
                                 "and more do not survive a float32 word")
            words[:, at:at + f.words] = value.to(torch.float32).numpy()
            at += f.words
        return words

    def decode(self, words: np.ndarray) -> TensorDict:
        """The rows of (rows, PAYLOAD_WORDS) float32 words as a TensorDict."""
        rows = words.shape[0]
        out = TensorDict({}, batch_size=[rows])
        at = 0
        for f in self.fields:
            value = torch.from_numpy(np.ascontiguousarray(words[:, at:at + f.words]))
            if f.dtype == torch.bool:
                value = value != 0
            elif not f.dtype.is_floating_point:
                value = value.round()
            out.set(f.key, value.to(f.dtype).reshape(rows, *f.shape))
            at += f.words
        return out


class InNetworkReplayBuffer:
    """TorchRL's replay-buffer calls (extend, add, sample, update_priority,
    update_tensordict_priority, len) over one table of a replay backend."""

    def __init__(self, client: ReplayClient, *, layout: PayloadLayout | None = None,
                 batch_size: int | None = None, sampling: str = "prioritized",
                 alpha: float = 0.6, beta: float = 0.4, eps: float = 1e-6,
                 priority_key: NestedKey = "td_error", prefetch: int = 0) -> None:
        if sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {', '.join(SAMPLING_MODES)}, "
                             f"not {sampling!r}")
        if prefetch and batch_size is None:
            raise ValueError("prefetch needs batch_size: requests go out before sample()")
        self.client = client
        self.layout = layout
        self.batch_size = batch_size
        self.sampling = sampling
        self.alpha, self.beta, self.eps = alpha, beta, eps
        self.priority_key = _key(priority_key)
        self.write_count = 0
        self._size = 0
        self._prefetcher: PrefetchingSampler | None = None
        if prefetch:
            self._prefetcher = client.sampler(batch_size, SAMPLING_MODES[sampling], prefetch)

    @classmethod
    def connect(cls, backend: str, *, address: tuple[str, int] | str | None = None,
                table: int = 0, service: ReplayService | None = None,
                bind: tuple[str, int] = ("0.0.0.0", 0), ack_inserts: bool = True,
                **options: object) -> InNetworkReplayBuffer:
        """A buffer on `backend` ("switch", "host" or "inprocess"). `address` is the
        replay's (host, port) or "host[:port]"; "inprocess" makes a fresh in-process
        table (capacity NUM_SLOTS, min size 1) unless `service` is given. With
        ack_inserts, extend() returns where each row went (and len() follows)."""
        if isinstance(address, str):
            host, _, port = address.partition(":")
            address = (host, int(port or REPLAY_UDP_PORT))
        if backend == "inprocess" and service is None:
            service = ReplayService()
            service.configure(table, TableConfig(capacity=NUM_SLOTS, min_size=1))
            service.allow("127.0.0.1", table, ALLOW_ALL)
        client = make_client(backend, address=address, service=service, bind=bind, table=table,
                             ack_inserts=ack_inserts)
        return cls(client, **options)  # type: ignore[arg-type]

    # --- writing ------------------------------------------------------------------

    def extend(self, data: TensorDictBase) -> torch.Tensor:
        """Insert every row of `data` (its priority_key, if present, as the initial
        priority). Returns the (rows, 2) (slot, stamp) index, also set as
        data["index"], when the client acknowledges inserts; else an empty one."""
        flat = data.reshape(-1)
        if self.layout is None:
            raise ValueError("no PayloadLayout: give layout=PayloadLayout.of(data, keys)")
        payloads = protocol.to_payloads(self.layout.encode(flat))
        priority = flat.get(self.priority_key, None)
        priorities = None if priority is None else self._stored(priority, flat.shape[0])
        acks = self.client.insert_many(payloads, priorities)
        self.write_count += len(payloads)
        if not acks:
            return torch.empty((0, 2), dtype=torch.long)
        self._size = max(a.size for a in acks)
        index = torch.tensor([[a.slot, a.stamp] for a in acks], dtype=torch.long)
        data.set("index", index.reshape(*data.batch_size, 2))
        return index

    def add(self, data: TensorDictBase) -> torch.Tensor:
        """Insert one row (a TensorDict with empty batch size); its (slot, stamp)."""
        return self.extend(data.unsqueeze(0)).reshape(-1)

    # --- sampling -----------------------------------------------------------------

    def sample(self, batch_size: int | None = None,
               return_info: bool = False) -> TensorDict | tuple[TensorDict, dict]:
        """Draw a batch from the replay: the layout's keys, "index" and (prioritized)
        "priority_weight". Raises ReplayRefused while the table is below its min size."""
        n = batch_size or self.batch_size
        if n is None:
            raise ValueError("no batch size: pass one to sample() or to the buffer")
        if self.layout is None:
            raise ValueError("no PayloadLayout: give layout=PayloadLayout.of(data, keys)")
        if self._prefetcher is not None and n == self.batch_size:
            batch = next(self._prefetcher)
        else:
            batch = self.client.sample(n, SAMPLING_MODES[self.sampling])
        self._size = int(batch.size.max())
        out = self.layout.decode(batch.payload)
        info = {"index": torch.from_numpy(np.stack([batch.slot, batch.stamp], axis=1)
                                          .astype(np.int64))}
        if self.sampling == "prioritized":
            weights = importance_weights(batch.priority, batch.total, batch.size, self.beta)
            info["priority_weight"] = torch.from_numpy(weights)
        out.update(info)
        return (out, info) if return_info else out

    # --- priorities ---------------------------------------------------------------

    def update_priority(self, index: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
                        priority: torch.Tensor | float) -> None:
        """Send new priorities (stored as (|p| + eps) ** alpha) for (slot, stamp) rows."""
        if isinstance(index, tuple):
            index = torch.stack(index, -1)
        index = index.reshape(-1, 2).cpu()
        stored = self._stored(priority, index.shape[0])
        self.client.update(index[:, 0].tolist(), index[:, 1].tolist(), stored.tolist())

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """update_priority from data["index"] and data[priority_key] (prioritized
        sampling only, as TorchRL's buffer does)."""
        if self.sampling != "prioritized":
            return
        self.update_priority(data.get("index"), data.get(self.priority_key))

    def _stored(self, priority: torch.Tensor | float, rows: int) -> np.ndarray:
        """(|p| + eps) ** alpha per row (one value for every row, or one per row)."""
        p = torch.as_tensor(priority).detach().cpu().to(torch.float64).reshape(-1)
        if p.numel() == 1:
            p = p.expand(rows)
        if p.numel() != rows:
            raise ValueError(f"{rows} rows but {p.numel()} priorities")
        return (p.abs().numpy() + self.eps) ** self.alpha

    # --- state --------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> InNetworkReplayBuffer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(table={self.client.table}, sampling={self.sampling}, "
                f"batch_size={self.batch_size}, size={self._size}, "
                f"keys={self.layout.keys if self.layout else None})")
