"""Train CartPole-v1 with TorchRL's DQN, the replay memory in the network.

Everything is plain TorchRL (GymEnv, Collector, QValueActor, EGreedyModule,
DQNLoss, HardUpdate) except the replay buffer: an InNetworkReplayBuffer
(agent/replay/torchrl_buffer.py), whose extend / sample / update_tensordict_priority
go to the switch (or to the host replay server, or an in-process table).

On the testbed (README, "TorchRL"), from the learner's namespace, once it may insert:

    replayctl acl add learner 0 insert
    ip netns exec p4r-learner .venv/bin/python -m agent.examples.torchrl_cartpole

Without a network: --backend inprocess. It stops when the greedy policy's mean
return over --eval-episodes reaches 475, or at --frames; prints one SUMMARY line.
Exit code: 0 solved, 1 not solved, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from tensordict.nn import TensorDictSequential
from torchrl.collectors import Collector
from torchrl.envs import ExplorationType, GymEnv, set_exploration_type
from torchrl.modules import MLP, EGreedyModule, QValueActor
from torchrl.objectives import DQNLoss, HardUpdate

from agent.contract.cli_args import ArgumentParser, doc_parts, host_port, int_range
from agent.contract.protocol import MAX_BATCH, NUM_TABLES, REPLAY_UDP_PORT
from agent.replay.client import BACKENDS, ReplayError
from agent.replay.torchrl_buffer import InNetworkReplayBuffer, PayloadLayout

SOLVED = 475.0
# What DQNLoss reads from a sample: 4 + 2 + 4 + 1 + 1 + 1 = 13 of a slot's 16 words.
KEYS = ["observation", "action", ("next", "observation"), ("next", "reward"),
        ("next", "done"), ("next", "terminated")]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    description, epilog = doc_parts(__doc__)
    p = ArgumentParser(description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=BACKENDS, default="switch")
    p.add_argument("--replay", type=host_port(REPLAY_UDP_PORT), default=None,
                   metavar="HOST[:PORT]", help="the replay's address (default: the testbed's "
                   f"VIP 198.18.0.100:{REPLAY_UDP_PORT})")
    p.add_argument("--table", type=int_range(0, NUM_TABLES - 1), default=0)
    p.add_argument("--frames", type=int_range(1, 10_000_000), default=200_000,
                   help="environment steps at most")
    p.add_argument("--learning-starts", type=int_range(1, 4096), default=1000,
                   help="rows in the table before the first update (>= its min size)")
    p.add_argument("--batch-size", type=int_range(1, MAX_BATCH), default=64)
    p.add_argument("--eval-every", type=int_range(1, 10_000_000), default=5000,
                   help="frames between greedy evaluations")
    p.add_argument("--eval-episodes", type=int_range(1, 100), default=10)
    p.add_argument("--seed", type=int_range(0, 2**31 - 1), default=1)
    args = p.parse_args(argv)
    if args.replay is None:
        args.replay = ("198.18.0.100", REPLAY_UDP_PORT)
    return args


def evaluate(env: GymEnv, actor: QValueActor, episodes: int) -> float:
    """Mean return of the greedy policy."""
    returns = []
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        for _ in range(episodes):
            rollout = env.rollout(500, actor)
            returns.append(rollout["next", "reward"].sum().item())
    return sum(returns) / len(returns)


def train(args: argparse.Namespace) -> bool:
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: a second thread only waits for the first
    env, eval_env = GymEnv("CartPole-v1"), GymEnv("CartPole-v1")
    env.set_seed(args.seed)
    eval_env.set_seed(args.seed + 1000)

    # The Q-network, its greedy actor, and epsilon-greedy exploration around it.
    q_net = MLP(in_features=4, out_features=2, num_cells=[64, 64])
    actor = QValueActor(q_net, in_keys=["observation"], spec=env.action_spec)
    explore = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.05,
                            annealing_num_steps=10_000)
    policy = TensorDictSequential(actor, explore)
    collector = Collector(env, policy, frames_per_batch=16, total_frames=args.frames,
                          auto_register_policy_transforms=False)

    # Double DQN loss with a target network copied every 250 updates.
    loss_fn = DQNLoss(actor, action_space=env.action_spec, delay_value=True, double_dqn=True)
    loss_fn.make_value_estimator(gamma=0.99)
    target = HardUpdate(loss_fn, value_network_update_interval=250)
    optimizer = torch.optim.Adam(loss_fn.parameters(), lr=1e-3)

    # The replay buffer: the switch's table, prioritized (the switch draws the batch).
    layout = PayloadLayout.of(env.fake_tensordict().unsqueeze(0), KEYS)
    rb = InNetworkReplayBuffer.connect(args.backend, address=args.replay, table=args.table,
                                       layout=layout, batch_size=args.batch_size,
                                       sampling="prioritized", prefetch=2)

    start, updates, frames, mean = time.monotonic(), 0, 0, float("nan")
    next_eval = args.eval_every
    with rb:
        for data in collector:
            rb.extend(data.select(*KEYS))
            frames += data.numel()
            explore.step(data.numel())
            if len(rb) < args.learning_starts:
                continue
            for _ in range(4):  # 4 updates per 16 frames
                batch = rb.sample()
                loss = loss_fn(batch)["loss"]
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), 10.0)
                optimizer.step()
                rb.update_tensordict_priority(batch)  # batch["td_error"], set by DQNLoss
                target.step()
                updates += 1
                rb.beta = min(1.0, 0.4 + 0.6 * updates / 10_000)
            collector.update_policy_weights_()
            if frames >= next_eval:
                next_eval += args.eval_every
                mean = evaluate(eval_env, actor, args.eval_episodes)
                print(f"frames={frames} updates={updates} eval_return={mean:.1f} "
                      f"table_size={len(rb)} wall_s={time.monotonic() - start:.0f}", flush=True)
                if mean >= SOLVED:
                    break
    collector.shutdown()
    solved = mean >= SOLVED
    print(f"SUMMARY solved={solved} backend={args.backend} frames={frames} updates={updates} "
          f"eval_return={mean:.1f} wall_s={time.monotonic() - start:.1f} "
          f"client={rb.client.stats()}", flush=True)
    return solved


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return 0 if train(args) else 1
    except ReplayError as exc:
        print(f"error: the replay at {args.replay[0]}:{args.replay[1]}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
