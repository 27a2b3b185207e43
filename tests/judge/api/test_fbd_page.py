"""A first bad decision on the review page, in headless Chromium (Playwright): the run's steps as a
timeline with the judge's step highlighted and its step set marked, the step moved with a click
and the keys, the label stored with its step, and the run exported as gold with that step.

The runs are diagnosed through the real runner against the loopback server; the service runs for
real on 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from calibration.gold import load_gold
from judge.review import export_gold, queue_diagnoses
from judge.store import Store
from tests.conftest import CHROMIUM
from tests.fbd_fixtures import N_STEPS, ROLES, diagnose_runs
from tests.review_fixtures import RunningService, running_service

#: Where the screenshot of the timeline is kept for a person to look at.
SCREENSHOT = Path(os.environ.get("JUDGE_FBD_SCREENSHOT", "/tmp/judge-fbd-page.png"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="/usr/bin/chromium is absent: apt-get install -y chromium chromium-driver",
    ),
]


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningService]:
    """run-a (located: its set is step 2) and run-b (step 4 proposed, set 3-5) in the queue."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "fbd-page.db"
    result = diagnose_runs(db, ("run-a", "run-b"))
    sets = {"run-a": [2], "run-b": [3, 4, 5]}
    with Store(db) as store:
        queued = queue_diagnoses(store, [replace(r, step_set=sets[r.case_id]) for r in result.runs])
        assert queued.new == 2
    with running_service(db) as svc:
        yield svc


def _item(svc: RunningService, case_id: str) -> str:
    with Store(svc.db) as store:
        return next(i.id for i in store.fbd_items([case_id]))


def test_move_the_critical_step_on_the_timeline_then_export_it_as_gold(
    service: RunningService, browser: object, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    refused: list[str] = []
    page.on(
        "console",
        lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(service.url + "/review")
    page.fill("#key", service.keys["ann"])
    page.click("button[type=submit]")
    page.wait_for_url(service.url + "/review")
    # The wider step set comes first in the queue.
    assert "run-b" in page.locator("#queue tbody tr").first.inner_text()
    item_b = _item(service, "run-b")
    page.goto(f"{service.url}/review/items/{item_b}")

    # The timeline: every step, one line each, the judge's step highlighted, its set marked.
    steps = page.locator("#timeline li.step")
    assert steps.count() == N_STEPS
    assert page.locator("#timeline li.proposed").get_attribute("id") == "step-4"
    in_set = page.locator("#timeline li.in-set")
    assert [in_set.nth(i).get_attribute("id") for i in range(3)] == ["step-3", "step-4", "step-5"]
    assert "judge's step" in page.inner_text("#step-4")
    assert ROLES[4] in page.inner_text("#step-4")
    assert page.inner_text("#located-text") == "Confirm step 4"
    assert page.locator("#step-4 input[type=radio]").is_checked()
    # The diagnosis beside it: the causal chain and the counterfactual.
    assert page.locator("#causal-chain li").count() == 2
    assert page.inner_text("#counterfactual") == "compare every airline before booking"
    # A step's full text opens under its line.
    full = page.locator("#step-2 details.step-text pre")
    assert not full.is_visible()
    page.click("#step-2 details.step-text summary")
    assert full.is_visible() and "second line of step 2" in full.inner_text()
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # Move the step with a click on another step, then with the keys.
    page.click("#step-5 label.step-line")
    assert page.inner_text("#located-text") == "Move to step 5"
    assert "picked" in (page.get_attribute("#step-5", "class") or "")
    assert "picked" not in (page.get_attribute("#step-4", "class") or "")
    page.keyboard.press("j")
    assert page.inner_text("#located-text") == "Move to step 6"
    page.keyboard.press("k")
    page.keyboard.press("k")
    assert page.inner_text("#located-text") == "Confirm step 4"
    page.click("#step-6 label.step-line")
    assert page.inner_text("#located-text") == "Move to step 6"
    page.fill("#note", "the coder picked the dearer fare")
    page.click("#label-form button[value=located]")
    page.wait_for_url(lambda url: f"/items/{item_b}" not in url)
    assert page.inner_text("#flash") == "Saved: run-b labelled critical step 6."

    # The next item is run-a (located): "no single step" from the keyboard stores no step,
    # though the judge's step is still picked on the form.
    assert page.locator("#timeline li.proposed").get_attribute("id") == "step-2"
    page.keyboard.press("s")
    page.wait_for_url("**/review?done=*")
    assert "labelled No single step" in page.inner_text("#flash")
    assert refused == []
    page.close()

    with Store(service.db) as store:
        (label_b,) = store.review_labels(item_id=item_b)
        (label_a,) = store.review_labels(item_id=_item(service, "run-a"))
        out = export_gold(store, tmp_path / "fbd-gold.jsonl")
    assert (label_b.reviewer, label_b.label, label_b.step) == ("ann", "located", 6)
    assert label_b.note == "the coder picked the dearer fare"
    assert (label_a.label, label_a.step) == ("no_single_step", None)
    gold = {r.id: r for r in load_gold(out.path)}
    assert (gold["run-b"].gold, gold["run-b"].critical_step) == ("fail", 6)
    assert gold["run-b"].critical_agent == ROLES[6]
    assert gold["run-b"].lineage is not None and gold["run-b"].lineage.labeller == "ann"
    assert (gold["run-a"].gold, gold["run-a"].critical_step) == ("fail", None)
    # The API's export says the same.
    api = httpx.get(
        service.url + "/v1/review/gold", headers={"X-API-Key": service.keys["ops"]}, timeout=60
    )
    assert api.status_code == 200 and '"critical_step":6' in api.text.replace(" ", "")


def test_a_located_label_through_the_api_needs_its_step(service: RunningService) -> None:
    item = _item(service, "run-b")
    key = {"X-API-Key": service.keys["bob"]}
    url = f"{service.url}/v1/review/items/{item}/labels"
    refused = httpx.post(url, json={"label": "located"}, headers=key, timeout=60)
    assert refused.status_code in (400, 422) and "critical step" in refused.text
    given = httpx.post(url, json={"label": "located", "step": 3}, headers=key, timeout=60)
    assert given.status_code == 201, given.text
    assert given.json()["item"]["final_step"] == 3
    view = httpx.get(f"{service.url}/v1/review/items/{item}", headers=key, timeout=60).json()
    assert view["fbd"]["proposed_step"] == 4 and len(view["fbd"]["steps"]) == N_STEPS
