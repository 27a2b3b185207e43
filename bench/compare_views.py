"""Compare judge protocols ("views") on the same gold items, from exported judgments; no model call.

    python bench/compare_views.py --gold ../shared/gold/swebench_verified_dev.jsonl \
        bench/results/quality/swe.judgments.jsonl bench/results/quality/swe-diff.judgments.jsonl

Each FILE (optionally FILE:RUBRIC_ID to keep one rubric of a mixed export) is one view. A view's
item score is the mean positive probability of its `ok` judgments of that item (every prompt
variant, sample and order: the bench's protocol score). Only items every view scored are
compared. Printed: per view, AUROC with a task-cluster bootstrap interval and accuracy at 0.5;
the AUROC of the views' mean score (a panel of rubrics on one model); and for each pair of
views the paired difference of AUROC, bootstrapped over task clusters with the same draws for
both, with the share of draws in which the second view does not beat the first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # judge_quality, the figures' common definitions

from judge_quality import auroc_with_interval  # noqa: E402

from calibration.gold import load_gold  # noqa: E402
from calibration.inputs import load_judgments_jsonl  # noqa: E402
from calibration.metrics import auroc  # noqa: E402
from judge import kinds  # noqa: E402


def view_scores(path: str, rubric: str | None = None) -> dict[str, float]:
    """Item id -> mean positive probability of the file's `ok` judgments (of ``rubric`` if given,
    "id" or "id@version"): read as calibration reads them (``load_judgments_jsonl``), so an
    answer of "cannot determine" is an abstention and never scored."""

    per: dict[str, list[float]] = defaultdict(list)
    for row in load_judgments_jsonl(path, rubric=rubric):
        if row.status == "ok" and row.prob is not None:
            per[row.item_id].append(row.prob)
    return {item: statistics.fmean(ps) for item, ps in per.items()}


def _auroc(scores: list[float], outcome: list[int]) -> float:

    value = auroc(scores, outcome)
    if value is None:
        raise ValueError("AUROC needs items of both classes")
    return value


def paired_auroc_difference(
    a: list[float],
    b: list[float],
    outcome: list[int],
    clusters: list[str],
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """AUROC(b) - AUROC(a) on the same items, with a cluster-bootstrap 95% interval."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = sorted(set(clusters))
    members = {c: [i for i, k in enumerate(clusters) if k == c] for c in ids}
    diffs = []
    for _ in range(n_boot):
        rows = [i for c in rng.choice(ids, size=len(ids), replace=True) for i in members[c]]
        y = [outcome[i] for i in rows]
        if len(set(y)) < 2:
            continue
        diffs.append(_auroc([b[i] for i in rows], y) - _auroc([a[i] for i in rows], y))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return {
        "difference": _auroc(b, outcome) - _auroc(a, outcome),
        "ci95": [float(lo), float(hi)],
        "share_not_better": float(np.mean(np.asarray(diffs) <= 0)),
        "n_boot": len(diffs),
    }


def compare(
    views: dict[str, dict[str, float]],
    gold: dict[str, str],
    clusters: dict[str, str],
    positive: str,
) -> dict[str, Any]:
    """Figures for each view, for their mean, and paired differences."""

    labels = {positive, "fail" if positive == "pass" else "B"}
    items = sorted(
        set.intersection(*(set(s) for s in views.values()))
        & {i for i, g in gold.items() if g in labels}
    )  # a tie has no side to rank
    outcome = [int(gold[i] == positive) for i in items]
    if len(set(outcome)) < 2:
        raise ValueError(
            f"the {len(items)} items every view scored hold one gold label at "
            "most: no AUROC to compare"
        )
    cl = [clusters[i] for i in items]

    def figures(scores: list[float]) -> dict[str, Any]:
        right = [(s >= 0.5) == bool(y) for s, y in zip(scores, outcome, strict=True)]
        return {
            "auroc": auroc_with_interval(scores, outcome, cl),
            "accuracy": sum(right) / len(right),
        }

    per_view = {name: [s[i] for i in items] for name, s in views.items()}
    result: dict[str, Any] = {
        "n": len(items),
        "n_positive": sum(outcome),
        "views": {k: figures(v) for k, v in per_view.items()},
    }
    if len(views) > 1:
        mean = [statistics.fmean(col) for col in zip(*per_view.values(), strict=True)]
        result["mean_of_views"] = figures(mean)
        result["paired"] = {
            f"{x} -> {y}": paired_auroc_difference(per_view[x], per_view[y], outcome, cl)
            for x, y in combinations(per_view, 2)
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", required=True)
    parser.add_argument("views", nargs="+", metavar="FILE[:RUBRIC_ID]")
    args = parser.parse_args()

    records = load_gold(args.gold).records
    gold = {r.id: r.gold for r in records}
    clusters = {r.id: str((r.slices or {}).get("task_id", r.id)) for r in records}
    positive = kinds.for_case(records[0].kind).positive if records else "pass"
    views = {}
    for spec in args.views:
        path, _, rubric = spec.partition(":")
        views[
            Path(path).name.removesuffix(".judgments.jsonl") + (f":{rubric}" if rubric else "")
        ] = view_scores(path, rubric or None)
    if len(views) < len(args.views):
        raise SystemExit("two views have the same name (file name and rubric): rename a file")
    try:
        result = compare(views, gold, clusters, positive)
    except ValueError as err:
        raise SystemExit(str(err)) from err

    def line(name: str, f: dict[str, Any]) -> str:
        a = f["auroc"]
        ci = a["ci95"] or (float("nan"), float("nan"))
        return (
            f"{name:28s} AUROC {a['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]  "
            f"accuracy@0.5 {f['accuracy']:.2f}"
        )

    print(f"{result['n']} items scored by every view ({result['n_positive']} {positive})")
    for name, f in result["views"].items():
        print(line(name, f))
    if "mean_of_views" in result:
        print(line("mean of the views", result["mean_of_views"]))
        for pair, d in result["paired"].items():
            print(
                f"{pair}: AUROC difference {d['difference']:+.2f} "
                f"[{d['ci95'][0]:+.2f}, {d['ci95'][1]:+.2f}]; not better in "
                f"{d['share_not_better']:.0%} of {d['n_boot']} draws"
            )


if __name__ == "__main__":
    main()
