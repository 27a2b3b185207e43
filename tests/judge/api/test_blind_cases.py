"""Blindness per case and per reviewer, through the JSON API and the pages.

One case routed twice over HTTP, as ``POST /v1/routing`` without a job id readily does: blind
with one card, open with another. Until a reviewer has labelled the blind item, no item of the
case shows them what the judge said, on any route (``judge.review.blindness``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge.review import queue
from judge.store import Store
from tests.review_fixtures import (
    RunningService,
    form_token,
    make_card,
    make_case,
    make_judgment,
    page_login,
    running_service,
    seed_store,
)

SECRET = "rationale for case-0"  # what the judge said (make_judgment's rationale)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RunningService]:
    db = tmp_path / "blind.db"
    with Store(db) as store:
        seed_store(store, [make_case(0)], [make_judgment("case-0", 0.55)])
    with running_service(db) as svc:
        admin = {"X-API-Key": svc.keys["ops"]}
        for card, blind in ((make_card(), True), (make_card(accept=0.95), False)):
            up = httpx.post(
                svc.url + "/v1/cards", headers=admin, json={"yaml": card.to_yaml()}, timeout=60
            )
            assert up.status_code in (200, 201), up.text
            routed = httpx.post(
                svc.url + "/v1/routing",
                headers=admin,
                json={
                    "card": card.card_digest,
                    "audit_fraction": 0.0,
                    "blind": blind,
                    # the blind item wants two labels: bob still owes it one after ann's
                    "double_fraction": 1.0 if blind else 0.0,
                },
                timeout=60,
            )
            assert routed.status_code == 200 and routed.json()["enqueued"] == 1, routed.text
        yield svc


def _items(svc: RunningService) -> tuple[str, str]:
    with Store(svc.db) as store:
        found = queue(store)
    blind = next(i.id for i in found if i.blind)
    open_ = next(i.id for i in found if not i.blind)
    return blind, open_


def test_the_open_item_of_a_case_owed_a_blind_label_hides_the_judge_on_every_route(
    service: RunningService,
) -> None:
    blind, open_ = _items(service)
    ann = {"X-API-Key": service.keys["ann"]}
    with httpx.Client(base_url=service.url, headers=ann, timeout=60) as api:
        listed = api.get("/v1/review/queue").json()["items"]
        assert {i["id"] for i in listed} == {blind, open_}
        assert all(i["blind"] and i["score"] is None and i["reason"] == "hidden" for i in listed)
        everyone = api.get("/v1/review/queue", params={"mine": "false"}).json()["items"]
        assert all(i["reason"] == "hidden" for i in everyone)
        view = api.get(f"/v1/review/items/{open_}").json()
        assert view["blind"] and view["verdicts"] == [] and view["blind_item"] == blind
        assert SECRET not in str(view) and view["item"]["score"] is None

    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as page:
        assert page_login(page, service.keys["ann"]).status_code == 303
        listing = page.get("/review").text
        assert "0.55" not in listing and "outside" not in listing
        shown = page.get(f"/review/items/{open_}").text
        assert 'id="verdicts"' not in shown and SECRET not in shown
        assert 'id="blind-note"' in shown and f'href="/review/items/{blind}"' in shown
        # ann labels the blind item on the page: the next page says so, and the open item
        # now shows the judge.
        token = form_token(page.get(f"/review/items/{blind}").text)
        origin = {"origin": service.url}
        done = page.post(
            f"/review/items/{blind}/label",
            data={"label": "fail", "note": "", "csrf_token": token},
            headers=origin,
        )
        assert done.status_code == 303
        assert done.headers["location"] == f"/review/next?done={blind}"
        following = page.get(done.headers["location"])
        assert following.headers["location"] == f"/review/items/{open_}?done={blind}"
        landed = page.get(following.headers["location"]).text
        assert 'id="flash"' in landed and "case-0 labelled Fail" in landed
        assert 'id="verdicts"' in landed and SECRET in landed and 'id="blind-note"' not in landed

    # bob still owes the blind item its label: everything stays hidden from him, the answer
    # to his label on the open item included.
    bob = {"X-API-Key": service.keys["bob"]}
    with httpx.Client(base_url=service.url, headers=bob, timeout=60) as api:
        assert api.get(f"/v1/review/items/{open_}").json()["verdicts"] == []
        labelled = api.post(f"/v1/review/items/{open_}/labels", json={"label": "pass"})
        assert labelled.status_code == 201
        item = labelled.json()["item"]
        assert item["blind"] and item["score"] is None and item["auto_label"] is None
        assert item["status"] == "done"


def test_the_flash_is_built_from_the_store_not_from_the_url(service: RunningService) -> None:
    blind, _ = _items(service)
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as page:
        assert page_login(page, service.keys["ann"]).status_code == 303
        # No label of ann on that item, or no such item: nothing is said.
        for done in (blind, "q-nope", "<b>Your key expired</b>"):
            text = page.get("/review", params={"done": done}).text
            assert 'id="flash"' not in text and "expired" not in text
