"""What the item page says to a first-time reviewer, read as HTML over HTTP (no browser): a
judge that cited nothing is called out, a routing reason reads once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge.review import queue, route
from judge.store import Store
from tests.review_fixtures import (
    RunningService,
    make_card,
    make_case,
    make_judgment,
    page_login,
    running_service,
    seed_store,
)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RunningService]:
    db = tmp_path / "item.db"
    with Store(db) as store:
        bare = make_judgment("case-0", 0.97, cited=())
        assert bare.verdict is not None
        bare = bare.model_copy(
            update={"verdict": bare.verdict.model_copy(update={"invalid_citations": ["E42"]})}
        )
        seed_store(store, [make_case(0), make_case(1)], [bare, make_judgment("case-1", 0.6)])
        # No certified band: every item goes to review, its reason said once.
        route(store, make_card(accept=None, reject=None), audit_fraction=0.0)
    with running_service(db) as svc:
        yield svc


def _page(svc: RunningService, case_id: str) -> str:
    with Store(svc.db) as store:
        item = next(i for i in queue(store) if i.case_id == case_id)
    with httpx.Client(base_url=svc.url, timeout=60) as http:
        assert page_login(http, svc.keys["ann"]).status_code in (200, 303)
        return http.get(f"/review/items/{item.id}").text


def test_a_judge_that_cited_nothing_is_called_out(service: RunningService) -> None:
    html = _page(service, "case-0")
    assert 'id="uncited"' in html and "The judge cited no evidence" in html
    assert "cited E42, not shown to it" in html
    assert "cited no evidence it was shown" in html  # why you see this: the uncited gate
    assert 'id="cited-evidence"' not in html  # no "evidence the judge cited" section


def test_a_cited_verdict_is_not_called_out_and_its_reason_reads_once(
    service: RunningService,
) -> None:
    html = _page(service, "case-1")
    assert 'id="uncited"' not in html and "cites E1" in html
    why = html.split('id="why"', 1)[1].split("</div>", 1)[0]
    assert why.count("no band") == 1 and "P(pass) 0.6000" in why
