"""make run CLUSTER=ray (agent/orchestration/cluster): which node stands for which host,
bad input (Ray missing, a host without a node, a node without a route to the switch),
and a whole run on a Ray cluster in the testbed's namespaces whose Actor node is
killed mid-run (Python switch; bmv2 where installed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO
from agent.orchestration.cluster.placement import (
    alive_nodes,
    missing_hosts,
    missing_message,
    nodes_for,
    resource,
    route_problem,
)
from bmv2.testbed.netns import ip, netns_id, pids_in
from controller import config as cfgmod
from controller.config import DEFAULT_CONFIG
from tests import needs
from tests.background import BackgroundRun

AGENT_DELAY_S = 25            # past the raylet's 15 s wait for the agent's port file
RAY_NODES = [
    {"NodeID": "a" * 56, "Alive": True, "NodeManagerAddress": "198.19.250.1",
     "Resources": {"CPU": 1.0, "host:learner": 1.0}},
    {"NodeID": "b" * 56, "Alive": True, "NodeManagerAddress": "198.19.250.2",
     "Resources": {"CPU": 1.0, "host:actor1": 1.0}},
    {"NodeID": "c" * 56, "Alive": False, "NodeManagerAddress": "198.19.250.3",
     "Resources": {"CPU": 1.0, "host:actor2": 1.0}},
]


def test_a_node_stands_for_the_hosts_whose_resource_it_carries() -> None:
    nodes = alive_nodes(RAY_NODES)
    assert [n.ip for n in nodes] == ["198.19.250.1", "198.19.250.2"]   # the dead one left out
    assert resource("actor1") == "host:actor1" and nodes[1].hosts == ["actor1"]
    found = nodes_for(["learner", "actor1", "actor2"], nodes)
    assert [n.ip for n in found["actor1"]] == ["198.19.250.2"] and found["actor2"] == []


def test_a_host_whose_node_died_has_no_node() -> None:
    assert missing_hosts(["learner", "actor1", "actor2"], alive_nodes(RAY_NODES)) == ["actor2"]
    assert missing_hosts(["learner"], alive_nodes(RAY_NODES)) == []
    message = missing_message(["actor2"], "198.19.250.1:6379")
    assert message.startswith("no Ray node for host actor2 (resource host:actor2) in the "
                              "cluster at 198.19.250.1:6379")
    assert "\n" not in message


def test_a_node_must_own_the_hosts_address_and_reach_the_replay_from_it() -> None:
    assert route_problem("h", "127.0.0.1", ("127.0.0.1", 45000)) is None
    problem = route_problem("actor1", "198.18.1.1", ("127.0.0.1", 45000))
    assert problem is not None and problem.startswith(
        "host actor1's address 198.18.1.1 is not on this node")


def _launch(*args: str, prefix: tuple[str, ...] = (), env: dict | None = None,
            timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "agent.orchestration.launch", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)


def _no_ray(*args: str) -> subprocess.CompletedProcess:
    """The launcher as where Ray is not installed (its import finds nothing)."""
    code = ("import sys; sys.modules['ray'] = None; "
            "from agent.orchestration.launch import main; main(sys.argv[1:])")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_without_ray_cluster_ray_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _no_ray("--cluster", "ray", "--switch", "python", "--run-dir", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == ["error: --cluster ray: Ray is not installed (pip install "
                                        "-e '.[cluster]' or make setup EXTRAS=cluster)"]
    assert proc.stdout == "" and not (tmp_path / "r").exists()   # no testbed was started
    proc = _no_ray("--ray-address", "198.19.250.1:6379")
    assert proc.returncode == 2 and "Ray is not installed" in proc.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--kill-actor-node-at", "5"], "--kill-actor-node-at needs --cluster ray"),
    (["--cluster", "ray", "--backend", "inprocess"],
     "--cluster ray needs --backend switch or host"),
    (["--cluster", "ray", "--kill-actor-at", "5"], "--cluster ray takes --loss and "
                                                   "--kill-actor-node-at, not the other"),
    (["--ray-address", "127.0.0.1:6379", "--backend", "host"], "--ray-address needs --backend "
                                                                "switch"),
    (["--ray-address", "127.0.0.1:1"], "error: cannot reach the Ray cluster at 127.0.0.1:1: "
                                       "Connection refused"),
])
def test_cluster_options_that_cannot_go_together(args: list[str], message: str) -> None:
    if "--cluster" in args or "--ray-address" in args:
        needs.ray()   # without Ray these stop at Ray's absence (the test above)
    proc = _launch(*args, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1


# --- on a Ray cluster in the testbed's namespaces -------------------------------------------

@pytest.fixture(scope="module")
def partial_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A testbed with learner, actor1 and actor2 around the Python switch, and a Ray
    cluster with nodes for learner and actor1 only."""
    needs.testbed("python")
    needs.ray()
    from agent.orchestration.cluster.nodes import RayCluster
    from bmv2.testbed.netns_bed import Testbed

    base = cfgmod.load(DEFAULT_CONFIG)
    names = {"learner", "actor1", "actor2"}
    cfg = replace(base, hosts=tuple(h for h in base.hosts if h.name in names),
                  acl=tuple(a for a in base.acl if a.host in names),
                  broadcast=replace(base.broadcast, members=("actor1", "actor2")))
    logs = tmp_path_factory.mktemp("cluster")
    with Testbed(cfg, "python", log_dir=logs) as bed, \
            RayCluster(bed, ["learner", "actor1"], logs) as cluster:
        yield bed, cluster


