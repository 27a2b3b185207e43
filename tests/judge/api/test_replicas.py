"""Several `judge serve` replicas on one PostgreSQL database, for real: separate processes, the
loopback model server answering over HTTP, one replica killed with SIGKILL mid-way.

- 200 cases submitted as jobs round-robin to two replicas; one is killed while judging; every job
  ends once, on the survivor when the killed one held it; every judgment is stored once; the
  model is paid at most once per judgment plus the calls that were in flight in the dead one.
- Two reviewers label the same 50 items at the same moment through two replicas: no label is
  lost, agreement and adjudication come out as worked by hand; a key revoked through one replica
  is refused by the other at once.
- A key's rate limit is one bucket across replicas; an idempotency key raced through both
  replicas makes one job (two apps in this process on one database).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import judge
import judge.service
from judge.api.client import APIError, JudgeClient
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from judge.testing.processes import free_port
from tests.review_fixtures import (
    MODEL,
    make_card,
    make_case,
    make_judgment,
    page_login,
    responder,
    running_service,
    scripted_case,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

RUBRIC = "agent-run-success@1"
#: Short leases and claims, so that a dead replica's work is taken over within seconds.
FAST = {"JUDGE_JOB_LEASE_S": "4", "JUDGE_JOB_POLL_S": "0.3", "JUDGE_CALL_CLAIM_S": "6"}
WORKERS, CONCURRENCY = 2, 4


@contextmanager
def replicas(
    url: str,
    n: int,
    tmp: Path,
    api_base: str | None = None,
    *,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """``n`` `judge serve` processes on the store ``url`` (JUDGE_DB), each on its own port;
    ``extra``: more options of judge serve; ``env``: variables over FAST's."""
    env = {
        **os.environ,
        **FAST,
        **(env or {}),
        "JUDGE_DB": url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    started = []
    for i in range(n):
        port = free_port()
        args = [
            sys.executable,
            "-m",
            "judge",
            "serve",
            "--port",
            str(port),
            "--model",
            MODEL,
            "--rate",
            "0",
            "--workers",
            str(WORKERS),
            "--concurrency",
            str(CONCURRENCY),
            "--log-level",
            "warning",
        ]
        if api_base:
            args += ["--api-base", api_base]
        args += extra
        log = (tmp / f"replica-{i}.log").open("wb")
        started.append(
            (subprocess.Popen(args, env=env, stdout=log, stderr=log), f"http://127.0.0.1:{port}")
        )
    try:
        yield started
    finally:
        for proc, _ in started:
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in started:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)


def _ready(base: str, key: str, proc: subprocess.Popen[bytes], tmp: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            logs = "\n".join(p.read_text() for p in tmp.glob("replica-*.log"))
            pytest.fail(f"a replica exited ({proc.returncode}):\n{logs[-3000:]}")
        try:
            if httpx.get(base + "/v1/whoami", headers={"X-API-Key": key}, timeout=2).is_success:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"replica {base} did not start")


def _keys(url: str) -> dict[str, str]:
    with Store(url) as store:
        return {
            name: judge.service.create_key(store, name, role)[1]
            for name, role in (
                ("ops", "admin"),
                ("ann", "reviewer"),
                ("bob", "reviewer"),
                ("cat", "adjudicator"),
                ("dan", "client"),
            )
        }


