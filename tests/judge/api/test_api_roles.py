"""Roles and ownership against the real service (uvicorn on 127.0.0.1), one test per finding of
issue 16: a reviewer key could upload cards, route and export gold; any key could read, resume
and list another key's jobs; blind review leaked the judge's decision, score and label to a
reviewer (GET /v1/routing, the label response, the queue page). The route-by-route matrix is
tests/judge/api/test_api_role_matrix.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge.review import route
from judge.store import Store
from judge.testing.loopback import LoopbackServer
from tests.review_fixtures import (
    MODEL,
    RunningService,
    make_card,
    make_case,
    make_judgment,
    page_login,
    responder,
    running_service,
    scripted_case,
    seed_store,
)

RUBRIC = "agent-run-success@1"


@pytest.fixture
def service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[RunningService, LoopbackServer]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with (
        LoopbackServer(responder) as loopback,
        running_service(
            tmp_path / "roles.db", models=(MODEL,), api_base=loopback.api_base, rate_per_s=0
        ) as svc,
    ):
        yield svc, loopback


def _as(svc: RunningService, who: str) -> httpx.Client:
    return httpx.Client(base_url=svc.url, headers={"X-API-Key": svc.keys[who]}, timeout=60)


def _wait(http: httpx.Client, job_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 120
    while True:
        job = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return dict(job)
        time.sleep(0.1)


def test_a_reviewer_key_cannot_upload_cards_route_or_export_gold(
    service: tuple[RunningService, LoopbackServer],
) -> None:
    svc, _ = service
    card = make_card()
    with _as(svc, "ann") as ann, _as(svc, "cat") as cat, _as(svc, "ops") as ops:
        for reviewer in (ann, cat):
            r = reviewer.post("/v1/cards", json={"yaml": card.to_yaml()})
            assert r.status_code == 403, r.text
            assert r.json()["error"]["code"] == "forbidden"
            assert reviewer.post("/v1/routing", json={"card": card.card_digest}).status_code == 403
            assert reviewer.get("/v1/routing").status_code == 403
            assert reviewer.get("/v1/review/gold").status_code == 403
            assert reviewer.get("/v1/review/labels").status_code == 403
            assert reviewer.post("/v1/jobs", json={"cases": []}).status_code == 403
        with Store(svc.db) as store:
            assert store.card_records() == []  # nothing was stored by the refused upload
        # The admin may.
        assert ops.post("/v1/cards", json={"yaml": card.to_yaml()}).status_code == 201


def test_a_client_key_judges_but_cannot_administer_or_review(
    service: tuple[RunningService, LoopbackServer],
) -> None:
    svc, _ = service
    card = make_card()
    with _as(svc, "ops") as ops, _as(svc, "dan") as dan:
        assert ops.post("/v1/cards", json={"yaml": card.to_yaml()}).status_code == 201
        case = scripted_case(1, 0.6).model_dump(mode="json")
        r = dan.post("/v1/judge", json={"case": case, "card": card.card_digest, "rubric": RUBRIC})
        assert r.status_code == 200 and r.json()["routing"][0]["decision"] == "review"
        assert dan.get("/v1/cards").status_code == 200  # to name a card when judging
        for method, path in [
            ("POST", "/v1/cards"),
            ("POST", "/v1/routing"),
            ("GET", "/v1/routing"),
            ("GET", "/v1/review/gold"),
            ("GET", "/v1/review/queue"),
            ("GET", "/v1/keys"),
            ("POST", "/v1/keys"),
            ("GET", f"/v1/cards/{card.card_digest}/audit"),
        ]:
            r = dan.request(method, path, json={})
            assert r.status_code == 403, (method, path, r.status_code)


def test_jobs_are_owned_by_the_key_that_created_them(
    service: tuple[RunningService, LoopbackServer],
) -> None:
    svc, loopback = service
    cases = [scripted_case(i, 0.9).model_dump(mode="json") for i in range(2)]
    with _as(svc, "dan") as dan, _as(svc, "eve") as eve, _as(svc, "ops") as ops:
        made = dan.post("/v1/jobs", json={"cases": cases, "rubric": RUBRIC})
        assert made.status_code == 202
        job_id = made.json()["id"]
        assert _wait(dan, job_id)["status"] == "done"
        assert dan.get(f"/v1/jobs/{job_id}/results").json()["total"] == 2
        # Another client: the job does not exist for it (404, not 403: ids do not leak), with
        # the very message an unknown id gets.
        unknown = eve.get("/v1/jobs/job-0000000000000000").json()["error"]["message"]
        for method, path in [
            ("GET", f"/v1/jobs/{job_id}"),
            ("GET", f"/v1/jobs/{job_id}/results"),
            ("POST", f"/v1/jobs/{job_id}/resume"),
        ]:
            r = eve.request(method, path)
            assert r.status_code == 404, (method, path, r.status_code, r.text)
            message = r.json()["error"]["message"]
            assert message == unknown.replace("job-0000000000000000", job_id)
        assert eve.get("/v1/jobs").json()["jobs"] == []
        assert [j["id"] for j in dan.get("/v1/jobs").json()["jobs"]] == [job_id]
        # The refused resume ran nothing.
        assert dan.get(f"/v1/jobs/{job_id}").json()["status"] == "done"
        calls = len(loopback.requests)
        # An admin sees and may resume every job.
        assert [j["id"] for j in ops.get("/v1/jobs").json()["jobs"]] == [job_id]
        assert ops.get(f"/v1/jobs/{job_id}").status_code == 200
        assert ops.post(f"/v1/jobs/{job_id}/resume").status_code == 202
        assert _wait(ops, job_id)["status"] == "done"
        assert len(loopback.requests) == calls  # served from the store
        # A reviewer has no jobs at all.
    with _as(svc, "ann") as ann:
        assert ann.get("/v1/jobs").status_code == 403
        assert ann.get(f"/v1/jobs/{job_id}").status_code == 403


@pytest.fixture
def blind_service(tmp_path: Path) -> Iterator[tuple[RunningService, dict[str, float]]]:
    """A store with three cases routed blind to review (uncertain scores), served."""
    db = tmp_path / "blind.db"
    scores = {"case-0": 0.62, "case-1": 0.47, "case-2": 0.58}
    with Store(db) as store:
        cases = [make_case(i) for i in range(3)]  # agent model: vendor/agent-model-x
        judgments = [make_judgment(c.id, scores[c.id]) for c in cases]
        seed_store(store, cases, judgments)
        run = route(store, make_card(), audit_fraction=0.0, blind=True)
        assert run.enqueued == 3
    with running_service(db, rate_per_s=0) as svc:
        yield svc, scores


def _leaks(text: str, scores: dict[str, float]) -> list[str]:
    """What of the judge's output a response shows: a score or the review priority computed
    from it (as a number, not a digit run inside a timestamp), the judge model, the agent
    model, the routing reason."""
    numbers = [*scores.values(), *(1 - abs(2 * p - 1) for p in scores.values())]
    found = [
        f"{p:.2f}"
        for p in numbers
        if re.search(r"(?<![\d.])" + re.escape(f"{p:.2f}".rstrip("0")) + r"\d*(?![\d:])", text)
        or re.search(r"(?<![\d.])" + f"{p * 100:.0f}" + "%", text)
    ]
    found += [s for s in (MODEL, "vendor/agent-model-x", "outside_bands") if s in text]
    found += re.findall(r'"auto_label": ?"[^"]*"', text)
    return found


def test_blind_review_never_shows_a_reviewer_the_verdict_or_score(
    blind_service: tuple[RunningService, dict[str, float]],
) -> None:
    svc, scores = blind_service
    with _as(svc, "ann") as ann, _as(svc, "cat") as cat, _as(svc, "ops") as ops:
        # The finding: the routing decisions (decision, score, label) by case id.
        for reviewer in (ann, cat):
            r = reviewer.get("/v1/routing", params={"case_id": "case-0"})
            assert r.status_code == 403
            assert _leaks(r.text, scores) == []
        # The admin still reads them (that is where the scores are).
        assert ops.get("/v1/routing", params={"case_id": "case-0"}).json()["decisions"]
        queue = ann.get("/v1/review/queue", params={"mine": "false"})
        assert queue.status_code == 200 and len(queue.json()["items"]) == 3
        assert _leaks(queue.text, scores) == []
        item_id = queue.json()["items"][0]["id"]
        view = ann.get(f"/v1/review/items/{item_id}")
        assert view.json()["verdicts"] == [] and _leaks(view.text, scores) == []
        # Labelling a blind item returned the item's full record (auto label, score, model).
        label = ann.post(f"/v1/review/items/{item_id}/labels", json={"label": "pass"})
        assert label.status_code == 201, label.text
        item = label.json()["item"]
        assert item["score"] is None and item["auto_label"] is None and item["model"] is None
        assert item["reason"] == "hidden" and label.json()["audit"] is None
        assert _leaks(label.text, scores) == []
    # The review page: the queue shows no priority (it is computed from the score), no card.
    with httpx.Client(base_url=svc.url, follow_redirects=False) as browser:
        assert page_login(browser, svc.keys["bob"]).status_code == 303
        page = browser.get("/review")
        assert page.status_code == 200 and "hidden (blind)" in page.text
        priorities = [f"{1 - abs(p - 0.5) * 2:.2f}" for p in scores.values()]
        assert [p for p in priorities if f"<td>{p}</td>" in page.text] == []
        assert _leaks(page.text, scores) == []
        item_page = browser.get(f"/review/items/{item_id}")
        assert item_page.status_code == 200 and 'id="verdicts"' not in item_page.text
        assert _leaks(item_page.text, scores) == []


def test_keys_are_managed_by_admin_keys_only(
    service: tuple[RunningService, LoopbackServer],
) -> None:
    svc, _ = service
    with _as(svc, "ops") as ops, _as(svc, "ann") as ann:
        made = ops.post("/v1/keys", json={"name": "fay", "role": "client"})
        assert made.status_code == 201
        key = made.json()["key"]
        assert made.json()["role"] == "client" and key.startswith("jk_")
        with httpx.Client(base_url=svc.url, headers={"X-API-Key": key}) as fay:
            assert fay.get("/v1/whoami").json() == {"name": "fay", "role": "client"}
            assert fay.post("/v1/keys", json={"name": "gus", "role": "admin"}).status_code == 403
        names = {k["name"]: k["role"] for k in ops.get("/v1/keys").json()["keys"]}
        assert names["fay"] == "client" and names["ops"] == "admin"
        assert "hash" not in json.dumps(ops.get("/v1/keys").json())
        assert ann.get("/v1/keys").status_code == 403
        assert ann.delete("/v1/keys/fay").status_code == 403
        assert ops.delete("/v1/keys/fay").status_code == 200
        with httpx.Client(base_url=svc.url, headers={"X-API-Key": key}) as fay:
            assert fay.get("/v1/whoami").status_code == 401
        bad = ops.post("/v1/keys", json={"name": "hal", "role": "root"})
        assert bad.status_code == 422


def test_keys_create_lists_the_four_roles_and_the_first_key_is_admin(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")

    def keys(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "judge", "keys", *args], capture_output=True, text=True
        )

    help_text = keys("create", "--help").stdout
    for role in ("admin", "client", "reviewer", "adjudicator"):
        assert role in help_text
    first = keys("create", "--name", "root", "--db", db)
    assert first.returncode == 0 and first.stdout.startswith("jk_")
    assert "(admin)" in first.stderr and "first key of an empty store is an admin" in first.stderr
    second = keys("create", "--name", "rita", "--db", db)
    assert second.returncode == 0 and "(reviewer)" in second.stderr
    assert "first key" not in second.stderr
    client = keys("create", "--name", "svc", "--role", "client", "--db", db)
    assert client.returncode == 0 and "(client)" in client.stderr
    wrong = keys("create", "--name", "x", "--role", "root", "--db", db)
    assert wrong.returncode == 2 and "admin" in wrong.stderr
    listed = keys("list", "--db", db).stdout
    assert " admin " in listed and " client " in listed and " reviewer " in listed
