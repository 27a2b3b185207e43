"""A store written by earlier code is reused: the same inputs find the same cache keys.

The fixture tests/data/stores/store-bf6082d.db was written by main at bf6082d (before the
one-way-house refactor) with tests/data/stores/make_store.py. Judging the same cases with the
same rubrics and model today must make no model call: cache keys (rubric digest, evidence
digest, prompt digest, model, parameters, order, sample, variant, selector) are unchanged.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from tests.conftest import DATA

FIXTURES = DATA / "stores"


def test_the_fixture_is_the_store_earlier_code_wrote() -> None:
    # Opened in place by mistake, it would be migrated and no longer test anything.
    with sqlite3.connect(f"file:{FIXTURES / 'store-bf6082d.db'}?mode=ro", uri=True) as conn:
        names = [r[0] for r in conn.execute("select name from _migrations order by name")]
    assert names == [
        f"m00{i}_{n}"
        for i, n in enumerate(
            [
                "judgments",
                "calls",
                "cases",
                "batches",
                "routing",
                "review",
                "access",
                "jobs",
                "step_keys",
            ],
            start=1,
        )
    ]


@pytest.mark.parametrize("forget_steps", [False, True], ids=["step-keys", "cache-keys-only"])
@pytest.mark.parametrize(
    ("rubric", "cases", "n"),
    [
        ("agent-run-success@2", FIXTURES / "demo.jsonl", 42),
        ("pairwise-preference@2", FIXTURES / "pairs.jsonl", 12),
    ],
)
def test_a_store_written_by_earlier_code_is_reused_with_no_model_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rubric: str,
    cases: Path,
    n: int,
    forget_steps: bool,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    db = tmp_path / "old.db"
    shutil.copy(FIXTURES / "store-bf6082d.db", db)
    if forget_steps:
        # Without the step keys, each judgment is found by its cache key alone: evidence is
        # selected and the prompt rendered again, and their digests must be the old ones.
        with sqlite3.connect(db) as conn:
            conn.execute("delete from step_keys")
    with Store(db) as store:
        before = store.count("judgments")
    # Any call would get an unparseable answer: a reused judgment is the only way to pass.
    with LoopbackServer(lambda request: Reply(content="not json")) as server:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--rubric",
                rubric,
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(db),
                "--quiet",
                str(cases),
            ],
        )
    assert result.exit_code == 0, result.output
    assert server.requests == []
    assert f"{n} judgments: ok {n}; 0 called the model, {n} from the store" in result.output
    with Store(db) as store:
        assert store.count("judgments") == before
