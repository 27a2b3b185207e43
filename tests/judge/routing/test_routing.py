"""Routing: gates, pooled scores, bands, card refusal, audit sampling, live bounds, the store."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from judge.errors import CardError, InputError
from judge.review import route
from judge.routing import (
    REASONS,
    AuditLabel,
    audit_cards,
    audit_sample,
    calibrate_score,
    live_bounds,
    route_judgments,
)
from judge.store import Store
from judge.types import Judgment
from tests.review_fixtures import (
    MODEL,
    make_card,
    make_cascade_card,
    make_case,
    make_judgment,
    seed_store,
)


def _route(judgments: list[Judgment], **card_args: object) -> dict[str, tuple[str, str]]:
    card = make_card(**card_args)  # type: ignore[arg-type]
    return {d.case_id: (d.decision, d.reason) for d in route_judgments(card, judgments)}


def test_bands_accept_reject_and_review_between() -> None:
    js = [
        make_judgment("hi", 0.95),
        make_judgment("lo", 0.04),
        make_judgment("mid", 0.6),
        make_judgment("edge", 0.9),  # exactly at the accept threshold: accepted (>=)
    ]
    got = _route(js)
    assert got == {
        "hi": ("auto_accept", "in_accept_band"),
        "lo": ("auto_reject", "in_reject_band"),
        "mid": ("review", "outside_bands"),
        "edge": ("auto_accept", "in_accept_band"),
    }


def test_no_certified_band_sends_everything_to_review() -> None:
    got = _route([make_judgment("a", 0.99), make_judgment("b", 0.01)], accept=None, reject=None)
    assert got == {"a": ("review", "no_certified_band"), "b": ("review", "no_certified_band")}


def test_a_reason_and_its_detail_say_no_band_once() -> None:
    from judge.review.views import reason_text

    plain = route_judgments(make_card(accept=None, reject=None), [make_judgment("a", 0.6)])
    sliced = route_judgments(
        make_card(per_slice={"django": (0.9, 0.1)}, slice_key="repo"),
        [make_judgment("case-2", 0.6)],
        cases={"case-2": make_case(2, slices={"repo": "flask"})},
    )
    cascade = route_judgments(
        make_cascade_card([(CHEAP, None, None), (STRONG, None, None)]),
        [make_judgment("c", 0.6, model=CHEAP), make_judgment("c", 0.55, model=STRONG)],
    )
    details = [d.detail for d in (*plain, *sliced, *cascade)]
    assert details == [
        "P(pass) 0.6000",
        "P(pass) 0.6000 (slice repo=flask)",
        f"stage 1: {CHEAP}: P(pass) 0.6000, escalated; stage 2: {STRONG}: P(pass) 0.5500",
    ]
    for d in (*plain, *sliced, *cascade):
        assert d.reason == "no_certified_band"
        item = _item_of(d)
        text = reason_text(item)
        assert text.count("no band") + text.count("no certified band") == 1, text


def _item_of(d: Any) -> Any:
    from judge.types import ReviewItem

    return ReviewItem(
        id="q-1",
        routing_id=d.id,
        card_digest=d.card_digest,
        case_id=d.case_id,
        model=d.model,
        rubric_id=d.rubric_id,
        kind=d.kind,
        reason="audit" if d.audit else d.reason,
        detail=f"audit of {d.decision} ({d.detail})" if d.audit else d.detail,
        audit=d.audit,
        band=d.band,
        auto_label=d.label,
        score=d.score,
        priority=0.0,
        required_labels=1,
        blind=False,
        status="open",
        final_label=None,
        created_at=datetime.now(UTC),
        closed_at=None,
    )


def test_every_reason_and_its_detail_say_each_thing_once() -> None:
    from judge.review.views import reason_text

    js = [
        make_judgment("flag", 0.99, flagged=["E2"]),
        make_judgment("parse", None, status="parse_error"),
        make_judgment("infra", None, status="infra_error"),
        make_judgment("abst", 0.5, status="abstain"),
        make_judgment("ord", 0.9, order="AB"),
        make_judgment("ord", 0.2, order="BA"),
        make_judgment("samp", 0.97, sample=0),
        make_judgment("samp", 0.3, sample=1),
        make_judgment("var", 0.97, variant=0),
        make_judgment("var", 0.3, variant=1),
        make_judgment("bare", 0.99, cited=()),
        make_judgment("out", 0.6),
        make_judgment("in", 0.99),
    ]
    decisions = route_judgments(make_card(), js)
    decisions += route_judgments(make_card(accept=None, reject=None), [make_judgment("nb", 0.6)])
    decisions = [d.model_copy(update={"audit": d.case_id == "in"}) for d in decisions]
    assert len({d.reason for d in decisions}) == len(decisions)
    for d in decisions:
        if d.audit:
            meaning = "a sample of the card's automatic decisions checked by people"
        else:
            meaning = REASONS[d.reason]
        said = {w for w in re.findall(r"[a-z]+", meaning.lower()) if len(w) >= 5}
        detail = set(re.findall(r"[a-z]+", d.detail.lower()))
        assert not said & detail, (d.reason, d.detail, said & detail)
        text = reason_text(_item_of(d))
        assert text.startswith(meaning.split(" checked")[0]), text


def test_a_verdict_citing_no_evidence_shown_is_never_decided_automatically() -> None:
    js = [
        make_judgment("bare", 0.99, cited=()),
        # a citation of an id the judge was not shown is no citation
        make_judgment("made-up", 0.01, cited=()),
        # one variant of three cites nothing: the group goes to review
        make_judgment("one", 0.97, variant=0),
        make_judgment("one", 0.96, variant=1, cited=()),
        make_judgment("one", 0.95, variant=2),
        # an abstention need not cite (it goes to review as an abstention)
        make_judgment("abst", 0.5, status="abstain", cited=()),
        make_judgment("cited", 0.99),
    ]
    made_up = js[1].verdict.model_copy(update={"invalid_citations": ["E42"]})  # type: ignore[union-attr]
    js[1] = js[1].model_copy(update={"verdict": made_up})
    got = {d.case_id: d for d in route_judgments(make_card(), js)}
    assert {k: (d.decision, d.reason) for k, d in got.items()} == {
        "bare": ("review", "uncited"),
        "made-up": ("review", "uncited"),
        "one": ("review", "uncited"),
        "abst": ("review", "abstained"),
        "cited": ("auto_accept", "in_accept_band"),
    }
    assert got["one"].detail == "1 of 3 judgments"
    assert got["made-up"].detail == "1 of 1 judgments; made-up ids: E42"


def test_gates_each_name_their_reason_and_come_before_bands() -> None:
    js = [
        # flagged evidence beats a score deep inside the accept band
        make_judgment("flag", 0.99, flagged=["E2"]),
        make_judgment("parse", None, status="parse_error"),
        make_judgment("infra", None, status="infra_error"),
        make_judgment("abst", 0.5, status="abstain"),
        # three samples: pass, pass, fail -> samples disagree
        make_judgment("samp", 0.97, sample=0),
        make_judgment("samp", 0.96, sample=1),
        make_judgment("samp", 0.3, sample=2),
        # one parse failure among good samples still goes to review
        make_judgment("mixed", 0.99, sample=0),
        make_judgment("mixed", None, sample=1, status="parse_error"),
    ]
    got = _route(js)
    assert got == {
        "flag": ("review", "flagged_evidence"),
        "parse": ("review", "parse_error"),
        "infra": ("review", "provider_failure"),
        "abst": ("review", "abstained"),
        "samp": ("review", "samples_disagreed"),
        "mixed": ("review", "parse_error"),
    }
    assert set(REASONS) >= {r for _, r in got.values()}


def test_prompt_variants_that_disagree_are_named_apart_from_samples() -> None:
    js = [
        # three prompt variants, one sample each: pass, pass, fail -> variants disagree
        make_judgment("var", 0.97, variant=0),
        make_judgment("var", 0.96, variant=1),
        make_judgment("var", 0.3, variant=2),
        # two samples of variant 1 disagree while variant 0 is steady: samples disagree
        make_judgment("samp", 0.97, variant=0),
        make_judgment("samp", 0.96, variant=1, sample=0),
        make_judgment("samp", 0.3, variant=1, sample=1),
        # every variant says pass: the pooled score decides ((0.97 + 0.95 + 0.93) / 3 = 0.95)
        make_judgment("agree", 0.97, variant=0),
        make_judgment("agree", 0.95, variant=1),
        make_judgment("agree", 0.93, variant=2),
    ]
    got = {d.case_id: d for d in route_judgments(make_card(), js)}
    assert (got["var"].decision, got["var"].reason) == ("review", "variants_disagreed")
    assert got["var"].detail == "fail x1, pass x2"
    assert (got["samp"].decision, got["samp"].reason) == ("review", "samples_disagreed")
    assert got["samp"].detail == "prompt variant 1: fail x1, pass x1"
    assert got["agree"].decision == "auto_accept"
    assert got["agree"].score == pytest.approx(0.95)


def test_pooled_score_is_the_mean_over_samples() -> None:
    # (0.95 + 0.85 + 0.92) / 3 = 2.72 / 3 = 0.90667 >= 0.9: accepted, though one sample is 0.85.
    js = [make_judgment("x", p, sample=i) for i, p in enumerate((0.95, 0.85, 0.92))]
    (d,) = route_judgments(make_card(), js)
    assert d.score == pytest.approx(2.72 / 3)
    assert d.decision == "auto_accept" and d.label == "pass"
    assert len(d.judgment_ids) == 3
    # (0.95 + 0.80 + 0.92) / 3 = 0.89: below the threshold, all samples say pass: review.
    js = [make_judgment("y", p, sample=i) for i, p in enumerate((0.95, 0.80, 0.92))]
    (d,) = route_judgments(make_card(), js)
    assert d.score == pytest.approx(0.89) and d.reason == "outside_bands"


def test_pairwise_orders_disagree_and_decide_band() -> None:
    kw = {"rubric": "pairwise-preference", "kind": "pairwise", "decide": 0.8}
    pw = {"rubric": "pairwise-preference"}
    js = [
        # AB says A (P(A) .9), BA says B (P(A) .2): orders disagree
        make_judgment("flip", 0.9, order="AB", **pw),  # type: ignore[arg-type]
        make_judgment("flip", 0.2, order="BA", **pw),  # type: ignore[arg-type]
        # both orders say A: mean P(A) = (0.9 + 0.8) / 2 = 0.85 >= 0.8: decided A
        make_judgment("sure", 0.9, order="AB", **pw),  # type: ignore[arg-type]
        make_judgment("sure", 0.8, order="BA", **pw),  # type: ignore[arg-type]
        # both say B, P(A) (0.3 + 0.25) / 2 = 0.275, confidence 0.725 < 0.8: review
        make_judgment("weak", 0.3, order="AB", **pw),  # type: ignore[arg-type]
        make_judgment("weak", 0.25, order="BA", **pw),  # type: ignore[arg-type]
    ]
    decisions = {d.case_id: d for d in route_judgments(make_card(**kw), js)}  # type: ignore[arg-type]
    assert (decisions["flip"].decision, decisions["flip"].reason) == ("review", "orders_disagreed")
    assert decisions["sure"].decision == "auto_decide" and decisions["sure"].label == "A"
    assert decisions["sure"].score == pytest.approx(0.85)
    assert decisions["weak"].reason == "outside_bands"


def test_calibrators_from_the_card() -> None:
    from calibration.card import ConfidenceRef

    # Platt a=2, b=0 at 0.75: logit = ln 3, z = 2 ln 3 -> odds 9 -> 9/10 = 0.9.
    platt = ConfidenceRef(source="prob", calibrator="platt", calibrator_params={"a": 2, "b": 0})
    assert calibrate_score(0.75, platt) == pytest.approx(0.9)
    # Isotonic through (0.2, 0.1), (0.8, 0.9): at 0.65 -> 0.1 + 0.8 * 0.45 / 0.6 = 0.7; clipped.
    iso = ConfidenceRef(
        source="prob", calibrator="isotonic", calibrator_params={"x": [0.2, 0.8], "y": [0.1, 0.9]}
    )
    assert calibrate_score(0.65, iso) == pytest.approx(0.7)
    assert calibrate_score(0.05, iso) == pytest.approx(0.1)
    assert calibrate_score(0.99, iso) == pytest.approx(0.9)
    # A 0.75 raw score is outside a 0.85 accept band, but inside it once calibrated (0.9).
    card = make_card(accept=0.85, calibrator="platt", calibrator_params={"a": 2, "b": 0})
    (d,) = route_judgments(card, [make_judgment("c", 0.75)])
    assert d.raw_score == pytest.approx(0.75) and d.score == pytest.approx(0.9)
    assert d.decision == "auto_accept"
    with pytest.raises(CardError, match="calibrator 'magic'"):
        calibrate_score(0.5, ConfidenceRef(source="prob", calibrator="magic"))


def test_per_slice_thresholds() -> None:
    card = make_card(per_slice={"django": (0.9, 0.1)}, slice_key="repo")
    js = [make_judgment("case-1", 0.95), make_judgment("case-2", 0.95)]
    cases = {
        "case-1": make_case(1, slices={"repo": "django"}),
        "case-2": make_case(2, slices={"repo": "flask"}),
    }
    got = {d.case_id: d for d in route_judgments(card, js, cases=cases)}
    assert got["case-1"].decision == "auto_accept" and got["case-1"].slice == "django"
    assert got["case-2"].reason == "no_certified_band"
    assert "repo=flask" in got["case-2"].detail


def test_card_for_another_judge_is_refused_with_what_is_there() -> None:
    js = [make_judgment("a", 0.95, model="other/model")]
    with pytest.raises(CardError) as err:
        route_judgments(make_card(), js)
    text = str(err.value)
    assert MODEL in text and "other/model" in text


@pytest.mark.parametrize(
    ("card_args", "judgment_args", "needle"),
    [
        ({"digest": "sha256:old-rubric"}, {}, "rubric digest"),
        ({"selector": "evidence-v0"}, {}, "evidence selector version"),
        ({"created_at": datetime.now(UTC) - timedelta(days=100), "valid_days": 90}, {}, "expired"),
        ({"source": "recorded verdicts", "selector": None}, {}, "binds no rubric"),
    ],
)
def test_stale_or_mismatched_card_is_refused(
    card_args: dict[str, object], judgment_args: dict[str, object], needle: str
) -> None:
    card = make_card(**card_args)  # type: ignore[arg-type]
    js = [make_judgment("a", 0.95, **judgment_args)]  # type: ignore[arg-type]
    with pytest.raises(CardError, match=needle):
        route_judgments(card, js)


def test_audit_sample_is_seeded_stable_and_near_the_fraction() -> None:
    js = [make_judgment(f"c{i}", 0.99) for i in range(1000)]
    decisions = route_judgments(make_card(), js)
    a = audit_sample(decisions, 0.1, seed=7)
    assert a == audit_sample(decisions, 0.1, seed=7)
    assert a != audit_sample(decisions, 0.1, seed=8)
    # Binomial(1000, 0.1): sd 9.5; 70..130 is more than 3 sd either side.
    assert 70 <= len(a) <= 130
    # An item audited among 1000 is audited among any subset (per-item, not per-batch).
    half = [d for d in decisions if d.case_id < "c5"]
    assert audit_sample(half, 0.1, seed=7) == {d.id for d in half} & a
    assert audit_sample(decisions, 0.0) == set()
    with pytest.raises(InputError):
        audit_sample(decisions, 1.5)


def test_live_bound_pools_card_and_audit_counts() -> None:
    card = make_card()  # accept band: n 60, 0 errors, level 0.05, alpha 0.05
    ok = [AuditLabel("accept", None, "pass", "pass")]
    (acc, rej) = live_bounds(card, ok)
    # 0 errors in 61: 1 - 0.05 ** (1/61) = 1 - exp(ln 0.05 / 61) = 0.04794 <= 0.05.
    assert acc.band == "accept" and acc.audit_n == 1 and acc.audit_errors == 0
    assert acc.upper_bound == pytest.approx(1 - 0.05 ** (1 / 61))
    assert not acc.exceeds_alpha and rej.audit_n == 0
    # 1 error in 61: beta.ppf(0.95, 2, 60) = 0.0757 > 0.05: the card is stale.
    bad = [AuditLabel("accept", None, "pass", "fail")]
    (acc, _) = live_bounds(card, bad)
    assert acc.upper_bound == pytest.approx(0.0757, abs=5e-4) and acc.exceeds_alpha
    # "cannot determine" is neither an error nor a success.
    (acc, _) = live_bounds(card, [AuditLabel("accept", None, "pass", "cannot_determine")])
    assert acc.audit_n == 0
    assert math.isclose(acc.upper_bound, 1 - 0.05 ** (1 / 60))


CHEAP, STRONG = "local/cheap", "openai/strong"


def test_cascade_decides_at_the_first_stage_whose_band_holds_the_score() -> None:
    card = make_cascade_card([(CHEAP, 0.9, 0.1), (STRONG, 0.8, 0.3)])
    js = [
        make_judgment("sure", 0.95, model=CHEAP),  # stage 1 accepts; stage 2 never consulted
        make_judgment("sure", 0.05, model=STRONG),
        make_judgment("escalated", 0.5, model=CHEAP),  # stage 1 unsure -> stage 2 rejects
        make_judgment("escalated", 0.2, model=STRONG),
        make_judgment("both-unsure", 0.6, model=CHEAP),
        make_judgment("both-unsure", 0.5, model=STRONG),
        make_judgment("not-yet", 0.5, model=CHEAP),  # reaches stage 2, which has not judged it
        make_judgment("gated", 0.97, model=CHEAP, flagged=["E2"]),
        make_judgment("gated", 0.99, model=STRONG),
    ]
    got = {d.case_id: d for d in route_judgments(card, js)}
    assert {k: (d.decision, d.reason, d.model) for k, d in got.items()} == {
        "sure": ("auto_accept", "in_accept_band", CHEAP),
        "escalated": ("auto_reject", "in_reject_band", STRONG),
        "both-unsure": ("review", "outside_bands", STRONG),
        "not-yet": ("review", "stage_missing", STRONG),
        # A gate is not escalated past: later stages were certified on score escalations only.
        "gated": ("review", "flagged_evidence", CHEAP),
    }
    assert got["sure"].slice == f"stage 1: {CHEAP}" and got["sure"].band == "accept"
    assert got["escalated"].slice == f"stage 2: {STRONG}" and got["escalated"].label == "fail"
    assert got["escalated"].detail.startswith(
        f"stage 1: {CHEAP}: 0.1 < P(pass) 0.5000 < 0.9, escalated; stage 2"
    )
    assert len(got["escalated"].judgment_ids) == 2 and len(got["sure"].judgment_ids) == 1
    assert f"judge it with --model {STRONG}" in got["not-yet"].detail
    # One decision per case and card, whichever stage made it.
    assert len({d.id for d in got.values()}) == 5


def test_cascade_audits_bound_each_stage_and_route_reads_every_stage(
    tmp_path: Path,
) -> None:
    card = make_cascade_card([(CHEAP, 0.9, 0.1), (STRONG, 0.8, 0.3)])
    stage2 = f"stage 2: {STRONG}"
    bounds = live_bounds(card, [AuditLabel("reject", stage2, "fail", "pass")])
    by_key = {(b.slice, b.band): b for b in bounds}
    assert set(by_key) == {
        (f"stage {k}: {m}", n) for k, m in ((1, CHEAP), (2, STRONG)) for n in ("accept", "reject")
    }
    # 1 error in 61 at stage 2's reject band: stale there, stage 1 untouched.
    assert by_key[(stage2, "reject")].exceeds_alpha
    assert by_key[(stage2, "reject")].audit_n == 1
    assert not by_key[(f"stage 1: {CHEAP}", "reject")].audit_n
    with Store(tmp_path / "c.db") as store:
        cases = [make_case(i) for i in range(3)]
        seed_store(
            store,
            cases,
            [
                make_judgment(cases[0].id, 0.95, model=CHEAP),
                make_judgment(cases[1].id, 0.5, model=CHEAP),
                make_judgment(cases[1].id, 0.9, model=STRONG),
                make_judgment(cases[2].id, 0.5, model=CHEAP),
                make_judgment(cases[2].id, 0.99, model="someone/else"),  # not a stage: ignored
            ],
        )
        run = route(store, card, audit_fraction=0.0)
        got = {d.case_id: (d.decision, d.reason, d.model) for d in run.decisions}
        assert got == {
            cases[0].id: ("auto_accept", "in_accept_band", CHEAP),
            cases[1].id: ("auto_accept", "in_accept_band", STRONG),
            cases[2].id: ("review", "stage_missing", STRONG),
        }
        # Waiting for a judge is not work for people: nothing queued. Once the strong judge
        # has judged it, routing again decides it, and its audit is queued.
        assert run.enqueued == 0 and store.count("review_items") == 0
        seed_store(store, [], [make_judgment(cases[2].id, 0.99, model=STRONG)])
        again = route(store, card, audit_fraction=1.0)
        decided = {d.case_id: d for d in again.decisions}[cases[2].id]
        assert (decided.decision, decided.audit) == ("auto_accept", True)
        assert again.enqueued == 3 and store.count("review_items") == 3


def test_cascade_card_with_a_calibrator_is_refused() -> None:
    card = make_cascade_card(
        [(CHEAP, 0.9, 0.1), (STRONG, 0.8, 0.3)],
        calibrator="platt",
        calibrator_params={"a": 1.0, "b": 0.0},
    )
    with pytest.raises(CardError, match="cascade stages are certified on raw scores"):
        route_judgments(card, [make_judgment("x", 0.5, model=CHEAP)])


def _seeded(location: str, n: int = 10) -> Store:
    store = Store(location)
    cases = [make_case(i) for i in range(n)]
    # Half sure passes, a few sure fails, the rest uncertain.
    probs = [0.97, 0.96, 0.99, 0.95, 0.98, 0.03, 0.02, 0.5, 0.6, 0.4][:n]
    seed_store(store, cases, [make_judgment(c.id, p) for c, p in zip(cases, probs, strict=True)])
    return store


def test_route_stores_decisions_and_queues_review_and_audits(store_location: str) -> None:
    with _seeded(store_location) as store:
        card = make_card()
        run = route(store, card, audit_fraction=0.5, seed=3)
        assert len(run.decisions) == 10
        reviews = [d for d in run.decisions if d.decision == "review"]
        assert len(reviews) == 3  # 0.5, 0.6, 0.4
        audited = [d for d in run.decisions if d.audit]
        assert run.audited == len(audited) and all(d.decision != "review" for d in audited)
        assert run.enqueued == 3 + len(audited)
        stored = store.decisions(card=run.card_digest)
        assert {d.id: d for d in stored} == {d.id: d for d in run.decisions}
        # Routing again with the same card replaces decisions and queues nothing twice.
        again = route(store, card, audit_fraction=0.5, seed=3)
        assert again.enqueued == 0
        assert store.count("routing_decisions") == 10
        assert store.count("review_items") == run.enqueued


def test_audit_error_flags_the_card_stale_and_routing_is_refused(store_location: str) -> None:
    from judge.review import add_label, queue

    with _seeded(store_location) as store:
        card = make_card()
        run = route(store, card, audit_fraction=1.0)
        audits = [i for i in queue(store) if i.audit and i.band == "accept"]
        assert audits
        # A correct audit label keeps the card (bound 0.0479 <= 0.05).
        add_label(store, audits[0].id, reviewer="ann", role="reviewer", label="pass")
        (status,) = audit_cards(store, run.card_digest)
        assert not status.stale
        # A wrong auto-accept found by audit: bound on 1 error in 62 > 0.05 -> stale.
        add_label(store, audits[1].id, reviewer="ann", role="reviewer", label="fail")
        (status,) = audit_cards(store, run.card_digest)
        assert status.stale and "accept band" in (status.stale_reason or "")
        with pytest.raises(CardError, match="flagged stale by audit"):
            route(store, card)


def test_route_without_judgments_of_that_judge(store_location: str) -> None:
    with _seeded(store_location) as store, pytest.raises(CardError, match="no stored judgments"):
        route(store, make_card(model="someone/else"))


def test_migrations_create_the_routing_review_access_and_job_columns(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        cols = {t: set(store.db.table(t).columns_dict) for t in store.db.table_names()}
    assert {"digest", "model", "rubric_digest", "selector_version", "yaml", "stale"} <= cols[
        "cards"
    ]
    assert {"card_digest", "case_id", "decision", "reason", "score", "audit"} <= cols[
        "routing_decisions"
    ]
    assert {"status", "priority", "required_labels", "blind", "final_label"} <= cols["review_items"]
    assert {"item_id", "reviewer", "role", "label", "note", "created_at"} <= cols["review_labels"]
    assert {"name", "salt", "hash", "role", "revoked_at"} <= cols["api_keys"]
    assert "secret" not in " ".join(cols["api_keys"])
    assert {"idempotency_key", "request_digest", "status", "n_done"} <= cols["jobs"]
    assert {"job_id", "position", "json"} <= cols["job_cases"]


def test_route_and_review_commands(tmp_path: Path, store_location: str) -> None:
    from click.testing import CliRunner

    from calibration.card import write_card
    from calibration.gold import load_gold
    from judge.cli import cli

    db = store_location  # the commands take a path or a URL alike
    _seeded(store_location).close()
    card = tmp_path / "card.yaml"
    write_card(make_card(), card)
    runner = CliRunner()
    got = runner.invoke(cli, ["route", "--card", str(card), "--db", db, "--audit-fraction", "0"])
    assert got.exit_code == 0, got.output
    assert "10 case(s) routed" in got.output
    assert "auto_accept      5  in_accept_band 5" in got.output
    assert "review           3  outside_bands 3" in got.output
    queue = runner.invoke(cli, ["review", "queue", "--db", db])
    ids = re.findall(r"q-[0-9a-f]{20}", queue.output)
    assert len(ids) == 3
    for item_id in ids:
        done = runner.invoke(
            cli, ["review", "label", item_id, "--label", "fail", "--reviewer", "ann", "--db", db]
        )
        assert done.exit_code == 0 and "done -> fail" in done.output
    out = tmp_path / "g.jsonl"
    exported = runner.invoke(cli, ["review", "export-gold", "--db", db, "--out", str(out)])
    assert exported.exit_code == 0 and "3 gold record(s)" in exported.output
    assert set(load_gold(out).labels().values()) == {"fail"}
    # A card for another judge is refused with the reason, and nothing is routed.
    other = tmp_path / "other.yaml"
    write_card(make_card(model="someone/else"), other)
    refused = runner.invoke(cli, ["route", "--card", str(other), "--db", db])
    assert refused.exit_code != 0
    assert isinstance(refused.exception, CardError)
    assert "someone/else" in str(refused.exception)


def test_keys_commands_print_a_key_once_and_store_a_hash(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judge.cli import cli
    from judge.service.access import verify_key

    db = str(tmp_path / "k.db")
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "create", "--name", "ann", "--db", db])
    assert made.exit_code == 0
    key = made.stdout.strip().splitlines()[0]
    assert key.startswith("jk_")
    again = runner.invoke(cli, ["keys", "create", "--name", "ann", "--db", db])
    assert again.exit_code != 0
    listed = runner.invoke(cli, ["keys", "list", "--db", db])
    assert "ann" in listed.output and key not in listed.output
    with Store(db) as store:
        assert verify_key(store, key) is not None
        assert verify_key(store, key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert runner.invoke(cli, ["keys", "revoke", "ann", "--db", db]).exit_code == 0
    with Store(db) as store:
        assert verify_key(store, key) is None


def test_a_cascade_card_is_accepted_where_one_of_its_stages_judges(tmp_path: Path) -> None:
    from judge.routing import check_card_before_judging
    from judge.rubrics import load_rubric
    from judge.runsets.workflow import load_verified_card

    rubric = load_rubric("agent-run-success@1")
    card = make_cascade_card([(CHEAP, 0.9, 0.1), (STRONG, 0.8, 0.3)])
    check_card_before_judging(card, [STRONG], rubric.digest)
    with pytest.raises(CardError, match="cannot route this request"):
        check_card_before_judging(card, ["someone/else"], rubric.digest)
    path = tmp_path / "c.yaml"
    path.write_text(card.to_yaml())
    assert load_verified_card(str(path), [CHEAP], rubric).policy.cascade
    with pytest.raises(CardError, match="not among the judges"):
        load_verified_card(str(path), ["someone/else"], rubric)