def _launch_on(partial_cluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The launcher with --ray-address, run on the cluster's head (the Learner's namespace)."""
    bed, cluster = partial_cluster
    return _launch("--ray-address", cluster.address, "--run-dir", str(tmp_path / "run"), *args,
                   prefix=tuple(bed.exec_prefix("learner")),
                   env=os.environ | cluster.auth_env, timeout=120)


def _drivers_left(bed) -> list[int]:
    """Processes of the launcher or the driver still in the Learner's namespace."""
    left = []
    for pid in pids_in(netns_id(bed.ns_name("learner"))):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"agent.orchestration.launch" in cmdline or b"cluster.driver" in cmdline:
            left.append(pid)
    return left


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
def test_a_host_without_a_node_is_one_line_and_exit_2(partial_cluster, tmp_path: Path) -> None:
    proc = _launch_on(partial_cluster, tmp_path, "--actors", "2")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert lines == [f"error: {missing_message(['actor2'], partial_cluster[1].address)}"]
    assert "learner (host learner) on node" not in proc.stdout   # nothing was placed
    assert not _drivers_left(partial_cluster[0])


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
def test_a_node_without_a_route_to_the_switch_is_one_line_and_exit_2(
        partial_cluster, tmp_path: Path) -> None:
    bed, _ = partial_cluster
    ns = bed.ns_name("actor1")
    routes = [r for r in ip("route", "show", ns=ns).splitlines() if "mgmt0" not in r]
    for r in routes:
        ip("route", "del", *r.split(), ns=ns)
    try:
        proc = _launch_on(partial_cluster, tmp_path, "--actors", "1")
    finally:
        for r in routes:
            ip("route", "add", *r.split(), ns=ns, check=False)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert lines == ["error: the Ray node for host actor1 cannot stand for it: no route from "
                     "host actor1 to the switch's replay address 198.18.0.100 (Network is "
                     "unreachable)"]
    assert not _drivers_left(bed)