def test_two_replicas_one_killed_every_job_ends_once_nothing_paid_twice(
    pg_url: str, tmp_path: Path
) -> None:
    keys = _keys(pg_url)
    cases = [scripted_case(i, 0.9) for i in range(200)]
    jobs_of_cases = [cases[i : i + 4] for i in range(0, 200, 4)]  # 50 jobs of 4 cases
    # Slow enough answers that the kill finds calls in flight.
    with LoopbackServer(_slow) as model, replicas(pg_url, 2, tmp_path, model.api_base) as procs:
        for proc, base in procs:
            _ready(base, keys["ann"], proc, tmp_path)
        # Jobs are a client's to submit (reviewers label, they do not judge).
        clients = [JudgeClient(base, keys["dan"], timeout=30) for _, base in procs]
        ids = [
            clients[i % 2].submit_job(batch, rubric=RUBRIC).id
            for i, batch in enumerate(jobs_of_cases)
        ]
        # Kill replica 0 once a good part is stored and it holds jobs.
        victim, _ = procs[0]
        deadline = time.monotonic() + 120
        with Store(pg_url) as store:
            while store.count() < 60:
                assert time.monotonic() < deadline, "too slow before the kill"
                time.sleep(0.05)
            held = [r for r in store.job_leases() if r["status"] == "running"]
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(10)
            killed_at = len(model.requests)
            dead_jobs = {r["id"] for r in held if r["lease_owner"].split(":")[1] == str(victim.pid)}
        assert dead_jobs, "the killed replica held no job: nothing was tested"
        survivor = clients[1]
        for job_id in ids:
            done = survivor.wait(job_id, timeout=180)
            assert done.status == "done", (job_id, done.error)
            assert done.n_done == 4 and done.counts.get("ok") == 4, done
        for c in clients:
            c.close()
        with Store(pg_url) as store:
            leases = {r["id"]: r for r in store.job_leases()}
            n_rows = store.count()
            keys_stored = {
                r["cache_key"] for r in store.backend.query("SELECT cache_key FROM judgments")
            }
            results = store.backend.query(
                "SELECT job_id, count(*) AS n FROM job_results GROUP BY job_id"
            )
    survivor_pid = str(procs[1][0].pid)
    # Every job ended exactly once; the killed replica's jobs ended on the survivor.
    assert all(r["status"] == "done" and r["lease_owner"] is None for r in leases.values())
    for job_id in dead_jobs:
        assert leases[job_id]["finished_by"].split(":")[1] == survivor_pid
        assert leases[job_id]["attempts"] == 2
    assert {r["job_id"]: r["n"] for r in results} == {job_id: 4 for job_id in ids}
    # Every judgment stored once; calls at most one per judgment plus those in flight then.
    assert n_rows == len(keys_stored) == 200
    in_flight = WORKERS * CONCURRENCY
    assert 200 <= len(model.requests) <= 200 + in_flight, (len(model.requests), killed_at)
    print(
        f"model calls {len(model.requests)} for 200 judgments ({killed_at} before the kill); "
        f"{len(dead_jobs)} job(s) resumed on the survivor"
    )  # shown with pytest -s


def _slow(request: dict[str, Any]) -> Reply:
    reply: Reply = responder(request)
    reply.delay_s = 0.05
    return reply


