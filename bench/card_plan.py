"""Label plans for a card on recorded judges: coverage from a plan's labels against random ones,
and the planner's label estimate against what happens.

    python bench/card_plan.py [--reps 300] [--seed 0] [--only trust|llmbar|judgebench]
        [--planner-reps N] [--out bench/results/card_plan.json]

Every repetition draws a pool of unlabelled items (as many as the recorded set holds, with
replacement: i.i.d. draws from the set taken as the population) and labels some of them with
their recorded gold. At alpha 0.15, delta 0.1 (pairwise decide bands):

1. Plan against random labels. ``random N``: N items of the pool labelled uniformly at random
   (N = 100, and N = the set's size for the pool itself), certified by the card's default
   procedure (calibration.workflow: a panel starts at 40% of the labelled items, a single
   judge at 30 items on the published grid). ``plan N``: the N labels a plan
   (calibration.card_plan.plan_for_card) draws, certified by certify_planned; the band share
   is chosen from the judge's own probabilities, the default (0.5, fixed in advance) or
   fixed at 0.6 or 0.7.
   Reported: mean coverage of the population (the share of all its items the card decides),
   agreement there, and "held": the share of repetitions whose band agrees with gold on at
   least 1 - alpha of the population items it decides (must be >= 1 - delta = 0.90).
2. The planner against what happens: for a coverage c, the planner's labels against the fewest
   labels m (on a grid) with which a plan for c certifies the whole band in at least 80% of
   repetitions. The planner's error rate: the judge's own probabilities ("scores"), the default
   (alpha / 2), a pilot (40 labels drawn at random in the band of a fresh pool, its
   median-unbiased upper limit; quartiles over pools), and the band's true error rate (which
   checks the arithmetic alone).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from calibration.bands import certify  # noqa: E402
from calibration.card_plan import (  # noqa: E402
    band_of,
    certify_planned,
    labels_needed,
    plan_for_card,
)
from calibration.confidence import ScoreSet, score_items  # noqa: E402
from calibration.inputs import load_recorded  # noqa: E402
from calibration.panel import combine  # noqa: E402

SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
ALPHA, DELTA, POWER = 0.15, 0.1, 0.8
GRID_M = (20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1200)
COVERS = (0.3, 0.5, 0.7)


def _scores(path: Path, judges: Sequence[str], panel: bool) -> ScoreSet:
    """The recorded set's scores (one judge, or the panel's summed log-odds), gold items every
    judge attempted."""
    rows = [r for r in load_recorded(path) if r.judge in set(judges)]
    by_item: dict[str, set[str]] = {}
    for r in rows:
        by_item.setdefault(r.item_id, set()).add(r.judge)
    keep = {i for i, js in by_item.items() if js == set(judges)}
    rows = [r for r in rows if r.item_id in keep and r.gold is not None]
    members = [score_items(rows, kind="pairwise", judge=j) for j in judges]
    return combine(members, "logodds") if panel else members[0]


def _pool(pop: ScoreSet, picked: np.ndarray) -> ScoreSet:
    """The population's items at ``picked`` (repeats: distinct copies), gold kept."""
    items = tuple(
        replace(pop.items[i], item_id=f"{pop.items[i].item_id}#{k}", cluster=f"c{k}")
        for k, i in enumerate(picked)
    )
    return replace(pop, items=items, unscored={})


def _unlabelled(pool: ScoreSet, keep: set[str] | None = None) -> ScoreSet:
    return replace(
        pool,
        items=tuple(
            i if keep is not None and i.item_id in keep else replace(i, gold=None)
            for i in pool.items
        ),
    )


def _on_population(pop: ScoreSet, threshold: float | None) -> tuple[float, float | None]:
    """(coverage, agreement) of a decide band over the whole population."""
    if threshold is None:
        return 0.0, None
    conf = pop.confidences()
    right = pop.correct()
    inside = conf >= threshold
    n = int(inside.sum())
    return n / conf.size, (float(right[inside].mean()) if n else None)


def _summary(rows: list[tuple[float, float | None]]) -> dict[str, Any]:
    covs = [c for c, _ in rows]
    agrees = [a for _, a in rows if a is not None]
    held = sum(1 for _, a in rows if a is None or a >= 1 - ALPHA)
    return {
        "coverage": float(np.mean(covs)),
        "agreement": float(np.mean(agrees)) if agrees else None,
        "held": held / len(rows),
        "certified": sum(1 for c, _ in rows if c > 0) / len(rows),
    }


