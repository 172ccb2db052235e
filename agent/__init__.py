"""Agents of the in-network replay system.

The contract (the bottom layer; imports nothing of the project):
protocol       the replay wire codec and the contract's vocabulary (the one every part uses)
cli_args       command-line conventions shared by every tool

The agent core (imports only itself and the contract):
sum_tree       integer sum tree: exact proportional and uniform sampling
replay_memory  the switch's replay tables and request pipeline in Python
host_server    the baseline UDP replay server (python -m agent.host_server)
server_process the host replay server as a child process
replay_client  ReplayClient over the switch, host and inprocess backends
transition     the n-step transition layout in the 16 payload words
nstep          n-step return accumulator per environment
dqn            the Q-network, n-step double-DQN targets and priorities
weights        Learner -> Actors weight broadcast over UDP
actor          Ape-X actor
learner        double DQN learner with prioritized replay
hparams        all hyperparameters (one dataclass) and a run's options
metrics        metrics CSV and progress lines
evaluate       greedy evaluation (python -m agent.evaluate)
train          the training runner (python -m agent.train)
namespace      entering a network namespace (actor processes)
udp            UDP socket helpers
torchrl_replay the TorchRL replay buffer over any backend (examples/: its example)

orchestration/ the top layer: launcher, benchmarks, soak, replay-tool, Mininet
"""
