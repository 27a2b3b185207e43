"""The item page of a run a deterministic check fired on shows the check and its hunk, read as
HTML over HTTP (no browser)."""

from __future__ import annotations

from pathlib import Path

import httpx

from judge.review import queue, route
from judge.store import Store
from judge.types import CheckResult
from tests.review_fixtures import (
    make_card,
    make_case,
    make_judgment,
    page_login,
    running_service,
    seed_store,
)


def test_the_item_page_shows_the_check_and_its_hunk(tmp_path: Path) -> None:
    db = tmp_path / "firing.db"
    check = CheckResult(
        id="broad-except",
        version=1,
        status="fail",
        evidence=["diff:parser.py@@-1,2+1,2"],
        reason="new broad exception swallowing",
    )
    judgment = make_judgment("case-0", 0.97)
    assert judgment.verdict is not None
    verdict = judgment.verdict.model_copy(update={"checks": [check]})
    with Store(db) as store:
        seed_store(store, [make_case(0)], [judgment.model_copy(update={"verdict": verdict})])
        route(store, make_card(), audit_fraction=0.0)
        (item,) = queue(store)
    with running_service(db) as svc, httpx.Client(base_url=svc.url, timeout=60) as http:
        assert page_login(http, svc.keys["ann"]).status_code in (200, 303)
        html = http.get(f"/review/items/{item.id}").text
    assert 'id="checks-card"' in html and "check:broad-except@1" in html
    assert "new broad exception swallowing" in html
    assert 'class="diff diff-unified firing-hunk"' in html
    assert "return s.split() if s else []" in html
