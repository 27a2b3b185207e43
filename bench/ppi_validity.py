"""Validity of prediction-powered pass rates (calibration/ppi.py), simulated on real judges.

    python bench/ppi_validity.py [--reps 2000] [--seed 0] [--mix 0.2]
        [--out bench/results/ppi_validity.json]

Each dataset is a real judge on real items: the human gold is the truth Y, the judge's score
the prediction f (P(A) or P(pass) where recorded, else its verdict, averaged over the orders
and prompt variants it was asked in; an item with no usable verdict gets 0.5). For every label
budget (5, 10, 20, 40% of the runs) the script draws --reps random label subsets and computes,
on each, the labels-only interval (lambda = 0), PPI++ (lambda tuned) with a uniform sample, and
PPI++ with an active sample of the same expected size (probabilities from the judge's
uncertainty, calibration.ppi.uncertainty_probs, mix 0.2). Reported per budget:

- coverage of the true mean (it should be 95% within Monte Carlo error: +-2 se is about
  +-1.0 point at 2,000 draws; outside that band the table marks it with * );
- mean interval width, PPI / labels-only and active / labels-only;
- effective label gain: estimated, mean(se_labels_only^2) / mean(se_ppi^2) on the same samples,
  and realised, Var(labels-only estimates) / Var(PPI estimates) over the draws (the number of
  labels the labels-only estimate would need for PPI's precision, per label actually used).

Two populations, as in calibration/ppi.py. ``tasks`` (the default there): each draw first
resamples the dataset's tasks with replacement (the dataset stands for the population of
tasks), then labels a subset of the resampled runs; the truth is the dataset's macro pass rate.
``runs``: the dataset is fixed and only the labelled subset is random; the truth is its own
pass rate. Everything for one (dataset, population, budget) is one vectorised call of
calibration.ppi.estimate_batch on (draws x runs) arrays: the production arithmetic.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from calibration.gold import load_gold  # noqa: E402
from calibration.inputs import join_gold, load_judgments_jsonl, load_recorded  # noqa: E402
from calibration.ppi import Batch, estimate_batch, uncertainty_probs  # noqa: E402
from calibration.records import VerdictRow  # noqa: E402

SHARED = REPO.parent / "shared"
BUDGETS = (0.05, 0.10, 0.20, 0.40)
POPULATIONS = ("tasks", "runs")
#: The LLMBar evaluators simulated: all 881 items each, from strong to weak.
LLMBAR_JUDGES = (
    "GPT-4/Metrics_Reference",
    "PaLM2/Metrics_Reference",
    "ChatGPT/Metrics_Reference",
    "LLaMA2/Metrics_Reference",
)
MIX = 0.2
_VERDICT_VALUE = {"A": 1.0, "B": 0.0, "tie": 0.5, "pass": 1.0, "fail": 0.0}


class Dataset(NamedTuple):
    """One judge on one item set: scores f, truth y (0/1), task codes (0..T-1).

    (A NamedTuple: tests load this script with importlib, unregistered, where a dataclass
    cannot resolve its module.)"""

    name: str
    scores: Any
    truth: Any
    tasks: Any
    n_unscored: int = 0


def from_rows(name: str, rows: Iterable[VerdictRow], positive: str) -> Dataset:
    """Per item: the mean of the judge's P(positive) (or verdict value) over its rows."""
    import numpy as np

    values: dict[str, list[float]] = defaultdict(list)
    gold: dict[str, str] = {}
    task: dict[str, str] = {}
    for r in rows:
        if r.gold not in ("A", "B", "pass", "fail"):
            continue
        gold[r.item_id] = r.gold
        task[r.item_id] = r.cluster
        if r.status != "ok":
            continue
        if r.prob is not None:
            values[r.item_id].append(float(r.prob))
        elif r.verdict in _VERDICT_VALUE:
            values[r.item_id].append(_VERDICT_VALUE[r.verdict])
    items = sorted(gold)
    scores = [statistics.fmean(values[i]) if values[i] else 0.5 for i in items]
    codes: dict[str, int] = {}
    return Dataset(
        name=name,
        scores=np.asarray(scores, float),
        truth=np.asarray([float(gold[i] == positive) for i in items]),
        tasks=np.asarray([codes.setdefault(task[i], len(codes)) for i in items], np.int64),
        n_unscored=sum(1 for i in items if not values[i]),
    )


