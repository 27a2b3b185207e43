"""Cascades of judges with a finite-sample guarantee (Trust or Escalate, Jung et al., ICLR 2025).

Judges are tried cheapest first. Stage i decides an item when its own certified band covers the
item's score; otherwise the item escalates to stage i + 1, and after the last stage to a human.
Each stage is calibrated only on gold items that the earlier stages left undecided.

The guarantee, and why it holds. Let m be the number of stages and give each stage delta / m
(a binary stage splits its share again over its accept and reject bands). Let E_i be the event
that stage i's certified band has a true error rate above alpha on the items that reach it.

- ``mode="split"`` (the default): the gold items are divided by a seeded, label-free hash of
  their task cluster into m disjoint parts, and stage i is certified on part i, restricted to the
  items that stages 1..i-1 (whose thresholds depend on parts 1..i-1 only) leave undecided. Given
  those thresholds, part i is still an independent sample of the items that reach stage i, so
  fixed-sequence testing gives P(E_i) <= delta / m exactly. By the union bound,
  P(E_1 or ... or E_m) <= delta. Outside that event every stage errs at most alpha on what it
  decides, and the cascade's error rate on decided items, a mixture of the stages' rates weighted
  by how many items each decides, is at most alpha too. So: with probability >= 1 - delta,
  P(error | decided by the cascade) <= alpha.
- ``mode="shared"``: every stage uses all gold items it receives, as the published procedure does.
  It certifies more, but stage i's pool is chosen by thresholds that looked at the labels of
  the same items, so the per-stage test is no longer exactly valid; the union bound is then an
  approximation, and the card says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from calibration.bands import DEFAULT_GRID, DEFAULT_TEST, MIN_START, BandPolicy, Grid, certify
from calibration.confidence import ItemScore, ScoreSet
from calibration.options import CascadeMode
from judge.digests import seeded_hex
from judge.errors import InputError
from judge.kinds import SCORING


@dataclass(frozen=True, slots=True)
class Stage:
    """One judge of a cascade and the band it was certified with."""

    judge: str
    policy: BandPolicy
    #: Gold items that reached the stage while it was being calibrated (its pool).
    n_calibration: int
    #: Over the whole gold set, with every stage's threshold applied in turn:
    n_reached: int
    n_decided: int
    errors: int
    cost_per_item: float | None


@dataclass(frozen=True, slots=True)
class CascadeResult:
    """A calibrated cascade: each stage's band, the whole cascade's guarantee, coverage, cost."""

    kind: str
    stages: tuple[Stage, ...]
    alpha_accept: float
    alpha_reject: float | None
    delta: float
    mode: CascadeMode
    n_total: int
    seed: int

    @property
    def n_decided(self) -> int:
        """Gold items decided by some stage."""
        return sum(s.n_decided for s in self.stages)

    @property
    def coverage(self) -> float:
        """Share of the gold items decided without a human."""
        return self.n_decided / self.n_total if self.n_total else 0.0

    @property
    def agreement(self) -> float | None:
        """Share of decided gold items whose decision agrees with gold (None if none decided)."""
        decided = self.n_decided
        return 1.0 - sum(s.errors for s in self.stages) / decided if decided else None

    @property
    def total_cost(self) -> float | None:
        """Cost of running the cascade over the gold set (None when a stage's cost is unknown)."""
        if any(s.cost_per_item is None for s in self.stages):
            return None
        return math.fsum(s.n_reached * (s.cost_per_item or 0.0) for s in self.stages)

    @property
    def cost_per_decided(self) -> float | None:
        """Total cost over the gold set divided by the items decided (None if unknown or none)."""
        total = self.total_cost
        return total / self.n_decided if total is not None and self.n_decided else None

    def guarantee(self) -> str:
        """The cascade's guarantee in one paragraph, with the argument's status."""
        m = len(self.stages)
        head = (
            f"With probability >= {1 - self.delta:g} over the draw of the gold set, "
            f"P(error | decided) <= {self.alpha_accept:g}"
            + (
                f" for auto-accepts and <= {self.alpha_reject:g} for auto-rejects"
                if self.kind == "binary" and self.alpha_reject is not None
                else ""
            )
            + f" at every stage and for the cascade as a whole; each of the {m} stages is "
            f"certified at delta/{m} = {self.delta / m:.4g} and the union bound adds them up to "
            f"delta = {self.delta:g}."
        )
        if self.mode == "split":
            return head + (
                " Stages are certified on disjoint, label-free cluster splits of the gold set, "
                "so each stage's test is exact given the earlier thresholds."
            )
        return head + (
            " APPROXIMATE: stages share the gold items, so a later stage's pool depends on labels "
            "the earlier thresholds looked at; the per-stage tests are not exactly valid."
        )

    def route(self, scores: Mapping[str, float | None]) -> tuple[str | None, str]:
        """(judge, action) of the first stage whose band covers its score, else (None, 'review')."""
        for stage in self.stages:
            score = scores.get(stage.judge)
            if score is None:
                continue
            action = stage.policy.route(score)
            if action != "review":
                return stage.judge, action
        return None, "review"

    def summary(self) -> str:
        """Readable lines: per stage band and share decided, then coverage and cost."""
        lines = [f"cascade of {len(self.stages)} judges, cheapest first, mode {self.mode}:"]
        for i, s in enumerate(self.stages, 1):
            cost = f", cost/item {s.cost_per_item:g}" if s.cost_per_item is not None else ""
            lines.append(
                f"  stage {i} {s.judge}: calibrated on {s.n_calibration}; over all gold: reached "
                f"{s.n_reached}, decided {s.n_decided}, errors {s.errors}{cost}"
            )
            lines += ["    " + t for t in s.policy._band_lines()]
        agreement = self.agreement
        lines.append(
            f"coverage {self.coverage:.1%} ({self.n_decided} of {self.n_total})"
            + (f", agreement with gold {agreement:.1%}" if agreement is not None else "")
            + (
                f", cost per decided item {self.cost_per_decided:.4g}"
                if self.cost_per_decided is not None
                else ""
            )
            if self.n_decided
            else "nothing certifies at any stage: every item goes to human review"
        )
        lines.append(self.guarantee())
        return "\n".join(lines)


def _part_of(cluster: str, seed: int, m: int) -> int:
    # Label-free assignment of a task cluster to one of m parts (a keyed hash, reproducible).
    # The first 8 bytes of SHA-256("cascade:{seed}:{cluster}") as a big-endian integer.
    return int(seeded_hex(f"cascade:{seed}", cluster)[:16], 16) % m


def _stage_cost(scores: ScoreSet, costs: Mapping[str, float] | None) -> float | None:
    if costs is not None and scores.judge in costs:
        return float(costs[scores.judge])
    known = [i.cost_usd for i in scores.items if i.cost_usd is not None]
    return math.fsum(known) / len(known) if known else None


def calibrate_cascade(
    stages: Sequence[ScoreSet],
    *,
    alpha_accept: float,
    alpha_reject: float | None = None,
    delta: float,
    grid: Grid | str = DEFAULT_GRID,
    starts: Sequence[int] = (MIN_START,),
    costs: Mapping[str, float] | None = None,
    mode: CascadeMode = "split",
    seed: int = 0,
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> CascadeResult:
    """Calibrate a cascade; ``stages`` are one ScoreSet per judge, cheapest first.

    ``costs`` maps judge name to cost per item (else the mean recorded cost, else unknown).
    ``start_shares`` are shares of each stage's own pool of gold items.
    Coverage, agreement and cost are measured over every gold item with all thresholds applied.
    """
    if not stages:
        raise InputError("a cascade needs at least one judge", field="judges")
    kinds = {s.kind for s in stages}
    if len(kinds) != 1:
        raise InputError(f"cascade stages mix rubric kinds {sorted(kinds)}", field="kind")
    if mode not in ("split", "shared"):
        raise InputError(f"unknown cascade mode {mode!r}", field="mode", hint="split or shared")
    m = len(stages)
    gold_ids = sorted({i.item_id for s in stages for i in s.with_gold().items})
    clusters = {i.item_id: i.cluster or i.item_id for s in stages for i in s.items}
    part = {k: _part_of(clusters.get(k, k), seed, m) for k in gold_ids}

    lookups = [s.by_id() for s in stages]
    policies: list[BandPolicy] = []
    pools: list[int] = []
    for index, scores in enumerate(stages):
        candidates = [k for k in gold_ids if mode == "shared" or part[k] == index]
        pool = [k for k in candidates if _undecided(k, lookups[:index], policies)]
        policy = certify(
            scores.subset(pool),
            alpha_accept=alpha_accept,
            alpha_reject=alpha_reject,
            delta=delta / m,
            grid=grid,
            starts=starts,
            start_shares=start_shares,
            test=test,
        )
        policies.append(policy)
        pools.append(len(pool))

    return CascadeResult(
        kind=stages[0].kind,
        stages=_measure(stages, policies, pools, gold_ids, costs),
        alpha_accept=alpha_accept,
        alpha_reject=alpha_reject if stages[0].kind == "binary" else None,
        delta=delta,
        mode=mode,
        n_total=len(gold_ids),
        seed=seed,
    )


def _undecided(
    item_id: str, earlier: Sequence[Mapping[str, ItemScore]], policies: Sequence[BandPolicy]
) -> bool:
    for lookup, policy in zip(earlier, policies, strict=True):
        item = lookup.get(item_id)
        if item is not None and policy.route(item.score) != "review":
            return False
    return True


def _measure(
    stages: Sequence[ScoreSet],
    policies: Sequence[BandPolicy],
    pools: Sequence[int],
    gold_ids: Sequence[str],
    costs: Mapping[str, float] | None,
) -> tuple[Stage, ...]:
    """Apply the thresholds in turn over every gold item: reached, decided and errors per stage."""
    lookups = [s.by_id() for s in stages]
    remaining = list(gold_ids)
    out = []
    for scores, policy, lookup, pool in zip(stages, policies, lookups, pools, strict=True):
        reached, decided, errors, passed_on = len(remaining), 0, 0, []
        for k in remaining:
            item = lookup.get(k)
            action = policy.route(item.score) if item is not None else "review"
            if item is None or action == "review":
                passed_on.append(k)
                continue
            decided += 1
            if action == "decide":
                errors += item.decision(scores.kind) != item.gold
            else:
                accepted = action == "accept"
                errors += accepted != (item.gold == SCORING[scores.kind].positive)
        out.append(
            Stage(
                judge=scores.judge,
                policy=policy,
                n_calibration=pool,
                n_reached=reached,
                n_decided=decided,
                errors=errors,
                cost_per_item=_stage_cost(scores, costs),
            )
        )
        remaining = passed_on
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SplitStudy:
    """Calibrate on a random half, measure on the other half, many times (the published check)."""

    n_splits: int
    mean_agreement: float | None
    mean_coverage: float
    #: Share of splits whose held-out decided items met the target (a split deciding nothing
    #: meets it vacuously and is counted as held).
    held: float
    #: The same share among splits whose held-out half had decided items (None if none had).
    held_when_decided: float | None
    #: Share of splits that certified anything at all.
    certified: float

    def summary(self) -> str:
        """One readable line."""
        agree = f"{self.mean_agreement:.3f}" if self.mean_agreement is not None else "n/a"
        return (
            f"{self.n_splits} random half splits: mean held-out agreement {agree} "
            f"(over splits that decided something), mean coverage {self.mean_coverage:.3f}, "
            f"target met on {self.held:.3f} of splits"
            + (
                f" ({self.held_when_decided:.3f} of those that decided something)"
                if self.held_when_decided is not None
                else ""
            )
            + f", something certified on {self.certified:.3f}"
        )


def split_study(
    stages: Sequence[ScoreSet],
    *,
    alpha_accept: float,
    alpha_reject: float | None = None,
    delta: float,
    grid: Grid | str = DEFAULT_GRID,
    starts: Sequence[int] = (MIN_START,),
    mode: CascadeMode = "split",
    n_splits: int = 1000,
    seed: int = 0,
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> SplitStudy:
    """Over ``n_splits`` random halves of the gold items, calibrate the cascade (one stage = one
    judge) on one half and measure agreement and coverage on the other.

    "Target met" means the held-out error rate of the decided items is <= alpha (for binary,
    both the accept and the reject errors). It is a noisy finite-sample check of the guarantee,
    not the guarantee itself: the held-out half is small, so it fails more often than delta.
    """
    import numpy as np

    g = Grid.parse(grid) if isinstance(grid, str) else grid
    gold_ids = sorted({i.item_id for s in stages for i in s.with_gold().items})
    lookups = [s.by_id() for s in stages]
    rng = np.random.default_rng(seed)
    agreements, coverages, held, held_decided, certified = [], [], 0, 0, 0
    for _ in range(n_splits):
        perm = rng.permutation(len(gold_ids))
        half = len(gold_ids) // 2
        cal = [gold_ids[i] for i in perm[:half]]
        held_out = [gold_ids[i] for i in perm[half:]]
        result = calibrate_cascade(
            [s.subset(cal) for s in stages],
            alpha_accept=alpha_accept,
            alpha_reject=alpha_reject,
            delta=delta,
            grid=g,
            starts=starts,
            mode=mode,
            seed=int(rng.integers(1 << 31)),
            start_shares=start_shares,
            test=test,
        )
        certified += any(s.policy.certified for s in result.stages)
        counts = _held_out_counts(result, held_out, stages, lookups)
        decided = sum(c[0] for c in counts.values())
        coverages.append(decided / len(held_out))
        if decided:
            agreements.append(1.0 - sum(c[1] for c in counts.values()) / decided)
        alphas = {"accept": alpha_accept, "decide": alpha_accept, "reject": alpha_reject or 1.0}
        met = all(n == 0 or e / n <= alphas[a] for a, (n, e) in counts.items())
        held += met
        held_decided += met and decided > 0
    return SplitStudy(
        n_splits=n_splits,
        mean_agreement=float(np.mean(agreements)) if agreements else None,
        mean_coverage=float(np.mean(coverages)),
        held=held / n_splits,
        held_when_decided=held_decided / len(agreements) if agreements else None,
        certified=certified / n_splits,
    )


def _held_out_counts(
    result: CascadeResult,
    held_out: Sequence[str],
    stages: Sequence[ScoreSet],
    lookups: Sequence[Mapping[str, ItemScore]],
) -> dict[str, list[int]]:
    """[decided, errors] per action ("accept", "reject", "decide") when ``result`` routes the
    held-out gold items."""
    kind = stages[0].kind
    positive = SCORING[kind].positive
    counts = {"accept": [0, 0], "reject": [0, 0], "decide": [0, 0]}  # [n, errors]
    for k in held_out:
        scores = {
            s.judge: (lk[k].score if k in lk else None)
            for s, lk in zip(stages, lookups, strict=True)
        }
        judge, action = result.route(scores)
        if judge is None:
            continue
        item = lookups[[s.judge for s in stages].index(judge)][k]
        if action == "decide":
            wrong = item.decision(kind) != item.gold
        else:
            wrong = (action == "accept") != (item.gold == positive)
        counts[action][0] += 1
        counts[action][1] += int(wrong)
    return counts
