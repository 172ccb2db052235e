"""The import layering the README states, checked over the package sources with `ast`:

    contract      agent/protocol.py (the wire contract and its vocabulary) and
                  agent/cli_args.py (the command-line conventions), importing nothing of ours
    agent core    the rest of agent/ (client, host server, replay memory, actor, learner, ...)
    controller    controller/
    switch        bmv2/ (switch launching, namespaces, testbeds) above both
    pyswitch      bmv2/pyswitch/, importing nothing outside itself
    orchestration agent/orchestration/ (launcher, benchmarks, soak, replay-tool, Mininet) on top

The agent core and the controller import each other only through the contract;
nothing imports orchestration, and nothing below bmv2/ imports bmv2/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agent.cli_args import REPO

PACKAGES = ("agent", "controller", "bmv2")

CONTRACT = {"agent.protocol", "agent.cli_args"}

# layer -> the layers it may import (besides itself)
ALLOWED = {
    "contract": set(),
    "agent core": {"contract"},
    "controller": {"contract"},
    "pyswitch": set(),
    "switch": {"contract", "agent core", "controller"},
    "orchestration": {"contract", "agent core", "controller", "switch"},
}


def layer(module: str) -> str:
    """The layer of a dotted module name of ours."""
    if module in CONTRACT:
        return "contract"
    if module == "agent.orchestration" or module.startswith("agent.orchestration."):
        return "orchestration"
    if module == "bmv2.pyswitch" or module.startswith("bmv2.pyswitch."):
        return "pyswitch"
    return {"agent": "agent core", "controller": "controller", "bmv2": "switch"}[
        module.split(".")[0]]


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of ours in a source file, relative ones resolved;
    `from a.b import c` counts as a.b.c when that is a module, else as a.b."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path).split(".")
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
                found.append((node.lineno, full if _is_module(full) else base))
    return [(line, m) for line, m in found if m.split(".")[0] in PACKAGES]


def _is_module(dotted: str) -> bool:
    path = REPO.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def violations() -> list[str]:
    out = []
    for path in sources():
        here = module_name(path)
        for line, target in imported(path):
            a, b = layer(here), layer(target)
            if a != b and b not in ALLOWED[a]:
                out.append(f"{path.relative_to(REPO)}:{line}: {here} ({a}) imports "
                           f"{target} ({b})")
    return out


def test_every_import_follows_the_layering() -> None:
    assert violations() == []


def test_the_contract_imports_nothing_of_ours() -> None:
    for module in CONTRACT:
        path = REPO.joinpath(*module.split(".")).with_suffix(".py")
        assert imported(path) == [], module


@pytest.mark.parametrize(("importer", "target", "allowed"), [
    ("controller.cli", "agent.replay_client", False),
    ("agent.train", "bmv2.netns", False),
    ("bmv2.testbed", "agent.orchestration.launch", False),
    ("bmv2.pyswitch.p4rt_proto", "controller.p4runtime_proto", False),
    ("agent.replay_client", "agent.protocol", True),
    ("bmv2.testbed", "controller.deploy", True),
])
def test_the_rule_itself(importer: str, target: str, allowed: bool) -> None:
    a, b = layer(importer), layer(target)
    assert (a == b or b in ALLOWED[a]) == allowed


def test_no_two_modules_import_each_other() -> None:
    edges = {(module_name(p), m) for p in sources() for _, m in imported(p)}
    cycles = sorted(f"{a} <-> {b}" for a, b in edges if a < b and (b, a) in edges)
    assert cycles == []