def load_datasets(shared: Path = SHARED) -> list[Dataset]:
    """The recorded judges (trust_or_escalate, LLMBar) and the embedded judge's exports."""
    out = []
    trust = load_recorded(shared / "judgments" / "trust_or_escalate.jsonl")
    for judge in sorted({r.judge for r in trust}):
        out.append(from_rows(f"trust/{judge}", [r for r in trust if r.judge == judge], "A"))
    llmbar = shared / "judgments" / "llmbar_evaluators.jsonl"
    for judge in LLMBAR_JUDGES:
        out.append(from_rows(f"llmbar/{judge}", load_recorded(llmbar, judge=judge), "A"))
    quality = REPO / "bench" / "results" / "quality"
    for name, file, gold in (
        ("tau/qwen1.5b", "tau.judgments.jsonl", "taubench_airline_dev"),
        ("swe/qwen1.5b", "swe.judgments.jsonl", "swebench_verified_dev"),
    ):
        rows = join_gold(
            load_judgments_jsonl(quality / file), load_gold(shared / "gold" / f"{gold}.jsonl")
        )
        out.append(from_rows(name, rows, "pass"))
    return out


# --------------------------------------------------------------------------- simulation


def _draw_population(data: Dataset, population: str, reps: int, rng: Any) -> dict[str, Any]:
    """(draws x runs) arrays: scores, truth, weights, clusters, validity (padding)."""
    import numpy as np

    tasks = data.tasks
    n_tasks = int(tasks.max()) + 1
    per_task = np.bincount(tasks, minlength=n_tasks)
    if population == "runs":
        return {
            "f": data.scores[None],
            "y": data.truth[None],
            "w": (1.0 / per_task[tasks])[None],
            "cl": tasks[None],
            "valid": np.ones((1, tasks.size), bool),
            "n_clusters": n_tasks,
        }
    # A (tasks x max runs) table of run indices, -1 where a task has fewer runs.
    k = int(per_task.max())
    table = np.full((n_tasks, k), -1, np.int64)
    order = np.argsort(tasks, kind="stable")
    slot = np.arange(tasks.size) - np.repeat(np.cumsum(per_task) - per_task, per_task)
    table[tasks[order], slot] = order
    drawn = rng.integers(0, n_tasks, size=(reps, n_tasks))
    idx = table[drawn].reshape(reps, n_tasks * k)
    valid = idx >= 0
    safe = np.where(valid, idx, 0)
    weight = np.where(valid, 1.0 / per_task[tasks[safe]], 0.0)
    # Each draw of a task is its own cluster (a task drawn twice is two tasks).
    cl = np.broadcast_to(np.repeat(np.arange(n_tasks), k), idx.shape)
    return {
        "f": np.where(valid, data.scores[safe], 0.0),
        "y": np.where(valid, data.truth[safe], 0),
        "w": weight,
        "cl": cl,
        "valid": valid,
        "n_clusters": n_tasks,
    }


