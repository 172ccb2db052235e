"""Orchestration: the top layer, where the entry points that put the other
layers together live. Nothing below imports from here.

launch        the main job, `make run` (python -m agent.orchestration.launch)
faults        fault injection during a launched run (switch restart, kills, loss)
mininet_topo  `make mininet`: the launcher's roles as a Mininet topology
bench         `make bench` (python -m agent.orchestration.bench), with benchmarks/
soak          `make soak`: full-rate load and fuzzing on every switch present
replay_tool   `replay-tool`: insert / sample / update by hand from a host
timing        control-plane timings (deploy, snapshot, restore) on a fresh switch
"""
