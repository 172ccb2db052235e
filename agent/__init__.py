"""Agents of the in-network replay system.

protocol       the replay wire codec (the one every part uses)
sum_tree       integer sum tree: exact proportional and uniform sampling
replay_memory  the switch's replay tables and request pipeline in Python
host_server    the baseline UDP replay server (python -m agent.host_server)
replay_client  ReplayClient over the switch, host and inprocess backends
transition     the n-step transition layout in the 16 payload words
nstep          n-step return accumulator per environment
dqn            the Q-network
weights        Learner -> Actors weight broadcast over UDP
actor          Ape-X actor
learner        double DQN learner with prioritized replay
hparams        all hyperparameters (one dataclass)
metrics        metrics CSV and progress lines
evaluate       greedy evaluation (python -m agent.evaluate)
train          the training runner (python -m agent.train)
udp            UDP socket helpers
"""
