"""The Learner and the Actors as Ray actors on the cluster's nodes (`make run CLUSTER=ray`).

    placement  which Ray node stands for which configured host (a custom resource
               `host:NAME` per host), and the checks made before anything is placed
    nodes      a Ray cluster on the namespace testbed: a management bridge, a head in
               the Learner's namespace and a worker node in each Actor's namespace
    ray_start  `ray start` with the raylet told every agent port (its node comes up on
               a loaded machine)
    roles      the Ray actors: the Learner (agent.rl.train's run) and each Actor,
               watched and restarted through Ray
    driver     the Ray driver of one run: checks the cluster, places the Learner,
               waits for the summary (`python -m agent.orchestration.cluster.driver`)

Ray is an optional extra (`pip install -e '.[cluster]'`); only `roles`, `driver` and
`ray_start` import it. Replay traffic, weight broadcasts and samples go through the
switch from each host's own address, never through Ray's object store.
"""
