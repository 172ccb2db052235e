"""The repository describes the product, not its making, and its links resolve:
no work-log words in the docs and sources, and every relative link in README.md,
CHANGELOG.md and docs/*.md names a file (and heading) that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

WORK_LOG = re.compile(r"session [0-9]|helper branch|closing note|tried and dropped",
                      re.IGNORECASE)
SOURCE_DIRS = ("agent", "bmv2", "controller", "p4src")
SOURCE_SUFFIXES = {".md", ".py", ".p4"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def scanned_files(root: Path) -> list[Path]:
    """README.md, CHANGELOG.md, every .md under docs/, and the .md, .py and .p4
    files under the source folders."""
    files = [root / name for name in ("README.md", "CHANGELOG.md") if (root / name).exists()]
    files += sorted((root / "docs").rglob("*.md"))
    for folder in SOURCE_DIRS:
        files += sorted(p for p in (root / folder).rglob("*")
                        if p.suffix in SOURCE_SUFFIXES and p.is_file())
    return files


def work_log_lines(root: Path) -> list[str]:
    """'file:line: text' of every line with a work-log word."""
    return [f"{path.relative_to(root)}:{n}: {line.strip()}"
            for path in scanned_files(root)
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            if WORK_LOG.search(line)]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            out.add(slug(m.group(1)))
    return out


def linked_pages(root: Path) -> list[Path]:
    return [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md"))]


def broken_links(root: Path) -> list[str]:
    """'file:line: target (why)' of every relative link whose file or heading is missing."""
    broken = []
    for page in (p for p in linked_pages(root) if p.exists()):
        fenced = False
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                where = (page.parent / file_part).resolve() if file_part else page
                if not where.exists():
                    broken.append(f"{page.relative_to(root)}:{n}: {target} (no such file)")
                elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                    broken.append(f"{page.relative_to(root)}:{n}: {target} (no such heading)")
    return broken


def test_no_work_log_words_in_docs_or_sources() -> None:
    found = work_log_lines(REPO)
    assert not found, "the repository describes the product, not its making:\n" + \
        "\n".join(found)


def test_every_relative_link_resolves() -> None:
    broken = broken_links(REPO)
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_scans_cover_what_they_claim() -> None:
    files = {p.relative_to(REPO).as_posix() for p in scanned_files(REPO)}
    assert {"README.md", "CHANGELOG.md", "docs/protocol.md", "bmv2/pyswitch/README.md",
            "p4src/replay.p4", "controller/cli.py"} <= files
    assert REPO / "docs" / "benchmarks.md" in linked_pages(REPO)


def test_a_planted_work_log_word_is_found_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("fine\nAs measured in Session 4, ...\n")
    (tmp_path / "p4src").mkdir()
    (tmp_path / "p4src" / "a.p4").write_text("/* see the closing note */\n")
    (tmp_path / "README.md").write_text("Tried and dropped: nothing.\n")
    assert work_log_lines(tmp_path) == [
        "README.md:1: Tried and dropped: nothing.",
        "docs/x.md:2: As measured in Session 4, ...",
        "p4src/a.p4:1: /* see the closing note */"]


@pytest.mark.parametrize(("link", "why"), [
    ("missing.md", "no such file"), ("docs/x.md#nowhere", "no such heading")])
def test_a_broken_link_is_found(tmp_path: Path, link: str, why: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("# X\n\n## The host server's `pacing`\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/x.md#the-host-servers-pacing) [web](https://example.org/a)\n"
        "```\n[not a link](in-a-fence.md)\n```\n"
        f"see [this]({link})\n")
    assert broken_links(tmp_path) == [f"README.md:5: {link} ({why})"]
