"""The TorchRL replay buffer over the replay protocol (in-process and host server
backends here; tests/agent/examples/test_torchrl_cartpole.py trains through the Python switch)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import OneHot
from torchrl.modules import MLP, QValueActor
from torchrl.objectives import DQNLoss

from agent.contract.protocol import ALLOW_ALL, PAYLOAD_WORDS
from agent.replay.client import ReplayRefused
from agent.replay.memory import ReplayService, TableConfig
from agent.replay.server_process import ServerProcess
from agent.replay.torchrl_buffer import InNetworkReplayBuffer, PayloadLayout

KEYS = ["observation", "action", ("next", "observation"), ("next", "reward"),
        ("next", "done"), ("next", "terminated")]


def rows(n: int, start: int = 0) -> TensorDict:
    """n CartPole-shaped transitions, row i recognisable by its observation."""
    i = torch.arange(start, start + n, dtype=torch.float32)
    action = torch.nn.functional.one_hot(torch.arange(n) % 2, 2)
    return TensorDict({
        "observation": torch.stack([i, -i, i / 2, i * 0.25], 1),
        "action": action,
        "extra": torch.zeros(n, 40),  # not in the layout: not stored
        "next": {"observation": torch.stack([i + 1, -i, i, i], 1),
                 "reward": torch.ones(n, 1), "done": (i % 5 == 0).unsqueeze(1),
                 "terminated": (i % 5 == 0).unsqueeze(1)},
    }, batch_size=[n])


def buffer(capacity: int = 64, **options: object) -> InNetworkReplayBuffer:
    service = ReplayService(seed=3)
    service.configure(0, TableConfig(capacity=capacity, min_size=4))
    service.allow("127.0.0.1", 0, ALLOW_ALL)
    return InNetworkReplayBuffer.connect("inprocess", service=service,
                                         layout=PayloadLayout.of(rows(1), KEYS), **options)


def test_layout_round_trips_floats_one_hot_ints_and_booleans() -> None:
    data = rows(7, start=3)
    layout = PayloadLayout.of(data, KEYS)
    assert layout.words == 13 and layout.keys[2] == ("next", "observation")
    back = layout.decode(layout.encode(data))
    for key in KEYS:
        assert torch.equal(back[key], data[key]) and back[key].dtype == data[key].dtype
    assert back.get("extra", None) is None


def test_layout_refuses_rows_that_do_not_fit_and_inexact_integers() -> None:
    with pytest.raises(ValueError, match=f"does not fit the {PAYLOAD_WORDS} payload words"):
        PayloadLayout.of(rows(2), [*KEYS, "extra"])
    big = TensorDict({"n": torch.tensor([[1 << 24]])}, batch_size=[1])
    with pytest.raises(ValueError, match="do not survive a float32 word"):
        PayloadLayout.of(big, ["n"]).encode(big)


def test_extend_inserts_each_row_and_returns_slot_and_stamp() -> None:
    rb = buffer()
    data = rows(10)
    index = rb.extend(data)
    assert index.tolist() == [[s, s + 1] for s in range(10)]  # slot, stamp
    assert torch.equal(data["index"], index)
    assert len(rb) == 10 and rb.write_count == 10
    assert rb.add(rows(1, start=10)[0]).tolist() == [10, 11]
    assert len(rb) == 11


def test_sample_returns_the_stored_rows_with_index_and_weights() -> None:
    rb = buffer(batch_size=8)
    data = rows(20)
    rb.extend(data)
    batch, info = rb.sample(return_info=True)
    assert batch.batch_size == torch.Size([8]) and set(info) == {"index", "priority_weight"}
    assert batch["index"].shape == (8, 2) and batch["index"].dtype == torch.long
    for slot, row in zip(batch["index"][:, 0].tolist(), batch.exclude("index",
                                                                       "priority_weight"),
                         strict=True):
        for key in KEYS:
            assert torch.equal(row[key], data[slot][key])
    w = batch["priority_weight"]
    assert w.dtype == torch.float32 and float(w.max()) == pytest.approx(1.0)  # equal priorities


def test_below_min_size_is_refused_like_the_switch_does() -> None:
    rb = buffer(batch_size=2)
    rb.extend(rows(3))  # min size 4
    with pytest.raises(ReplayRefused, match="BELOW_MIN_SIZE"):
        rb.sample()


def test_priority_updates_steer_sampling_and_stale_stamps_are_ignored() -> None:
    rb = buffer(capacity=4, batch_size=64, alpha=1.0, eps=0.0)
    rb.extend(rows(4))
    old = rb.sample()
    high = old["index"][old["index"][:, 0] == 2][:1]
    rb.update_priority(rb.sample()["index"], 0.01)  # every drawn row nearly 0 ...
    rb.update_priority(high, 100.0)                 # ... but slot 2
    slots = rb.sample()["index"][:, 0]
    assert (slots == 2).float().mean() > 0.9
    rb.extend(rows(4, start=100))                   # the ring wraps: new stamps everywhere
    rb.update_priority(high, 0.01)                  # stale: slot 2 was overwritten
    fresh = rb.sample()
    assert (fresh["index"][:, 1] > 4).all()         # only new stamps come back
    assert (fresh["observation"][:, 0] >= 100).all()


def test_uniform_sampling_has_no_weights_and_ignores_tensordict_priorities() -> None:
    rb = buffer(batch_size=16, sampling="uniform")
    rb.extend(rows(8))
    batch = rb.sample()
    assert batch.get("priority_weight", None) is None
    batch["td_error"] = torch.full((16, 1), 50.0)
    rb.update_tensordict_priority(batch)  # a no-op, as TorchRL's uniform buffer
    assert rb.client.stats()["updates"] == 0


def test_prefetch_keeps_requests_in_flight() -> None:
    rb = buffer(batch_size=4, prefetch=2)
    rb.extend(rows(8))
    for _ in range(3):
        assert rb.sample().batch_size == torch.Size([4])
    assert rb.client.stats()["sample_batches"] == 3 and rb._prefetcher.in_flight == 2


def test_torchrl_dqn_loss_trains_on_a_sample_and_sends_its_td_errors() -> None:
    rb = buffer(batch_size=16)
    rb.extend(rows(32))
    spec = OneHot(2)
    actor = QValueActor(MLP(in_features=4, out_features=2, num_cells=[8]),
                        in_keys=["observation"], spec=spec)
    loss_fn = DQNLoss(actor, action_space=spec, delay_value=False)
    batch = rb.sample()
    loss = loss_fn(batch)["loss"]
    loss.backward()
    assert torch.isfinite(loss) and batch["td_error"].shape == (16, 1)
    rb.update_tensordict_priority(batch)
    assert rb.client.stats()["updates"] == 16


def test_bad_arguments_are_explained() -> None:
    with pytest.raises(ValueError, match="sampling must be one of"):
        buffer(sampling="sometimes")
    with pytest.raises(ValueError, match="prefetch needs batch_size"):
        buffer(prefetch=2)
    rb = buffer()
    with pytest.raises(ValueError, match="no batch size"):
        rb.sample()
    with pytest.raises(ValueError, match="3 rows but 2 priorities"):
        rb.update_priority(torch.zeros(3, 2, dtype=torch.long), torch.ones(2))


def test_the_host_replay_server_backend(tmp_path: Path) -> None:
    """The same buffer over UDP to the baseline server (the switch: test_torchrl_example)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ServerProcess("127.0.0.1", [0], TableConfig(capacity=64, min_size=4),
                           ["127.0.0.1"], tmp_path / "server.log", port=port, seed=1).start()
    try:
        with InNetworkReplayBuffer.connect("host", address=f"127.0.0.1:{port}",
                                           bind=("127.0.0.1", 0), batch_size=6,
                                           layout=PayloadLayout.of(rows(1), KEYS)) as rb:
            data = rows(10)
            assert rb.extend(data)[:, 0].tolist() == list(range(10))
            batch = rb.sample()
            assert len(rb) == 10 and batch["priority_weight"].shape == (6,)
            slot = int(batch["index"][0, 0])
            assert torch.equal(batch["observation"][0], data["observation"][slot])
            batch["td_error"] = torch.ones(6, 1)
            rb.update_tensordict_priority(batch)
            assert rb.client.stats()["updates"] == 6
    finally:
        server.stop()
