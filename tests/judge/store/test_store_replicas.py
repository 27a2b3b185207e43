"""What replicas share besides jobs, on SQLite and PostgreSQL: the signing secrets of the page's
forms (rotated without refusing earlier forms) and replica heartbeats (a dead replica's jobs and
call claims are taken before their leases end); a takeover keeps the job's start and progress."""

from __future__ import annotations

import time

import judge.service
from judge.service.signing import SharedSecret, signing_keys
from judge.store import Store
from tests.review_fixtures import make_case


def test_signing_secrets_are_shared_rotated_and_pruned(store_location: str) -> None:
    with Store(store_location) as store:
        assert store.signing_secrets() == []
        first = signing_keys(store)
        assert signing_keys(store) == first  # made once, then read
        assert len(first.current) == 32 and first.accepted == (first.current,)
        time.sleep(0.05)
        rotated = signing_keys(store, rotate_s=0.01, grace_s=60)
        assert rotated.current != first.current
        assert rotated.accepted == (rotated.current, first.current)  # the old one verifies
        time.sleep(0.1)
        # Replaced longer ago than the grace period: the old one is gone.
        pruned = signing_keys(store, rotate_s=3600, grace_s=0.05)
        assert pruned.accepted == (rotated.current,)
        assert len(store.signing_secrets()) == 1
        judge.service.rotate_secret(store, drop_old=True)
        assert len(store.signing_secrets()) == 1
        assert signing_keys(store).current != rotated.current
    # Two replicas see one secret; a secret another replica just added verifies at once.
    one, two = SharedSecret(store_location), SharedSecret(store_location)
    assert one.current() == two.current()
    before = two.current()
    with Store(store_location) as store:
        judge.service.rotate_secret(store)
    assert one.current() == before  # cached for a while...
    with Store(store_location) as store:
        newest = signing_keys(store).current
    assert two.verify(lambda s: s == newest)  # ...but a form signed with the new one passes
    assert not two.verify(lambda s: s == b"x" * 32)


def _job(store: Store, i: int) -> str:
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
    return job.id


def test_a_dead_replicas_job_and_claims_are_taken_before_their_leases_end(
    store_location: str,
) -> None:
    dead, alive = "host-a:101:aaaa", "host-b:202:bbbb"
    with Store(store_location) as store:
        job_id = _job(store, 1)
        store.register_replica(dead, "host-a:101")
        store.register_replica(alive, "host-b:202")
        assert store.claim_job(dead + "/0", 60, dead_after_s=5) == job_id
        first = store.job(job_id)
        assert first is not None and first.started_at is not None
        store.add_job_result(job_id, "j-1")
        assert store.add_job_result(job_id, "j-2") == 2
        assert store.add_job_result(job_id, "j-2") == 2  # the same judgment again: still 2
        assert store.claim_call("ck-1", dead + ":c", 60)
        # Both beat: nothing to take.
        assert store.claim_job(alive + "/0", 60, dead_after_s=5) is None
        assert not store.claim_call("ck-1", alive + ":c", 60, dead_after_s=5)
        # A judge run (no replica row) is never taken for dead by heartbeat.
        assert store.claim_call("ck-2", "host-c:303:cccc", 60)
        time.sleep(0.3)
        assert store.beat_replica(alive)
        assert store.claim_job(alive + "/0", 60, dead_after_s=0.2) == job_id
        assert store.claim_call("ck-1", alive + ":c", 60, dead_after_s=0.2)
        assert not store.claim_call("ck-2", alive + ":c", 60, dead_after_s=0.2)
        # The dead worker can renew nothing; the job kept its start and its progress.
        assert not store.renew_job_lease(job_id, dead + "/0", 60)
        again = store.job(job_id)
        assert again is not None
        assert again.started_at == first.started_at
        assert again.n_done == 2 and again.attempts == 2 and again.taken_over_at is not None
        row = next(r for r in store.job_leases() if r["id"] == job_id)
        assert row["taken_over_from"] == dead + "/0" and row["lease_owner"] == alive + "/0"
        # A replica stopped cleanly is dead at once, unless another replica of its process
        # (two services in one process) still beats.
        store.stop_replica(alive)
        names = {r["name"]: r for r in store.replicas()}
        assert names[alive]["stopped_at"] is not None
        assert not store.beat_replica(alive)
        assert store.claim_job("host-d:404:dddd/0", 60, dead_after_s=5) == job_id
        store.register_replica("host-b:202:other", "host-b:202")
        store.add_job_result(job_id, "j-3")
        job2 = _job(store, 2)
        assert store.claim_job("host-b:202:other/0", 60, job_id=job2, dead_after_s=5) == job2
        assert store.claim_job("host-e:505:eeee/0", 60, job_id=job2, dead_after_s=5) is None
        # Rows of replicas long gone that hold no lease are forgotten.
        assert store.forget_replicas("9999") == 1  # host-a's; host-b's rows hold leases
        store.ping()
