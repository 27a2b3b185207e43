"""Crashes: `judge run` as a real process, killed with SIGKILL mid-batch, then run again; and two
`judge run` processes writing one database at once.

The model is a loopback server in this process; its request log shows which judgments were
paid for, so a resumed batch can be checked never to pay twice for a stored judgment.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge.digests import digest
from judge.testing.loopback import LoopbackServer, Reply

RUBRIC = "agent-run-success@1"
PASS = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it done."}'


def _case(i: int, prefix: str = "c") -> dict[str, Any]:
    return {
        "id": f"{prefix}-{i:03d}",
        "kind": "agent_run",
        "task": f"Task {prefix}{i}: make parse() return [] on empty input.",
        "diff": "--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "trace": [
            {"id": "t0", "role": "agent", "content": "pytest -q"},
            {"id": "t1", "role": "observation", "content": f"{i + 1} passed"},
        ],
    }


def _write(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def _judge_run(
    server: LoopbackServer, db: Path, cases: Path, concurrency: int = 2
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judge",
            "run",
            "--rubric",
            RUBRIC,
            "--model",
            "openai/loopback",
            "--api-base",
            server.api_base,
            "--db",
            str(db),
            "--concurrency",
            str(concurrency),
            "--quiet",
            str(cases),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        },
    )


def _stored(db: Path) -> dict[str, str]:
    """prompt digest -> status of every stored judgment (read-only, while a writer runs)."""
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("select prompt_digest, status from judgments").fetchall()
    except sqlite3.OperationalError:  # the writer has not created the table yet
        return {}
    finally:
        conn.close()
    return dict(rows)


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _conversations(requests: list[dict[str, Any]]) -> list[str]:
    """The prompt digest of each request (system + user message), as the runner computes it."""
    return [digest(r["messages"][:2]) for r in requests]


def _kill_when(proc: subprocess.Popen[str], db: Path, at_least: int, limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while len(_stored(db)) < at_least:
        if proc.poll() is not None:
            pytest.fail(f"judge run ended before the kill: {proc.stderr.read()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("judge run stored too little in time")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL


def test_sigkill_mid_batch_then_resume_pays_for_nothing_twice(tmp_path: Path) -> None:
    n = 60
    cases = _write(tmp_path / "cases.jsonl", [_case(i) for i in range(n)])
    db = tmp_path / "judge.db"
    # Slow answers keep the batch in flight long enough to be killed in the middle.
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.05)) as server:
        stored_before: dict[str, str] = {}
        for at_least in (15, 35):  # killed twice, at two points
            _kill_when(_judge_run(server, db, cases), db, at_least)
            assert _integrity(db) == "ok"
            stored = _stored(db)
            assert set(stored_before) <= set(stored)
            stored_before = stored
            assert at_least <= len(stored) < n
            requests_before = len(server.requests)
        final = _judge_run(server, db, cases)
        _, err = final.communicate(timeout=120)
        assert final.returncode == 0, err
        resumed = _conversations(server.requests[requests_before:])
    # The resumed run asked only for what was not stored, each once.
    assert not set(resumed) & set(stored_before)
    assert len(resumed) == len(set(resumed)) == n - len(stored_before)
    assert f"{n - len(stored_before)} called the model, {len(stored_before)} from the store" in err
    stored = _stored(db)
    assert len(stored) == n and set(stored.values()) == {"ok"}
    assert _integrity(db) == "ok"
    # Every request ever made belongs to a stored judgment (nothing paid for was lost).
    assert set(_conversations(server.requests)) == set(stored)


def test_two_judge_run_processes_on_one_new_database_lose_nothing(tmp_path: Path) -> None:
    shared = [_case(i, "shared") for i in range(20)]
    first = _write(tmp_path / "a.jsonl", [_case(i, "a") for i in range(80)] + shared)
    second = _write(tmp_path / "b.jsonl", shared + [_case(i, "b") for i in range(80)])
    db = tmp_path / "new.db"  # neither process finds it: both create and migrate it at once
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.01)) as server:
        procs = [_judge_run(server, db, path, concurrency=4) for path in (first, second)]
        outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    conn = sqlite3.connect(db)
    try:
        n_rows, n_keys, n_cases = conn.execute(
            "select count(*), count(distinct cache_key), count(distinct case_id) from judgments"
        ).fetchone()
        statuses = {s for (s,) in conn.execute("select distinct status from judgments")}
    finally:
        conn.close()
    assert (n_rows, n_keys, n_cases) == (180, 180, 180)
    assert statuses == {"ok"}
    assert _integrity(db) == "ok"
    # The shared cases may have been paid for twice (both processes started them before either
    # stored them), but never more, and each stored once.
    requests = _conversations(server.requests)
    assert set(requests) == set(_stored(db))
    assert len(requests) <= 180 + 20


def _open_store(path: str, barrier: Any) -> None:
    from judge.store import Store

    barrier.wait()  # every process opens the new file at the same moment
    Store(path).close()


def test_many_processes_opening_one_new_database_all_succeed(tmp_path: Path) -> None:
    """Before the fix, 10 trials of 4 processes failed 10 times out of 10 ("database is locked"
    on the WAL switch, "table ... already exists" from migrations applied twice)."""
    import multiprocessing

    from judge.store.migrations import MIGRATIONS

    ctx = multiprocessing.get_context("fork")
    for trial in range(8):
        path = str(tmp_path / f"new-{trial}.db")
        barrier = ctx.Barrier(4)
        procs = [ctx.Process(target=_open_store, args=(path, barrier)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0], f"trial {trial}"
        conn = sqlite3.connect(path)
        try:
            names = [n for (n,) in conn.execute("select name from _migrations")]
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            conn.close()
        assert names == [name for name, _ in MIGRATIONS]  # each applied exactly once
        assert mode == "wal"