def compare(pop: ScoreSet, panel: bool, reps: int, rng: np.random.Generator) -> dict[str, Any]:
    """Section 1 on one recorded set."""
    n = len(pop.items)
    default = (
        {"grid": "items", "starts": (), "start_shares": (0.4,)} if panel else {"starts": (30,)}
    )
    out: dict[str, list[tuple[float, float | None]]] = {}
    for _ in range(reps):
        pool = _pool(pop, rng.integers(0, n, n))
        ids = [i.item_id for i in pool.items]
        for budget in (100, n):
            keep = {ids[i] for i in rng.permutation(n)[:budget]}
            labelled = _unlabelled(pool, keep)
            policy = certify(labelled, alpha_accept=ALPHA, delta=DELTA, **default)
            out.setdefault(f"random {budget}", []).append(
                _on_population(pop, policy.decide_threshold)
            )
        blank = _unlabelled(pool)
        for share in ("scores", None, 0.6, 0.7):
            plan = plan_for_card(
                blank,
                budget=100,
                alpha=ALPHA,
                delta=DELTA,
                band_share=share if isinstance(share, float) else None,
                seed=int(rng.integers(1 << 30)),
                error="scores" if share == "scores" else "prior",
            )
            policy = certify_planned(
                _unlabelled(pool, set(plan.chosen)), plan, alpha_accept=ALPHA, delta=DELTA
            )
            if share == "scores":
                name = "plan 100, share chosen from the judge's scores"
            elif share is None:
                name = "plan 100, default (share 0.5)"
            else:
                name = f"plan 100, share {share}"
            out.setdefault(name, []).append(_on_population(pop, policy.decide_threshold))
    return {name: _summary(rows) for name, rows in out.items()}


#: Labels in a simulated pilot (drawn at random in the band, labelled first).
PILOT = 40


def pilot_estimates(
    pop: ScoreSet, cover: float, reps: int, rng: np.random.Generator
) -> dict[str, Any]:
    """The planner's labels from a pilot of PILOT labels in the band of a fresh pool, over
    ``reps`` pools: quartiles (a pilot whose rate reaches alpha: no estimate, counted apart)."""
    n = len(pop.items)
    by_errors: dict[int, int | None] = {}
    labels: list[float] = []
    never = 0
    for _ in range(reps):
        pool = _pool(pop, rng.integers(0, n, n))
        band, _ = band_of(pool, cover)
        found = pool.by_id()
        drawn = rng.permutation(len(band))[:PILOT]
        k = sum(found[band[i]].decision("pairwise") != found[band[i]].gold for i in drawn)
        if k not in by_errors:
            est = labels_needed(
                pop, cover=cover, alpha=ALPHA, delta=DELTA, power=POWER,
                error=f"pilot:{k}/{len(drawn)}",
            )  # fmt: skip
            by_errors[k] = est.labels
        found_labels = by_errors[k]
        if found_labels is None:
            never += 1
        else:
            labels.append(float(found_labels))
    q = np.quantile(labels, [0.25, 0.5, 0.75]) if labels else [None] * 3
    return {
        "reps": reps,
        "labels": PILOT,
        "q25": q[0],
        "median": q[1],
        "q75": q[2],
        "never": never / reps if reps else None,
    }


def planner_check(
    pop: ScoreSet, reps: int, rng: np.random.Generator, pilot_reps: int = 200
) -> list[dict[str, Any]]:
    """Section 2 on one recorded set."""
    n = len(pop.items)
    results = []
    for cover in COVERS:
        band, _ = band_of(pop, cover)
        wrong = 1.0 - float(
            np.mean([pop.by_id()[i].decision("pairwise") == pop.by_id()[i].gold for i in band])
        )
        by_scores = labels_needed(
            pop, cover=cover, alpha=ALPHA, delta=DELTA, power=POWER, error="scores"
        )
        by_prior = labels_needed(pop, cover=cover, alpha=ALPHA, delta=DELTA, power=POWER)
        pilots = pilot_estimates(pop, cover, pilot_reps, rng)
        by_truth = labels_needed(
            pop, cover=cover, alpha=ALPHA, delta=DELTA, power=POWER, error=wrong
        )
        actual = None
        rates = {}
        for m in GRID_M:
            size = max(n, math.ceil(1.5 * m / cover))
            hits = 0
            for _ in range(reps):
                pool = _pool(pop, rng.integers(0, n, size))
                blank = _unlabelled(pool)
                plan = plan_for_card(
                    blank, budget=m, alpha=ALPHA, delta=DELTA, band_share=cover,
                    seed=int(rng.integers(1 << 30)),
                )  # fmt: skip
                if plan.strata[0].n_labels < m:
                    continue
                policy = certify_planned(
                    _unlabelled(pool, set(plan.chosen)), plan, alpha_accept=ALPHA, delta=DELTA
                )
                hits += policy.coverage >= len(plan.band_ids) / size - 1e-9
            rates[m] = hits / reps
            if actual is None and rates[m] >= POWER:
                actual = m
                break
        results.append(
            {
                "cover": cover,
                "band_error": wrong,
                "scores_error": by_scores.error,
                "labels_by_scores": by_scores.labels,
                "labels_by_prior": by_prior.labels,
                "prior_error": by_prior.error,
                "pilot": pilots,
                "labels_by_true_error": by_truth.labels,
                "labels_actual": actual,
                "certify_rate_by_m": rates,
            }
        )
    return results