def test_two_reviewers_label_the_same_items_at_once_through_two_replicas(
    pg_url: str, tmp_path: Path
) -> None:
    keys = _keys(pg_url)
    n = 50
    with Store(pg_url) as store:
        for i in range(n):
            store.put_case(make_case(i))
            store.put(make_judgment(f"case-{i}", 0.5))  # inside the review band
        run = judge.route(store, make_card(), audit_fraction=0.0, double_fraction=1.0)
        assert run.enqueued == n
    # ann says fail on every third item, bob on every fourth: they disagree where exactly one
    # of i % 3 == 0 and i % 4 == 0 holds.
    ann_labels = {f"case-{i}": "fail" if i % 3 == 0 else "pass" for i in range(n)}
    bob_labels = {f"case-{i}": "fail" if i % 4 == 0 else "pass" for i in range(n)}
    with LoopbackServer(responder) as model, replicas(pg_url, 2, tmp_path, model.api_base) as procs:
        for proc, base in procs:
            _ready(base, keys["ann"], proc, tmp_path)
        (_, one), (_, two) = procs
        ann, bob = JudgeClient(one, keys["ann"]), JudgeClient(two, keys["bob"])
        items = {i.case_id: i.id for i in ann.review_queue(mine=False, limit=100)}
        assert len(items) == n
        order = sorted(items)
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def label(client: JudgeClient, labels: dict[str, str]) -> None:
            try:
                for case_id in order:
                    barrier.wait(30)  # both reviewers label this item at the same moment
                    client.label(items[case_id], labels[case_id])
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)
                barrier.abort()

        threads = [
            threading.Thread(target=label, args=a) for a in ((ann, ann_labels), (bob, bob_labels))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        labels = JudgeClient(one, keys["ops"]).labels()  # all labels: an admin's view
        given = {(lb.item_id, lb.reviewer): lb.label for lb in labels}
        assert len(labels) == 2 * n  # no label lost
        for case_id in order:
            assert given[(items[case_id], "ann")] == ann_labels[case_id]
            assert given[(items[case_id], "bob")] == bob_labels[case_id]
        disputed = sorted(c for c in order if ann_labels[c] != bob_labels[c])
        # i in 0..49: i%3==0 -> 17 items, i%4==0 -> 13, both (i%12==0) -> 5: 17+13-10 = 20
        assert len(disputed) == 20
        cat = JudgeClient(two, keys["cat"])
        assert sorted(i.case_id for i in cat.review_queue(limit=100)) == disputed
        # Agreement: po = 30/50 = 0.6; ann fail 17/50, bob fail 13/50;
        # pe = (17*13 + 33*37) / 2500 = (221 + 1221) / 2500 = 0.5768;
        # kappa = (0.6 - 0.5768) / (1 - 0.5768) = 0.0232 / 0.4232 = 0.054820...
        (pair,) = JudgeClient(one, keys["cat"]).agreement()
        assert pair.n == n and pair.raw == pytest.approx(0.6)
        assert pair.kappa == pytest.approx(0.0232 / 0.4232)
        # Adjudication through both replicas at once, each item once.
        halves = [disputed[0::2], disputed[1::2]]
        adjudicators = [JudgeClient(one, keys["cat"]), JudgeClient(two, keys["cat"])]

        def adjudicate(client: JudgeClient, cases: list[str]) -> None:
            for case_id in cases:
                assert client.label(items[case_id], "fail").item.status == "done"

        threads = [
            threading.Thread(target=adjudicate, args=(c, h))
            for c, h in zip(adjudicators, halves, strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert cat.review_queue(limit=100) == []
        # The same reviewer on the same item through both replicas at once: one label kept,
        # the other refused with 409; never two.
        with Store(pg_url) as store:
            store.put_case(make_case("race"))
            store.put(make_judgment("case-race", 0.5))
            judge.route(store, make_card(), audit_fraction=0.0, double_fraction=1.0)
        (race,) = [i for i in ann.review_queue(limit=100) if i.case_id == "case-race"]
        ann_two = JudgeClient(two, keys["ann"])
        outcomes: list[int] = []

        def once(client: JudgeClient) -> None:
            barrier_two.wait(10)
            try:
                client.label(race.id, "pass")
                outcomes.append(200)
            except APIError as err:
                outcomes.append(err.status)

        barrier_two = threading.Barrier(2)
        threads = [threading.Thread(target=once, args=(c,)) for c in (ann, ann_two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(outcomes) == [200, 409]
        assert len(JudgeClient(one, keys["ops"]).labels(race.id)) == 1
        # A page session opened on one replica works on the other; revoking the key (here
        # `judge keys revoke` on the shared store) is refused by both at once.
        with httpx.Client(base_url=one, timeout=30) as browser:
            login = page_login(browser, keys["bob"])
        assert login.status_code == 303, login.text
        cookie = {"cookie": f"judge_session={login.cookies['judge_session']}"}
        assert httpx.get(two + "/review", headers=cookie, timeout=60).status_code == 200
        bob_key = {"X-API-Key": keys["bob"]}
        assert httpx.get(two + "/v1/whoami", headers=bob_key, timeout=30).status_code == 200
        with Store(pg_url) as store:
            assert judge.service.revoke_key(store, "bob")
        assert httpx.get(two + "/v1/whoami", headers=bob_key, timeout=30).status_code == 401
        assert httpx.get(one + "/v1/whoami", headers=bob_key, timeout=30).status_code == 401
        assert httpx.get(two + "/review", headers=cookie, timeout=60).status_code == 303


def test_rate_limits_and_idempotency_keys_hold_across_replicas(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with (
        LoopbackServer(responder) as model,
        running_service(
            pg_url,
            rate_per_s=0.5,
            burst=3,
            models=(MODEL,),  # type: ignore[arg-type]
            api_base=model.api_base,
        ) as a,
        running_service(
            pg_url,
            keys=(),
            rate_per_s=0.5,
            burst=3,
            models=(MODEL,),  # type: ignore[arg-type]
            api_base=model.api_base,
        ) as b,
    ):
        ann = {"X-API-Key": a.keys["ann"]}
        # One bucket of 3 for ann, whichever replica she calls.
        codes = [
            httpx.get(url + "/v1/whoami", headers=ann, timeout=30).status_code
            for url in (a.url, b.url, a.url, b.url)
        ]
        assert codes == [200, 200, 200, 429]
        # The same Idempotency-Key sent to both replicas at once makes one job (three requests:
        # the client dan's bucket holds three).
        body = {"cases": [scripted_case(1, 0.9).model_dump(mode="json")], "rubric": RUBRIC}
        bob = {"X-API-Key": a.keys["dan"], "Idempotency-Key": "once"}
        barrier = threading.Barrier(3)
        answers: list[httpx.Response] = []

        def submit(url: str) -> None:
            barrier.wait(10)
            answers.append(httpx.post(url + "/v1/jobs", json=body, headers=bob, timeout=30))

        threads = [threading.Thread(target=submit, args=(u,)) for u in (a.url, b.url, a.url)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(r.status_code for r in answers) == [200, 200, 202]
        assert len({r.json()["id"] for r in answers}) == 1
        with Store(pg_url) as store:
            (job,) = store.jobs()
            deadline = time.monotonic() + 60  # let it finish before the services stop
            while store.job(job.id).status != "done":  # type: ignore[union-attr]
                assert time.monotonic() < deadline
                time.sleep(0.1)
