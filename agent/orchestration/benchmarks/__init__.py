"""The benchmark jobs behind `python -m agent.orchestration.bench` (docs/benchmarks.md).

    harness     budgets, bounded timing loops, rounds, medians, progress lines
    bed         the namespace testbed for benchmarks and the replay clients per backend
    replay_ops  INSERT / SAMPLE / UPDATE latency and rate through one client
    pacing      calibrating the host server's reply pacing (fastest with no loss)
    targets     the in-network / host server latency targets, pass or fail
    forwarding  switch packets/s for plain IPv4 forwarding between two hosts
    training    steps and wall time to solve CartPole per backend (via agent.orchestration.launch)
    report      results.json, results.md and the plots
"""
