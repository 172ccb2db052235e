"""README.md's status table and docs/benchmarks.md's results section are what the
committed results say (agent/orchestration/benchmarks/pages.py renders them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.orchestration.benchmarks import pages, report

REPO = Path(__file__).resolve().parents[2]


def test_committed_pages_match_committed_results() -> None:
    """Fails when a page was edited by hand or the results changed without a re-render
    (fix: python -m agent.orchestration.benchmarks.pages)."""
    for path, text in pages.rendered().items():
        assert path.read_text() == text, (
            f"{path.relative_to(REPO)} differs from what the committed results say; "
            f"run {pages.COMMAND}")


def test_check_exit_status_on_the_committed_tree() -> None:
    assert pages.main(["--check"]) == 0


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed results and both pages, which pages.py then works on."""
    results = tmp_path / "docs" / "benchmarks"
    shutil.copytree(pages.RESULTS_DIR, results)
    shutil.copy(pages.README, tmp_path / "README.md")
    shutil.copy(pages.BENCHMARKS_PAGE, tmp_path / "docs" / "benchmarks.md")
    monkeypatch.setattr(pages, "RESULTS_DIR", results)
    monkeypatch.setattr(pages, "README", tmp_path / "README.md")
    monkeypatch.setattr(pages, "BENCHMARKS_PAGE", tmp_path / "docs" / "benchmarks.md")
    return tmp_path


def set_ratio(results_dir: Path, switch: str, name: str, value: float) -> None:
    path = results_dir / "results.json"
    results = json.loads(path.read_text())
    row = next(r for r in results["testbeds"][switch]["targets"]["rows"] if r["target"] == name)
    row["ratio"], row["pass"] = value, value <= row["threshold"]
    path.write_text(json.dumps(results))


def test_a_changed_figure_makes_both_pages_stale(tree: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    set_ratio(pages.RESULTS_DIR, "bmv2", "SAMPLE 128 prioritized p50", 0.321)
    assert pages.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "README.md differs" in err and "benchmarks.md differs" in err
    assert pages.main([]) == 0
    for path in (pages.README, pages.BENCHMARKS_PAGE):
        assert "| 0.64 / **0.32** |" in path.read_text()
    assert pages.main(["--check"]) == 0


def test_text_outside_the_markers_is_kept(tree: Path) -> None:
    readme = pages.README.read_text()
    pages.README.write_text(readme.replace("## Quick start", "## Quick start, edited"))
    set_ratio(pages.RESULTS_DIR, "python", "INSERT+ACK p50", 0.111)
    assert pages.refresh() == [pages.BENCHMARKS_PAGE, pages.README]
    text = pages.README.read_text()
    assert "## Quick start, edited" in text and "**0.11**" in text


@pytest.mark.parametrize("edit", ["drop_end", "twice"])
def test_missing_or_repeated_markers_are_an_error(tree: Path, edit: str,
                                                  capsys: pytest.CaptureFixture) -> None:
    text = pages.BENCHMARKS_PAGE.read_text()
    text = (text.replace(pages.end("results"), "") if edit == "drop_end"
            else text + pages.begin("results") + "\n" + pages.end("results") + "\n")
    pages.BENCHMARKS_PAGE.write_text(text)
    assert pages.main(["--check"]) == 1
    assert "needs one" in capsys.readouterr().err


def test_the_floor_section_comes_from_the_floor_results(tree: Path) -> None:
    path = pages.RESULTS_DIR / "floor" / "results.json"
    floor = json.loads(path.read_text())
    for row in floor["switches"]["bmv2"]["rows"]:
        row["ratio"] = 0.987
    path.write_text(json.dumps(floor))
    pages.refresh()
    assert "| 0.99 / 0.99 |" in pages.BENCHMARKS_PAGE.read_text()
    assert "copies that do nothing / host p50 | 0.25 | 0.99 |" in pages.README.read_text()


def test_bench_output_into_docs_benchmarks_refreshes_the_pages(tree: Path) -> None:
    results = json.loads((pages.RESULTS_DIR / "results.json").read_text())
    results["testbeds"]["python"]["targets"]["rows"][0]["ratio"] = 0.123
    results["training"]["runs"] = []             # a run without training: no return plot
    stale_plot = pages.RESULTS_DIR / report.TRAINING_PLOT
    stale_plot.write_bytes(b"a plot of an earlier run")
    written = report.write_all(results, pages.RESULTS_DIR)
    assert pages.README in written and pages.BENCHMARKS_PAGE in written
    assert "**0.12** / **0.45**" in pages.README.read_text()
    assert not stale_plot.exists(), "a plot the run had no data for was left behind"


def test_bench_output_elsewhere_leaves_the_pages_alone(tree: Path) -> None:
    before = pages.README.read_text(), pages.BENCHMARKS_PAGE.read_text()
    results = json.loads((pages.RESULTS_DIR / "results.json").read_text())
    results["testbeds"]["python"]["targets"]["rows"][0]["ratio"] = 0.123
    written = report.write_all(results, tree / "runs" / "bench")
    assert pages.README not in written
    assert (pages.README.read_text(), pages.BENCHMARKS_PAGE.read_text()) == before


def test_the_race_is_rendered_per_switch_with_its_verdict() -> None:
    """docs/benchmarks.md's training table names each row's switch, and the ratios
    against the 0.7 target are bold only where they meet it, and the README's
    cell for one switch holds only its ratios."""
    summary = [{"switch": k, "backend": b, "actors": 2, "runs": 3, "solved": 3,
                "median_env_steps": 30000.0, "median_wall_s": w,
                "median_learner_steps_per_s": 300.0, "median_samples_per_s": 19200.0}
               for k, b, w in (("python", "switch", 16.0), ("python", "host", 30.0),
                               ("bmv2", "switch", 50.0), ("bmv2", "host", 60.0))]
    ratios = [{"switch": "bmv2", "actors": 2, "in_network_over_host": 50 / 60, "pass": False,
               "per_env_step": 0.9},
              {"switch": "python", "actors": 2, "in_network_over_host": 16 / 30, "pass": True,
               "per_env_step": None}]
    lines = pages.training_table({"status": "ran 12 of 12 runs", "summary": summary,
                                  "wall_ratios": ratios})
    assert "| Python switch | host server | 2 | 3 / 3 | 30,000 | 30.0 | 300 | 19,200 |" in lines
    assert lines[-1].endswith("bmv2, 2 actors 0.83 (0.90 per env step); "
                              "Python switch, 2 actors **0.53**.")
    assert pages.race_ratios(ratios, "python") == "2 actors **0.53**"
    assert pages.race_ratios(ratios, "bmv2") == "2 actors 0.83 (0.90 per env step)"
