"""Soak and fuzz (`make soak`, python -m agent.orchestration.soak): full-rate load
and an intruder's fuzz on each switch, then an audit of every stored slot.

payloads  what the soak writes: its two tables, signed payloads, priorities k/64,
          and the check of each sampled reply
load      the load processes: the actors, the intruder's fuzz, the forger
audit     the tables filled before and compared after: nothing changed but by the soak
driver    the soak of one switch on the namespace testbed, its figures, the command
"""
