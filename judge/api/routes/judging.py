"""``/v1/judge``: judge one case now (and route it with a stored card)."""

from __future__ import annotations

from fastapi import APIRouter

import judge.judging
import judge.review
import judge.routing
import judge.rubrics
from judge.api import schemas as s
from judge.api.deps import Caller, Config, Db, Route, resource
from judge.api.routes.cards import stored_card


def judge_case(body: s.JudgeRequest, caller: Caller, store: Db, config: Config) -> s.JudgeResponse:
    """Judge one case now; with ``card``, route the result and queue it for review if needed."""
    settings = config.settings()
    models = settings.pick_models(body.models)
    rubric = judge.rubrics.load_rubric(body.rubric)
    card = None
    if body.card is not None:
        card = stored_card(store, body.card)
        judge.routing.check_card_before_judging(card, models, rubric.digest)
    judge.judging.check_case_ids(store, [body.case])
    options = settings.options(body.judging_params())
    summary = judge.judging.judge_cases(
        store, [body.case], rubric=rubric, models=models, options=options, source="api judge"
    )
    everything = [o.judgment for o in summary.outcomes]
    routing = []
    if card is not None and everything:
        run = judge.review.route(
            store, card, judgments=everything, audit_fraction=config.audit_fraction
        )
        routing = run.decisions
    return s.JudgeResponse(
        judgments=[j for j in everything if j.provenance.masked_from is None],
        checks=[j for j in everything if j.provenance.masked_from is not None],
        routing=routing,
        errors=[f"case {st.case.id}: {err}" for st, err in summary.errors],
    )


def router() -> APIRouter:
    """The judging route."""
    return resource(
        "judging", Route("POST", "/judge", judge_case, s.JudgeResponse, errors=(404, 409))
    )
