"""Which files of a diff are tests, test inputs, test or CI configuration, or library code."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatch

_TEST_FILE = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|specs)/"
    r"|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)tests?\.py$|(^|/)conftest\.py$"
    r"|_test\.go$|\.(test|spec)\.[cm]?[jt]sx?$|_spec\.rb$|(^|/)src/test/"
    r"|(Test|Tests|IT)\.(java|kt|scala)$|(^|/)Test[A-Z][^/]*\.(java|kt)$"
)
_CODE = re.compile(r"\.(py|go|[cm]?[jt]sx?|rb|java|kt|scala|rs|php|cs)$")
_CONFIG = re.compile(
    r"(^|/)(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py|\.coveragerc|Makefile"
    r"|package\.json|jest\.config\.[cm]?[jt]s|vitest\.config\.[cm]?[jt]s|\.mocharc[^/]*"
    r"|karma\.conf\.js|codecov\.ya?ml|\.gitlab-ci\.yml|azure-pipelines\.ya?ml|Jenkinsfile"
    r"|\.travis\.yml|runtests\.py|conftest\.py)$"
    r"|(^|/)\.github/workflows/[^/]+\.ya?ml$|(^|/)\.circleci/[^/]+\.ya?ml$"
)
#: Top-level scripts, command-line entry points and tools: an exit there is how they end.
_SCRIPT = re.compile(
    r"^[^/]+\.py$|(^|/)(__main__|manage|setup|cli|main)\.py$"
    r"|(^|/)(scripts?|bin|tools|management/commands|examples?|docs?|benchmarks?)/"
)


def is_test_file(path: str) -> bool:
    return bool(_TEST_FILE.search(path))


def is_test_code(path: str) -> bool:
    """A test module (code, not data, in a test location)."""
    return is_test_file(path) and bool(_CODE.search(path))


def is_test_data(path: str) -> bool:
    """An input, fixture, expected output or snapshot under a test location."""
    return is_test_file(path) and not _CODE.search(path)


def is_config(path: str) -> bool:
    return bool(_CONFIG.search(path))


def is_library_code(path: str) -> bool:
    """Source code that is neither a test nor a script nor a tool."""
    return bool(_CODE.search(path)) and not is_test_file(path) and not _SCRIPT.search(path)


def is_protected(path: str, globs: Sequence[str]) -> bool:
    return any(fnmatch(path, glob) or fnmatch("/" + path, glob) for glob in globs)
