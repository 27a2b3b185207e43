"""The documents name only what exists: in every user document (the top-level ``*.md``,
``docs/``, ``gold/``), each path of the project (``judge/routing/``, ``bench/ppi_report.py``),
each bare module file (``ppi.py``), each dotted module name (``judge.routing.decide``,
``calibration.inputs.positive_prob``) and each relative link ``[x](path#anchor)`` resolves: the
path to a file or folder, the module to a file and its attribute to a name that file defines,
the link to a file and its anchor to a heading of it. The checker is tested on a small bad
sample, so that it can fail."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

#: The documents a user reads: the README and the results at the top, the guides, the formats.
DOCUMENTS = sorted(
    p.relative_to(REPO).as_posix()
    for p in [*REPO.glob("*.md"), *REPO.glob("docs/**/*.md"), *REPO.glob("gold/*.md")]
)
#: The folders a document's project paths start with.
_ROOTS = "judge|calibration|tests|bench|docs|gold|rubrics"
#: judge/x.py, tests/data/..., docs/screenshots/ (not inside a URL or a longer path).
_PATH = re.compile(rf"(?<![\w/.:@-])((?:{_ROOTS})/[\w/.-]*\w/?)([*<{{]?)")
#: A module file named without its folder: ppi.py, calibrating.py.
_MODULE_FILE = re.compile(r"(?<![\w/.-])(\w+\.py)\b")
#: A dotted name in one of the project's packages: judge.routing.decide, calibration.bands.
_DOTTED = re.compile(r"(?<![\w/.:@-])((?:judge|calibration)(?:\.\w+)+)")
#: The target of a markdown link or image: ](path), ](path#anchor), ](#anchor).
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
#: Written like paths but not paths: the Inspect scorer's registry name.
NOT_PATHS = frozenset({"judge/calibrated"})
#: The last part of a dotted name that makes it a file or host name (judge.db,
#: judge.example.org), not a module.
FILE_SUFFIXES = frozenset(
    {"db", "dump", "yaml", "yml", "json", "jsonl", "md", "html", "png", "py", "txt", "org", "com"}
)


def entry_point_groups(root: Path) -> frozenset[str]:
    """The entry-point groups pyproject.toml declares (judge.importers is one, not a module)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        return frozenset()
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return frozenset(project.get("entry-points", {}))


def module_files(root: Path) -> frozenset[str]:
    """The names of the project's Python files, wherever they are."""
    return frozenset(
        p.name
        for top in ("judge", "calibration", "bench", "tests")
        for p in root.glob(f"{top}/**/*.py")
    )


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor (headings inside fenced code are not headings)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in _HEADING.finditer(_FENCE.sub("", markdown)):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _module(root: Path, parts: list[str]) -> tuple[int, list[Path]]:
    """How many leading parts name a module or package of ``root``, and its source files."""
    for n in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:n])
        if base.with_suffix(".py").is_file():
            return n, [base.with_suffix(".py")]
        if (base / "__init__.py").is_file():
            return n, [p for p in (base / "__init__.py", base / "__init__.pyi") if p.is_file()]
    return 0, []


def dotted_problem(root: Path, name: str, groups: frozenset[str]) -> str | None:
    """Why ``name`` (judge.x.y) names nothing of the project, or None."""
    parts = name.split(".")
    if name in groups or parts[-1] in FILE_SUFFIXES:
        return None
    n, sources = _module(root, parts)
    if n == len(parts):
        return None
    if n == 0:
        return f"{name}: no such module"
    attribute = parts[n]
    text = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    if re.search(rf"\b{re.escape(attribute)}\b", text) is None:
        return f"{name}: {'.'.join(parts[:n])} has no {attribute!r}"
    return None


def _path_problem(root: Path, path: str, wildcard: str) -> str | None:
    if path in NOT_PATHS:
        return None
    if wildcard:
        return None if any(root.glob(path.rstrip("/") + "*")) else f"{path}{wildcard}: no match"
    return None if (root / path.rstrip("/")).exists() else f"{path}: no such file or folder"


