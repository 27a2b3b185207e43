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


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake OPENAI_API_KEY: the judging commands' key check passes (the loopback server takes
    any key)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def bench_module(name: str) -> ModuleType:
    """Import the script bench/<name>.py as a module (bench/ is not a package)."""
    path = REPO / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as an import would: dataclasses look their module up there
    # (under a bench_ prefix, so that a script never shadows a module of the same name).
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


# --- inspect_ai (the calibrated-judge[inspect] extra) -------------------------------------------

INSPECT_REASON = (
    "inspect_ai is not installed: the Inspect scorer and the inspect-ai reader need the "
    "calibrated-judge[inspect] extra (`pip install -e '.[inspect]'`; `make test` installs it)"
)


def require_inspect_ai() -> None:
    """Skip the test when inspect_ai is absent; in CI (CI=true) fail it instead."""
    if importlib.util.find_spec("inspect_ai") is not None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the Inspect tests cannot run: {INSPECT_REASON}", pytrace=False)
    pytest.skip(INSPECT_REASON)


# --- Real Phoenix and MLflow servers for the platform connector tests ---------------------------


def _platform_server(kind: Any, url_env: str, what: str) -> Iterator[Any]:
    """A throwaway server of ``kind`` (a LocalServer of judge.testing) for the whole session, or
    the one running at ``$url_env``. Skipped when it cannot run here; a failure under CI=true,
    where it must run."""
    running = os.environ.get(url_env)
    if running:
        yield kind.attach(running)
        return
    try:
        server = kind.start(kind.find(REPO))
    except kind.unavailable as err:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and the {what} tests cannot run: {err}", pytrace=False)
        pytest.skip(str(err))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def phoenix() -> Iterator[Any]:
    """A throwaway Phoenix on loopback for the whole session (35-80 s to start; stopped after).
    Skipped without .venv-phoenix; a failure under CI=true, where it must run.
    ``JUDGE_PHOENIX_URL=http://127.0.0.1:PORT`` uses a running one instead."""
    from judge.testing.phoenix import PHOENIX_URL_ENV, PhoenixServer

    yield from _platform_server(PhoenixServer, PHOENIX_URL_ENV, "Phoenix")


@pytest.fixture(scope="session")
def mlflow_server() -> Iterator[Any]:
    """A throwaway MLflow tracking server on loopback for the whole session (about 40-90 s to
    start on a busy machine; stopped after). Skipped without .venv-mlflow; a failure under
    CI=true, where it must run. ``JUDGE_MLFLOW_URL=http://127.0.0.1:PORT`` uses a running one
    instead."""
    from judge.testing.mlflow import MLFLOW_URL_ENV, MlflowServer

    yield from _platform_server(MlflowServer, MLFLOW_URL_ENV, "MLflow")
