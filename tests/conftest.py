"""Shared test fixtures: the path to ../shared, skipped with a clear reason when absent."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))

# Never let a test fetch litellm's cost map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def shared_path(relative: str) -> Path:
    """Return ../shared/<relative>, or skip the test when it is not there."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(
            f"{path} is absent: the public gold sets and recorded verdicts live in ../shared "
            "beside the clone (CI has them; set JUDGE_SHARED_DIR to point elsewhere)"
        )
    return path


@pytest.fixture
def shared() -> type:
    """Fixture form: ``shared.path("gold/x.jsonl")``."""

    class _Shared:
        path = staticmethod(shared_path)

    return _Shared


def bench_module(name: str) -> ModuleType:
    """Import the script bench/<name>.py as a module (bench/ is not a package)."""
    path = REPO / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
