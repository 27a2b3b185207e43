"""bench/compare_views.py: per-view scores, the mean of views and paired AUROC differences,
on hand-worked cases."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from judge.errors import InputError
from judge.types import Judgment
from tests.conftest import bench_module
from tests.review_fixtures import make_judgment


@pytest.fixture(scope="module")
def cv() -> ModuleType:
    return bench_module("compare_views")


def _write(path: Path, judgments: list[Judgment]) -> str:
    path.write_text("".join(j.model_dump_json() + "\n" for j in judgments))
    return str(path)


def test_view_scores_average_ok_judgments_and_keep_one_rubric(
    cv: ModuleType, tmp_path: Path
) -> None:
    f = _write(
        tmp_path / "v.judgments.jsonl",
        [
            make_judgment("a", 0.2),
            make_judgment("a", 0.6, sample=1),  # mean 0.4
            make_judgment("a", 0.9, sample=2, status="parse_error"),  # never scored
            make_judgment("a", 0.9, sample=3, status="abstain"),  # an abstention: not scored
            make_judgment("b", 0.7),
            make_judgment("b", 0.1, rubric="coding-run-gates"),
        ],
    )
    assert cv.view_scores(f) == pytest.approx({"a": 0.4, "b": 0.4})
    assert cv.view_scores(f, "agent-run-success") == pytest.approx({"a": 0.4, "b": 0.7})


def test_view_scores_names_the_file_and_line_of_a_bad_record(
    cv: ModuleType, tmp_path: Path
) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(make_judgment("a", 0.5).model_dump_json() + "\n" + '{"case_id": "b"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        cv.view_scores(str(f))


def test_paired_difference_hand_worked(cv: ModuleType) -> None:
    outcome = [1, 1, 0, 0]
    clusters = ["t1", "t2", "t3", "t4"]
    right = [0.9, 0.8, 0.2, 0.1]  # AUROC 1
    wrong = [0.1, 0.2, 0.8, 0.9]  # AUROC 0
    d = cv.paired_auroc_difference(wrong, right, outcome, clusters, n_boot=200)
    # Every draw with both classes has AUROC 1 vs 0: the difference is exactly +1.
    assert d["difference"] == 1.0 and d["ci95"] == [1.0, 1.0] and d["share_not_better"] == 0.0
    same = cv.paired_auroc_difference(right, right, outcome, clusters, n_boot=200)
    assert same["difference"] == 0.0 and same["share_not_better"] == 1.0
    # Draws holding one class only are skipped (AUROC undefined): fewer than requested.
    assert 0 < d["n_boot"] < 200


def test_compare_keeps_common_items_and_averages_views(cv: ModuleType) -> None:
    gold = {"a": "pass", "b": "pass", "c": "fail", "d": "fail", "e": "pass"}
    clusters = {k: k for k in gold}
    x = {"a": 0.9, "b": 0.4, "c": 0.6, "d": 0.1, "e": 0.99}  # e: only in x, left out
    y = {"a": 0.3, "b": 0.8, "c": 0.2, "d": 0.6}
    r = cv.compare({"x": x, "y": y}, gold, clusters, "pass")
    assert r["n"] == 4 and r["n_positive"] == 2
    # x: pairs (a,c) (a,d) (b,d) ordered right, (b,c) wrong -> 3/4; accuracy a,c wrong? a>=.5 right,
    # b<.5 wrong, c>=.5 wrong, d right -> 2/4.
    assert r["views"]["x"]["auroc"]["value"] == pytest.approx(0.75)
    assert r["views"]["x"]["accuracy"] == pytest.approx(0.5)
    # y: (a,c) right, (a,d) wrong, (b,c) right, (b,d) right -> 3/4.
    assert r["views"]["y"]["auroc"]["value"] == pytest.approx(0.75)
    # mean: a .6, b .6, c .4, d .35 -> every pass above every fail: AUROC 1, accuracy 1.
    assert r["mean_of_views"]["auroc"]["value"] == pytest.approx(1.0)
    assert r["mean_of_views"]["accuracy"] == pytest.approx(1.0)
    assert r["paired"]["x -> y"]["difference"] == pytest.approx(0.0)


def test_compare_leaves_out_ties_and_refuses_one_class(cv: ModuleType) -> None:
    gold = {"a": "A", "b": "B", "t": "tie"}
    view = {"a": 0.8, "b": 0.3, "t": 0.5}
    r = cv.compare({"v": view}, gold, {k: k for k in gold}, "A")
    assert r["n"] == 2 and r["views"]["v"]["auroc"]["value"] == 1.0
    with pytest.raises(ValueError, match="one gold label"):
        cv.compare({"v": {"a": 0.8}}, gold, {k: k for k in gold}, "A")
