"""The two store backends give the same results: schema, insertion order, conflicts, locks,
coordination (job leases, call claims, rate buckets), copies between them, and clear errors.

Every test taking ``store_location`` runs on a SQLite file and on a real PostgreSQL database
(tests/conftest.py starts a throwaway cluster).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import judge
import judge.service
from judge.cli import cli
from judge.store import DuplicateError, Store, StoreError, StoreUnavailable, forget_schema_checks
from judge.store.migrations import MIGRATIONS, index_name
from judge.store.postgres import close_pool, to_format
from judge.testing.processes import free_port
from judge.types import RoutingDecision
from judge.urls import mask_url
from tests.review_fixtures import T0, make_case, make_judgment


def _decision(i: int) -> RoutingDecision:
    return RoutingDecision(
        id=f"r-{i:03d}",
        card_digest="sha256:c",
        case_id=f"case-{i}",
        model="m",
        rubric_id="r",
        rubric_version=1,
        kind="binary",
        decision="review",
        label=None,
        reason="band",
        detail="in the band",
        score=0.5,
        judgment_ids=[f"j-{i}"],
        routed_at=T0,
    )


def test_migrations_run_once_and_make_the_same_tables_and_indexes(store_location: str) -> None:
    with Store(store_location) as store:
        assert store.migrated == [name for name, _ in MIGRATIONS]
        assert store.backend.pending_migrations() == []
        assert set(store.table_names()) == {
            "judgments",
            "calls",
            "cases",
            "batches",
            "cards",
            "routing_decisions",
            "review_items",
            "review_labels",
            "api_keys",
            "sessions",
            "jobs",
            "job_cases",
            "job_results",
            "step_keys",
            "label_plans",
            "call_claims",
            "rate_buckets",
            "exports",
            "signing_secrets",
            "replicas",
            "drift_checks",
            "failure_clusters",
        }
    with Store(store_location) as again:
        assert again.migrated == []
        assert again.integrity() == "ok"
        # The unique index on the cache key has the name sqlite-utils gives it, on both.
        if again.backend.name == "postgresql":
            names = {
                r["indexname"]
                for r in again.backend.query(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
                )
            }
        else:
            names = {
                r["name"]
                for r in again.backend.query("SELECT name FROM sqlite_master WHERE type = 'index'")
            }
        assert index_name("judgments", ["cache_key"]) in names
        assert index_name("jobs", ["key_id", "idempotency_key"]) in names


def test_rows_come_back_in_insertion_order_without_hidden_columns(store_location: str) -> None:
    with Store(store_location) as store:
        # Same created_at for all, ids not in insertion order: only the rowid orders them.
        ids = ["case-9", "case-1", "case-5", "case-3", "case-7"]
        for cid in ids:
            store.put(make_judgment(cid, 0.9))
        assert [j.case_id for j in store.judgments()] == ids
        assert [j.case_id for j in store.judgments(limit=2)] == ids[:2]
        # A judgment replaced for its cache key moves to the end, on both backends.
        store.put(make_judgment("case-1", 0.9))
        assert [j.case_id for j in store.judgments()] == [*ids[:1], *ids[2:], "case-1"]
        store.save_decisions([_decision(i) for i in (3, 1, 2)])
        assert [d.id for d in store.decisions()] == ["r-003", "r-001", "r-002"]
        store.record_call(cache_key="k", model="m", attempt=1, outcome="ok")
        (call,) = store.calls()
        assert "_rowid" not in call and "rowid" not in call and call["id"] >= 1
        assert all("_rowid" not in row for row in store.table_rows("routing_decisions"))
        # Text sorts by bytes on both (PostgreSQL's columns are COLLATE "C").
        for name in ("b", "B", "a", "_x"):
            store.add_key(
                key_id=f"id-{name}", name=f"{name}key", role="reviewer", salt="00", hash="h"
            )
        rows = store.backend.query("SELECT name FROM api_keys ORDER BY name")
        assert [r["name"] for r in rows] == ["Bkey", "_xkey", "akey", "bkey"]


def test_unique_keys_transactions_and_placeholders(store_location: str) -> None:
    with Store(store_location) as store:
        store.add_key(key_id="k1", name="ann", role="reviewer", salt="00", hash="h")
        with pytest.raises(DuplicateError):
            store.add_key(key_id="k2", name="ann", role="reviewer", salt="00", hash="h")
        # A failed transaction leaves nothing behind.
        with pytest.raises(DuplicateError), store.backend.transaction():
            store.add_key(key_id="k3", name="bob", role="reviewer", salt="00", hash="h")
            store.add_key(key_id="k4", name="ann", role="reviewer", salt="00", hash="h")
        assert store.key_name_taken("bob") is False
        # '?' and '%' inside a literal are text, not placeholders.
        row = store.backend.query_one("SELECT '50% ?' AS t, ? AS v", ["x"])
        assert row == {"t": "50% ?", "v": "x"}
        store.put_case(make_case("100%?"))
        assert store.get_case("case-100%?") is not None


def test_streaming_a_table_while_writing_to_it(store_location: str) -> None:
    with Store(store_location) as store:
        for i in range(1200):  # more than one fetch of the stream
            store.put(make_judgment(f"case-{i}", 0.9))
        seen = 0
        for _ in store.judgments():
            seen += 1
            if seen % 300 == 0:  # a write between two rows commits on its own
                store.put_case(make_case(f"w{seen}"))
                assert store.get_case(f"case-w{seen}") is not None
        assert seen == 1200


def test_copy_sqlite_to_postgres_and_back_moves_every_row(tmp_path: Path, pg_url: str) -> None:
    source = tmp_path / "source.db"
    with Store(source) as store:
        for i in range(30):
            store.put_case(make_case(i))
            store.put(make_judgment(f"case-{i}", i / 30))
            store.record_call(
                cache_key=f"k{i}", model="m", attempt=1, outcome="ok", cost_usd=0.001 * i
            )
        store.save_decisions([_decision(i) for i in range(10)])
        judge.service.create_key(store, "ann")
    there = judge.copy_store(source, pg_url)
    assert {t.table: t.target_rows for t in there.tables if t.target_rows} == {
        "api_keys": 1,
        "calls": 30,
        "cases": 30,
        "judgments": 30,
        "routing_decisions": 10,
    }
    back = judge.copy_store(pg_url, tmp_path / "back.db")
    assert [(t.table, t.source_digest) for t in back.tables] == [
        (t.table, t.target_digest) for t in there.tables
    ]
    with Store(source) as a, Store(pg_url) as b, Store(tmp_path / "back.db") as c:
        assert (
            [j.id for j in a.judgments()]
            == [j.id for j in b.judgments()]
            == [j.id for j in c.judgments()]
        )
        # Identity columns go on after the copied ids.
        b.record_call(cache_key="new", model="m", attempt=1, outcome="ok")
        assert b.calls(cache_key="new")[0]["id"] == 31
    # Copying into a store that holds rows is refused; the target is left as it was.
    with pytest.raises(StoreError, match="already holds rows"):
        judge.copy_store(source, pg_url)
    result = CliRunner().invoke(cli, ["db", "copy", str(source), str(tmp_path / "cli.db")])
    assert result.exit_code == 0, result.output
    assert "every table's count and digest match" in result.output


def test_not_a_judge_store(store_location: str) -> None:
    with Store(store_location) as store:
        store.backend.execute("CREATE TABLE other (x TEXT)")
        store.backend.execute("DROP TABLE _migrations")
    forget_schema_checks()
    with pytest.raises(StoreError, match="not a judge store .*other"):
        Store(store_location)


def test_newer_and_older_schemas(store_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    later = MIGRATIONS[9:]
    del MIGRATIONS[9:]  # a store made by a judge that stopped at m009
    try:
        Store(store_location).close()
    finally:
        MIGRATIONS.extend(later)
    forget_schema_checks()
    monkeypatch.setenv("JUDGE_DB_MIGRATE", "off")
    with pytest.raises(StoreError, match="older schema .*m010.*judge db migrate --db"):
        Store(store_location)
    result = CliRunner().invoke(cli, ["db", "migrate", "--db", store_location])
    assert result.exit_code == 0 and (
        f"ran {len(later)} migration(s): {', '.join(name for name, _ in later)}" in result.output
    )
    with Store(store_location) as store:
        assert store.migrated == []
        store.backend.execute(
            "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
            ["m999_from_the_future", "2030-01-01"],
        )
    forget_schema_checks()
    with pytest.raises(StoreError, match="newer judge .*m999"):
        Store(store_location)


def test_a_sqlite_file_with_other_tables_is_not_a_judge_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a judge store"):
        Store(path)
    # Nothing was added to it.
    conn = sqlite3.connect(path)
    assert [n for (n,) in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()


# --- coordination: what replicas sharing one store share ---------------------------------------


def _jobs(store: Store, n: int) -> list[str]:
    ids = []
    for i in range(n):
        job, _ = judge.service.create_job(
            store,
            cases=[make_case(i)],
            rubric="agent-run-success@1",
            models=["m"],
            params={},
            request_digest=f"sha256:{i}",
            key_id="k",
            idempotency_key=None,
        )
        ids.append(job.id)
    return ids


def test_each_job_is_claimed_by_one_worker_and_a_dead_workers_job_is_resumed(
    store_location: str,
) -> None:
    with Store(store_location) as store:
        ids = _jobs(store, 12)
    claimed: dict[str, list[str]] = {}
    lock = threading.Lock()

    def worker(name: str) -> None:
        with Store(store_location) as mine:  # each worker its own store, as replicas have
            while (job_id := mine.claim_job(name, 60)) is not None:
                with lock:
                    claimed.setdefault(job_id, []).append(name)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claimed) == sorted(ids)
    assert all(len(names) == 1 for names in claimed.values())  # exactly one worker each
    with Store(store_location) as store:
        first = ids[0]
        holder = claimed[first][0]
        assert store.claim_job("late", 60) is None  # every lease is live
        assert store.renew_job_lease(first, holder, 0.05)
        assert not store.renew_job_lease(first, "someone-else", 60)
        time.sleep(0.1)  # the holder died: its lease runs out
        assert store.claim_job("survivor", 60) == first
        assert not store.finish_job(first, holder, status="done", counts={}, error=None)
        assert store.finish_job(first, "survivor", status="done", counts={"ok": 1}, error=None)
        lease = next(r for r in store.job_leases() if r["id"] == first)
        started = lease.pop("started_at")
        taken = lease.pop("taken_over_at")
        assert started is not None and taken is not None and taken >= started
        assert lease == {
            "id": first,
            "status": "done",
            "lease_owner": None,
            "lease_until": None,
            "attempts": 2,
            "finished_by": "survivor",
            "taken_over_from": holder,
            "n_steps": None,
            "n_done": 0,
        }
        assert store.job(first).counts == {"ok": 1}  # type: ignore[union-attr]


def test_claims_on_cache_keys(store_location: str) -> None:
    with Store(store_location) as a, Store(store_location) as b:
        assert a.claim_call("k1", "A", 60)
        assert not b.claim_call("k1", "B", 60)
        assert a.claim_call("k1", "A", 60)  # its own claim again
        assert b.call_claim_owner("k1") == "A"
        a.release_call("k1", "B")  # not B's to release
        assert not b.claim_call("k1", "B", 60)
        a.release_call("k1", "A")
        assert b.claim_call("k1", "B", 0.05)
        time.sleep(0.1)  # B died mid-call: its claim lapses
        assert not a.renew_call_claim("k1", "A", 60)
        assert a.claim_call("k1", "A", 60)
        assert not b.renew_call_claim("k1", "B", 60)


def test_rate_buckets_are_shared_by_every_store_object(store_location: str) -> None:
    with Store(store_location) as one, Store(store_location) as two:
        now = 1000.0
        waits = [s.take_rate_token("key", rate=0.5, burst=3, now=now) for s in (one, two, one)]
        assert waits == [0.0, 0.0, 0.0]
        # Empty: one token comes back in 1 / 0.5 = 2 s.
        assert two.take_rate_token("key", rate=0.5, burst=3, now=now) == pytest.approx(2.0)
        assert one.take_rate_token("other", rate=0.5, burst=3, now=now) == 0.0
        # 1 s later half a token has come back: 1 s more to wait.
        assert one.take_rate_token("key", rate=0.5, burst=3, now=now + 1) == pytest.approx(1.0)
        assert two.take_rate_token("key", rate=0.5, burst=3, now=now + 2) == 0.0


# --- errors name the store (password masked) and say what to do --------------------------------


def test_database_urls_that_cannot_be_used() -> None:
    assert mask_url("postgresql://ann:s3cret@db:5432/judge") == "postgresql://ann:***@db:5432/judge"
    assert mask_url("postgresql://db/judge") == "postgresql://db/judge"
    assert to_format("SELECT '%' || ? FROM t WHERE a LIKE '?%' AND b = ?") == (
        "SELECT '%%' || %s FROM t WHERE a LIKE '?%%' AND b = %s"
    )
    with pytest.raises(StoreError, match="unsupported database URL"):
        Store("mysql://ann:s3cret@db/judge")
    with pytest.raises(StoreError, match="names no database") as err:
        Store("postgresql://ann:s3cret@127.0.0.1:5432")
    assert "s3cret" not in str(err.value)


@pytest.mark.postgres
def test_refused_connection_and_missing_database(pg_cluster: Any) -> None:
    closed = f"postgresql://ann:s3cret@127.0.0.1:{free_port()}/judge"
    with pytest.raises(StoreUnavailable, match=r"ann:\*\*\*@127.0.0.1.*cannot connect") as err:
        Store(closed)
    assert "s3cret" not in str(err.value) and "server is running" in str(err.value)
    missing = pg_cluster.url("no_such_db")
    with pytest.raises(StoreUnavailable, match="does not exist.*create it first"):
        Store(missing)
    # Commands take the URL from JUDGE_DB too (main() prints the error and exits 2).
    result = CliRunner().invoke(cli, ["show"], env={"JUDGE_DB": closed})
    assert isinstance(result.exception, StoreUnavailable)
    assert "ann:***@" in str(result.exception) and "s3cret" not in str(result.exception)


@pytest.mark.postgres
def test_a_password_given_as_a_url_parameter_is_never_printed(pg_url: str) -> None:
    """``?password=`` was printed as given (the store's masker knew only ``user:pw@``). The
    throwaway cluster trusts local connections: the password is sent and not needed."""
    url = f"{pg_url}?password=s3cret"
    try:
        with Store(url) as store:
            assert store.location == f"{pg_url}?password=***"
            assert store.address == url  # what a Ray worker connects with
        result = CliRunner().invoke(cli, ["keys", "create", "--name", "ann", "--db", url])
        assert result.exit_code == 0, result.output
        assert "password=***" in result.stderr and "s3cret" not in result.output
    finally:
        close_pool(url)
