"""Agents of the in-network replay system, one layer per folder (the imports run
one way, from top to bottom; tests/unit/test_layering.py enforces it):

orchestration/ the top layer: launcher, benchmarks, soak, replay-tool, Mininet
rl/            the Ape-X actors, the double-DQN learner and the training runner
replay/        the replay client and the replay memory, served in-process or by the
               host replay server; TorchRL's replay buffer over them
contract/      the bottom layer, also the controller's: the replay wire codec and its
               vocabulary, the command-line conventions
examples/      a TorchRL training script over the replay
"""
