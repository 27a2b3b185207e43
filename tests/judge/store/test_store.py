"""The store on both backends (SQLite file, PostgreSQL database): append-only migrations, cache
semantics, concurrent writers, insertion order; WAL on SQLite."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from judge.digests import cache_key, digest
from judge.store import Store
from judge.store.migrations import MIGRATIONS
from judge.store.sqlite import SQLiteBackend
from judge.types import Judgment, Provenance, Verdict


def _judgment(key: str, status: str = "ok", case_id: str = "c1") -> Judgment:
    prov = Provenance(
        rubric_id="r",
        rubric_version=1,
        rubric_digest="sha256:r",
        model="m",
        prompt_digest="sha256:p",
        evidence_digest="sha256:e",
        selector_version="evidence-v1",
        token_budget=100,
        judge_version="0",
    )
    if status in ("ok", "abstain"):
        return Judgment(
            id="j-" + key[-8:],
            case_id=case_id,
            cache_key=key,
            status=status,
            verdict=Verdict(label="pass" if status == "ok" else "cannot_determine"),
            provenance=prov,
        )
    return Judgment(
        id="j-" + key[-8:],
        case_id=case_id,
        cache_key=key,
        status=status,
        error="boom",
        provenance=prov,
    )


def test_migrations_create_the_expected_columns_and_are_idempotent(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "x.db")
    applied = backend.migrate()
    assert applied == [name for name, _ in MIGRATIONS]
    assert backend.migrate() == []  # nothing runs twice
    db = backend.db
    columns = set(db["judgments"].columns_dict)
    assert {
        "cache_key",
        "status",
        "rubric_digest",
        "model",
        "order",
        "sample",
        "prompt_digest",
        "evidence_digest",
        "selector_version",
        "prompt_tokens",
        "cost_usd",
        "latency_s",
        "json",
    } <= columns
    assert {"cache_key", "attempt", "outcome", "error"} <= set(db["calls"].columns_dict)
    assert set(db["step_keys"].columns_dict) == {"step_key", "cache_key", "created_at"}
    assert db["step_keys"].pks == ["step_key"]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] in ("delete", "wal")
    backend.close()


def test_store_uses_wal(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_final_statuses_are_cached_provider_failures_are_not(store_location: str) -> None:
    with Store(store_location) as store:
        for status in ("ok", "abstain", "parse_error", "infra_error"):
            store.put(_judgment(f"sha256:{status}", status))
        assert store.cached("sha256:ok") is not None
        assert store.cached("sha256:abstain") is not None
        assert store.cached("sha256:parse_error") is not None
        assert store.cached("sha256:infra_error") is None  # worth retrying
        assert store.cached("sha256:missing") is None
        # A retry replaces the failed row for that key: one row per key.
        store.put(_judgment("sha256:infra_error", "ok"))
        assert store.count() == 4
        assert store.cached("sha256:infra_error").status == "ok"  # type: ignore[union-attr]


def test_cache_key_changes_with_every_part() -> None:
    base = dict(
        rubric_digest="r",
        evidence_digest="e",
        prompt_digest="p",
        model="m",
        params={"temperature": 0},
        order=None,
        sample=0,
    )
    key = cache_key(**base)  # type: ignore[arg-type]
    for part, other in (
        ("rubric_digest", "r2"),
        ("evidence_digest", "e2"),
        ("model", "m2"),
        ("params", {"temperature": 1}),
        ("order", "AB"),
        ("sample", 1),
        ("prompt_digest", "p2"),
        ("variant", 1),
        ("selector_version", "evidence-v9"),
    ):
        assert cache_key(**(base | {part: other})) != key  # type: ignore[arg-type]
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})


def _writer(path: str, start: int) -> None:
    with Store(path) as store:
        for i in range(start, start + 200):
            store.put(_judgment(f"sha256:{i:06d}", case_id=f"c{i}"))


def test_two_processes_writing_one_database_lose_nothing(store_location: str) -> None:
    path = store_location
    Store(path).close()
    procs = [multiprocessing.Process(target=_writer, args=(path, s)) for s in (0, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Store(path) as store:
        assert store.count() == 400
        assert store.integrity() == "ok"


def test_step_keys_lead_to_final_judgments_only(store_location: str) -> None:
    with Store(store_location) as store:
        for status in ("ok", "parse_error", "infra_error"):
            store.put(_judgment(f"sha256:{status}", status))
            store.remember_step(f"step-{status}", f"sha256:{status}")
        assert store.cached_step("step-ok").status == "ok"  # type: ignore[union-attr]
        assert store.cached_step("step-parse_error") is not None
        assert store.cached_step("step-infra_error") is None  # worth retrying
        assert store.cached_step("step-unknown") is None
        # A step key remembered again points at the newer judgment.
        store.remember_step("step-ok", "sha256:parse_error")
        assert store.cached_step("step-ok").status == "parse_error"  # type: ignore[union-attr]
