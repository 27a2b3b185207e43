"""The install lines of the docs and of judge's own messages install this project.

`pip install 'judge[postgres]'`, as DEPLOY.md used to say, fetches an unrelated `judge` (0.2.0,
2016) from PyPI. The distribution is `calibrated-judge` (free on PyPI when it was chosen:
`pip index versions calibrated-judge` found none); the import package, the command and the
Inspect scorer's namespace stay `judge`.

- every `pip install` in the docs, the Makefile and judge's messages names this project as
  `calibrated-judge` or a local path, never `judge`, and only extras pyproject.toml declares;
- the installed distribution is calibrated-judge, with the `judge` command and one `inspect_ai`
  entry point named `judge`;
- DEPLOY.md's install block, run as written (the wheel built from this checkout, then pip's
  resolver on the documented requirement, `--dry-run`), installs calibrated-judge with the
  extras asked for.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])

#: Where install lines are written for people to run or read.
SOURCES = sorted(
    [
        *REPO.glob("*.md"),
        *REPO.glob("docs/**/*.md"),
        *REPO.glob("gold/*.md"),
        *REPO.glob("rubrics/*.md"),
        REPO / "Makefile",
        *REPO.glob("judge/**/*.py"),
        *REPO.glob("calibration/**/*.py"),
        *REPO.glob("bench/*.py"),
        *REPO.glob("tests/*.py"),
        *REPO.glob("tests/judge/**/*.py"),
    ]
)
SOURCES.remove(Path(__file__))  # this file quotes the wrong line on purpose
_PIP = re.compile(r"pip install((?:[ \t]+(?:\\\n\s*)?[^\s`\"()]+)+)")
_REQUIREMENT = re.compile(r"^'?([A-Za-z0-9_.\-/*]+?)(?:\[([A-Za-z0-9_,\-]+)\])?'?$")
#: Options of pip install that take a value.
_VALUED = {"-r", "-c", "-e", "-f", "-i", "--find-links", "--index-url", "-w", "--target"}


def _requirements(args: str) -> list[tuple[str, list[str]]]:
    """(name or path, extras) of each requirement in the arguments of one `pip install`."""
    found, skip = [], False
    for token in args.replace("\\\n", " ").split():
        if skip:
            skip = False
            if not token.startswith("'") and "[" not in token:
                continue  # the value of -f, -w, ...; -e takes a requirement
        if token.startswith("-"):
            skip = token in _VALUED
            continue
        match = _REQUIREMENT.match(token)
        if match is not None:
            extras = match.group(2).split(",") if match.group(2) else []
            found.append((match.group(1), extras))
    return found


def _ours(name: str) -> bool:
    return name in (".", NAME) or "/" in name or name.endswith(".whl")


def test_the_distribution_has_a_name_of_its_own() -> None:
    assert NAME == "calibrated-judge"
    dist = metadata.distribution(NAME)  # installed (editable) under that name
    assert dist.metadata["Name"] == NAME
    assert [ep.value for ep in dist.entry_points if ep.group == "console_scripts"] == [
        "judge.cli:main"
    ]
    # Inspect finds judge/calibrated through the inspect_ai entry point named like the package:
    # exactly one (an old `judge` install left beside it would make two).
    scorers = [ep for ep in metadata.entry_points(group="inspect_ai") if ep.name == "judge"]
    assert [ep.value for ep in scorers] == ["judge.scorer.calibrated"]
    names = [d.metadata["Name"] for d in metadata.distributions()]
    assert "judge" not in names, "an old `judge` distribution is still installed beside it"


def test_every_install_line_names_this_project_and_extras_it_has() -> None:
    checked, wrong = 0, []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8", errors="replace")
        where = path.relative_to(REPO)
        for match in _PIP.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            for name, extras in _requirements(match.group(1)):
                if re.sub(r"[-_.]+", "-", name.lower()) == "judge":
                    wrong.append(f"{where}:{line}: installs {name!r}, PyPI's unrelated judge")
                elif _ours(name):
                    checked += 1
                    unknown = sorted(set(extras) - EXTRAS)
                    if unknown:
                        wrong.append(f"{where}:{line}: extras {unknown} not in pyproject.toml")
        # `judge[extra]` anywhere (a table, a hint) names the wrong distribution too.
        for match in re.finditer(r"(?<![\w./-])judge\[(\w+)\]", text):
            if path.suffix in (".md", "") or "install" in text[max(0, match.start() - 80) :][:80]:
                line = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{where}:{line}: {match.group(0)} (write calibrated-judge[...])")
    assert wrong == []
    assert checked >= 10  # README, DEPLOY.md, the Makefile, the messages


def _fenced(markdown: str, marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\s*```sh\n(.*?)```", markdown, re.S)
    assert found is not None, f"no ```sh block after <!-- {marker} -->"
    return found.group(1)


@pytest.mark.slow
def test_deploy_md_install_block_installs_this_project(tmp_path: Path) -> None:
    """DEPLOY.md's block as written: the wheel of this checkout into dist/, then its pip line
    (``--dry-run --no-deps --ignore-installed --report``: what pip would install into a fresh
    virtualenv, without installing it)."""
    block = _fenced((REPO / "DEPLOY.md").read_text(encoding="utf-8"), "install")
    lines = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    wheel = next(line for line in lines if " wheel " in line)
    install = next(line for line in lines if " install " in line)
    assert wheel == "python3 -m pip wheel --no-deps -w dist ."
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (whl,) = dist.glob("*.whl")
    assert whl.name.startswith("calibrated_judge-")
    args = install.split(" install ", 1)[1].split()
    assert args[:2] == ["--find-links", "dist"]
    args[1] = str(dist)
    report = tmp_path / "report.json"
    resolved = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed"]
        + ["-q", "--report", str(report), *(a.strip("'") for a in args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resolved.returncode == 0, resolved.stderr[-2000:]
    (item,) = json.loads(report.read_text())["install"]
    assert item["metadata"]["name"] == NAME
    assert item["requested_extras"] == ["postgres"]
    assert item["download_info"]["url"].endswith(whl.name)  # this checkout, not PyPI's