def _link_problem(root: Path, document: Path, target: str) -> str | None:
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    linked = (document.parent / path).resolve() if path else document
    if not linked.exists():
        return f"link {target}: no such file"
    if not linked.is_relative_to(root.resolve()):
        return f"link {target}: outside the repository"
    headings = anchors(linked.read_text(encoding="utf-8")) if linked.suffix == ".md" else None
    if anchor and headings is not None and anchor not in headings:
        return f"link {target}: no heading {anchor!r} in {linked.name}"
    return None


def problems(root: Path, document: Path) -> list[str]:
    """What ``document`` names that does not exist under ``root``."""
    text = document.read_text(encoding="utf-8")
    groups = entry_point_groups(root)
    files = module_files(root)
    found: list[str | None] = []
    for match in _PATH.finditer(text):
        found.append(_path_problem(root, match.group(1), match.group(2)))
    for match in _MODULE_FILE.finditer(text):
        if match.group(1) not in files:
            found.append(f"{match.group(1)}: no such module file")
    for match in _DOTTED.finditer(text):
        found.append(dotted_problem(root, match.group(1), groups))
    for match in _LINK.finditer(_FENCE.sub("", text)):
        found.append(_link_problem(root, document, match.group(1)))
    return sorted({p for p in found if p})


def test_there_are_documents_to_check() -> None:
    assert {"README.md", "ARCHITECTURE.md", "docs/metrics.md", "gold/README.md"} <= set(DOCUMENTS)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_document_names_only_what_exists(document: str) -> None:
    assert problems(REPO, REPO / document) == []


def test_the_checker_finds_what_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "judge" / "routing").mkdir(parents=True)
    (tmp_path / "judge" / "__init__.py").write_text("def route() -> None: ...\n")
    (tmp_path / "judge" / "routing" / "__init__.py").write_text("")
    (tmp_path / "judge" / "routing" / "decide.py").write_text("def decide() -> None: ...\n")
    (tmp_path / "pyproject.toml").write_text('[project.entry-points."judge.importers"]\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A part: with `code`\n")
    good = (
        "`judge/routing/decide.py`, `judge/routing/`, `decide.py`, `judge.routing.decide`,\n"
        "`judge.route`, `judge.routing.decide.decide`, `judge.importers`, `judge.db`,\n"
        "https://judge.example.org/judge/nothing, [b](other.md#a-part-with-code), [c](#good),\n"
        "[d](https://example.org/x.md#nowhere)\n\n# Good\n\n```\n[not a link](nowhere.md)\n```\n"
    )
    (tmp_path / "docs" / "good.md").write_text(good)
    assert problems(tmp_path, tmp_path / "docs" / "good.md") == []
    bad = (
        "`judge/calibrating.py`, `judge/platforms/`, `calibrating.py`, `judge.routing.recorded`,\n"
        "`judge.routing.decide.missing`, `judge.nope`, [a](missing.md), [b](other.md#no-such),\n"
        "[c](#nowhere), ![d](../docs/screenshots/x.png), [e](../../outside.md)\n"
    )
    (tmp_path / "docs" / "bad.md").write_text(bad)
    assert problems(tmp_path, tmp_path / "docs" / "bad.md") == [
        "calibrating.py: no such module file",
        "judge.nope: judge has no 'nope'",
        "judge.routing.decide.missing: judge.routing.decide has no 'missing'",
        "judge.routing.recorded: judge.routing has no 'recorded'",
        "judge/calibrating.py: no such file or folder",
        "judge/platforms/: no such file or folder",
        "link #nowhere: no heading 'nowhere' in bad.md",
        "link ../../outside.md: no such file",
        "link ../docs/screenshots/x.png: no such file",
        "link missing.md: no such file",
        "link other.md#no-such: no heading 'no-such' in other.md",
    ]


def test_a_heading_anchor_is_githubs() -> None:
    heading = "7. Pass rates: PPI++ by simulation (`bench/ppi_validity.py`)"
    assert slug(heading) == "7-pass-rates-ppi-by-simulation-benchppi_validitypy"
    assert anchors("# A\n\n## A\n\n```\n# not a heading\n```\n") == {"a", "a-1"}
