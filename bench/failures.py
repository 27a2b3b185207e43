"""Failure clusters: agreement with people's categories, stability, and 10,000 runs' cost.

    .venv/bin/python bench/failures.py [--runs 10000] [--resamples 50] [--json OUT]

1. **Agreement** on ``../shared/fbd`` (JUDGE_SHARED_DIR overrides ``..``/shared): the 29 failed
   AgentRx tau-bench retail runs against their root-cause ``failure_category`` (normalised), and
   the 126 Who&When runs against their ``mistake_agent`` (the only category that set has); both
   with the recorded reason and critical-step window as the summary (``report``) and with the
   window only (``window``: no person's words). Purity, adjusted Rand index (ARI) and the
   number of clusters, for the default options and a small sweep of the threshold.
2. **Stability**: ARI between the clustering of all runs and of random 80% subsets (on the
   runs both hold), over ``--resamples`` seeds; and on the synthetic set, ARI between sampling
   seeds.
3. **Scale**: ``--runs`` synthetic failed runs (plus as many passed ones for exposure), drawn
   from feature distributions like the shared runs' (owner, critical-step kind, stage, tool,
   horizon, retries) and summaries written from 24 planted mechanisms (a verb and an
   object), 3-12 words common to all runs and 2-8 run-specific details (ids, names) out of
   3,000; time (wall and CPU) and peak traced memory of clustering, assignment of later runs
   to named clusters, and the per-cluster exposure and rates, excluding any model call; and ARI
   against the planted mechanisms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judge.failures import (
    ClusterOptions,
    FailureReport,
    RunRecord,
    assign,
    find_clusters,
    records_from_files,
    valid_failures,
)

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
SETS = {
    "agentrx-tau-retail": SHARED / "fbd" / "agentrx_tau_retail" / "tau_dataset_failed.json",
    "who-and-when": SHARED / "fbd" / "who_and_when_algorithm_generated",
}


def purity(labels: list[int], truth: list[str]) -> float:
    """Share of runs whose cluster's most common category is theirs."""
    by = Counter(zip(labels, truth, strict=True))
    best: dict[int, int] = {}
    for (k, _), n in by.items():
        best[k] = max(best.get(k, 0), n)
    return sum(best.values()) / len(labels)


def partition(records: list[RunRecord], options: ClusterOptions) -> dict[str, int]:
    """Case id -> cluster index."""
    found = find_clusters(records, options)
    return {m: k for k, c in enumerate(found) for m in c.cluster.members}


def ari(a: Sequence[int | str], b: Sequence[int | str]) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(a, b))


def agreement(which: str, summary: str, options: ClusterOptions) -> dict[str, Any]:
    runs = valid_failures(records_from_files([SETS[which]], summary=summary))
    truth = [r.category or "-" for r in runs]
    where = partition(runs, options)
    labels = [where[r.case_id] for r in runs]
    return {
        "set": which,
        "summary": summary,
        "threshold": options.threshold,
        "group_by": list(options.group_by),
        "runs": len(runs),
        "categories": len(set(truth)),
        "clusters": len(set(labels)),
        "purity": round(purity(labels, truth), 3),
        "ari": round(ari(labels, truth), 3),
    }


def stability(runs: list[RunRecord], options: ClusterOptions, resamples: int) -> dict[str, Any]:
    """ARI between all runs' clustering and 80% subsets' (on the common runs)."""
    full = partition(runs, options)
    scores = []
    for seed in range(resamples):
        rng = random.Random(seed)
        subset = rng.sample(runs, k=max(2, int(0.8 * len(runs))))
        part = partition(subset, options)
        ids = [r.case_id for r in subset]
        scores.append(ari([full[i] for i in ids], [part[i] for i in ids]))
    scores.sort()
    return {
        "resamples": resamples,
        "ari_mean": round(sum(scores) / len(scores), 3),
        "ari_p5": round(scores[int(0.05 * len(scores))], 3),
        "ari_min": round(scores[0], 3),
    }


# --- Synthetic runs --------------------------------------------------------------------------

_VERBS = ["retried", "skipped", "guessed", "misread", "ignored", "repeated", "claimed", "edited"]
_OBJECTS = [
    "the deploy call after an ambiguous timeout",
    "the order id instead of asking the user",
    "the tool output count of pending orders",
    "the failing test before finishing",
    "the identity check the policy requires",
    "the payment method the user named",
    "the exit code of the build step",
    "the address change on delivered orders",
    "the refund amount from the wrong item",
    "the search results of the first page only",
    "the compaction summary of earlier steps",
    "the confirmation before an irreversible cancel",
]
#: Words every run shares (low weight once TF-IDF has seen them everywhere).
_COMMON = [
    "user",
    "assistant",
    "order",
    "item",
    "step",
    "tool",
    "call",
    "result",
    "reply",
    "message",
    "check",
    "value",
    "list",
    "update",
    "status",
    "request",
    "policy",
    "answer",
    "task",
    "file",
    "test",
    "run",
    "error",
    "output",
    "data",
    "record",
    "account",
]
#: Run-specific details (ids, product names): many, each rare.
_DETAILS = 3000
_DIST: dict[str, list[tuple[str, float]]] = {
    "owner": [("model", 0.62), ("user", 0.22), ("tool", 0.08), ("harness", 0.05), ("task", 0.03)],
    "critical_kind": [("tool_call", 0.45), ("message", 0.45), ("error", 0.1)],
    "stage": [("early", 0.35), ("middle", 0.4), ("late", 0.25)],
    "horizon": [("short", 0.3), ("medium", 0.4), ("long", 0.3)],
    "retries": [("0", 0.8), ("1-2", 0.15), ("3+", 0.05)],
    "tool": [("none", 0.5), ("modify_order", 0.2), ("get_order", 0.15), ("deploy", 0.15)],
}