SLOW_AGENT = f"""import sys, time
if sys.argv[0].endswith("dashboard/agent.py"):
    time.sleep({AGENT_DELAY_S})
"""


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
def test_a_node_comes_back_when_its_dashboard_agent_starts_slowly(
        partial_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded machine's dashboard agent can take longer than the 15 s a raylet waits
    for its port file; told the port (ray_start), the raylet does not wait, and the
    killed node comes back at its first start."""
    _, cluster = partial_cluster
    (tmp_path / "sitecustomize.py").write_text(SLOW_AGENT)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))   # node_env keeps it, after the repo
    node = cluster.nodes["actor1"]
    cluster.kill("actor1")
    starts = node.starts
    cluster.start_node("actor1")
    assert node.starts == starts + 1, node.log.read_text()[-3000:]
    assert node.alive()


# --- whole runs: make run CLUSTER=ray --------------------------------------------------------

def _node_killed(kind: str, budget: list[str]) -> list[str]:
    # 10 s after the Actors are placed the Learner is stepping; actor 0's node is down
    # 3 s and back (a new `ray start` in its namespace) well before the run can solve.
    # On a busy machine Ray can take two minutes to restart the Actor on the new node
    # (the node's death detected, the node back, a worker started): the run waits up
    # to 240 s for it.
    return ["--cluster", "ray", "--switch", kind, "--actors", "2",
            "--kill-actor-node-at", "10", "--node-down", "3", "--restart-wait", "240",
            *budget]


SOLVE = ["--max-seconds", "800"]
# In the suite the run checks the restart, not the solve (make soak runs that one).
BOUNDED = ["--max-seconds", "300"]


def _fault_lines(out: str) -> str:
    return "\n".join(ln for ln in out.splitlines()
                     if "[faults]" in ln or "actor 0" in ln or "Ray node" in ln
                     or "SUMMARY" in ln or "error" in ln.lower())


def _assert_rode_through_a_node_death(proc: subprocess.CompletedProcess, run_dir: Path,
                                      solve: bool) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode in ((0,) if solve else (0, 1)), out[-4000:]  # 1: not solved
    assert "killed host actor1's Ray node" in proc.stdout, _fault_lines(out)
    assert "actor 0 (host actor1) restarted on node 198.19.250.2" in proc.stdout, \
        _fault_lines(out)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["solved"] or not solve
    cluster = summary["cluster"]
    assert cluster["learner"]["node_ip"] == "198.19.250.1"
    a0, a1 = cluster["actors"]
    assert (a0["host"], a0["restarts"], a0["running"]) == ("actor1", 1, True)
    assert a0["nodes"][0]["node_id"] != a0["nodes"][1]["node_id"]   # a new node, same host
    assert a0["losses"][0]["node"] == a0["nodes"][0]["node_id"]
    assert (a1["host"], a1["restarts"], a1["nodes"][0]["node_ip"]) == ("actor2", 0,
                                                                        "198.19.250.3")
    # the restarted Actor was acting on fresh weights at the end
    assert summary["actor_weight_versions"]["0"] >= summary["learner_steps"] // 2, summary
    faults = json.loads((run_dir / "faults.json").read_text())
    assert faults["host"] == "actor1" and faults["pids"] and "error" not in faults
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY "))
    assert "nodes=learner@198.19.250.1,actor1@198.19.250.2(restarts=1),actor2@198.19.250.3" \
        in line and line.endswith("cluster=ray")
    assert "torn down: no namespaces or processes left" in proc.stdout
    assert (run_dir / "logs" / "ray" / "actor1").is_dir()   # Ray's logs, per node
    prefix = re.search(r"head in learner's namespace (p4r\d+)-learner", proc.stdout)
    assert prefix, proc.stdout[:3000]
    assert not [ns for ns in ip("netns", "list", check=False).split()
                if ns.startswith(f"{prefix.group(1)}-")]   # hosts and the management bridge
    assert not Path(f"/tmp/p4r-ray-{prefix.group(1).removeprefix('p4r')}").exists()


@pytest.fixture
def ray_installed() -> None:
    """Skips a Ray run where Ray is missing (asked for before the background run)."""
    needs.ray()


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.background(_node_killed("python", BOUNDED), group="ray")
def test_an_actor_whose_ray_node_is_killed_is_restarted_on_it(
        ray_installed: None, background_run: BackgroundRun) -> None:
    """make run CLUSTER=ray on the Python switch: actor 0's Ray node is killed 10 s in and
    comes back; Ray restarts the Actor there and it acts on until the end (300 s)."""
    _assert_rode_through_a_node_death(background_run.finish(), background_run.run_dir,
                                      solve=False)


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("kind", ["python", "bmv2"])
def test_run_solves_when_an_actors_ray_node_is_killed(kind: str, tmp_path: Path) -> None:
    """The same run to the end: CartPole-v1 is solved."""
    needs.testbed(kind)
    needs.ray()
    run_dir = tmp_path / "run"
    proc = _launch(*_node_killed(kind, SOLVE), "--run-dir", str(run_dir), timeout=1000)
    _assert_rode_through_a_node_death(proc, run_dir, solve=True)


def _node_lost() -> list[str]:
    # actor 0's node dies 10 s in and stays down; after 5 s the run counts it out
    # and trains on with actor 1 alone, to the end: a lucky first evaluation must not
    # solve CartPole before the node dies, so the run cannot solve.
    return ["--cluster", "ray", "--switch", "python", "--actors", "2",
            "--kill-actor-node-at", "10", "--node-down", "5000", "--restart-wait", "5",
            "--max-seconds", "90", "--set", "solve_return=1000000"]


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.background(_node_lost(), group="ray")
def test_run_goes_on_without_an_actor_whose_node_stays_down(
        ray_installed: None, background_run: BackgroundRun) -> None:
    """actor 0's node is killed and does not come back: the Actor is counted out after
    --restart-wait and the run trains on with the other."""
    proc, run_dir = background_run.finish(), background_run.run_dir
    assert proc.returncode in (0, 1), (proc.stdout + proc.stderr)[-4000:]  # 1: not solved
    assert ("actor 0 died (no node for host actor1 within 5 s); 1 of 2 actors left, "
            "training goes on") in proc.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    a0, a1 = summary["cluster"]["actors"]
    assert summary["actors_died"] == {"0": None}
    assert summary["actor_weight_versions"]["1"] >= summary["learner_steps"] // 2, summary
    assert (a0["running"], a0["restarts"], len(a0["losses"])) == (False, 0, 1)
    assert (a1["running"], a1["restarts"]) == (True, 0)
    assert "back_after_s" not in json.loads((run_dir / "faults.json").read_text())
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY "))
    assert "nodes=learner@198.19.250.1,actor1@198.19.250.2(lost),actor2@198.19.250.3" in line


# --- make bench CLUSTER=ray ------------------------------------------------------------------

def _point(backend: str, actors: int, inserts: float) -> dict:
    return {"backend": backend, "actors": actors, "inserts_per_s": inserts,
            "sampled_per_s": 1.0}


def test_the_sweep_says_where_a_curve_flattens() -> None:
    from agent.orchestration.cluster.scale import flattening

    points = [_point("switch", n, v) for n, v in ((1, 100), (2, 200), (4, 390), (8, 400))]
    points += [_point("host", n, v) for n, v in ((1, 100), (2, 90), (4, 300), (8, 150))]
    assert flattening(points, "switch", "inserts_per_s") == 4   # 390 -> 400: under 10 %
    assert flattening(points, "host", "inserts_per_s") == 4     # a dip at 2 is no plateau
    assert flattening([_point("switch", 1, 1.0), _point("switch", 2, 3.0)], "switch",
                      "inserts_per_s") is None


@pytest.mark.netns
@pytest.mark.ray
@pytest.mark.slow
def test_scaling_sweep_on_a_ray_cluster(tmp_path: Path) -> None:
    """A short sweep (1 and 2 load Actors, 2 s a point) writes both backends' points
    with what arrived, was sampled and the CPU, and leaves nothing behind."""
    needs.testbed("python")
    needs.ray()
    out = tmp_path / "scale"
    cmd = [sys.executable, "-m", "agent.orchestration.cluster.scale", "--switch", "python",
           "--actors", "1,2", "--seconds", "2", "--out", str(out)]
    with subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, (stdout + stderr)[-3000:]
    results = json.loads((out / "results.json").read_text())
    points = {(p["backend"], p["actors"]): p for p in results["points"]}
    assert set(points) == {(b, n) for b in ("switch", "host") for n in (1, 2)}
    for (backend, _), p in points.items():
        assert p["inserts_per_s"] > 0 and p["sampled_per_s"] > 0 and p["env_steps_per_s"] > 0
        assert 0 <= p["insert_loss"] <= 1 and p["actors_cpu"] > 0 and p["ray_cpu"] >= 0
        assert (p.get("server_cpu", 0.0) > 0) == (backend == "host")
    assert {p["node_ip"] for p in results["placement"][1:]} == {"198.19.250.2",
                                                                "198.19.250.3"}
    assert (out / "scale.png").stat().st_size > 0 and "| 2 | in-network |" in \
        (out / "results.md").read_text()
    tag = f"{proc.pid % 100000:05d}"    # the testbed's namespaces are named by its pid
    assert not [ns for ns in ip("netns", "list", check=False).split()
                if ns.startswith(f"p4r{tag}-")]
    assert not Path(f"/tmp/p4r-ray-{tag}").exists()
