"""The import layering the README states, checked over the package sources with `ast`.
Each layer is a folder; a layer imports only itself and the layers listed for it:

    contract      agent/contract/ (the wire contract and its vocabulary, the command-line
                  conventions), importing nothing of ours
    replay        agent/replay/ (client, replay memory, host server, TorchRL buffer): contract
    rl            agent/rl/ (actor, learner, DQN, the training runner) and agent/examples/:
                  contract, replay
    controller    controller/: contract
    switch        bmv2/ (switch launching, artifacts, bmv2/testbed/): all of the above
    pyswitch      bmv2/pyswitch/, importing nothing outside itself
    orchestration agent/orchestration/ (launcher, benchmarks, soak, replay-tool, Mininet)
                  on top of all, the Python switch too (the benchmarks run the TNA
                  model in process to count its passes)

So the agent and the controller meet only in the contract, nothing imports
orchestration, and nothing below bmv2/ imports bmv2/. A module outside these folders
(say a new agent/foo.py) has no layer, and the test says so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agent.contract.cli_args import REPO

PACKAGES = ("agent", "controller", "bmv2")

# dotted prefix -> layer; the longest prefix that matches wins. The package roots
# (agent/__init__.py, ...) are docstrings: they sit in the bottom layer.
LAYERS = {
    "agent": "contract",
    "agent.contract": "contract",
    "agent.replay": "replay",
    "agent.rl": "rl",
    "agent.examples": "rl",
    "agent.orchestration": "orchestration",
    "controller": "controller",
    "bmv2": "switch",
    "bmv2.pyswitch": "pyswitch",
}

# layer -> the layers it may import (besides itself)
ALLOWED = {
    "contract": set(),
    "replay": {"contract"},
    "rl": {"contract", "replay"},
    "controller": {"contract"},
    "pyswitch": set(),
    "switch": {"contract", "replay", "rl", "controller"},
    "orchestration": {"contract", "replay", "rl", "controller", "switch", "pyswitch"},
}


class NoLayer(LookupError):
    """A module outside every layer's folder."""


def layer(module: str) -> str:
    """The layer of a dotted module name of ours (NoLayer: a module outside them)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS and (prefix != "agent" or module == "agent"):
            return LAYERS[prefix]
    raise NoLayer(f"{module} is in no layer's folder ({', '.join(sorted(LAYERS))})")


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = REPO) -> list[tuple[int, str]]:
    """(line, module) of every import of ours in a source file, relative ones resolved;
    `from a.b import c` counts as a.b.c when that is a module, else as a.b."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[:len(package) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            for a in node.names:
                full = f"{base}.{a.name}"
                found.append((node.lineno, full if _is_module(full, root) else base))
    return [(line, m) for line, m in found if m.split(".")[0] in PACKAGES]


def _is_module(dotted: str, root: Path) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources(root: Path = REPO) -> list[Path]:
    return sorted(p for pkg in PACKAGES if (root / pkg).is_dir()
                  for p in (root / pkg).rglob("*.py"))


def violations(root: Path = REPO) -> list[str]:
    out = []
    for path in sources(root):
        here = module_name(path, root)
        for line, target in imported(path, root):
            try:
                a, b = layer(here), layer(target)
            except NoLayer as exc:
                out.append(f"{path.relative_to(root)}:{line}: {exc}")
                continue
            if a != b and b not in ALLOWED[a]:
                out.append(f"{path.relative_to(root)}:{line}: {here} ({a}) imports "
                           f"{target} ({b})")
    return out


def test_every_import_follows_the_layering() -> None:
    assert violations() == []


def test_every_module_is_in_a_layer() -> None:
    unplaced = []
    for path in sources():
        try:
            layer(module_name(path))
        except NoLayer as exc:
            unplaced.append(str(exc))
    assert unplaced == []


def test_the_contract_imports_nothing_of_ours() -> None:
    contract = [p for p in sources() if layer(module_name(p)) == "contract"]
    assert REPO / "agent" / "contract" / "protocol.py" in contract
    for path in contract:
        assert imported(path) == [], path


@pytest.mark.parametrize(("importer", "target", "allowed"), [
    ("controller.cli", "agent.replay.client", False),
    ("agent.rl.train", "bmv2.testbed.netns", False),
    ("agent.replay.torchrl_buffer", "agent.rl.learner", False),
    ("agent.contract.protocol", "agent.replay.udp", False),
    ("bmv2.testbed.netns_bed", "agent.orchestration.launch", False),
    ("bmv2.pyswitch.p4runtime.proto", "controller.p4runtime_proto", False),
    ("bmv2.launch", "bmv2.pyswitch.switch", False),
    ("agent.replay.client", "agent.contract.protocol", True),
    ("agent.rl.learner", "agent.replay.client", True),
    ("bmv2.testbed.netns_bed", "controller.deploy", True),
    ("agent.orchestration.soak.driver", "bmv2.testbed.netns_bed", True),
    ("agent.orchestration.benchmarks.tna_passes", "bmv2.pyswitch.switch", True),
    ("bmv2.pyswitch.tna.pipeline", "agent.orchestration.benchmarks.tna_passes", False),
])
def test_the_rule_itself(importer: str, target: str, allowed: bool) -> None:
    a, b = layer(importer), layer(target)
    assert (a == b or b in ALLOWED[a]) == allowed


def test_a_wrong_import_and_an_unplaced_module_are_found(tmp_path: Path) -> None:
    """The checker over a small tree: a replay module importing the RL layer, and a
    module left at the top of agent/."""
    for pkg in ("agent", "agent/replay", "agent/rl"):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "agent/rl/learner.py").write_text("X = 1\n")
    (tmp_path / "agent/replay/client.py").write_text("import json\n\n"
                                                     "from agent.rl import learner\n")
    (tmp_path / "agent/stray.py").write_text("from agent.replay.client import X\n")
    assert violations(tmp_path) == [
        "agent/replay/client.py:3: agent.replay.client (replay) imports "
        "agent.rl.learner (rl)",
        "agent/stray.py:1: agent.stray is in no layer's folder "
        f"({', '.join(sorted(LAYERS))})",
    ]


def test_no_two_modules_import_each_other() -> None:
    edges = {(module_name(p), m) for p in sources() for _, m in imported(p)}
    cycles = sorted(f"{a} <-> {b}" for a, b in edges if a < b and (b, a) in edges)
    assert cycles == []
