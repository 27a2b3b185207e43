"""The checks on their shipped suites: hard only where measured precise, every hand-written
case answered as labelled, and the suites complete without ../shared."""

from __future__ import annotations

from functools import cache

import pytest

from judge.checks import (
    CHECKS,
    HARD_LOWER,
    HARD_PRECISION,
    CheckFigures,
    SuiteCase,
    load_suites,
    measure_suites,
    run_checks,
)


@cache
def _cases() -> tuple[SuiteCase, ...]:
    return tuple(load_suites())


@cache
def _figures() -> dict[str, CheckFigures]:
    return {fig.check_id: fig for fig in measure_suites(_cases())}


@pytest.mark.parametrize("check_id", list(CHECKS))
def test_a_hard_check_is_measured_precise_on_its_suites(check_id: str) -> None:
    """Computed live from the suites: precision >= 0.95 with a Wilson lower bound >= 0.90."""
    fig = _figures()[check_id]
    if not CHECKS[check_id].hard:
        return
    precision, lower, _ = fig.total.precision
    assert precision is not None and precision >= HARD_PRECISION, fig.misses[:5]
    assert lower >= HARD_LOWER, f"{check_id}: only {fig.total.tp + fig.total.fp} firings"


@pytest.mark.parametrize("check_id", list(CHECKS))
def test_every_check_has_known_bad_and_known_good_cases(check_id: str) -> None:
    labelled = [c for c in _cases() if check_id in c.expect]
    assert any(c.expect[check_id] == "fail" for c in labelled)
    assert any(c.expect[check_id] == "pass" for c in labelled)
    assert {c.suite for c in labelled if c.expect[check_id] == "fail"} & {"exploit", "mutation"}


def test_every_hand_written_case_is_answered_as_labelled() -> None:
    wrong = []
    for case in _cases():
        if case.author != "handwritten":
            continue
        results = {r.id: r for r in run_checks(case.case, protected=case.protected)}
        for check_id, expected in case.expect.items():
            result = results[check_id]
            if result.status != expected:
                wrong.append(f"{case.id} ({case.note}): {result.status}: {result.reason}")
            if result.status == "fail":
                assert result.evidence, case.id
    assert wrong == []


def test_the_suites_hold_real_diffs_of_agents_and_people() -> None:
    authors = {c.author for c in _cases()}
    assert authors == {"agent", "human", "handwritten"}
    assert all(c.case.diff or c.case.trace for c in _cases())
