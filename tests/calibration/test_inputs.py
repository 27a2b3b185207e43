"""Judgment inputs: recorded verdicts, Judgment JSONL, gold join, arrays (the judge store is
read on the judge side: tests/judge/test_carding.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibration.gold import load_gold
from calibration.inputs import (
    LABEL_CODE,
    by_judge,
    join_gold,
    judges,
    judgment_to_row,
    load_judgments_jsonl,
    load_recorded,
    positive_prob,
    to_arrays,
)
from calibration.records import VerdictRow
from judge.errors import InputError
from judge.types import Judgment, Provenance, Usage, Verdict
from tests.conftest import shared_path


def rec(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "item_id": "i1",
        "source": "unit",
        "judge": "j1",
        "order": "AB",
        "sample": 0,
        "verdict": "A",
        "verdict_pos": "A",
        "gold": "A",
        "slices": {"subset": "s"},
    }
    d.update(over)
    return d


def write_lines(path: Path, *lines: Any) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- recorded


def test_load_recorded_maps_fields(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        rec(),
        "",
        rec(order="BA", verdict=None, verdict_pos=None, prob=0.25),
        rec(item_id="i2", judge="j2", order=None, slices={"task_id": 7}, score={"A": 7.0}),
    )
    rows = load_recorded(path)
    assert len(rows) == 3
    a, b, c = rows
    assert (a.item_id, a.judge, a.order, a.verdict, a.status, a.gold) == (
        "i1",
        "j1",
        "AB",
        "A",
        "ok",
        "A",
    )
    # a null verdict is an unparsed output, never a verdict
    assert (b.status, b.verdict, b.prob) == ("parse_error", None, 0.25)
    assert a.task_id == "i1" and a.cluster == "i1"
    assert c.task_id == "7" and c.cluster == "7"  # slices.task_id is the sampling unit
    assert [r.judge for r in load_recorded(path, judge="j2")] == ["j2"]


@pytest.mark.parametrize(
    ("line", "field", "text"),
    [
        ('{"item_id": ', None, "not valid JSON"),
        ("[1]", None, "expected a JSON object"),
        (rec(colour="red"), "colour", "not a field"),
        ({k: v for k, v in rec().items() if k != "judge"}, "judge", "required"),
        (rec(item_id=""), "item_id", "non-empty"),
        (rec(verdict="yes"), "verdict", "must be one of"),
        (rec(gold="maybe"), "gold", "must be one of"),
        (rec(order="AC"), "order", "AB, BA or null"),
        (rec(sample="1"), "sample", "integer"),
        (rec(prob=1.5), "prob", "probability"),
        (rec(slices=[1]), "slices", "object"),
        (rec(verdict=["A"]), None, "list or object"),
    ],
)
def test_load_recorded_errors_name_line_and_field(
    tmp_path: Path, line: Any, field: str | None, text: str
) -> None:
    path = write_lines(tmp_path / "r.jsonl", rec(), line)
    with pytest.raises(InputError) as info:
        load_recorded(path)
    assert info.value.line == 2
    assert info.value.field == field
    assert text in str(info.value) and str(path) in str(info.value)


def test_load_recorded_bad_utf8_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(rec()).encode() + b"\n" + b'{"item_id": "\xff"}\n')
    with pytest.raises(InputError, match="UTF-8") as info:
        load_recorded(bad)
    assert info.value.line == 2
    with pytest.raises(InputError, match="cannot read"):
        load_recorded(tmp_path / "none.jsonl")


# --------------------------------------------------------------------------- judgments


def test_positive_prob() -> None:
    # binary: P(pass)/(P(pass)+P(fail)) = .6/.8, abstain mass dropped
    assert positive_prob({"pass": 0.6, "fail": 0.2, "cannot_determine": 0.2}) == pytest.approx(0.75)
    # pairwise: (P(A) + P(tie)/2) / (P(A)+P(B)+P(tie)) = (.4 + .05) / .8 = .5625
    assert positive_prob({"A": 0.4, "B": 0.3, "tie": 0.1, "cannot_determine": 0.2}) == (
        pytest.approx(0.5625)
    )
    # a judge leaning to "tie" is indifferent, not a B-preferring judge: (.2 + .3) / 1 = .5
    assert positive_prob({"A": 0.2, "B": 0.2, "tie": 0.6}) == pytest.approx(0.5)
    # B preferred over A with much tie mass stays below 0.5: (.1 + .25) / 1 = .35
    assert positive_prob({"A": 0.1, "B": 0.4, "tie": 0.5}) == pytest.approx(0.35)
    assert positive_prob({"A": 0.0, "B": 0.0}) is None
    assert positive_prob({"cannot_determine": 1.0}) is None
    assert positive_prob(None) is None


def judgment(
    case: str = "c1",
    status: str = "ok",
    label: str | None = "pass",
    model: str = "m1",
    rubric: str = "agent-run-success",
    version: int = 1,
    order: str | None = None,
    **verdict: Any,
) -> Judgment:
    prov = Provenance(
        rubric_id=rubric,
        rubric_version=version,
        rubric_digest="sha256:r",
        model=model,
        prompt_digest="sha256:p",
        evidence_digest="sha256:e",
        selector_version="1",
        token_budget=1000,
        order=order,  # type: ignore[arg-type]
        sample=verdict.pop("sample", 0),
        judge_version="0.1.0",
    )
    v = Verdict(label=label, **verdict) if label is not None else None
    return Judgment(
        id=f"{case}-{model}-{order}",
        case_id=case,
        cache_key=f"k-{case}-{model}-{order}",
        status=status,  # type: ignore[arg-type]
        verdict=v,
        error=None if status in ("ok", "abstain") else "could not parse",
        provenance=prov,
        usage=Usage(cost_usd=0.002),
    )


def test_judgment_to_row() -> None:
    r = judgment_to_row(judgment(label_probs={"pass": 0.3, "fail": 0.1, "cannot_determine": 0.6}))
    assert (r.item_id, r.judge, r.verdict, r.status) == ("c1", "m1", "pass", "ok")
    assert r.prob == pytest.approx(0.75) and r.cost_usd == 0.002 and r.gold is None
    pw = judgment_to_row(
        judgment(label="A", order="BA", label_shown="B", sample=2, rubric="pair"), name="alias"
    )
    assert (pw.judge, pw.order, pw.verdict_pos, pw.sample) == ("alias", "BA", "B", 2)
    # a stored ok judgment whose label is cannot_determine is an abstention
    ab = judgment_to_row(judgment(label="cannot_determine"))
    assert (ab.status, ab.verdict) == ("abstain", None)
    abst = judgment_to_row(judgment(status="abstain", label="cannot_determine"))
    assert (abst.status, abst.verdict) == ("abstain", None)
    fail = judgment_to_row(judgment(status="parse_error", label=None))
    assert (fail.status, fail.verdict, fail.prob) == ("parse_error", None, None)
    # no label_probs: confidence read as confidence in the given binary label
    conf = judgment_to_row(judgment(label="fail", confidence=0.8))
    assert conf.prob == pytest.approx(0.2)


def _judgments() -> list[Judgment]:
    return [
        judgment("c1"),
        judgment("c2", label="fail", model="m2"),
        judgment("c3", rubric="other", version=2),
        judgment("c4", status="infra_error", label=None),
    ]


def test_load_judgments_jsonl_with_filters(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "j.jsonl", *(j.model_dump_json() for j in _judgments()))
    rows = load_judgments_jsonl(path)
    assert [r.item_id for r in rows] == ["c1", "c2", "c3", "c4"]
    assert [r.status for r in rows] == ["ok", "ok", "ok", "infra_error"]
    assert [r.item_id for r in load_judgments_jsonl(path, "m2")] == ["c2"]
    assert [r.item_id for r in load_judgments_jsonl(path, rubric="other")] == ["c3"]
    assert [r.item_id for r in load_judgments_jsonl(path, rubric="other@2")] == ["c3"]
    assert load_judgments_jsonl(path, rubric="other@1") == []
    assert {r.judge for r in load_judgments_jsonl(path, name="J")} == {"J"}


def test_load_judgments_jsonl_errors(tmp_path: Path) -> None:
    good = _judgments()[0].model_dump_json()
    bad = json.loads(good)
    bad["status"] = "maybe"
    path = write_lines(tmp_path / "j.jsonl", good, json.dumps(bad))
    with pytest.raises(InputError) as info:
        load_judgments_jsonl(path)
    assert (info.value.line, info.value.field) == (2, "status")
    path = write_lines(tmp_path / "k.jsonl", good, "{not json")
    with pytest.raises(InputError) as info:
        load_judgments_jsonl(path)
    assert info.value.line == 2


# --------------------------------------------------------------------------- gold join


def _gold(tmp_path: Path) -> Path:
    base = {"source": "u", "license": "MIT", "task": "t", "gold_source": "hand", "meta": {}}
    return write_lines(
        tmp_path / "g.jsonl",
        {
            **base,
            "id": "p1",
            "kind": "pairwise",
            "candidates": {"A": "ab", "B": "abcd"},
            "gold": "B",
            "slices": {"subset": "gold-subset", "split": "x"},
        },
        {
            **base,
            "id": "r1",
            "kind": "agent_run",
            "gold": "fail",
            "slices": {"task_id": 4, "repo": "django"},
        },
        {**base, "id": "r2", "kind": "agent_run", "gold": "pass", "slices": {}},
    )


def test_join_gold_fills_labels_slices_lengths_and_tasks(tmp_path: Path) -> None:
    gs = load_gold(_gold(tmp_path))
    rows = [
        VerdictRow("p1", "j", "A", order="AB", slices={"subset": "row-subset"}),
        VerdictRow("r1", "j", "pass", task_id="r1"),
        VerdictRow("zz", "j", "pass"),
        VerdictRow("zz", "j", "fail", sample=1),
    ]
    out = join_gold(rows, gs)
    p1, r1, z1, _ = out
    assert p1.gold == "B" and r1.gold == "fail" and z1.gold is None
    # the row's own slices win; the gold set fills the rest; pairwise adds lengths
    assert p1.slices == {"subset": "row-subset", "split": "x", "length_A": 2, "length_B": 4}
    assert r1.task_id == "4" and r1.slices["repo"] == "django"
    assert (out.n_missing, out.missing_items, out.n_unjudged) == (2, ("zz",), 1)
    by_map = join_gold(rows, {"p1": "B"})
    assert by_map[0].gold == "B" and by_map[0].slices == {"subset": "row-subset"}


def test_join_gold_refuses_conflicting_labels(tmp_path: Path) -> None:
    rows = [VerdictRow("p1", "j", "A", gold="A")]
    with pytest.raises(InputError, match="differs from the gold set"):
        join_gold(rows, {"p1": "B"})
    assert join_gold(rows, {"p1": "B"}, override=True)[0].gold == "B"


def test_judges_and_by_judge() -> None:
    rows = [VerdictRow("i", "b", "A"), VerdictRow("i", "a", "A"), VerdictRow("j", "b", "B")]
    assert judges(rows) == ["a", "b"]
    assert len(by_judge(rows, "b")) == 2 and len(by_judge(rows, ["a", "b"])) == 3


# --------------------------------------------------------------------------- arrays


def test_to_arrays_codes_and_take() -> None:
    rows = [
        VerdictRow(
            "i1",
            "j1",
            "pass",
            gold="fail",
            prob=0.7,
            cost_usd=0.01,
            slices={"length_A": 3, "length_B": 5},
        ),
        VerdictRow("i2", "j2", None, status="infra_error", order="BA", sample=3, task_id="t"),
        VerdictRow("i1", "j1", "tie", order="AB", verdict_pos="tie"),
    ]
    a = to_arrays(rows)
    assert a.n == 3
    assert a.items == ["i1", "i2"] and a.item.tolist() == [0, 1, 0]
    assert a.clusters == ["i1", "t"]
    assert a.judge_names == ["j1", "j2"]
    assert a.verdict.tolist() == [LABEL_CODE["pass"], -1, LABEL_CODE["tie"]]
    assert a.gold.tolist() == [LABEL_CODE["fail"], -1, -1]
    assert a.status.tolist() == [0, 3, 0] and a.order.tolist() == [0, 2, 1]
    assert a.sample.tolist() == [0, 3, 0]
    assert a.prob[0] == 0.7 and np.isnan(a.prob[1])
    assert a.cost[0] == 0.01 and np.isnan(a.cost[2])
    assert a.len_a[0] == 3 and np.isnan(a.len_b[1])
    sub = a.take(a.judge == 0)
    assert sub.n == 2 and sub.items == a.items
    assert to_arrays(a) is a
    with pytest.raises(InputError, match="unknown verdict label 'maybe'"):
        to_arrays([VerdictRow("i", "j", "maybe")])


# --------------------------------------------------------------------------- shared files


@pytest.mark.shared
def test_recorded_files_load() -> None:
    counts = {
        "llmbar_evaluators": (38656, 65, 245),
        "judgebench_outputs": (540, 1, 13),
        "trust_or_escalate": (738, 3, 0),
        "position_bias_repetition": (5184, 9, 28),
    }
    for name, (n, n_judges, unparsed) in counts.items():
        rows = load_recorded(shared_path(f"judgments/{name}.jsonl"))
        assert len(rows) == n, name
        assert len(judges(rows)) == n_judges, name
        assert sum(r.status == "parse_error" for r in rows) == unparsed, name


@pytest.mark.shared
def test_llmbar_recorded_ids_match_the_gold_sets() -> None:
    rows = load_recorded(shared_path("judgments/llmbar_evaluators.jsonl"))
    labels: dict[str, str] = {}
    for name in ("llmbar_natural", "llmbar_casestudy", "llmbar_human"):
        labels.update(load_gold(shared_path(f"gold/{name}.jsonl")).labels())
    joined = join_gold(rows, labels)  # raises if any recorded gold disagrees
    assert (joined.n_missing, joined.n_unjudged) == (0, 0)
