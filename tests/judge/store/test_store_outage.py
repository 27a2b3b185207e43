"""The database goes away in the middle of a batch (PostgreSQL stopped as a crash would stop
it): the batch stops with an error naming the store (password masked) and saying to run the
command again (`judge run` prints it and exits 2); nothing it had finished is lost; run again
once the database is back, it pays only for what was not stored (plus at most the calls that
were in flight at the outage)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import judge
from judge.store import Store, StoreUnavailable
from judge.store.postgres import close_pool
from judge.testing.loopback import LoopbackServer, Reply
from judge.testing.pgcluster import PgCluster, PgUnavailable, find_bin

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PASS = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it done."}'
CONCURRENCY = 2


def _cases(path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"c-{i:03d}",
            "kind": "agent_run",
            "task": f"Task {i}: return [] on empty input.",
            "diff": "--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
            "trace": [{"id": "t0", "role": "agent", "content": f"pytest -q run {i}"}],
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _judge(url: str, cases: Path, api_base: str) -> judge.RunSummary:
    with judge.open_store(url) as store:
        return judge.judge_cases(
            store,
            judge.load_cases(cases).cases,
            rubric="agent-run-success@1",
            models=["openai/loopback"],
            options=judge.JudgeOptions(api_base=api_base, concurrency=CONCURRENCY),
        )


def _count(url: str) -> int:
    try:
        with Store(url) as store:
            return store.count()
    except StoreUnavailable:
        return 0


def test_database_lost_mid_batch_then_back_resumes_and_loses_nothing(
    pg_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    if find_bin() is None:  # pg_cluster has skipped already; this keeps mypy's view simple
        pytest.skip("no PostgreSQL")
    try:
        own = PgCluster.start()  # its own server: this test stops it
    except PgUnavailable as err:
        pytest.skip(str(err))
    n = 40
    try:
        url = own.create_database("judge").replace("postgres@", "postgres:hunter2@")
        cases = _cases(tmp_path / "cases.jsonl", n)
        failure: list[BaseException] = []

        def first_run() -> None:
            try:
                _judge(url, cases, model.api_base)
            except BaseException as err:  # noqa: BLE001 - what the test looks at
                failure.append(err)

        with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.05)) as model:
            batch = threading.Thread(target=first_run)
            batch.start()
            deadline = time.monotonic() + 120
            while _count(url) < 10:
                assert batch.is_alive(), failure
                assert time.monotonic() < deadline, "the batch stored too little in time"
                time.sleep(0.05)
            own.pause()  # the database crashes
            batch.join(60)
            assert not batch.is_alive()
            (err,) = failure
            assert isinstance(err, StoreUnavailable), repr(err)
            assert "postgres:***@127.0.0.1" in str(err) and "hunter2" not in str(err)
            assert "run the same command again" in str(err)
            paid_before = len(model.requests)
            own.resume()
            close_pool(url)
            stored_before = _count(url)
            assert 10 <= stored_before < n
            summary = _judge(url, cases, model.api_base)
            resumed = len(model.requests) - paid_before
        with Store(url) as store:
            rows = store.backend.query(
                "SELECT count(*) AS n, count(DISTINCT cache_key) AS k FROM judgments"
            )[0]
            statuses = {j.status for j in store.judgments()}
        close_pool(url)
        assert (rows["n"], rows["k"], statuses) == (n, n, {"ok"})
        # Nothing stored was paid again; at most the calls in flight at the outage were.
        assert (summary.called, summary.cached) == (n - stored_before, stored_before)
        assert resumed == n - stored_before
        assert len(model.requests) <= n + CONCURRENCY
    finally:
        own.stop()
