"""The structured answers a judge must return, built from a rubric's content.

A verdict rubric's answer (:func:`answer_model`): ``verdict`` first (the embedded model's
confidence is read from the token after ``{"verdict": "``), the cited evidence ids, one verdict
per criterion for multi-criterion rubrics, a short rationale. An ``fbd`` rubric's answer
(:func:`diagnosis_model`): the first-bad-decision report, read back into step indexes by
:func:`diagnosis_verdict`. Each model is built once per rubric content (an lru_cache).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from judge.evidence import check_citations
from judge.steps import step_of
from judge.types import (
    OWNERS,
    CandidateVerdict,
    Diagnosis,
    StepClaim,
    Strict,
    Verdict,
)

#: The longest rationale kept; longer ones are cut (the rationale is for people, not scored).
RATIONALE_MAX_CHARS = 400
MAX_CITATIONS = 20

CRITERION_LABELS = ("pass", "fail", "not_applicable")


def cut_to(value: Any, limit: int) -> Any:
    """A text longer than ``limit`` characters cut to ``limit`` (an ellipsis last); anything
    else as it is."""
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1].rstrip() + "…"
    return value


def truncate_rationale(value: Any) -> Any:
    # The rationale is for people; a long one is cut rather than failing a whole judgment.
    return cut_to(value, RATIONALE_MAX_CHARS)


def model_name(ref: str, suffix: str) -> str:
    words = re.split(r"[^A-Za-z0-9]+", ref.replace("@", " v"))
    return "".join(w[:1].upper() + w[1:] for w in words if w) + suffix


def literal_of(values: tuple[str, ...]) -> Any:
    """``Literal[values]`` built at run time (typed Any: mypy cannot see through it)."""
    return Literal[values]


@lru_cache(maxsize=128)
def answer_model(
    ref: str, labels: tuple[str, ...], criteria: tuple[str, ...], max_citations: int = MAX_CITATIONS
) -> type[BaseModel]:
    """Build the answer model; field order is the order a judge writes them."""
    citations: Any = (
        list[str],
        Field(
            max_length=max_citations,
            description='Ids of the evidence items that support this, e.g. ["E2", "E5"].',
        ),
    )
    fields: dict[str, Any] = {
        "verdict": (literal_of(labels), Field(description=f"One of {', '.join(labels)}.")),
        "evidence": citations,
    }
    validators: dict[str, Any] = {
        "short_rationale": field_validator("rationale", mode="before")(truncate_rationale)
    }
    if criteria:
        criterion_fields: dict[str, Any] = {
            "id": (literal_of(criteria), Field(description="The criterion id.")),
            "verdict": (
                literal_of(CRITERION_LABELS),
                Field(description="pass, fail or not_applicable."),
            ),
            "evidence": citations,
        }
        criterion_model: Any = create_model(
            model_name(ref, "Criterion"), __base__=Strict, **criterion_fields
        )
        fields["criteria"] = (
            list[criterion_model],
            Field(
                min_length=len(criteria),
                max_length=len(criteria),
                description=f"One verdict per criterion, in this order: {', '.join(criteria)}.",
            ),
        )

        def each_once(answers: list[Any]) -> list[Any]:
            return check_each_once(answers, criteria)

        validators["each_criterion_once"] = field_validator("criteria")(each_once)
    fields["rationale"] = (
        str,
        Field(
            max_length=RATIONALE_MAX_CHARS,
            description="One or two sentences: why, citing evidence ids.",
        ),
    )
    model: type[BaseModel] = create_model(
        model_name(ref, "Answer"), __base__=Strict, __validators__=validators, **fields
    )
    return model


def check_each_once(answers: list[Any], expected: tuple[str, ...]) -> list[Any]:
    """Every criterion answered exactly once."""
    ids = [a.id for a in answers]
    missing = [c for c in expected if c not in ids]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if missing or repeated:
        raise ValueError(
            f"answer every criterion exactly once; missing {missing}, repeated {repeated}"
        )
    return answers


# ---------------------------------------------------------------------------------------------
# First-bad-decision answers (``fbd`` rubrics).

#: The longest free text kept in a diagnosis field (longer is cut, never a failed judgment).
DIAGNOSIS_TEXT_MAX = 400
CONFIDENCES = ("low", "medium", "high")
CHECK_ANSWERS = ("confirmed", "rejected")


def _cut(value: Any) -> Any:
    return cut_to(value, DIAGNOSIS_TEXT_MAX)


def _text(description: str) -> Any:
    return (str, Field(default="", description=description))


@lru_cache(maxsize=32)
def diagnosis_model(
    ref: str, labels: tuple[str, ...], invariants: tuple[str, ...]
) -> type[BaseModel]:
    """The answer of an ``fbd`` rubric; field order is the order a judge writes them."""
    cut = {"cut_text": field_validator("*", mode="before")(_cut)}

    def cut_part(name: str, **fields: Any) -> Any:
        # A part of the answer whose over-long texts are cut.
        return create_model(model_name(ref, name), __base__=Strict, __validators__=cut, **fields)

    claim: Any = cut_part(
        "Claim",
        id=(str, Field(description="A step id, e.g. E4.")),
        claim=_text("One line: what that step showed the agent."),
    )
    link: Any = cut_part(
        "Link",
        id=(str, Field(description="A step id.")),
        did=_text("One line: what the step did."),
    )
    symptom: Any = cut_part(
        "Symptom",
        id=(str | None, Field(default=None, description="The step where the failure showed.")),
        description=_text("What was finally seen."),
    )
    check: Any = create_model(
        model_name(ref, "Check"),
        __base__=Strict,
        id=(str, Field(description="The step id a check proposed.")),
        verdict=(literal_of(CHECK_ANSWERS), Field(description="confirmed or rejected.")),
    )
    fields: dict[str, Any] = {
        "verdict": (literal_of(labels), Field(description=f"One of {', '.join(labels)}.")),
        # Required (null allowed): a grammar-constrained model must write the key, not skip
        # it; the step is the point of the answer.
        "critical_step": (
            str | None,
            Field(description="The step id of the first bad decision, e.g. E7, or null."),
        ),
        "evidence": (
            list[str],
            Field(max_length=MAX_CITATIONS, description="Ids of the steps this rests on."),
        ),
        "decision": _text("One line: the decision taken at the critical step."),
        "information_available": (list[claim], Field(default_factory=list, max_length=8)),
        "violated_invariant": (
            literal_of((*invariants, "other")) | None,
            Field(default=None, description=f"One of {', '.join(invariants)}, or other."),
        ),
        "invariant_note": _text("With other: the invariant, in one line."),
        "symptom": (symptom | None, Field(default=None)),
        "causal_chain": (list[link], Field(default_factory=list, max_length=10)),
        "counterfactual": _text("The smallest other action at the critical step."),
        "recoverable_at_step": (str | None, Field(default=None)),
        "owner": (literal_of(OWNERS) | None, Field(default=None)),
        "confidence": (literal_of(CONFIDENCES) | None, Field(default=None)),
        "minimal_fix": _text("The smallest change that would prevent it."),
        "checks": (list[check], Field(default_factory=list, max_length=8)),
        "rationale": (
            str,
            Field(max_length=RATIONALE_MAX_CHARS, description="One or two sentences: why."),
        ),
    }
    validators = {
        "short_rationale": field_validator("rationale", mode="before")(truncate_rationale),
        **cut,
    }
    model: type[BaseModel] = create_model(
        model_name(ref, "Diagnosis"), __base__=Strict, __validators__=validators, **fields
    )
    return model


def _step_claim(raw: Any, shown: set[str], text_key: str, bad: list[str]) -> StepClaim | None:
    """A cited step as a claim (None, with the id in ``bad``, when it names no shown step)."""
    if not isinstance(raw, Mapping) or raw.get("id") is None:
        return None
    ids, wrong = check_citations([str(raw["id"])], list(shown))
    step = step_of(ids[0]) if ids else None
    if step is None:
        bad.extend(w for w in [*wrong, *ids] if w not in bad)
        return None
    return StepClaim(step=step, id=ids[0], text=str(raw.get(text_key) or ""))


def _step_index(raw: Any, shown: set[str], bad: list[str]) -> tuple[str | None, int | None]:
    if raw is None:
        return None, None
    claim = _step_claim({"id": raw}, shown, "", bad)
    return (claim.id, claim.step) if claim is not None else (None, None)


def diagnosis_verdict(
    data: Mapping[str, Any], shown_ids: Sequence[str], label_probs: Mapping[str, float] | None
) -> Verdict:
    """An ``fbd`` answer as a verdict carrying its :class:`Diagnosis` in step indexes. A
    located verdict whose critical step is no step shown cites nothing (so it is re-asked, and
    routed to a person if it stays so)."""
    shown = set(shown_ids)
    bad: list[str] = []
    label = str(data["verdict"])
    critical, index = _step_index(data.get("critical_step"), shown, bad)
    cited, invalid = check_citations(data.get("evidence") or [], shown_ids)
    info = [
        c
        for c in (
            _step_claim(r, shown, "claim", bad) for r in data.get("information_available") or []
        )
        if c is not None
    ]
    chain = [
        c
        for c in (_step_claim(r, shown, "did", bad) for r in data.get("causal_chain") or [])
        if c is not None
    ]
    symptom_raw = data.get("symptom") or {}
    symptom = _step_claim(symptom_raw, shown, "description", bad) if symptom_raw else None
    if symptom is None and symptom_raw.get("description"):
        symptom = StepClaim(step=-1, id="", text=str(symptom_raw["description"]))
    _, recoverable = _step_index(data.get("recoverable_at_step"), shown, bad)
    checks = []
    for raw in data.get("checks") or []:
        claim = _step_claim({"id": raw.get("id")}, shown, "", bad)
        if claim is not None:
            checks.append(
                CandidateVerdict(
                    step=claim.step, invariant="", check="", reason="", judged=raw["verdict"]
                )
            )
    if critical is not None and critical not in cited:
        cited = [critical, *cited]
    if label == "located" and critical is None:
        cited = []  # located, but at no step shown: re-asked, then sent to a person
    probs = {k: float(v) for k, v in label_probs.items()} if label_probs is not None else None
    return Verdict(
        label=label,
        label_shown=label,
        label_probs=probs,
        confidence=probs.get(label) if probs is not None else None,
        cited=cited,
        invalid_citations=invalid + [b for b in bad if b not in invalid],
        rationale=str(data.get("rationale") or ""),
        diagnosis=Diagnosis(
            critical_step=critical,
            step_index=index,
            decision=str(data.get("decision") or ""),
            symptom=symptom,
            information_available=info,
            violated_invariant=data.get("violated_invariant"),
            invariant_note=str(data.get("invariant_note") or ""),
            causal_chain=chain,
            counterfactual=str(data.get("counterfactual") or ""),
            recoverable_at_step=recoverable,
            owner=data.get("owner"),
            confidence=data.get("confidence"),
            minimal_fix=str(data.get("minimal_fix") or ""),
            candidates=checks,
            invalid_steps=bad,
        ),
    )
