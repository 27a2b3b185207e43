"""calibration.workflow: calibrate_rows is measure, certify and seal, each callable alone."""

from __future__ import annotations

import pytest

from calibration.card import JudgeSection
from calibration.inputs import load_recorded
from calibration.summary import BinaryMetrics, MetricSummary
from calibration.workflow import (
    CalibrationOptions,
    JudgeBinding,
    JudgeRequest,
    attach_gold,
    calibrate_rows,
    certify,
    judge_request,
    measure,
    seal,
    unbound,
)
from judge.errors import InputError
from tests.calibration.test_card_bytes import BINARY, HERE, T0


def test_the_three_steps_make_the_card_calibrate_rows_makes() -> None:
    rows, gold = attach_gold(load_recorded(BINARY), None, source=str(BINARY))
    options = CalibrationOptions(judges=("strong",), slice_key="repo", grid="items", n_boot=200)
    request = judge_request(rows, options)
    assert (request.names, request.model, request.mode, request.kind) == (
        ("strong",),
        "strong",
        "single",
        "binary",
    )
    measured = measure(rows, request, options)
    assert isinstance(measured.metrics, MetricSummary)
    assert isinstance(measured.metrics.metrics, BinaryMetrics)
    assert measured.metrics.slices is not None and set(measured.metrics.slices["repo"]) == {
        "a",
        "b",
        "c",
    }
    certified = certify(measured, options)
    assert certified.policy is not None and certified.cascade is None
    assert certified.split_study is None
    card = seal(
        measured,
        certified,
        judge=JudgeSection(model="strong", source="recorded verdicts"),
        gold=gold,
        created_at=T0,
    )
    expected = (HERE / "cards" / "b_slice.card.yaml").read_text(encoding="utf-8")
    assert card.to_yaml() == expected
    whole = calibrate_rows(
        rows, gold=gold, judge=unbound("recorded verdicts"), options=options, created_at=T0
    )
    assert whole.card == card and whole.summary == certified.summary


def test_the_judge_is_bound_before_anything_is_measured() -> None:
    rows, gold = attach_gold(load_recorded(BINARY), None, source=str(BINARY))
    asked: list[JudgeRequest] = []

    def refuse(request: JudgeRequest) -> JudgeBinding:
        asked.append(request)
        raise InputError("two bindings", field="provenance")

    # alpha 2 would fail in certify: the binding's error comes first.
    options = CalibrationOptions(
        judges=("cheap", "strong"), cascade=True, alpha_accept=2.0, n_boot=0
    )
    with pytest.raises(InputError, match="two bindings"):
        calibrate_rows(rows, gold=gold, judge=refuse, options=options)
    assert [(r.model, r.mode) for r in asked] == [("cascade(cheap > strong)", "cascade")]
