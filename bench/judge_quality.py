"""Measure a judge protocol on a gold file: judge (cached in a store), then score the verdicts.

    python bench/judge_quality.py --gold ../shared/gold/swebench_verified_dev.jsonl \
        --rubric agent-run-success@2 --db quality/swe.db [--n 60] [--variants 3]

Judgments go through the real Runner (litellm -> the embedded model by default) and the store,
so a rerun or a larger --n pays only for what is new. Printed and appended to --results (JSONL):
AUROC of the item score with a task-cluster bootstrap interval, accuracy at 0.5, false accept
and false reject rates, the same for every single prompt variant, and for pairwise rubrics the
order-flip rate, P(prefer first shown) and the flip rate after a label-free position correction.
Also the certified accept band (LTT, Clopper-Pearson) at alpha 0.10 and 0.15, delta 0.1.

--n takes a label-stratified subset (n/2 per class, chosen by a seeded hash of the ids, so a
larger --n extends a smaller one); say so when reporting figures measured on it. --exclude-n M
leaves out the --n M subset: the held-out rest, on which a choice made on the first M is checked.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

import judge
import judge.carding
from calibration.bands import certify
from calibration.confidence import ItemScore, ScoreSet
from calibration.gold import load_gold
from calibration.inputs import VARIANT_STRIDE
from calibration.metrics import auroc, auroc_interval
from judge import kinds
from judge.commands.progress import judging_progress
from judge.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MODEL
from judge.digests import seeded_hex

Kind = Literal["binary", "pairwise"]

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _rank(item_id: str, seed: int) -> str:
    return seeded_hex(seed, item_id)


def stratified(records: list[Any], n: int | None, seed: int) -> list[Any]:
    """Up to n/2 items of each gold label (all items when n is None), in a seeded order."""
    if n is None:
        return records
    by_label: dict[str, list[Any]] = defaultdict(list)
    for r in sorted(records, key=lambda r: _rank(r.id, seed)):
        by_label[r.gold].append(r)
    per = n // max(1, len(by_label))
    chosen = [r for group in by_label.values() for r in group[:per]]
    return sorted(chosen, key=lambda r: _rank(r.id, seed))


def choose(records: list[Any], n: int | None, seed: int, exclude_n: int | None = None) -> list[Any]:
    """The --n subset, less the --exclude-n subset (the held-out rest) when given."""
    chosen = stratified(records, n, seed)
    if exclude_n is None:
        return chosen
    seen = {r.id for r in stratified(records, exclude_n, seed)}
    return [r for r in chosen if r.id not in seen]


def judge_all(args: argparse.Namespace, cases: list[Any]) -> float:
    """Judge every case (cached); return the wall seconds spent."""

    options = judge.JudgeOptions(
        orders=args.orders,
        variants=args.variants,
        temperature=0.0,
        max_tokens=args.max_tokens,
        token_budget=args.token_budget,
        concurrency=1,
    )
    with judge.open_store(args.db) as store, judging_progress(quiet=args.quiet) as shown:
        started = time.perf_counter()
        summary = judge.judge_cases(
            store,
            cases,
            rubric=args.rubric,
            models=[args.model],
            options=options,
            on_start=shown.on_start,
            on_done=shown.on_done,
            source="bench/judge_quality.py",
        )
        took = time.perf_counter() - started
    called = summary.called
    steps = len(summary.outcomes) + len(summary.errors)
    print(
        f"judged {steps} steps ({called} called, {summary.cached} cached) in {took:.0f}s; "
        f"{summary.prompt_tokens / max(1, called):.0f} prompt tokens per call; statuses "
        f"{dict(summary.statuses)}",
        file=sys.stderr,
    )
    return took / max(1, called)


def auroc_with_interval(
    scores: list[float], outcome: list[int], clusters: list[str]
) -> dict[str, Any]:
    """{"value": AUROC, "ci95": task-cluster bootstrap interval (1,000 draws, seed 0)}."""
    import numpy as np

    value = auroc(scores, outcome)
    ci = auroc_interval(
        np.asarray(scores, float),
        np.asarray(outcome, int),
        np.asarray(clusters),
        n_boot=1000,
        seed=0,
    )
    return {"value": value, "ci95": ci}


def _band(item_scores: list[tuple[str, float, str]], kind: Kind, alpha: float) -> dict[str, Any]:

    items = tuple(
        ItemScore(
            item_id=i, score=s, source="prob", n_rows=1, judges=("quality",), gold=g, cluster=i
        )
        for i, s, g in item_scores
    )
    policy = certify(
        ScoreSet(kind=kind, judge="quality", items=items),
        alpha_accept=alpha,
        alpha_reject=alpha if kind == "binary" else None,
        delta=0.1,
    )
    bands: dict[str, Any] = {
        name: {
            "threshold": band.threshold,
            "coverage": band.coverage,
            "n": band.n,
            "errors": band.errors,
            "upper_bound": band.upper_bound,
        }
        for name, band in policy.bands.items()
    }
    return {"summary": policy.summary(), **bands}


def analyse(
    args: argparse.Namespace, gold: dict[str, str], clusters: dict[str, str], kind: Kind
) -> dict[str, Any]:
    """Per-item scores from the stored judgments, and the figures."""

    rows = [
        r
        for r in judge.carding.load_store_rows(args.db, args.model, rubric=args.rubric)
        if r.item_id in gold
    ]
    positive = kinds.SCORING[kind].positive
    by_item: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        by_item[r.item_id].append(r)
    status: dict[str, int] = defaultdict(int)
    for r in rows:
        status[r.status] += 1

    def figures(select: Any) -> dict[str, Any]:
        ids, scores = [], []
        for item_id, group in by_item.items():
            probs = [r.prob for r in group if select(r) and r.status == "ok" and r.prob is not None]
            if probs and gold[item_id] in ("pass", "fail", "A", "B"):
                ids.append(item_id)
                scores.append(statistics.fmean(probs))
        outcome = [int(gold[i] == positive) for i in ids]
        decided = [(s >= 0.5) == bool(y) for s, y in zip(scores, outcome, strict=True)]
        neg = [s for s, y in zip(scores, outcome, strict=True) if not y]
        pos = [s for s, y in zip(scores, outcome, strict=True) if y]
        return {
            "n": len(ids),
            "auroc": auroc_with_interval(scores, outcome, [clusters[i] for i in ids])
            if len(set(outcome)) > 1
            else None,
            "accuracy": sum(decided) / len(decided) if decided else None,
            "false_accept_rate": sum(s >= 0.5 for s in neg) / len(neg) if neg else None,
            "false_reject_rate": sum(s < 0.5 for s in pos) / len(pos) if pos else None,
            "mean_score": statistics.fmean(scores) if scores else None,
            "scores": list(zip(ids, scores, [gold[i] for i in ids], strict=True)),
        }

    overall = figures(lambda r: True)
    result: dict[str, Any] = {"statuses": dict(status), "all": _strip(overall)}
    variants = sorted({r.sample // VARIANT_STRIDE for r in rows})
    if len(variants) > 1:
        result["per_variant"] = {
            v: _strip(figures(lambda r, v=v: r.sample // VARIANT_STRIDE == v)) for v in variants
        }
        # What fewer variants would give (the time/quality trade of the protocol): the mean over
        # the first k variants only.
        result["first_k_variants"] = {
            k: _strip(figures(lambda r, k=k: r.sample // VARIANT_STRIDE < k))
            for k in range(1, len(variants) + 1)
        }
    if kind == "pairwise":
        result["position"] = _position(by_item, gold)
        result["per_order"] = {
            o: _strip(figures(lambda r, o=o: r.order == o)) for o in ("AB", "BA")
        }
    result["bands"] = {
        str(a): _band([(i, s, g) for i, s, g in overall["scores"]], kind, a) for a in (0.10, 0.15)
    }
    return result


def _strip(fig: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fig.items() if k != "scores"}


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _first_position_bias(pairs: list[tuple[float, float, str]]) -> float:
    """The mean logit of preferring the answer shown first, over (P(A) in AB, P(A) in BA)
    pairs: AB shows A first (P(A)); BA shows B first (1 - P(A))."""
    return statistics.fmean(
        [_logit(ab) for ab, _, _ in pairs] + [_logit(1 - ba) for _, ba, _ in pairs]
    )


def _position(by_item: dict[str, list[Any]], gold: dict[str, str]) -> dict[str, Any]:
    """Order flips of the per-order argmax verdicts (A vs B on P(A)), before and after a
    label-free correction: subtract the batch's mean logit of preferring the first shown."""
    pairs: list[tuple[float, float, str]] = []
    for item_id, group in by_item.items():
        by_key: dict[tuple[int, str], float] = {}
        for r in group:
            if r.status == "ok" and r.prob is not None and r.order in ("AB", "BA"):
                by_key[(r.sample, r.order)] = r.prob
        for sample in {s for s, _ in by_key}:
            if (sample, "AB") in by_key and (sample, "BA") in by_key:
                pairs.append((by_key[(sample, "AB")], by_key[(sample, "BA")], gold[item_id]))
    if not pairs:
        return {}
    bias = _first_position_bias(pairs)

    def flips(shift: float, pairs: list[tuple[float, float, str]]) -> tuple[float, float, float]:
        n_flip = n_first = correct = 0
        for ab, ba, g in pairs:
            a_ab = _logit(ab) - shift > 0  # A chosen in order AB (A shown first)
            a_ba = _logit(ba) + shift > 0  # in BA, A is shown second: remove the first's bonus
            n_flip += a_ab != a_ba
            n_first += a_ab + (not a_ba)
            correct += (a_ab == (g == "A")) + (a_ba == (g == "A"))
        n = len(pairs)
        return n_flip / n, n_first / (2 * n), correct / (2 * n)

    raw, corrected = flips(0.0, pairs), flips(bias, pairs)
    # The protocol's per-order verdict: P(A) averaged over the prompt variants of one order,
    # then the same flips (every item with a pair above has both orders here).
    by_order: dict[tuple[str, str], list[float]] = defaultdict(list)
    for item_id, group in by_item.items():
        for r in group:
            if r.status == "ok" and r.prob is not None and r.order in ("AB", "BA"):
                by_order[(item_id, r.order)].append(r.prob)
    averaged = [
        (statistics.fmean(by_order[(i, "AB")]), statistics.fmean(by_order[(i, "BA")]), gold[i])
        for i in by_item
        if by_order.get((i, "AB")) and by_order.get((i, "BA"))
    ]
    proto_bias = _first_position_bias(averaged)
    proto_raw, proto_corrected = flips(0.0, averaged), flips(proto_bias, averaged)
    return {
        "n_pairs": len(pairs),
        "n_items_both_orders": len(averaged),
        "protocol_order_flip_rate": proto_raw[0],
        "protocol_order_flip_rate_corrected": proto_corrected[0],
        "protocol_per_order_accuracy_corrected": proto_corrected[2],
        "protocol_first_position_logit_bias": proto_bias,
        "order_flip_rate": raw[0],
        "p_prefer_first": raw[1],
        "per_order_accuracy": raw[2],
        "first_position_logit_bias": bias,
        "order_flip_rate_corrected": corrected[0],
        "p_prefer_first_corrected": corrected[1],
        "per_order_accuracy_corrected": corrected[2],
    }


