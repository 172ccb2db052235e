"""Distributed deep RL over the replay (above replay/ and the contract):

actor       Ape-X actor: acts, accumulates n-step transitions, inserts them
actors      the Learner's actor threads or processes: start, watch, stop
learner     double DQN learner with prioritized replay
dqn         the Q-network, n-step double-DQN targets and priorities
nstep       n-step return accumulator per environment
transition  the n-step transition layout in the 16 payload words
weights     Learner -> Actors weight broadcast over UDP
hparams     all hyperparameters (one dataclass) and a run's options
metrics     metrics CSV and progress lines
evaluate    greedy evaluation (python -m agent.rl.evaluate)
train       the training runner (python -m agent.rl.train)
namespace   entering a network namespace (actor processes)
"""
