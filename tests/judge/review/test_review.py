"""Review queue: priority, single and double labels, adjudication, agreement, blind view, gold."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibration.gold import load_gold
from judge.errors import ConflictError, JudgeError, NotFoundError
from judge.review import (
    add_label,
    agreement,
    diff_lines,
    display_swapped,
    export_gold,
    get_item,
    item_view,
    pair_agreement,
    queue,
    route,
    to_canonical,
    uncertainty,
)
from judge.store import Store
from tests.review_fixtures import make_card, make_case, make_judgment, seed_store


def _store(location: str, probs: list[float], **options: object) -> Store:
    store = Store(location)
    cases = [make_case(i) for i in range(len(probs))]
    seed_store(store, cases, [make_judgment(c.id, p) for c, p in zip(cases, probs, strict=True)])
    route(store, make_card(), **options)  # type: ignore[arg-type]
    return store


def test_uncertainty_is_one_at_a_half_and_zero_at_the_ends() -> None:
    assert uncertainty(0.5) == 1.0 and uncertainty(None) == 1.0
    assert uncertainty(0.0) == 0.0 and uncertainty(1.0) == 0.0
    assert uncertainty(0.8) == pytest.approx(0.4)  # 1 - |1.6 - 1|


def test_queue_order_audits_then_closest_to_a_band_edge(store_location: str) -> None:
    # Card edges: reject 0.1, accept 0.9. 0.55 is 0.35 from the accept edge (priority
    # 0.9 * (1 - 0.35 / 0.5) = 0.27), 0.7 is 0.2 away (0.54), 0.35 is 0.25 from the reject edge
    # (0.45); 0.99 is auto-accepted and audited (fraction 1): priority 1.
    with _store(store_location, [0.55, 0.7, 0.35, 0.99], audit_fraction=1.0) as store:
        found = [(i.case_id, i.audit, i.priority) for i in queue(store)]
    assert found == [
        ("case-3", True, 1.0),
        ("case-1", False, pytest.approx(0.54)),
        ("case-2", False, pytest.approx(0.45)),
        ("case-0", False, pytest.approx(0.27)),
    ]


def test_priority_without_a_certified_band_and_for_conflicts() -> None:
    from judge.review.queue import review_priority
    from judge.types import RoutingDecision

    def decision(
        score: float | None, reason: str = "no_certified_band", decided: str = "review"
    ) -> RoutingDecision:
        return RoutingDecision(
            id="r-1",
            card_digest="sha256:c",
            case_id="c",
            model="m",
            rubric_id="r",
            rubric_version=1,
            kind="binary",
            decision=decided,
            reason=reason,
            detail="",
            score=score,
            judgment_ids=[],
            routed_at="2025-06-01T00:00:00Z",
        )

    # Without edges the distance is to 0.5: 0.8 is 0.3 away -> 0.9 * 0.4 = 0.36.
    assert review_priority(decision(0.8)) == pytest.approx(0.36)
    # A judge that says pass with no probability on every prompt (score 1) is sure: 0.
    assert review_priority(decision(1.0)) == 0.0
    assert review_priority(decision(None, "abstained")) == 0.9
    assert review_priority(decision(0.66, "variants_disagreed")) == 0.95
    assert review_priority(decision(0.99, "in_accept_band", "auto_accept")) == 1.0
    # With edges at 0.2 and 0.8: 0.75 is 0.05 from the accept edge -> 0.9 * 0.9 = 0.81.
    assert review_priority(decision(0.75, "outside_bands"), [0.2, 0.8]) == pytest.approx(0.81)


def test_single_label_closes_the_item_and_it_leaves_the_queue(store_location: str) -> None:
    with _store(store_location, [0.5, 0.6], audit_fraction=0.0) as store:
        first = queue(store)[0]
        done = add_label(store, first.id, reviewer="ann", role="reviewer", label="fail", note="x")
        assert done.status == "done" and done.final_label == "fail" and done.closed_at
        assert first.id not in {i.id for i in queue(store)}
        with pytest.raises(ConflictError):
            add_label(store, first.id, reviewer="bob", role="reviewer", label="pass")
        with pytest.raises(JudgeError, match="not allowed"):
            add_label(store, queue(store)[0].id, reviewer="ann", role="reviewer", label="A")
        with pytest.raises(NotFoundError):
            add_label(store, "q-nope", reviewer="ann", role="reviewer", label="pass")


def test_double_labels_agree_or_go_to_adjudication(store_location: str) -> None:
    with _store(store_location, [0.5, 0.6], audit_fraction=0.0, double_fraction=1.0) as store:
        a, b = queue(store)
        assert a.required_labels == 2
        # Agreement closes the item.
        add_label(store, a.id, reviewer="ann", role="reviewer", label="pass")
        assert a.id not in {i.id for i in queue(store, reviewer="ann")}  # ann labelled it
        assert a.id in {i.id for i in queue(store, reviewer="bob")}
        with pytest.raises(ConflictError, match="already labelled"):
            add_label(store, a.id, reviewer="ann", role="reviewer", label="fail")
        assert (
            add_label(store, a.id, reviewer="bob", role="reviewer", label="pass").status == "done"
        )
        # Disagreement sends it to an adjudicator who has not labelled it.
        add_label(store, b.id, reviewer="ann", role="reviewer", label="pass")
        state = add_label(store, b.id, reviewer="bob", role="reviewer", label="fail")
        assert state.status == "adjudicate" and state.final_label is None
        assert b.id not in {i.id for i in queue(store, reviewer="cat", role="reviewer")}
        assert b.id in {i.id for i in queue(store, reviewer="cat", role="adjudicator")}
        assert b.id not in {i.id for i in queue(store, reviewer="ann", role="adjudicator")}
        with pytest.raises(ConflictError, match="adjudicat"):
            add_label(store, b.id, reviewer="dan", role="reviewer", label="fail")
        view = item_view(store, b.id, viewer_role="adjudicator")
        assert sorted(x.label for x in view.earlier_labels) == ["fail", "pass"]
        assert item_view(store, b.id).earlier_labels == []  # reviewers label independently
        final = add_label(store, b.id, reviewer="cat", role="adjudicator", label="fail")
        assert final.status == "done" and final.final_label == "fail"


def test_agreement_raw_and_kappa_by_hand() -> None:
    # (pass,pass) (pass,fail) (fail,fail) (fail,fail): po = 3/4.
    # a: pass 2/4, fail 2/4; b: pass 1/4, fail 3/4; pe = .5*.25 + .5*.75 = .5.
    # kappa = (.75 - .5) / (1 - .5) = .5
    got = pair_agreement(
        "a", "b", "binary", [("pass", "pass"), ("pass", "fail"), ("fail", "fail"), ("fail", "fail")]
    )
    assert got.n == 4 and got.agreed == 3 and got.raw == 0.75
    assert got.kappa == pytest.approx(0.5)
    # One label used by both throughout: chance agreement 1, kappa undefined.
    assert pair_agreement("a", "b", "binary", [("pass", "pass")] * 3).kappa is None


def test_agreement_from_the_store_per_reviewer_pair(store_location: str) -> None:
    with _store(store_location, [0.5, 0.6, 0.45], audit_fraction=0.0, double_fraction=1.0) as store:
        ids = [i.id for i in queue(store)]
        for item_id, (x, y) in zip(
            ids, [("pass", "pass"), ("pass", "fail"), ("fail", "fail")], strict=True
        ):
            add_label(store, item_id, reviewer="ann", role="reviewer", label=x)
            add_label(store, item_id, reviewer="bob", role="reviewer", label=y)
        (pair,) = agreement(store)
    # po = 2/3; ann pass 2/3 fail 1/3; bob pass 1/3 fail 2/3; pe = 2/9 + 2/9 = 4/9;
    # kappa = (2/3 - 4/9) / (5/9) = (2/9) / (5/9) = 0.4
    assert (pair.reviewer_a, pair.reviewer_b, pair.n, pair.agreed) == ("ann", "bob", 3, 2)
    assert pair.kappa == pytest.approx(0.4)


def test_blind_view_hides_verdicts_models_and_reasons(store_location: str) -> None:
    with _store(store_location, [0.55], audit_fraction=0.0, blind=True) as store:
        (item,) = queue(store)
        blind = item_view(store, item.id)
        open_view = item_view(store, item.id, force_blind=False)
    assert blind.blind and blind.verdicts == [] and blind.agent_model is None
    assert blind.reason_text is None
    assert not any(e.cited for e in blind.evidence)
    dumped = blind.model_dump_json()
    assert "vendor/agent-model-x" not in dumped and "rationale for" not in dumped
    assert "openai/loopback" not in dumped and "outside" not in dumped
    assert blind.item.score is None and blind.item.reason == "hidden" and not blind.item.audit
    assert open_view.blind  # the item itself is blind: forcing off is not possible


def test_open_view_shows_verdicts_cited_evidence_and_diff(store_location: str) -> None:
    with _store(store_location, [0.55], audit_fraction=0.0) as store:
        (item,) = queue(store)
        view = item_view(store, item.id)
    assert not view.blind and view.verdicts[0].label == "pass"
    assert view.agent_model == "vendor/agent-model-x"
    # The judge cited E1, the task: shown once, as the task, marked cited; not among the rest.
    assert view.task_id == "E1" and view.task_cited and view.diff_id == "E2"
    assert all(e.kind not in ("task", "diff") for e in view.evidence)
    kinds = [d.kind for d in view.diff or []]
    assert kinds == ["file", "file", "hunk", "ctx", "del", "add"]
    # Numbered from the hunk header "@@ -1,2 +1,2 @@".
    assert [(d.old, d.new) for d in view.diff or []][3:] == [(1, 1), (2, None), (None, 2)]
    assert view.diff_rows is not None and view.diff_rows[-1].left is not None
    assert view.diff_rows[-1].left.kind == "del" and view.diff_rows[-1].right is not None
    assert "outside every certified band" in (view.reason_text or "")


def test_diff_lines() -> None:
    got = diff_lines("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c")
    assert [x.kind for x in got] == ["file", "file", "file", "hunk", "del", "add", "ctx"]


def test_pairwise_display_order_is_fixed_per_item_and_labels_map_back(tmp_path: Path) -> None:
    swaps = {f"q-{i}": display_swapped(f"q-{i}") for i in range(200)}
    assert swaps == {k: display_swapped(k) for k in swaps}  # deterministic
    assert 60 < sum(swaps.values()) < 140  # about half are swapped
    store = Store(tmp_path / "p.db")
    cases = [make_case(i, kind="pairwise") for i in range(6)]
    pw = {"rubric": "pairwise-preference"}
    js = [make_judgment(c.id, 0.6, order="AB", **pw) for c in cases]  # type: ignore[arg-type]
    seed_store(store, cases, js)
    card = make_card(rubric="pairwise-preference", kind="pairwise", decide=0.9)
    route(store, card, audit_fraction=0.0)
    for item in queue(store):
        view = item_view(store, item.id)
        case = store.get_case(item.case_id)
        assert case is not None and case.candidates is not None
        shown_a = view.candidates[0]
        assert shown_a.text == case.candidates[shown_a.canonical]
        assert shown_a.canonical == ("B" if display_swapped(item.id) else "A")
        # The judge said canonical A: shown as whichever letter A is displayed under.
        assert view.verdicts[0].label == ("B" if display_swapped(item.id) else "A")
        assert to_canonical(item, "A") == shown_a.canonical
        state = add_label(
            store, item.id, reviewer="ann", role="reviewer", label=to_canonical(item, "A")
        )
        assert state.final_label == shown_a.canonical
    store.close()


def test_export_gold_with_lineage_loads_back(tmp_path: Path, store_location: str) -> None:
    with _store(store_location, [0.5, 0.6, 0.45, 0.99], audit_fraction=1.0) as store:
        ids = [i.id for i in queue(store)]
        labels = ["pass", "fail", "cannot_determine", "pass"]
        for item_id, label in zip(ids, labels, strict=True):
            add_label(store, item_id, reviewer="ann", role="reviewer", label=label, note="ok")
        out = export_gold(store, tmp_path / "gold.jsonl", license="CC-BY-4.0")
        abstained = get_item(store, ids[2])
    assert out.n == 3 and [s[0] for s in out.skipped] == [abstained.id]
    gold = load_gold(tmp_path / "gold.jsonl")
    assert gold.digest == out.digest and gold.n == 3
    by_case = gold.by_id()
    assert abstained.case_id not in by_case
    rec = next(iter(gold))
    assert rec.lineage is not None and rec.lineage.labeller == "ann"
    refs = rec.lineage.derived_from
    assert any(r.startswith("judgment:j-") for r in refs)
    assert any(r.startswith("card:sha256:") for r in refs)
    assert any(r.startswith("routing:r-") for r in refs) and any(
        r.startswith("review:q-") for r in refs
    )
    assert rec.license == "CC-BY-4.0" and rec.gold_source.startswith("human review")
    assert rec.to_case().task.startswith("Fix bug")


def test_export_with_nothing_done_is_a_clear_error(tmp_path: Path, store_location: str) -> None:
    with _store(store_location, [0.5], audit_fraction=0.0) as store, pytest.raises(ConflictError):
        export_gold(store, tmp_path / "g.jsonl")


def test_tool_call_arguments_read_as_text() -> None:
    from judge.review.views import tool_arguments

    call = tool_arguments(
        '[Edit] {"file_path": "/r/a.py", "old_string": "x = \\"a\\"\\n", '
        '"replace_all": false, "lines": [1, 2]}'
    )
    assert call is not None
    tool, args = call
    assert tool == "Edit"
    assert [(a.name, a.value) for a in args] == [
        ("file_path", "/r/a.py"),
        ("old_string", 'x = "a"\n'),
        ("replace_all", "false"),
        ("lines", "[\n  1,\n  2\n]"),
    ]
    # Anything else stays as it was written.
    assert tool_arguments("[Bash] $ git diff") is None
    assert tool_arguments('[Read] {"file_path": ') is None
    assert tool_arguments('[Tool] ["not", "an object"]') is None


def test_a_turn_that_repeats_the_task_is_marked(tmp_path: Path) -> None:
    with Store(tmp_path / "t.db") as store:
        case = make_case(1)
        case = case.model_copy(
            update={
                "trace": [
                    case.trace[0].model_copy(update={"role": "user", "content": case.task}),
                    *case.trace[1:],
                ]
            }
        )
        seed_store(store, [case], [make_judgment(case.id, 0.5)])
        route(store, make_card(), audit_fraction=0.0)
        (item,) = queue(store)
        view = item_view(store, item.id)
    repeated = [e for e in view.evidence if e.same_as == "task"]
    assert len(repeated) == 1 and repeated[0].source == "m0"
    # One verdict, the rubric's only prompt (v1): labelled 1 of 1, with its confidence.
    (verdict,) = view.verdicts
    assert (verdict.variant, verdict.n_variants) == (0, 1) and verdict.confidence == 0.5
