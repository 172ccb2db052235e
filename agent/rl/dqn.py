"""The Q-networks (a small MLP for observation vectors, the Nature-DQN convolutional
network for stacked frames) and the n-step double-DQN target, TD error and priority
that the Learner and the Actors' initial priorities share."""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn

from agent.rl.transition import Transitions


class QNetwork(nn.Module):
    """MLP Q(s, .) with ReLU hidden layers."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: tuple[int, ...] = (64, 64)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_actions))
        self.net = nn.Sequential(*layers)
        self.obs_dim = obs_dim
        self.n_actions = n_actions

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)

    @torch.inference_mode()
    def greedy(self, obs: np.ndarray) -> int:
        """argmax_a Q(obs, a) for one observation."""
        q = self.net(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
        return int(q.argmax(dim=1).item())


class ConvQNetwork(nn.Module):
    """The Nature-DQN network (Mnih et al. 2015) on stacked uint8 frames (C, 84, 84):
    three convolutions, a 512-unit layer, one Q-value per action. Pixels are scaled
    to [0, 1] here, so observations travel and are stored as bytes."""

    def __init__(self, obs_shape: tuple[int, ...], n_actions: int) -> None:
        super().__init__()
        channels, height, width = obs_shape
        self.conv = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, channels, height, width)).shape[1]
        self.head = nn.Sequential(nn.Linear(flat, 512), nn.ReLU(), nn.Linear(512, n_actions))
        self.obs_shape = obs_shape
        self.n_actions = n_actions

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(obs.float() / 255.0))

    @torch.inference_mode()
    def greedy(self, obs: np.ndarray) -> int:
        """argmax_a Q(obs, a) for one observation."""
        q = self(torch.as_tensor(np.asarray(obs)).unsqueeze(0))
        return int(q.argmax(dim=1).item())


def build_q_network(obs_shape: tuple[int, ...], n_actions: int,
                    hidden: tuple[int, ...]) -> QNetwork | ConvQNetwork:
    """The network for these observations: convolutional for stacked frames (C, H, W),
    else an MLP with `hidden` layers."""
    if len(obs_shape) == 3:
        return ConvQNetwork(obs_shape, n_actions)
    return QNetwork(int(np.prod(obs_shape)), n_actions, hidden)


def q_and_targets(q_net: nn.Module, t: Transitions,
                  target_net: nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q(s, a), y) for a batch of n-step transitions, with the n-step double-DQN target
    y = ret + discount * (1 - done) * Q_target(s', argmax_a Q(s', a)); without a target
    network Q_target is `q_net` itself (y uses max_a Q(s', a)). Q(s, a) keeps its
    gradient, y has none."""
    n = len(t)
    obs = torch.from_numpy(np.concatenate([t.obs, t.next_obs]))
    q_all = q_net(obs)
    q = q_all[:n].gather(1, torch.from_numpy(t.action).unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        next_action = q_all[n:].argmax(dim=1, keepdim=True)
        next_values = q_all[n:] if target_net is None else target_net(obs[n:])
        next_q = next_values.gather(1, next_action).squeeze(1)
        not_done = 1.0 - torch.from_numpy(t.done)
        y = torch.from_numpy(t.ret) + torch.from_numpy(t.discount) * not_done * next_q
    return q, y


def priorities(td: np.ndarray, eps: float, alpha: float) -> np.ndarray:
    """Proportional-PER priorities (|TD error| + eps) ** alpha."""
    return (np.abs(td) + eps) ** alpha


def flat_parameters(net: nn.Module) -> np.ndarray:
    """All parameters as one float32 vector (the weight broadcast's payload)."""
    return nn.utils.parameters_to_vector(net.parameters()).detach().numpy().astype(np.float32)


def load_flat_parameters(net: nn.Module, flat: np.ndarray) -> None:
    """Inverse of flat_parameters; the vector length must match the network."""
    vec = torch.as_tensor(np.asarray(flat, dtype=np.float32))
    expected = sum(p.numel() for p in net.parameters())
    if vec.numel() != expected:
        raise ValueError(f"weight vector has {vec.numel()} values, network has {expected}")
    with torch.no_grad():
        nn.utils.vector_to_parameters(vec, net.parameters())


def set_torch_threads(n: int = 1) -> None:
    """One intra-op (and inter-op, if still settable) thread per process."""
    torch.set_num_threads(n)
    with contextlib.suppress(RuntimeError):  # already set, or parallel work started
        torch.set_num_interop_threads(n)
