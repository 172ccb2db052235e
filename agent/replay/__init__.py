"""The replay, as the agent sees it (above the contract, below rl/):

client          ReplayClient over the switch, host and inprocess backends
memory          the switch's replay tables and request pipeline in Python (ReplayService)
sum_tree        integer sum tree: exact proportional and uniform sampling
importance      prioritized replay's importance-sampling weights
host_server     the baseline UDP replay server (python -m agent.replay.host_server)
server_process  the host replay server as a child process
torchrl_buffer  a TorchRL replay buffer over any backend (agent/examples/: its example)
udp             UDP socket helpers
"""
