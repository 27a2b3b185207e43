"""Shared test fixtures: the path to ../shared, skipped with a clear reason when absent."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The test data (tests/data), for tests at any depth of tests/.
DATA = REPO / "tests" / "data"
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
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first, as an import would: dataclasses look their module up while it runs.
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module


# --- Store locations: every store-level test runs on SQLite and on a real PostgreSQL ------------

PG_REASON = (
    "PostgreSQL server binaries are missing (Debian: `apt-get install -y postgresql`; "
    "`make test` installs them when run as root) or psycopg is not installed "
    "(`pip install -e '.[postgres]'`)"
)


def _pg_missing(reason: str) -> None:
    # On a laptop without the server the PostgreSQL tests skip; in CI they must run.
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the PostgreSQL tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 for the whole session (stopped after)."""
    if (
        importlib.util.find_spec("psycopg") is None
        or importlib.util.find_spec("psycopg_pool") is None
    ):
        _pg_missing(PG_REASON)
    from judge.testing.pgcluster import PgCluster, PgUnavailable

    try:
        cluster = PgCluster.start()
    except PgUnavailable as err:
        _pg_missing(f"{err}; {PG_REASON}")
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Any) -> Iterator[str]:
    """A new, empty PostgreSQL database (dropped after the test)."""
    from judge.store.postgres import close_pool

    url: str = pg_cluster.create_database()
    yield url
    close_pool(url)
    pg_cluster.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives: a SQLite file, then a PostgreSQL database."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "store.db")


#: Debian's Chromium, driven headless by the browser tests (``make test`` installs it).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium for the test (tests using it skip when CHROMIUM is absent)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()
