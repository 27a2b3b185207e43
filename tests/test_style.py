"""The code is formatted by ``ruff format``, passes ``ruff check`` and type-checks with mypy (the
versions pinned in pyproject's dev extra), so that CI fails on a file left unformatted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TREES = ["judge", "calibration", "tests", "bench"]


def _ruff() -> str:
    found = Path(sys.executable).with_name("ruff")
    if found.exists():
        return str(found)
    on_path = shutil.which("ruff")
    if on_path is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return on_path


def test_the_code_is_formatted() -> None:
    done = subprocess.run(
        [_ruff(), "format", "--check", *TREES], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_passes_the_linter() -> None:
    done = subprocess.run([_ruff(), "check", *TREES], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_type_checks() -> None:
    """mypy (its configuration in pyproject.toml: judge, calibration and bench, every function
    typed) finds nothing."""
    found = Path(sys.executable).with_name("mypy")
    if not found.exists():
        pytest.skip("mypy is not installed (pip install -e '.[dev]')")
    done = subprocess.run([str(found)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
