"""Tests share helpers through helper modules, never by importing another test
module or a conftest.py (pytest loads those itself; importing one runs it twice)."""

from __future__ import annotations

import ast
from pathlib import Path

from agent.contract.cli_args import REPO


def imported_test_modules(path: Path, root: Path = REPO) -> list[str]:
    """The test modules and conftests a file under root/tests imports, dotted."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[:len(package) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        found += [n for n in names if n.split(".")[0] == "tests"
                  and (n.split(".")[-1].startswith("test_") or n.split(".")[-1] == "conftest")]
    return found


def test_no_test_module_or_conftest_is_imported() -> None:
    found = {str(p.relative_to(REPO)): imported_test_modules(p)
             for p in sorted((REPO / "tests").rglob("*.py"))}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_check_finds_such_imports(tmp_path: Path) -> None:
    probe = tmp_path / "tests" / "unit" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from tests.dataplane.conftest import CONFIG\n"
                     "from .test_config import GOOD\n"
                     "from tests.dataplane.packets import payload\n")
    assert imported_test_modules(probe, tmp_path) == ["tests.dataplane.conftest",
                                                      "tests.unit.test_config"]
