"""Validity and coverage of every procedure a card can be certified with, on recorded judges.

    python bench/card_validity.py [--halves 500] [--draws 1000] [--seed 0]
        [--only trust|llmbar|judgebench] [--scan NAME ...]
        [--procedure NAME ...] [--out bench/results/card_validity.json]
        [--resume] [--oracle]

A procedure is a way to score items (one judge; a panel combined by a rule of
calibration/panel.py; a cascade) and a way to scan thresholds (calibration/bands.py: the grid,
the starting points, the test). For each recorded verdict set of ../shared/judgments and each
procedure, two checks at alpha 0.15, delta 0.1 (pairwise "decide" bands):

- Random halves (--halves): certify on a random half of the items, measure on the other half.
  Reported: mean coverage of the held-out half (the share decided with no person; a split
  that certifies nothing decides 0), mean agreement with gold of the decided held-out items
  (over the splits that decided any), and the share of splits that certified anything. The
  held-out half adds its own noise: even an exact procedure's held-out agreement misses
  1 - alpha on many splits, so this is no check of the guarantee.
- The guarantee without test noise (--draws): the recorded set is the population. Each draw
  is a calibration set of as many items as the set holds, drawn with replacement (an i.i.d.
  sample of the population); the card is certified on it and its band applied to the whole
  population. "held" = the share of draws whose band agrees with gold on at least 1 - alpha
  of the population items it decides (a draw that certifies nothing holds: it decides
  nothing). The guarantee says held >= 1 - delta = 0.90 (Monte Carlo s.e. about 0.01 at 1,000
  draws). Also reported: the mean coverage of the population and of the draw's out-of-bag
  items (items the draw never saw), and the agreement there.

--oracle: no scan, an upper limit on every scan instead. For each fixed score (one judge, a
panel by a fixed rule), the largest coverage of any band of its distinct scores whose
Clopper-Pearson upper bound on the error (at delta, no fixed-sequence or start penalty) is at
most alpha: chosen after reading the labels, so no procedure certified before them does better
on the same items in expectation. On the whole set and on random halves (--halves of them);
also the band at the target coverage (0.75: the first distinct score whose band holds 75%),
its error and bound, and how many labelled items a band with that error rate needs (its bound
<= alpha with the band at 75% of them). A target above the oracle is unattainable with these
verdicts by any threshold on that score.

The calibration code is the production code: calibration.bands.certify on ScoreSets,
calibration.panel.combine / fit_panel, calibration.cascade.calibrate_cascade. A draw's repeated
items get distinct ids and keep their own as the cluster (so the fitted rule's label-free split
keeps an item's copies together).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from calibration.bands import BandPolicy, certify  # noqa: E402
from calibration.cascade import calibrate_cascade  # noqa: E402
from calibration.confidence import (  # noqa: E402
    ItemScore,
    Kind,
    ScoreSet,
    score_items,
    split_clusters,
)
from calibration.inputs import load_recorded  # noqa: E402
from calibration.intervals import clopper_pearson_uppers  # noqa: E402
from calibration.panel import combine, fit_panel  # noqa: E402

SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
ALPHA, DELTA = 0.15, 0.1
KIND: Kind = "pairwise"

#: The scans (calibration.bands.certify keyword arguments). "published": the single-judge and
#: cascade default (Trust or Escalate's grid, the first threshold at 30 items); "share 0.4":
#: the first threshold holds 40% of the calibration items, on the same grid; "distinct, share
#: 0.4": the panel default (every distinct score a candidate, the first threshold the first
#: distinct score whose band holds 40% of the calibration items); "distinct": every distinct
#: score, the first threshold at 30 items; "steps 0.05": a threshold per 5% of the calibration
#: items (the score of the item ranked at each 5%: still whole groups of tied scores).
SCANS: dict[str, dict[str, Any]] = {
    "published": {"grid": "levels:5000", "starts": (30,), "start_shares": ()},
    "share 0.4": {"grid": "levels:5000", "starts": (), "start_shares": (0.4,)},
    "distinct": {"grid": "items", "starts": (30,), "start_shares": ()},
    "distinct, share 0.4": {"grid": "items", "starts": (), "start_shares": (0.4,)},
    "steps 0.05, share 0.4": {"grid": "coverage:0.05", "starts": (), "start_shares": (0.4,)},
    "steps 0.05": {"grid": "coverage:0.05", "starts": (30,), "start_shares": ()},
    "shares 0.3+0.6": {"grid": "levels:5000", "starts": (), "start_shares": (0.3, 0.6)},
    "share 0.4, HB": {
        "grid": "levels:5000",
        "starts": (),
        "start_shares": (0.4,),
        "test": "hoeffding-bentkus",
    },
}

TRUST_JUDGES = ("gpt-4-turbo-2024-04-09", "gpt-3.5-turbo", "mistral-7b-instruct")
LLMBAR_JUDGES = (
    "GPT-4/Metrics_Reference",
    "ChatGPT/Metrics_Reference",
    "PaLM2/Metrics_Reference",
    "LLaMA2/Metrics_Reference",
)
JUDGEBENCH_JUDGE = "arena_hard/claude-3-haiku-20240307"


@dataclass(frozen=True)
class Scorer:
    """How a card scores items: one judge, a panel by a rule, or a cascade (cheapest first)."""

    name: str
    members: tuple[str, ...]
    #: None: one judge; a panel rule; or "cascade-split" / "cascade-shared".
    rule: str | None = None


@dataclass
class Population:
    """A recorded verdict set: its gold items and every judge's score set over them."""

    name: str
    ids: list[str]
    #: Judge -> its scores of the population's items (items it could not score: unscored).
    scores: dict[str, ScoreSet]
    scorers: list[Scorer]
    lookups: dict[str, dict[str, ItemScore]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lookups = {j: s.by_id() for j, s in self.scores.items()}

    def panel(self, members: tuple[str, ...], rule: str) -> ScoreSet:
        """The panel's combined scores of the population (a rule that fits nothing: each
        item's score depends on that item's member scores only, so a draw's copies take it)."""
        key = f"{rule}:{'|'.join(members)}"
        if key not in self.scores:
            self.scores[key] = combine([self.scores[m] for m in members], rule)  # type: ignore[arg-type]
            self.lookups[key] = self.scores[key].by_id()
        return self.scores[key]


def load_population(
    name: str, path: Path, judges: Sequence[str], scorers: list[Scorer]
) -> Population:
    """The items every listed judge attempted that carry gold, each judge's scores on them."""
    rows = [r for r in load_recorded(path) if r.judge in set(judges)]
    attempted: dict[str, set[str]] = {}
    gold: set[str] = set()
    for r in rows:
        attempted.setdefault(r.item_id, set()).add(r.judge)
        if r.gold is not None:
            gold.add(r.item_id)
    ids = sorted(i for i, js in attempted.items() if i in gold and js == set(judges))
    keep = set(ids)
    rows = [r for r in rows if r.item_id in keep]
    scores = {j: score_items(rows, kind=KIND, judge=j) for j in judges}
    return Population(name, ids, scores, scorers)


def _draw_set(scores: ScoreSet, ids: Sequence[str], lookup: dict[str, ItemScore]) -> ScoreSet:
    """``scores`` on the drawn ids (repeats allowed): each copy its own id, its item's cluster."""
    items, unscored = [], {}
    for k, item_id in enumerate(ids):
        found = lookup.get(item_id)
        copy_id = f"{item_id}#{k}"
        if found is None:
            unscored[copy_id] = dict(scores.unscored.get(item_id, {"unscored": 1}))
        else:
            items.append(replace(found, item_id=copy_id, cluster=item_id))
    return ScoreSet(kind=scores.kind, judge=scores.judge, items=tuple(items), unscored=unscored)


@dataclass(frozen=True)
class Router:
    """A certified card as a function of a population item: (decided, wrong)."""

    decide: Callable[[str], tuple[bool, bool]]
    certified: bool


def _policy_router(policy: BandPolicy, scored: dict[str, ItemScore]) -> Router:
    def decide(item_id: str) -> tuple[bool, bool]:
        item = scored.get(item_id)
        if item is None or policy.route(item.score) == "review":
            return False, False
        return True, item.decision(KIND) != item.gold

    return Router(decide, policy.certified)


def certify_on(
    pop: Population, scorer: Scorer, ids: Sequence[str], scan: dict[str, Any], seed: int
) -> Router:
    """Certify ``scorer`` with ``scan`` on the drawn ``ids``; the card as a Router."""
    if scorer.rule in (None, "logodds", "mean", "pooled"):
        sets = []
    else:
        sets = [_draw_set(pop.scores[m], ids, pop.lookups[m]) for m in scorer.members]
    if scorer.rule in ("cascade-split", "cascade-shared"):
        result = calibrate_cascade(
            sets,
            alpha_accept=ALPHA,
            delta=DELTA,
            mode="split" if scorer.rule == "cascade-split" else "shared",
            seed=seed,
            **scan,
        )

        def decide(item_id: str) -> tuple[bool, bool]:
            scores = {
                m: (pop.lookups[m][item_id].score if item_id in pop.lookups[m] else None)
                for m in scorer.members
            }
            judge, action = result.route(scores)
            if judge is None:
                return False, False
            item = pop.lookups[judge][item_id]
            return True, item.decision(KIND) != item.gold

        return Router(decide, any(s.policy.certified for s in result.stages))
    if scorer.rule is None:
        member = scorer.members[0]
        drawn = _draw_set(pop.scores[member], ids, pop.lookups[member])
        policy = certify(drawn, alpha_accept=ALPHA, delta=DELTA, **scan)
        return _policy_router(policy, pop.lookups[scorer.members[0]])
    everyone = [pop.scores[m] for m in scorer.members]
    if scorer.rule != "fitted":
        whole = pop.panel(scorer.members, scorer.rule)
        key = f"{scorer.rule}:{'|'.join(scorer.members)}"
        policy = certify(
            _draw_set(whole, ids, pop.lookups[key]), alpha_accept=ALPHA, delta=DELTA, **scan
        )
        return _policy_router(policy, pop.lookups[key])
    # The fitted rule: fit on half the draw's clusters (label-free), certify on the other half.
    fit_part, rest = split_clusters(combine(sets, "logodds"), fraction=0.5, seed=seed)
    fit_ids = {i.item_id for i in fit_part.items} | set(fit_part.unscored)
    rest_ids = {i.item_id for i in rest.items} | set(rest.unscored)
    model = fit_panel([s.subset(fit_ids) for s in sets], kind=KIND)
    policy = certify(
        combine([s.subset(rest_ids) for s in sets], "fitted", model),
        alpha_accept=ALPHA,
        delta=DELTA,
        **scan,
    )
    return _policy_router(policy, combine(everyone, "fitted", model).by_id())


def _apply(router: Router, ids: Sequence[str]) -> tuple[int, int]:
    decided = wrong = 0
    for item_id in ids:
        d, w = router.decide(item_id)
        decided += d
        wrong += w
    return decided, wrong


def run_one(
    pop: Population, scorer: Scorer, scan_name: str, halves: int, draws: int, seed: int
) -> dict[str, Any]:
    """Both checks of one (population, scorer, scan)."""
    scan = SCANS[scan_name]
    rng = np.random.default_rng(seed)
    ids = np.array(pop.ids)
    n = len(ids)
    h_cov, h_agree, h_cert = [], [], 0
    for _ in range(halves):
        perm = rng.permutation(n)
        cal, test = ids[perm[: n // 2]], ids[perm[n // 2 :]]
        router = certify_on(pop, scorer, list(cal), scan, int(rng.integers(1 << 31)))
        decided, wrong = _apply(router, list(test))
        h_cert += router.certified
        h_cov.append(decided / len(test))
        if decided:
            h_agree.append(1 - wrong / decided)
    p_cov, p_agree, held, oob_cov, oob_agree, d_cert = [], [], 0, [], [], 0
    # Each population item's outcome is computed once per draw's card.
    for _ in range(draws):
        picked = rng.integers(0, n, n)
        router = certify_on(pop, scorer, list(ids[picked]), scan, int(rng.integers(1 << 31)))
        d_cert += router.certified
        outcome = np.array([router.decide(i) for i in ids], dtype=bool).reshape(n, 2)
        decided, wrong = int(outcome[:, 0].sum()), int(outcome[:, 1].sum())
        p_cov.append(decided / n)
        if decided:
            p_agree.append(1 - wrong / decided)
        held += (not decided) or (1 - wrong / decided >= 1 - ALPHA)
        out = np.ones(n, dtype=bool)
        out[picked] = False
        od, ow = int(outcome[out, 0].sum()), int(outcome[out, 1].sum())
        oob_cov.append(od / max(1, int(out.sum())))
        if od:
            oob_agree.append(1 - ow / od)

    def mean(values: list[float]) -> float | None:
        return float(np.mean(values)) if values else None

    return {
        "set": pop.name,
        "n": n,
        "scorer": scorer.name,
        "scan": scan_name,
        "halves": {
            "splits": halves,
            "coverage": mean(h_cov),
            "agreement": mean(h_agree),
            "certified": h_cert / halves if halves else None,
        },
        "population": {
            "draws": draws,
            "coverage": mean(p_cov),
            "agreement": mean(p_agree),
            "held": held / draws if draws else None,
            "certified": d_cert / draws if draws else None,
            "oob_coverage": mean(oob_cov),
            "oob_agreement": mean(oob_agree),
        },
    }


#: The coverage the issue asks of the default panel (issue 24: at least 0.75 of new items).
TARGET_COVERAGE = 0.75


def band_table(confidence: np.ndarray, wrong: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) of the band of each distinct confidence, most confident first: n items score at
    least it, k of them wrong (a band never cuts a group of tied scores)."""
    order = np.argsort(-confidence, kind="stable")
    c, w = confidence[order], wrong[order].astype(int)
    ends = np.flatnonzero(np.append(c[1:] != c[:-1], True)) + 1
    return ends, np.cumsum(w)[ends - 1]


def oracle(confidence: np.ndarray, wrong: np.ndarray) -> dict[str, Any]:
    """The largest band (of distinct scores) whose Clopper-Pearson bound at DELTA is <= ALPHA,
    chosen with the labels; and the band at TARGET_COVERAGE."""
    size = confidence.size
    scored = np.isfinite(confidence)  # -inf: an unscored item, never decided, still counted
    n, k = band_table(confidence[scored], wrong[scored])
    upper = clopper_pearson_uppers(k.astype(float), n.astype(float), DELTA)
    ok = np.flatnonzero(upper <= ALPHA)
    best = int(ok[np.argmax(n[ok])]) if ok.size else None
    reach = np.flatnonzero(n >= TARGET_COVERAGE * size)
    at = int(reach[0]) if reach.size else n.size - 1
    return {
        "coverage": n[best] / size if best is not None else 0.0,
        "n": int(n[best]) if best is not None else 0,
        "errors": int(k[best]) if best is not None else 0,
        "upper": float(upper[best]) if best is not None else None,
        "target_n": int(n[at]),
        "target_errors": int(k[at]),
        "target_upper": float(upper[at]),
    }


def labels_needed(error: float, share: float = TARGET_COVERAGE, cap: int = 100_000) -> int | None:
    """Fewest labelled items N whose band of share * N items, erring at ``error``, has a
    Clopper-Pearson bound <= ALPHA at DELTA (None: not below ``cap``, e.g. error >= alpha)."""
    if error >= ALPHA:
        return None
    sizes = np.arange(10, cap + 1)
    n = np.ceil(share * sizes)
    upper = clopper_pearson_uppers(np.round(error * n), n, DELTA)
    ok = np.flatnonzero(upper <= ALPHA)
    return int(sizes[ok[0]]) if ok.size else None


def run_oracle(pop: Population, scorer: Scorer, halves: int, seed: int) -> dict[str, Any] | None:
    """The oracle of one fixed score on the whole set and on random halves (None: a score
    that depends on the labels or on a draw, the fitted rule or a cascade)."""
    if scorer.rule is None:
        scores = pop.scores[scorer.members[0]]
    elif scorer.rule in ("logodds", "mean", "pooled"):
        scores = pop.panel(scorer.members, scorer.rule)
    else:
        return None
    found = scores.by_id()
    items = [found.get(i) for i in pop.ids]
    confidence = np.array([-np.inf if i is None else i.confidence for i in items])
    wrong = np.array([i is not None and i.decision(KIND) != i.gold for i in items])
    whole = oracle(confidence, wrong)
    rate = whole["target_errors"] / whole["target_n"]
    rng = np.random.default_rng(seed)
    covs = []
    for _ in range(halves):
        half = rng.permutation(confidence.size)[: confidence.size // 2]
        covs.append(oracle(confidence[half], wrong[half])["coverage"])
    cov = np.asarray(covs)
    return {
        "set": pop.name,
        "n": int(confidence.size),
        "scorer": scorer.name,
        "whole": whole,
        "target_error": rate,
        "labels_needed": labels_needed(rate),
        "halves": {
            "splits": halves,
            "mean": float(cov.mean()) if halves else None,
            "median": float(np.median(cov)) if halves else None,
            "p90": float(np.quantile(cov, 0.9)) if halves else None,
            "at_target": float((cov >= TARGET_COVERAGE).mean()) if halves else None,
        },
    }


def oracle_table(results: list[dict[str, Any]]) -> str:
    """The markdown table of the oracle."""
    rows = []
    for r in results:
        w, h = r["whole"], r["halves"]
        need = r["labels_needed"]
        rows.append(
            (
                f"{r['set']} ({r['n']})",
                r["scorer"],
                f"{w['coverage']:.3f}",
                f"{w['errors']} / {w['n']}, {_f(w['upper'])}",
                f"{w['target_errors']} / {w['target_n']}, {r['target_error']:.3f}, "
                f"{w['target_upper']:.3f}",
                "never (error >= alpha)" if need is None else str(need),
                f"{_f(h['mean'])} / {_f(h['median'])} / {_f(h['p90'])}",
                _f(h["at_target"], 2),
            )
        )
    return _markdown(
        (
            "set",
            "score",
            "oracle coverage (whole set)",
            "its band: errors / n, bound",
            "band at 75%: errors / n, error, bound",
            "labels a 75% band at that error needs",
            "halves: oracle mean / median / p90",
            "halves reaching 75%",
        ),
        rows,
    )


def populations(only: str | None) -> list[Population]:
    """The recorded sets and the procedures run on each."""
    out = []
    judgments = SHARED / "judgments"
    if only in (None, "trust"):
        singles = [Scorer(j, (j,)) for j in TRUST_JUDGES]
        panel = TRUST_JUDGES
        out.append(
            load_population(
                "trust_or_escalate",
                judgments / "trust_or_escalate.jsonl",
                TRUST_JUDGES,
                singles
                + [Scorer(f"panel {r}", panel, r) for r in ("logodds", "mean", "fitted")]
                + [
                    Scorer(
                        "cascade split",
                        ("mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo-2024-04-09"),
                        "cascade-split",
                    ),
                    Scorer(
                        "cascade shared",
                        ("mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo-2024-04-09"),
                        "cascade-shared",
                    ),
                ],
            )
        )
    if only in (None, "llmbar"):
        singles = [Scorer(j, (j,)) for j in LLMBAR_JUDGES]
        out.append(
            load_population(
                "llmbar (Metrics_Reference, both orders)",
                judgments / "llmbar_evaluators.jsonl",
                LLMBAR_JUDGES,
                singles
                + [Scorer(f"panel {r}", LLMBAR_JUDGES, r) for r in ("logodds", "mean", "fitted")],
            )
        )
    if only in (None, "judgebench"):
        out.append(
            load_population(
                "judgebench (both orders)",
                judgments / "judgebench_outputs.jsonl",
                (JUDGEBENCH_JUDGE,),
                [Scorer(JUDGEBENCH_JUDGE, (JUDGEBENCH_JUDGE,))],
            )
        )
    return out


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table: a header of ``columns``, its rule, then one line per row."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table(results: list[dict[str, Any]]) -> str:
    """The markdown table of CALIBRATION_RESULTS.md."""
    rows = []
    for r in results:
        h, p = r["halves"], r["population"]
        flag = "" if p["held"] is None or p["held"] >= 1 - DELTA else " **FAILS**"
        rows.append(
            (
                f"{r['set']} ({r['n']})",
                r["scorer"],
                r["scan"],
                _f(h["coverage"]),
                _f(h["agreement"]),
                _f(h["certified"], 2),
                _f(p["coverage"]),
                _f(p["agreement"]),
                _f(p["oob_coverage"]),
                _f(p["oob_agreement"]),
                f"{_f(p['held'])}{flag}",
            )
        )
    return _markdown(
        (
            "set",
            "procedure",
            "scan",
            "halves: coverage",
            "halves: agreement",
            "halves: certified",
            "population: coverage",
            "population: agreement",
            "out-of-bag coverage",
            "out-of-bag agreement",
            "held (>= 0.90)",
        ),
        rows,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checks, write the JSON and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--halves", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["trust", "llmbar", "judgebench"])
    parser.add_argument("--scan", action="append", choices=list(SCANS), help="default: all")
    parser.add_argument(
        "--procedure",
        action="append",
        help="a procedure by its name in the table (a judge, 'panel fitted', 'cascade split'...); "
        "default: all",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "card_validity.json"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the results already in --out, run the rest"
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="no scan: the largest coverage any band of each fixed score certifies when chosen "
        "with the labels (an upper limit on every scan), on the whole set and --halves halves",
    )
    args = parser.parse_args(argv)
    if args.oracle:
        return main_oracle(args)
    results: list[dict[str, Any]] = []
    prior = 0.0  # seconds of the resumed run
    if args.resume and args.out.exists():
        saved = json.loads(args.out.read_text(encoding="utf-8"))
        wanted = {"halves": args.halves, "draws": args.draws, "seed": args.seed}
        if any(saved.get(k) != v for k, v in wanted.items()):
            parser.error(
                f"--resume: {args.out} was run with "
                + ", ".join(f"--{k} {saved.get(k)}" for k in wanted)
            )
        results, prior = saved["results"], float(saved.get("seconds", 0.0))
    done = {(r["set"], r["scorer"], r["scan"]) for r in results}
    started = time.perf_counter() - prior
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for pop in populations(args.only):
        for scorer in pop.scorers:
            if args.procedure and scorer.name not in args.procedure:
                continue
            for scan in args.scan or list(SCANS):
                if (pop.name, scorer.name, scan) in done:
                    continue
                t0 = time.perf_counter()
                results.append(run_one(pop, scorer, scan, args.halves, args.draws, args.seed))
                print(
                    f"{pop.name} / {scorer.name} / {scan}: {time.perf_counter() - t0:.1f} s",
                    file=sys.stderr,
                )
                # Written after each procedure, so that a long run can be resumed.
                _write(args, results, time.perf_counter() - started)
    _write(args, results, time.perf_counter() - started)
    print(table(results))
    return 0


def main_oracle(args: argparse.Namespace) -> int:
    """--oracle: the table of the oracle per set and fixed score, and its JSON in --out."""
    started = time.perf_counter()
    results = []
    for pop in populations(args.only):
        for scorer in pop.scorers:
            if args.procedure and scorer.name not in args.procedure:
                continue
            found = run_oracle(pop, scorer, args.halves, args.seed)
            if found is not None:
                results.append(found)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.draws = 0
    _write(args, results, time.perf_counter() - started)
    print(oracle_table(results))
    return 0


def _write(args: argparse.Namespace, results: list[dict[str, Any]], seconds: float) -> None:
    args.out.write_text(
        json.dumps(
            {
                "alpha": ALPHA,
                "delta": DELTA,
                "halves": args.halves,
                "draws": args.draws,
                "seed": args.seed,
                "seconds": round(seconds, 1),
                "results": results,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    raise SystemExit(main())