def sets(only: str | None) -> list[tuple[str, Path, tuple[str, ...], bool]]:
    j = SHARED / "judgments"
    trust = ("gpt-3.5-turbo", "gpt-4-turbo-2024-04-09", "mistral-7b-instruct")
    llmbar = (
        "GPT-4/Metrics_Reference",
        "ChatGPT/Metrics_Reference",
        "PaLM2/Metrics_Reference",
        "LLaMA2/Metrics_Reference",
    )
    out = []
    if only in (None, "trust"):
        out += [
            ("trust panel (logodds)", j / "trust_or_escalate.jsonl", trust, True),
            (
                "trust gpt-4-turbo",
                j / "trust_or_escalate.jsonl",
                ("gpt-4-turbo-2024-04-09",),
                False,
            ),
        ]
    if only in (None, "llmbar"):
        out += [
            ("llmbar panel (logodds)", j / "llmbar_evaluators.jsonl", llmbar, True),
            ("llmbar GPT-4/Metrics_Reference", j / "llmbar_evaluators.jsonl", llmbar[:1], False),
        ]
    if only in (None, "judgebench"):
        out += [
            (
                "judgebench claude-3-haiku",
                j / "judgebench_outputs.jsonl",
                ("arena_hard/claude-3-haiku-20240307",),
                False,
            )
        ]
    return out


def _f(x: float | None, d: int = 3) -> str:
    return "-" if x is None else f"{x:.{d}f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run both sections, write the JSON, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["trust", "llmbar", "judgebench"])
    parser.add_argument(
        "--planner-reps",
        type=int,
        help="repetitions per label count in the planner check (default: max(100, reps / 2))",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "card_plan.json")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    report: dict[str, Any] = {"alpha": ALPHA, "delta": DELTA, "reps": args.reps, "sets": {}}
    for name, path, judges, panel in sets(args.only):
        pop = _scores(path, judges, panel)
        t0 = time.perf_counter()
        report["sets"][name] = {
            "n": len(pop.items),
            "compare": compare(pop, panel, args.reps, rng),
            "planner": planner_check(pop, args.planner_reps or max(100, args.reps // 2), rng),
        }
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("| set | labels | coverage | agreement | held (>= 0.90) | certified |")
    print("|---|---|---|---|---|---|")
    for name, data in report["sets"].items():
        for how, r in data["compare"].items():
            print(
                f"| {name} ({data['n']}) | {how} | {_f(r['coverage'])} | {_f(r['agreement'])} | "
                f"{_f(r['held'])} | {_f(r['certified'], 2)} |"
            )
    print()
    print("| set | cover | band error (true) | labels: what happens (80%) | planner, judge's "
          "scores (error) | planner, default: alpha / 2 | planner, pilot of 40: q25 / median / q75 "
          "(no estimate) | planner, true error | estimate / needed: scores, default, pilot "
          "median |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, data in report["sets"].items():
        for r in data["planner"]:
            need = r["labels_actual"]
            actual = need if need is not None else f"> {GRID_M[-1]}"
            pilot = r["pilot"]

            def ratio(x: float | None, need: int | None = need) -> str:
                if x is None:
                    return "-"
                return f"{x / need:.2f}" if need is not None else f"< {x / GRID_M[-1]:.2f}"

            print(
                f"| {name} | {r['cover']} | {_f(r['band_error'])} | {actual} | "
                f"{r['labels_by_scores']} ({_f(r['scores_error'], 4)}) | {r['labels_by_prior']} | "
                f"{_f(pilot['q25'], 0)} / {_f(pilot['median'], 0)} / {_f(pilot['q75'], 0)} "
                f"({_f(pilot['never'], 2)}) | {r['labels_by_true_error']} | "
                f"{ratio(r['labels_by_scores'])}, {ratio(r['labels_by_prior'])}, "
                f"{ratio(pilot['median'])} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