def main() -> None:
    """Judge and score; print the figures and append them to --results."""

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", required=True)
    parser.add_argument("--rubric", required=True)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--db", required=True)
    parser.add_argument("--n", type=int, help="label-stratified subset size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--orders", choices=["one", "both"], default="both")
    parser.add_argument("--variants", type=int)
    parser.add_argument("--token-budget", type=int)
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    parser.add_argument("--results", default=str(REPO / "bench" / "results" / "quality.jsonl"))
    parser.add_argument(
        "--exclude-n",
        type=int,
        metavar="M",
        help="leave out the items of the --n M subset (score a held-out part, "
        "e.g. to confirm a choice made on the first M items)",
    )
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    gold_set = load_gold(args.gold)
    chosen = choose(list(gold_set.records), args.n, args.seed, exclude_n=args.exclude_n)
    gold = {r.id: r.gold for r in chosen}
    clusters = {r.id: str((r.slices or {}).get("task_id", r.id)) for r in chosen}
    kind: Kind = "pairwise" if chosen and chosen[0].kind == "pairwise" else "binary"
    seconds = None
    if not args.analyse_only:
        Path(args.db).parent.mkdir(parents=True, exist_ok=True)
        seconds = judge_all(args, [r.to_case() for r in chosen])
    result = {
        "gold": Path(args.gold).name,
        "n_items": len(chosen),
        "subset": args.n,
        "excluded_subset": args.exclude_n,
        "rubric": args.rubric,
        "model": args.model,
        "variants": args.variants,
        "orders": args.orders,
        "token_budget": args.token_budget,
        "seconds_per_call": seconds,
        **analyse(args, gold, clusters, kind),
    }
    print(json.dumps(result, indent=1, default=str))
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    with open(args.results, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result, default=str) + "\n")


if __name__ == "__main__":
    main()