def _pick(rng: random.Random, field: str) -> str:
    values, weights = zip(*_DIST[field], strict=True)
    return rng.choices(values, weights)[0]


def synthetic(n: int, seed: int = 0) -> tuple[list[RunRecord], list[int]]:
    """``n`` failed runs (and ``n`` passed) with planted mechanisms; the mechanism of each
    failed run."""
    rng = random.Random(seed)
    mechanisms = [(v, o) for v in _VERBS[:6] for o in _OBJECTS[:4]]  # 24 mechanisms
    weights = [1 / (k + 1) for k in range(len(mechanisms))]  # a long tail
    runs: list[RunRecord] = []
    truth: list[int] = []
    for i in range(n):
        k = rng.choices(range(len(mechanisms)), weights)[0]
        verb, obj = mechanisms[k]
        common = rng.choices(_COMMON, k=rng.randint(3, 12))
        details = [f"x{rng.randrange(_DETAILS)}" for _ in range(rng.randint(2, 8))]
        noise = " ".join(common + details)
        features = {f: _pick(rng, f) for f in _DIST}
        runs.append(
            RunRecord(
                case_id=f"syn-{i}",
                failed=True,
                owner=features["owner"],  # type: ignore[arg-type]
                features=features,
                summary=f"the agent {verb} {obj}. {noise}",
                symptom="task failed",
                critical_cause=f"{verb} {obj}",
            )
        )
        truth.append(k)
    for i in range(n):
        runs.append(
            RunRecord(case_id=f"ok-{i}", failed=False, features={f: _pick(rng, f) for f in _DIST})
        )
    return runs, truth


def scale(n: int, options: ClusterOptions) -> dict[str, Any]:
    runs, truth = synthetic(n)
    later, _ = synthetic(max(n // 10, 1), seed=1)
    later = [r.model_copy(update={"case_id": "later-" + r.case_id}) for r in later]
    t0, c0 = time.perf_counter(), time.process_time()
    found = find_clusters(runs, options)
    t1, c1 = time.perf_counter(), time.process_time()
    clusters = [c.cluster.model_copy(update={"status": "named", "definition": "x"}) for c in found]
    assigned = assign(later, clusters)
    t2 = time.perf_counter()
    report = FailureReport(
        records=runs,
        clusters=clusters,
        assignment={m: c.cluster_id for c in clusters for m in c.members},
    )
    lines = report.cluster_lines()
    t3, c3 = time.perf_counter(), time.process_time()
    where = {m: k for k, c in enumerate(found) for m in c.cluster.members}
    planted = ari([where[f"syn-{i}"] for i in range(n)], truth)
    tracemalloc.start()
    find_clusters(runs, options)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    seeds = [partition(runs, ClusterOptions(group_by=options.group_by, seed=s)) for s in range(3)]
    ids = [f"syn-{i}" for i in range(n)]
    seed_ari = min(ari([seeds[0][i] for i in ids], [s[i] for i in ids]) for s in seeds[1:])
    return {
        "failed_runs": n,
        "passed_runs": n,
        "clusters": len(found),
        "cluster_s": round(t1 - t0, 2),
        "cluster_cpu_s": round(c1 - c0, 2),
        "assign_later_runs": len(later),
        "assigned": len(assigned),
        "assign_s": round(t2 - t1, 2),
        "exposure_and_rates_s": round(t3 - t2, 2),
        "total_s": round(t3 - t0, 2),
        "total_cpu_s": round(c3 - c0, 2),
        "peak_traced_mb": round(peak / 2**20, 1),
        "clusters_with_rates": len(lines),
        "ari_planted": round(planted, 3),
        "ari_between_seeds_min": round(seed_ari, 3),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--resamples", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    default = ClusterOptions()
    out: dict[str, Any] = {"agreement": [], "stability": {}, "scale": None}
    if all(p.exists() for p in SETS.values()):
        for which in SETS:
            for summary in ("report", "window"):
                for threshold in (0.8, 0.9, default.threshold, 0.98):
                    options = ClusterOptions(threshold=threshold)
                    row = agreement(which, summary, options)
                    out["agreement"].append(row)
                    print(json.dumps(row))
            runs = valid_failures(records_from_files([SETS[which]]))
            out["stability"][which] = stability(runs, default, args.resamples)
            print(which, "stability", json.dumps(out["stability"][which]))
    else:
        print(f"{SHARED / 'fbd'} is absent: agreement and stability skipped", file=sys.stderr)
    out["scale"] = scale(args.runs, default)
    print("scale", json.dumps(out["scale"]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
