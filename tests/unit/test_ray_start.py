"""agent.orchestration.cluster.ray_start: the raylet's command line gets the dashboard
agent's listen port, once, and no other process's does."""

from __future__ import annotations

from agent.orchestration.cluster.ray_start import RAYLET_FLAG, with_listen_port


def _started() -> tuple[list, object]:
    calls: list = []

    def start_process(command, process_type, *args, **kwargs):
        calls.append((command, process_type, args, kwargs))
        return "info"
    return calls, start_process


def test_the_raylet_is_told_the_listen_port() -> None:
    calls, start_process = _started()
    start = with_listen_port(start_process, "raylet", "58081")
    assert start(["raylet", "--node_id=x"], "raylet", 1, fate_share=True) == "info"
    assert calls == [(["raylet", "--node_id=x", f"{RAYLET_FLAG}=58081"], "raylet", (1,),
                      {"fate_share": True})]


def test_other_processes_and_a_raylet_that_has_it_are_left_alone() -> None:
    calls, start_process = _started()
    start = with_listen_port(start_process, "raylet", "58081")
    start(["python", "agent.py"], "dashboard_agent")
    start(["raylet", f"{RAYLET_FLAG}=1"], "raylet")
    assert [c[0] for c in calls] == [["python", "agent.py"], ["raylet", f"{RAYLET_FLAG}=1"]]
