"""bench/judge_quality.py: the order-flip figures of JUDGE_QUALITY.md, on hand-worked pairs."""

from __future__ import annotations

import math
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from tests.conftest import bench_module


def _bench() -> ModuleType:
    return bench_module("judge_quality")


def _row(order: str, prob: float, sample: int = 0) -> Any:
    return SimpleNamespace(status="ok", prob=prob, order=order, sample=sample)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_flips_before_and_after_the_position_correction() -> None:
    # x (gold A): P(A) 0.8 when A is shown first, 0.6 when B is: A both times, no flip.
    # y (gold B): P(A) 0.65 first, 0.2 second: A then B, a flip; the raw per-order verdicts
    # are right 3 times of 4 (x twice, y in order BA).
    # Bias = mean logit of preferring the first shown = (l(.8) + l(.65) + l(.4) + l(.8)) / 4
    #      = (1.386 + 0.619 - 0.405 + 1.386) / 4 = 0.747.
    # Corrected: x AB 1.386-0.747 > 0 (A), BA 0.405+0.747 > 0 (A): no flip;
    #            y AB 0.619-0.747 < 0 (B), BA -1.386+0.747 < 0 (B): no flip, and both right.
    bench = _bench()
    by_item = {"x": [_row("AB", 0.8), _row("BA", 0.6)], "y": [_row("AB", 0.65), _row("BA", 0.2)]}
    out = bench._position(by_item, {"x": "A", "y": "B"})
    bias = (_logit(0.8) + _logit(0.65) + _logit(0.4) + _logit(0.8)) / 4
    assert out["first_position_logit_bias"] == pytest.approx(bias)
    assert bias == pytest.approx(0.747, abs=1e-3)
    assert out["order_flip_rate"] == 0.5
    assert out["p_prefer_first"] == 0.75  # x AB, y AB, y BA (B first) of 4
    assert out["per_order_accuracy"] == 0.75
    assert out["order_flip_rate_corrected"] == 0.0
    assert out["per_order_accuracy_corrected"] == 1.0


def test_protocol_figures_average_the_variants_of_one_order_first() -> None:
    # Two variants per order (sample 0 and 1000) whose means are the single-variant case above:
    # x AB (0.9, 0.7) -> 0.8, BA (0.55, 0.65) -> 0.6; y AB (0.6, 0.7) -> 0.65, BA (0.1, 0.3) -> 0.2.
    bench = _bench()
    by_item = {
        "x": [_row("AB", 0.9), _row("AB", 0.7, 1000), _row("BA", 0.55), _row("BA", 0.65, 1000)],
        "y": [_row("AB", 0.6), _row("AB", 0.7, 1000), _row("BA", 0.1), _row("BA", 0.3, 1000)],
    }
    out = bench._position(by_item, {"x": "A", "y": "B"})
    assert out["n_pairs"] == 4  # (variant, item) pairs seen in both orders
    assert out["n_items_both_orders"] == 2
    assert out["protocol_order_flip_rate"] == 0.5
    assert out["protocol_first_position_logit_bias"] == pytest.approx(0.747, abs=1e-3)
    assert out["protocol_order_flip_rate_corrected"] == 0.0
    assert out["protocol_per_order_accuracy_corrected"] == 1.0
    # Per variant: x keeps A in both variants; y flips in both ((0.6, 0.1) and (0.7, 0.3)).
    assert out["order_flip_rate"] == 0.5


def test_a_larger_subset_extends_a_smaller_one_and_exclude_n_leaves_it_out() -> None:
    jq = _bench()
    records = [SimpleNamespace(id=f"r{i}", gold="pass" if i % 3 else "fail") for i in range(30)]
    small = jq.stratified(records, 6, seed=0)
    large = jq.stratified(records, 12, seed=0)
    assert [r.gold for r in small].count("pass") == 3 and len(small) == 6
    assert {r.id for r in small} < {r.id for r in large}
    rest = jq.choose(records, 12, seed=0, exclude_n=6)
    assert {r.id for r in rest} == {r.id for r in large} - {r.id for r in small}
    held_out = jq.choose(records, None, seed=0, exclude_n=6)
    assert len(held_out) == 24 and not {r.id for r in held_out} & {r.id for r in small}
