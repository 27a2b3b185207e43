"""The review page of a run a deterministic check fired on: the check, its reason and the diff
hunk it rests on (judge.review.firings); a person sees why the run was sent."""

from __future__ import annotations

from judge.review import item_view, queue, route
from judge.store import Store
from judge.types import CheckResult
from tests.review_fixtures import make_card, make_case, make_judgment, seed_store

SOFT = CheckResult(
    id="broad-except",
    version=1,
    status="fail",
    criterion="functional",
    evidence=["diff:parser.py@@-1,2+1,2", "E3"],
    reason="new broad exception swallowing in parser.py",
)


def test_the_review_page_shows_the_firing_hunk(store_location: str) -> None:
    judgment = make_judgment("case-0", 0.97)
    assert judgment.verdict is not None
    fired = judgment.model_copy(
        update={"verdict": judgment.verdict.model_copy(update={"checks": [SOFT]})}
    )
    with Store(store_location) as store:
        seed_store(store, [make_case(0)], [fired])
        route(store, make_card(), audit_fraction=0.0)
        (item,) = queue(store)
        assert item.reason == "check_fired"
        view = item_view(store, item.id)
        blind = item_view(store, item.id, force_blind=True)
    (firing,) = view.firings
    assert (firing.check, firing.hard, firing.decided) == ("check:broad-except@1", False, False)
    assert firing.reason == SOFT.reason and firing.evidence == ["E3"]
    (hunk,) = firing.hunks
    assert hunk.path == "parser.py" and hunk.ref == "diff:parser.py@@-1,2+1,2"
    assert [(x.kind, x.old, x.new) for x in hunk.lines] == [
        ("ctx", 1, 1),
        ("del", 2, None),
        ("add", None, 2),
    ]
    assert "check:broad-except@1" in (view.reason_text or "")
    assert blind.firings == []
