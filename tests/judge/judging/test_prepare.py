"""Preparing a case once: the same evidence, prompts and keys as selecting it step by step.

``select_evidence(case, redacted=redact_case(case)[0])`` reuses the redaction of the stored
copy; it must give exactly the items and digest of ``select_evidence(case)`` (or the cache keys
of stores written earlier would change). A case judged in several orders, variants and samples
has its evidence selected once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import judge.judging.prepare as prepare_module
from judge.cases import load_cases
from judge.evidence import select_evidence
from judge.judging.prepare import StepSpec, prepare_case
from judge.providers import ModelParams
from judge.rubrics import load_rubric
from judge.safety.redact import redact_case
from judge.types import Case
from tests.conftest import REPO, shared_path

SECRETS = REPO / "tests" / "data" / "secrets"
VISIBILITIES = (("task", "diff", "trace"), ("task", "candidates"), ("task", "candidates", "trace"))


def _same_evidence(cases: list[Case]) -> int:
    compared = 0
    for case in cases:
        stored = redact_case(case)[0]
        for visible in VISIBILITIES:
            for budget in (1400, 300):
                try:
                    expected: Any = select_evidence(case, visible=visible, token_budget=budget)
                except Exception as exc:  # noqa: BLE001 - the same error either way
                    expected = repr(exc)
                try:
                    got: Any = select_evidence(
                        case, visible=visible, token_budget=budget, redacted=stored
                    )
                except Exception as exc:  # noqa: BLE001
                    got = repr(exc)
                if isinstance(expected, str) or isinstance(got, str):
                    assert got == expected, case.id
                else:
                    assert got.model_dump() == expected.model_dump(), (case.id, visible, budget)
                compared += 1
    return compared


def _secret_cases() -> list[Case]:
    # The corpus keeps each fake secret split by "«»" (tests/data/secrets/README.md).
    cases = []
    for name in ("cases.jsonl", "more_cases.jsonl"):
        for line in (SECRETS / name).read_text("utf-8").replace("«»", "").splitlines():
            if line.strip():
                cases.append(Case.model_validate(json.loads(line)))
    return cases


def test_reusing_the_stored_redaction_gives_the_same_evidence_on_cases_with_secrets() -> None:
    cases = _secret_cases() + load_cases(REPO / "gold" / "demo.jsonl").cases
    assert any(redact_case(c)[1] for c in cases)  # secrets are really redacted here
    assert _same_evidence(cases) == len(cases) * len(VISIBILITIES) * 2


@pytest.mark.shared
def test_reusing_the_stored_redaction_gives_the_same_evidence_on_real_traces() -> None:
    cases = []
    for name in (
        "swebench_verified_dev.jsonl",
        "taubench_airline_dev.jsonl",
        "judgebench_claude.jsonl",
    ):
        cases += load_cases(shared_path(f"gold/{name}")).cases
    assert _same_evidence(cases) == len(cases) * len(VISIBILITIES) * 2


def test_a_case_is_redacted_and_its_evidence_selected_once_for_all_its_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    selections: list[str] = []

    def counted(case: Case, **kwargs: Any) -> Any:
        selections.append(case.id)
        return select_evidence(case, **kwargs)

    monkeypatch.setattr(prepare_module, "select_evidence", counted)
    rubric = load_rubric("pairwise-preference@1")
    case = Case(
        id="p1", kind="pairwise", task="Say hi in French", candidates={"A": "Bonjour", "B": "Hello"}
    )
    specs = [
        StepSpec(model=m, order=o, sample=s)  # type: ignore[arg-type]
        for m in ("x/a", "x/b")
        for o in ("AB", "BA")
        for s in (0, 1)
    ]
    prepared = prepare_case(case, specs, rubric, ModelParams(), 1400)
    assert selections == ["p1"]
    assert len(prepared.steps) == 8 and not prepared.errors
    assert len({p.key for p in prepared.steps}) == 8  # every step its own cache key
    assert prepared.case_row["id"] == "p1"