def _summary(b: Batch, truth: float) -> dict[str, Any]:
    import numpy as np

    ok = np.isfinite(b.se) & np.isfinite(b.value)
    cover = (b.lo <= truth) & (truth <= b.hi)
    return {
        "coverage": float(cover[ok].mean()) if ok.any() else None,
        "width": float((b.hi - b.lo)[ok].mean()) if ok.any() else None,
        "no_interval": float(1.0 - ok.mean()),
        "mc_var": float(b.value[ok].var()) if ok.any() else None,
        "bias": float(b.value[ok].mean() - truth) if ok.any() else None,
        "mean_var": float((b.se[ok] ** 2).mean()) if ok.any() else None,
        "mean_var_labels_only": float((b.se_labels_only[ok] ** 2).mean()) if ok.any() else None,
        "lambda": float(b.lam[ok].mean()) if ok.any() else None,
        "labels": float(b.n_labels.mean()),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def simulate(
    data: Dataset,
    *,
    budgets: Sequence[float] = BUDGETS,
    reps: int = 2000,
    seed: int = 0,
    populations: Sequence[str] = POPULATIONS,
    mix: float = MIX,
) -> list[dict[str, Any]]:
    """Coverage, width and gain of labels-only, PPI++ and active PPI++ per population and
    budget (one dict each)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per_task = np.bincount(data.tasks)
    w_full = 1.0 / per_task[data.tasks]
    truth = float((w_full * data.truth).sum() / w_full.sum())
    out = []
    for population in populations:
        pop = _draw_population(data, population, reps, rng)
        shape = (reps, pop["valid"].shape[1])
        valid = np.broadcast_to(pop["valid"], shape)
        n_runs = valid.sum(axis=1)
        for budget in budgets:
            n_lab = np.maximum(2, np.rint(budget * n_runs)).astype(np.int64)
            keys = np.where(valid, rng.random(shape), np.inf)
            ranks = keys.argsort(axis=1).argsort(axis=1)
            uniform = ranks < n_lab[:, None]
            pi_u = (n_lab / n_runs)[:, None]
            pi_a = uncertainty_probs(
                np.broadcast_to(pop["f"], shape), n_lab[:, None].astype(float), mix, valid
            )
            active = (rng.random(shape) < pi_a) & valid
            common = {"n_clusters": pop["n_clusters"], "population": population}
            args = (pop["f"], pop["y"])
            lo_u = estimate_batch(*args, uniform, pop["w"], pi_u, pop["cl"], lam=0.0, **common)
            ppi_u = estimate_batch(*args, uniform, pop["w"], pi_u, pop["cl"], **common)
            ppi_a = estimate_batch(
                *args, active, pop["w"], np.where(valid, pi_a, 1.0), pop["cl"], **common
            )
            s_lo, s_ppi, s_act = (_summary(b, truth) for b in (lo_u, ppi_u, ppi_a))
            out.append(
                {
                    "dataset": data.name,
                    "population": population,
                    "budget": budget,
                    "n_runs": int(data.truth.size),
                    "n_tasks": int(per_task.size),
                    "labels": s_lo["labels"],
                    "truth": truth,
                    "labels_only": s_lo,
                    "ppi": s_ppi,
                    "active": s_act,
                    "width_ratio_ppi": _ratio(s_ppi["width"], s_lo["width"]),
                    "width_ratio_active": _ratio(s_act["width"], s_lo["width"]),
                    "width_ratio_active_vs_ppi": _ratio(s_act["width"], s_ppi["width"]),
                    "gain_estimated": _ratio(s_ppi["mean_var_labels_only"], s_ppi["mean_var"]),
                    "gain_realised": _ratio(s_lo["mc_var"], s_ppi["mc_var"]),
                    "gain_realised_active": _ratio(s_lo["mc_var"], s_act["mc_var"]),
                }
            )
    return out


def describe(data: Dataset) -> dict[str, Any]:
    """Judge quality on the dataset: accuracy at 0.5 and the correlation of f with y."""
    import numpy as np

    f, y = data.scores, data.truth
    corr = float(np.corrcoef(f, y)[0, 1]) if f.std() > 0 and y.std() > 0 else 0.0
    return {
        "dataset": data.name,
        "n_runs": int(y.size),
        "n_tasks": int(data.tasks.max()) + 1,
        "pass_rate": float(y.mean()),
        "accuracy": float(((f >= 0.5) == (y == 1)).mean()),
        "corr": corr,
        "n_unscored": data.n_unscored,
    }


# --------------------------------------------------------------------------- output


def _cov(value: float | None, reps: int) -> str:
    if value is None:
        return "-"
    band = 2 * math.sqrt(0.95 * 0.05 / reps)
    mark = "*" if abs(value - 0.95) > band else ""
    return f"{100 * value:.1f}{mark}"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(
    rows: list[dict[str, Any]], population: str, reps: int, quality: dict[str, dict[str, Any]]
) -> str:
    """The markdown table of one population."""
    head = (
        "| judge (corr f,y; acc) | budget | labels | cov LO | cov PPI | cov active | "
        "width LO | PPI/LO | active/LO | gain est. | gain real | gain active | lambda |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        if r["population"] != population:
            continue
        q = quality[r["dataset"]]
        lines.append(
            f"| {r['dataset']} ({q['corr']:.2f}; {q['accuracy']:.2f}) | "
            f"{100 * r['budget']:.0f}% | {r['labels']:.0f} | "
            f"{_cov(r['labels_only']['coverage'], reps)} | {_cov(r['ppi']['coverage'], reps)} | "
            f"{_cov(r['active']['coverage'], reps)} | {_num(r['labels_only']['width'], 3)} | "
            f"{_num(r['width_ratio_ppi'])} | {_num(r['width_ratio_active'])} | "
            f"{_num(r['gain_estimated'])} | {_num(r['gain_realised'])} | "
            f"{_num(r['gain_realised_active'])} | {_num(r['ppi']['lambda'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Simulate every dataset; print the tables; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mix", type=float, default=MIX, help="uniform share of the active plan's probabilities"
    )
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "ppi_validity.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    datasets = load_datasets()
    quality = {d.name: describe(d) for d in datasets}
    rows: list[dict[str, Any]] = []
    for i, data in enumerate(datasets):
        rows.extend(simulate(data, reps=args.reps, seed=args.seed + i, mix=args.mix))
    took = time.perf_counter() - started
    for population in POPULATIONS:
        print(
            f"\npopulation = {population} ({args.reps} draws per row; * = coverage outside "
            f"95% +- {200 * math.sqrt(0.95 * 0.05 / args.reps):.1f} points)\n"
        )
        print(table(rows, population, args.reps, quality))
    print(f"\n{len(datasets)} datasets in {took:.0f} s")
    result = {
        "reps": args.reps,
        "seed": args.seed,
        "budgets": list(BUDGETS),
        "mix": args.mix,
        "seconds": took,
        "datasets": list(quality.values()),
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
