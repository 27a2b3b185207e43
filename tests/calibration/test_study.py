"""Judge-vs-judge studies: hand-worked ranking, paired differences, McNemar, reports."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binom

from calibration.inputs import load_recorded
from calibration.intervals import wilson
from calibration.records import VerdictRow
from calibration.study import compare
from tests.conftest import shared_path

GOLD = {"i1": "A", "i2": "A", "i3": "B", "i4": "B"}


def rows() -> list[VerdictRow]:
    verdicts: dict[str, list[str | None]] = {
        "j1": ["A", "A", "B", "B"],  # 4 of 4
        "j2": ["A", "B", "B", "A"],  # 2 of 4
        "j3": ["A", "A", "B", None],  # 3 of 4; i4 unparsed
    }
    out = []
    for judge, vs in verdicts.items():
        for (item, gold), v in zip(GOLD.items(), vs, strict=True):
            cost = None if (judge, item) == ("j2", "i1") else 0.01
            out.append(
                VerdictRow(item, judge, v, "ok" if v else "parse_error", gold=gold, cost_usd=cost)
            )
    out.append(VerdictRow("i5", "j1", "A", gold="A"))  # only j1 judged i5: left out
    out.append(VerdictRow("i6", "j2", "A"))  # no gold: not scored
    return out


def test_ranking_and_intervals_by_hand() -> None:
    st = compare(rows(), n_boot=500, seed=1)
    assert [s.judge for s in st.judges] == ["j1", "j3", "j2"]
    assert st.best == "j1"
    j1, j3, j2 = st.judges
    assert (j1.correct, j1.n, j1.accuracy, j1.rank) == (4, 4, 1.0, 1)
    # failures count as not correct by default: j3 has 3 of 4
    assert (j3.correct, j3.n, j3.n_failed) == (3, 4, 1)
    assert (j2.correct, j2.n) == (2, 4)
    assert j2.wilson95 == pytest.approx(wilson(2, 4))
    assert j2.ci95 is not None and j2.ci95[0] <= 0.5 <= j2.ci95[1]
    assert j1.rank95 is not None and j1.rank95[0] == 1
    assert (st.n_items, st.items_dropped, st.rows_without_gold) == (4, 1, 1)
    # cost: j1 pays 4 x 0.01 for 4 correct; j2 has a row of unknown cost
    assert j1.cost_usd == pytest.approx(0.04) and j1.cost_per_correct == pytest.approx(0.01)
    assert j2.cost_usd is None and j2.cost_per_correct is None


def test_paired_differences_and_mcnemar_by_hand() -> None:
    st = compare(rows(), n_boot=500, seed=1)
    d = {x.judge: x for x in st.differences}
    assert set(d) == {"j3", "j2"} and all(x.versus == "j1" for x in st.differences)
    # j3 vs j1: only j1 right on i4 -> b = 0, c = 1; exact p = min(1, 2 * P(X <= 0 | 1, .5)) = 1
    assert (d["j3"].diff, d["j3"].n_units, d["j3"].only_judge, d["j3"].only_versus) == (
        pytest.approx(-0.25),
        4,
        0,
        1,
    )
    assert d["j3"].mcnemar_p == pytest.approx(1.0)
    # j2 vs j1: j1 alone right on i2 and i4 -> p = 2 * 0.5^2 = 0.5
    assert (d["j2"].only_judge, d["j2"].only_versus) == (0, 2)
    assert d["j2"].mcnemar_p == pytest.approx(0.5)
    ci = d["j2"].ci95
    assert ci is not None and ci[0] <= -0.5 <= ci[1] and ci[1] <= 0.0  # j1 never worse
    all_pairs = compare(rows(), n_boot=100, all_pairs=True)
    assert len(all_pairs.differences) == 3
    assert all(x.diff is not None and x.diff <= 0 for x in all_pairs.differences)


def test_excluding_failures_narrows_the_common_items() -> None:
    st = compare(rows(), n_boot=100, failures="exclude")
    # j3's i4 is no longer scored, so i4 is not common: i1-i3 only
    assert st.n_items == 3
    acc = {s.judge: (s.correct, s.n) for s in st.judges}
    assert acc == {"j1": (3, 3), "j3": (3, 3), "j2": (2, 3)}
    assert [s.judge for s in st.judges][:2] == ["j1", "j3"]  # tie broken by name


def test_kappa_between_judges() -> None:
    st = compare(rows(), judges=["j1", "j2"], n_boot=0)
    # j1 A A B B vs j2 A B B A: p_o = .5, p_e = (2*2 + 2*2)/16 = .5 -> kappa 0
    assert st.kappa["judges"] == ["j1", "j2"]
    assert st.kappa["kappa"][0][1] == pytest.approx(0.0)
    assert st.judges[0].ci95 is None  # n_boot=0: no resampling


def test_subset_and_errors() -> None:
    st = compare(rows(), judges=["j2", "j3"], n_boot=50)
    assert [s.judge for s in st.judges] == ["j3", "j2"]
    with pytest.raises(ValueError, match="no rows for judge"):
        compare(rows(), judges=["nobody"])
    with pytest.raises(ValueError, match="failures"):
        compare(rows(), failures="ignore")  # type: ignore[arg-type]


def test_reports() -> None:
    named = [
        VerdictRow(
            r.item_id,
            "<b>bold</b>" if r.judge == "j2" else r.judge,
            r.verdict,
            r.status,
            gold=r.gold,
        )
        for r in rows()
    ]
    st = compare(named, n_boot=100)
    table = st.to_table()
    assert "| 1 | j1 | 100.0% |" in table
    assert "-50.0%" in table  # j2 vs best
    page = st.to_html()
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    for forbidden in ("<script", "src=", "href=", "@import"):
        assert forbidden not in page
    data = st.to_dict()
    assert json.loads(json.dumps(data))["best"] == "j1"


@pytest.mark.shared
def test_llmbar_evaluators_ranked_quickly() -> None:
    rows_ = load_recorded(shared_path("judgments/llmbar_evaluators.jsonl"))
    compare(rows_[:200], n_boot=10)  # warm the imports; the budget is for the study itself
    st = compare(rows_, n_boot=1000, seed=0)  # its speed is measured in bench/
    assert len(st.judges) == 65
    assert sorted(s.rank for s in st.judges) == list(range(1, 66))
    # the items all 65 judged are LLMBar Natural's 100 (Rating judges saw only those)
    assert st.n_items == 100
    score = {s.judge: s for s in st.judges}
    assert (score["GPT-4/Vanilla"].correct, score["GPT-4/Vanilla"].n) == (191, 200)
    assert (score["GPT-4/CoT"].correct, score["GPT-4/CoT"].n) == (189, 200)
    assert (score["GPT-4/Rating"].correct, score["GPT-4/Rating"].n) == (87, 100)
    assert st.best is not None and st.best.startswith("GPT-4/")
    # McNemar exact p is the two-sided binomial test on the discordant units
    for d in st.differences:
        if d.mcnemar_p is not None and d.only_judge + d.only_versus:
            k, n = min(d.only_judge, d.only_versus), d.only_judge + d.only_versus
            assert d.mcnemar_p == pytest.approx(min(1.0, 2 * binom.cdf(k, n, 0.5)))


@pytest.mark.shared
def test_trust_or_escalate_study() -> None:
    st = compare(load_recorded(shared_path("judgments/trust_or_escalate.jsonl")), n_boot=500)
    # judgments/README.md: 189, 178 and 175 of 246 agree with human gold
    assert [(s.judge, s.correct, s.n) for s in st.judges] == [
        ("gpt-4-turbo-2024-04-09", 189, 246),
        ("mistral-7b-instruct", 178, 246),
        ("gpt-3.5-turbo", 175, 246),
    ]
    assert all(d.n_units == 246 for d in st.differences)
