"""The review page in headless Chromium (Playwright): log in, label items, export gold.

The service runs for real on 127.0.0.1; cases are judged through the loopback server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from calibration.gold import load_gold
from judge.api.client import JudgeClient
from judge.review import export_gold, items
from judge.store import Store
from judge.testing.loopback import LoopbackServer
from tests.conftest import CHROMIUM
from tests.review_fixtures import (
    MODEL,
    RunningService,
    make_card,
    make_case,
    responder,
    running_service,
    scripted_case,
)

#: Where the screenshot of an item page is kept for a person to look at.
SCREENSHOT = Path(os.environ.get("JUDGE_SCREENSHOT", "/tmp/judge-review-page.png"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="/usr/bin/chromium is absent: apt-get install -y chromium chromium-driver",
    ),
]

#: The cards of these tests are made for v1 of the rubric (one prompt, one call per case).
RUBRIC = "agent-run-success@1"


@pytest.fixture
def routed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningService]:
    """A service whose store holds 6 judged cases, routed: 3 sure ones, 3 in review."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    probs = [0.97, 0.96, 0.02, 0.55, 0.6, 0.45]
    with (
        LoopbackServer(responder) as loopback,
        running_service(tmp_path / "page.db", models=(MODEL,), api_base=loopback.api_base) as svc,
        JudgeClient(svc.url, svc.keys["ops"]) as api,
    ):
        job = api.wait(
            api.submit_job([scripted_case(i, p) for i, p in enumerate(probs)], rubric=RUBRIC).id
        )
        assert job.status == "done"
        card = make_card()
        api.upload_card(card.to_yaml())
        routed = api.route(card.card_digest, job_id=job.id, audit_fraction=0.0)
        assert routed.counts["review"] == 3
        yield svc


def _csp_violations(page: object) -> list[str]:
    """Collects what the browser refuses under the page's Content-Security-Policy (an inline
    script or style left in a template, a handler attribute): it must stay empty."""
    found: list[str] = []
    page.on(  # type: ignore[attr-defined]
        "console",
        lambda m: found.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return found


def _login(page: object, svc: RunningService, who: str = "ann") -> None:
    page.goto(svc.url + "/review")  # type: ignore[attr-defined]
    assert "/login" in page.url  # type: ignore[attr-defined]
    page.fill("#key", svc.keys[who])  # type: ignore[attr-defined]
    page.click("button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_url(svc.url + "/review")  # type: ignore[attr-defined]


def test_label_three_items_in_the_page_then_export_and_load_gold(
    routed: RunningService, browser: object, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    refused = _csp_violations(page)
    _login(page, routed)
    rows = page.locator("#queue tbody tr")
    assert rows.count() == 3
    queued = [rows.nth(i).get_attribute("data-item") for i in range(3)]
    texts = [rows.nth(i).inner_text() for i in range(3)]
    assert "case-4" in texts[0]  # closest to a band edge first (P(pass) 0.6, accept at 0.9)

    # Enter on the queue opens the first item.
    page.keyboard.press("Enter")
    page.wait_for_url("**/review/items/*")
    assert page.locator("#task").inner_text().startswith("Fix bug")
    assert page.locator("#diff .add").count() == 1 and page.locator("#diff .del").count() == 1
    assert page.locator("#verdicts").count() == 1
    # The judge cited E1 and E2, the task and the diff: marked on them, shown once.
    assert page.locator("#task-card .badge.cited").count() == 1
    assert page.locator("#diff-card .badge.cited").count() == 1
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # Item 1: keyboard shortcut P (pass).
    first = page.url
    page.keyboard.press("p")
    page.wait_for_url(lambda url: url != first)
    # Item 2: a note typed after N, then F (fail) from the keyboard after Escape.
    second = page.url
    page.keyboard.press("n")
    page.keyboard.type("the diff never handles None")
    page.keyboard.press("Escape")
    page.keyboard.press("f")
    page.wait_for_url(lambda url: url != second)
    # Item 3: the mouse.
    page.click("button[value=pass]")
    page.wait_for_url("**/review?msg=*")
    assert "Queue empty" in page.inner_text("main")
    assert page.locator("#queue").count() == 0

    with Store(routed.db) as store:
        done = items(store, status="done")
        assert sorted(i.id for i in done) == sorted(queued)
        notes = [x["note"] for x in store.db.table("review_labels").rows_where()]
        assert "the diff never handles None" in [str(n) for n in notes]
        out = export_gold(store, tmp_path / "page-gold.jsonl")
    gold = load_gold(out.path)
    assert gold.n == 3 and set(gold.labels().values()) == {"pass", "fail"}
    assert sorted(gold.labels().values()) == ["fail", "pass", "pass"]
    for record in gold:
        assert record.lineage is not None and record.lineage.labeller == "ann"
    # The keyboard shortcuts above ran from the static scripts; nothing was refused by the CSP.
    assert refused == []
    page.close()


def test_blind_pairwise_page_hides_verdicts_and_maps_shown_labels(
    tmp_path: Path, browser: object
) -> None:
    from judge.review import display_swapped, queue, route
    from tests.review_fixtures import make_judgment, seed_store

    db = tmp_path / "blind.db"
    with Store(db) as store:
        cases = [make_case(i, kind="pairwise", agent_model="vendor/secret-model") for i in range(2)]
        pw = {"rubric": "pairwise-preference"}
        js = [make_judgment(c.id, 0.6, order="AB", **pw) for c in cases]  # type: ignore[arg-type]
        seed_store(store, cases, js)
        card = make_card(rubric="pairwise-preference", kind="pairwise", decide=0.9)
        route(store, card, audit_fraction=0.0, blind=True)
        first = queue(store)[0]
    with running_service(db) as svc:
        # The API hides the same things from a blind reviewer.
        api_queue = httpx.get(svc.url + "/v1/review/queue", headers={"X-API-Key": svc.keys["ann"]})
        assert api_queue.status_code == 200 and MODEL not in api_queue.text
        assert all(i["reason"] == "hidden" for i in api_queue.json()["items"])
        page = browser.new_page()  # type: ignore[attr-defined]
        refused = _csp_violations(page)
        _login(page, svc)
        assert "hidden (blind)" in page.inner_text("#queue")
        page.goto(f"{svc.url}/review/items/{first.id}")
        body = page.inner_text("main")
        assert page.locator("#verdicts").count() == 0
        assert "vendor/secret-model" not in page.content() and MODEL not in page.content()
        assert "Response A" in body and "Response B" in body
        shown_a = page.locator(".candidate").first.inner_text()
        page.keyboard.press("a")  # "A is better", in the shown frame
        page.wait_for_url(lambda url: "/items/" + first.id not in url)
        assert refused == []
        page.close()
    with Store(db) as store:
        (label,) = [
            x for x in store.db.table("review_labels").rows_where("item_id = ?", [first.id])
        ]
        case = store.get_case(first.case_id)
    assert case is not None and case.candidates is not None
    canonical = "B" if display_swapped(first.id) else "A"
    assert label["label"] == canonical and case.candidates[canonical] == shown_a
