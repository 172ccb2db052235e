"""Suite order and background runs (tests/background.py): the slow tests first, then
the light ones while the background runs go on, then the tests that check those runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import needs
from tests.background import BackgroundRun

RUNS = pytest.StashKey[dict[str, BackgroundRun]]()


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    runs = {}
    first, light, last = [], [], []
    for item in items:
        marker = item.get_closest_marker("background")
        if marker is not None:
            runs[item.nodeid] = BackgroundRun(list(marker.args[0]), marker.kwargs.get("group"))
            last.append(item)
        else:
            (first if item.get_closest_marker("slow") else light).append(item)
    items[:] = first + light + last
    config.stash[RUNS] = runs


@pytest.fixture(scope="session", autouse=True)
def _background_runs(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A directory for each background run; at the end, any run left is stopped."""
    runs = request.config.stash.get(RUNS, {})
    for run in runs.values():
        run.directory = tmp_path_factory.mktemp("background")
    yield
    for run in runs.values():
        run.stop()


@pytest.hookimpl(trylast=True)  # after the item's fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The first light test starts the background runs: the other slow ones are done. Runs
    of one group go one at a time (a later light test starts the next)."""
    if not item.get_closest_marker("slow"):
        runs = list(item.config.stash.get(RUNS, {}).values())
        for run in runs:
            if run.group is None or not any(o.running for o in runs if o.group == run.group):
                run.start()


@pytest.fixture
def background_run(request: pytest.FixtureRequest) -> BackgroundRun:
    """This test's background run, finished."""
    needs.netns()
    run = request.config.stash[RUNS][request.node.nodeid]
    run.finish()
    return run
