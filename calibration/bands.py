"""Accept / reject / decide bands with a finite-sample guarantee (docs/metrics.md section 4).

Learn-then-Test with fixed-sequence testing. For a band and a candidate threshold t, n(t) items
of the gold set fall in the band and k(t) of them are errors (accept band: gold = fail; reject
band: gold = pass; pairwise decide band: verdict != gold). The one-sided Clopper-Pearson upper
limit U(t) = beta.ppf(1 - level, k + 1, n - k) bounds the band's error rate. Thresholds are
walked from the most to the least confident; each is accepted while U(t) <= alpha, and the walk
stops at the first failure. The band is the lowest accepted threshold; when the first one fails
there is no band and everything goes to review. With probability >= 1 - level over the draw of
the gold set, the band's error rate is <= alpha.

Levels: a binary rubric's accept and reject bands each get delta / 2 (union bound over the two);
a pairwise rubric's single decide band gets delta. Several starting points split their band's
level equally (Bonferroni over sequences). Slices split it again, Holm-style (below).

Starting points are item counts (``starts``: the first threshold selects at least that many
gold items) or shares of the calibration items (``start_shares``: 0.4 starts at the band holding
the top 40% of the gold items); both depend on the number of gold items and the scores alone,
never on labels, so either is fixed before the labels are read. Each is raised to max(30, n0).

The test of one threshold is registered by name (``TESTS``): the one-sided Clopper-Pearson
bound (the default, exact for a binomial count) or the Hoeffding-Bentkus bound of Learn-then-Test
(valid for any bounded loss, never tighter on a count).

The candidate grid depends only on the scores (never on labels), so the fixed sequence is fixed
before the labels are read. Grids are registered by name; see ``GRIDS`` (calibration.grids).

Ties: a band is every item whose band score is at least its threshold, so whatever the grid, a
band holds all the items of a given score or none; a starting point (a count or a share) is the
first candidate whose band holds at least that many items, so a start that falls inside a group
of tied scores takes the whole group. A grid can still merge distinct scores (``levels:5000``
puts every confidence above 0.9998 in one band); ``items`` tests every distinct score, the
default of a panel with a declared rule (``calibration.options.PANEL_GRID``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from calibration.confidence import ScoreSet
from calibration.grids import GRIDS as GRIDS
from calibration.grids import Grid
from calibration.intervals import clopper_pearson_uppers, hoeffding_bentkus_uppers
from calibration.options import DEFAULT_TEST, Correction
from judge.defaults import DEFAULT_GRID
from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

METHOD = "ltt-fixed-sequence"
#: No band is tested on fewer items than this, whatever alpha allows (docs/metrics.md section 4).
MIN_START = 30
BandName = Literal["accept", "reject", "decide"]

#: The test of one threshold (``calibration.options.TestName``): its upper bounds on a band's
#: error rate, (errors k, items n, level) -> bound, vectorised (1.0 when k >= n).
TESTS: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64], float], NDArray[np.float64]]]
TESTS = {
    "clopper-pearson": clopper_pearson_uppers,
    "hoeffding-bentkus": hoeffding_bentkus_uppers,
}


def upper_bound(k: int, n: int, level: float, test: str = DEFAULT_TEST) -> float:
    """The ``test``'s upper bound on a rate after k errors in n, at ``level`` (1.0: n = 0)."""
    import numpy as np

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n <= 0 or k >= n:
        return 1.0
    return float(_test(test)(np.asarray([k]), np.asarray([n]), level)[0])


def _test(name: str) -> Callable[[NDArray[np.float64], NDArray[np.float64], float], Any]:
    try:
        return TESTS[name]
    except KeyError:
        raise InputError(
            f"unknown test {name!r}", field="test", hint=f"use one of {', '.join(TESTS)}"
        ) from None


# --- The minimum-gold table (bounds: the test's, ``upper_bound``) --------------------------


@functools.lru_cache(maxsize=256)
def min_gold(alpha: float, k: int, delta: float, test: str = DEFAULT_TEST) -> int:
    """Smallest n for which k errors in n certify a rate <= alpha at level delta (cached: a
    certification asks it for every band and slice, and each answer costs a few bounds)."""
    # U(k, n) falls as n grows: bracket by doubling, then bisect.
    lo, hi = k + 1, max(2 * (k + 1), 8)
    while upper_bound(k, hi, delta, test) > alpha:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if upper_bound(k, mid, delta, test) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return lo


def min_gold_table(
    alphas: Sequence[float] = (0.10, 0.05, 0.02, 0.01),
    ks: Sequence[int] = (0, 1, 2, 5),
    delta: float = 0.05,
) -> dict[float, dict[int, int]]:
    """The table of docs/metrics.md section 4: items needed in a band, by alpha and errors k."""
    return {a: {k: min_gold(a, k, delta) for k in ks} for a in alphas}


def start_size(alpha: float, level: float, floor: int = MIN_START, test: str = DEFAULT_TEST) -> int:
    """Fewest items a first threshold must select: max(30, n0), n0 = min_gold(alpha, 0, level)."""
    return max(floor, min_gold(alpha, 0, level, test))


def share_start(share: float, n_items: int) -> int:
    """The item count of a starting point given as a share of ``n_items`` calibration items:
    ceil(share * n_items) (label-free: it depends on the number of gold items only)."""
    if not 0.0 < share <= 1.0:
        raise InputError(f"a start share must be in (0, 1], got {share}", field="start_shares")
    return max(1, math.ceil(share * n_items - 1e-9))


# --- Fixed-sequence testing -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One tested threshold of a fixed sequence."""

    threshold: float
    n: int
    errors: int
    upper_bound: float
    passed: bool


@dataclass(frozen=True, slots=True)
class BandResult:
    """One certified band (or the statement that none certifies)."""

    name: BandName
    #: accept: score >= t; reject: score <= t; decide: confidence >= t. None: no band.
    threshold: float | None
    n: int
    errors: int
    upper_bound: float | None
    #: Share of the attempted gold items that fall in the band.
    coverage: float
    alpha: float
    #: The error level this band was tested at (its share of delta).
    level: float
    grid: str
    starts: tuple[int, ...]
    n_total: int
    #: The tests run, per starting point, in order (stopped at the first failure).
    sequences: tuple[tuple[Step, ...], ...] = ()
    method: str = METHOD
    #: Why there is no band, when there is none.
    reason: str = ""
    #: The starting points given as shares of the calibration items (``starts`` holds every
    #: starting point's item count, these included).
    start_shares: tuple[float, ...] = ()
    #: The test of each threshold (a name of ``TESTS``).
    test: str = DEFAULT_TEST

    @property
    def certified(self) -> bool:
        """Whether a threshold was certified."""
        return self.threshold is not None

    @property
    def exhausted(self) -> bool:
        """Every candidate of every sequence passed (its level may be passed on, Holm-style)."""
        return bool(self.sequences) and all(
            seq and all(s.passed for s in seq) for seq in self.sequences
        )


def _band_arrays(scores: ScoreSet, name: BandName) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Band scores (larger = more confident to be in the band) and error flags, gold items only."""
    import numpy as np

    gold = scores.with_gold()
    s = gold.scores()
    if name == "accept":
        # Only scores above one half can be auto-accepted, below one half auto-rejected: fixed
        # before labels, so that no item can fall in both bands.
        return np.where(s > 0.5, s, -np.inf), ~gold.positive()
    if name == "reject":
        return np.where(s < 0.5, -s, -np.inf), gold.positive()
    return gold.confidences(), ~gold.correct()


def fixed_sequence(
    x: NDArray[np.float64],
    errors: NDArray[np.bool_],
    thresholds: NDArray[np.float64],
    *,
    alpha: float,
    level: float,
    start: int,
    test: str = DEFAULT_TEST,
) -> tuple[Step, ...]:
    """Test thresholds from most to least confident; stop after the first failure.

    Candidates selecting fewer than ``start`` items are dropped, and of candidates selecting the
    same items only the first is kept (same data, same test). Both depend on the scores alone.
    """
    import numpy as np

    order = np.argsort(-x, kind="stable")
    xs, es = x[order], errors[order].astype(int)
    cum_err = np.concatenate([[0], np.cumsum(es)])
    ts = np.unique(thresholds[np.isfinite(thresholds)])[::-1]
    # n(t) = number of x >= t; xs is descending, so count via the ascending copy.
    n = x.size - np.searchsorted(xs[::-1], ts, side="left")
    keep = n >= start
    ts, n = ts[keep], n[keep]
    if ts.size == 0:
        return ()
    first = np.concatenate([[True], n[1:] != n[:-1]])
    ts, n = ts[first], n[first]
    k = cum_err[n]
    bound = _test(test)
    if test == DEFAULT_TEST:
        upper = bound(k, n, level)
    else:
        # A slower bound is computed in growing chunks, up to the first failure only.
        parts, done, size = [], 0, 8
        while done < n.size:
            part = bound(k[done : done + size], n[done : done + size], level)
            parts.append(part)
            done += size
            size *= 2
            if (part > alpha).any():
                break
        upper = np.concatenate(parts)
        ts, n, k = ts[: upper.size], n[: upper.size], k[: upper.size]
    passed = upper <= alpha
    stop = int(np.argmin(passed)) + 1 if not passed.all() else passed.size
    return tuple(
        Step(float(ts[i]), int(n[i]), int(k[i]), float(upper[i]), bool(passed[i]))
        for i in range(stop)
    )


def certify_band(
    scores: ScoreSet,
    name: BandName,
    *,
    alpha: float,
    level: float,
    grid: Grid,
    starts: Sequence[int] = (MIN_START,),
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> BandResult:
    """Certify one band at error level ``level`` (its share of delta).

    Each starting point (an item count, or a share of the gold items; raised to max(30, n0))
    runs its own fixed sequence at ``level`` divided by the number of starting points; the band
    is the lowest threshold any of them accepted (a union of tests each valid at its share:
    Bonferroni over sequences).
    """
    x, err = _band_arrays(scores, name)
    n_total = len(scores.with_gold().items) + len(scores.unscored)
    return certify_arrays(
        x,
        err,
        name=name,
        alpha=alpha,
        level=level,
        grid=grid,
        starts=starts,
        n_total=n_total,
        start_shares=start_shares,
        test=test,
    )


def certify_arrays(
    x: NDArray[np.float64],
    errors: NDArray[np.bool_],
    *,
    name: BandName,
    alpha: float,
    level: float,
    grid: Grid,
    starts: Sequence[int] = (MIN_START,),
    n_total: int | None = None,
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> BandResult:
    """``certify_band`` on arrays: band scores ``x`` (-inf: never in the band) and error flags.

    For a reject band ``x`` is minus the score, and the threshold returned is on the score.
    A start share counts the gold items (``x.size``), whether or not they can enter the band.
    """
    import numpy as np

    _test(test)
    total = x.size if n_total is None else n_total
    shares = tuple(float(s) for s in start_shares)
    counts = [int(s) for s in starts] + [share_start(s, x.size) for s in shares]
    per = level / max(1, len(counts))
    floor = start_size(alpha, per, test=test)
    real_starts = tuple(sorted({max(floor, c) for c in counts})) if counts else (floor,)
    sign = -1.0 if name == "reject" else 1.0
    candidates = grid.candidates(x[np.isfinite(x)], sign)
    sequences = tuple(
        fixed_sequence(x, errors, candidates, alpha=alpha, level=per, start=s, test=test)
        for s in real_starts
    )
    accepted = [step for seq in sequences for step in seq if step.passed]
    none = BandResult(
        name=name,
        threshold=None,
        n=0,
        errors=0,
        upper_bound=None,
        coverage=0.0,
        alpha=alpha,
        level=level,
        grid=str(grid),
        starts=real_starts,
        n_total=total,
        sequences=sequences,
        start_shares=shares,
        test=test,
    )
    if not accepted:
        tested = [seq[0] for seq in sequences if seq]
        if not tested:
            return replace(
                none,
                reason=f"too little gold: fewer than {min(real_starts)} items can enter the band",
            )
        s0 = tested[0]
        return replace(
            none,
            reason=f"the first threshold fails: {s0.errors} errors in {s0.n}, "
            f"upper bound {s0.upper_bound:.3f} > alpha {alpha}",
        )
    best = max(accepted, key=lambda s: s.n)
    return replace(
        none,
        threshold=sign * best.threshold,
        n=best.n,
        errors=best.errors,
        upper_bound=best.upper_bound,
        coverage=best.n / total if total else 0.0,
    )


# --- Policies: the bands of one rubric kind, optionally per slice ----------------------------


@dataclass(frozen=True, slots=True)
class BandPolicy:
    """The certified bands of one judge on one gold set, and how they were certified."""

    kind: str
    alpha_accept: float
    alpha_reject: float | None
    delta: float
    grid: str
    starts: tuple[int, ...]
    bands: Mapping[BandName, BandResult]
    n_total: int
    method: str = METHOD
    calibrator: str = "none"
    #: Slice key and per-slice policies when certified per slice (then ``bands`` is empty).
    slice_key: str | None = None
    per_slice: Mapping[str, BandPolicy] = field(default_factory=dict)
    correction: str | None = None
    #: Starting points given as shares of the calibration items, and the test of a threshold.
    start_shares: tuple[float, ...] = ()
    test: str = DEFAULT_TEST
    #: The coverage when it is not the bands' items over n_total: a card certified on a label
    #: plan (calibration.card_plan) covers a share of the whole unlabelled pool.
    covered: float | None = None

    @property
    def accept_threshold(self) -> float | None:
        """Auto-accept when P(positive) >= this (binary), or None."""
        band = self.bands.get("accept")
        return band.threshold if band else None

    @property
    def reject_threshold(self) -> float | None:
        """Auto-reject when P(positive) <= this (binary), or None."""
        band = self.bands.get("reject")
        return band.threshold if band else None

    @property
    def decide_threshold(self) -> float | None:
        """Auto-decide the argmax when confidence >= this (pairwise), or None."""
        band = self.bands.get("decide")
        return band.threshold if band else None

    @property
    def coverage(self) -> float:
        """Share of the attempted gold items decided without review (a planned card: of the
        pool)."""
        if self.covered is not None:
            return self.covered
        if self.per_slice:
            total = sum(p.n_total for p in self.per_slice.values())
            decided = sum(b.n for p in self.per_slice.values() for b in p.bands.values())
            return decided / total if total else 0.0
        decided = sum(b.n for b in self.bands.values())
        return decided / self.n_total if self.n_total else 0.0

    @property
    def certified(self) -> bool:
        """Whether any band (in any slice) certified."""
        if self.per_slice:
            return any(p.certified for p in self.per_slice.values())
        return any(b.certified for b in self.bands.values())

    def route(self, score: float, slice_value: str | None = None) -> str:
        """'accept', 'reject' or 'decide' when a band covers the score, else 'review'."""
        if self.per_slice:
            policy = self.per_slice.get(str(slice_value))
            return policy.route(score) if policy else "review"
        if self.accept_threshold is not None and score > 0.5 and score >= self.accept_threshold:
            return "accept"
        if self.reject_threshold is not None and score < 0.5 and score <= self.reject_threshold:
            return "reject"
        conf = max(score, 1.0 - score)
        if self.decide_threshold is not None and conf >= self.decide_threshold:
            return "decide"
        return "review"

    def summary(self) -> str:
        """A few readable lines: thresholds and coverage, or that nothing certifies."""
        lines = [
            f"{self.kind} bands, {self.method}, delta {self.delta}, grid {self.grid}"
            + (f", test {self.test}" if self.test != DEFAULT_TEST or self.start_shares else "")
            + (
                ", starts at " + ", ".join(f"{s:g}" for s in self.start_shares) + " of the items"
                if self.start_shares
                else ""
            )
            + (f", calibrator {self.calibrator}" if self.calibrator != "none" else "")
        ]
        if self.per_slice:
            lines[0] += f", per slice of '{self.slice_key}' ({self.correction})"
            for value, policy in self.per_slice.items():
                lines += [f"  [{self.slice_key}={value}] " + t for t in policy._band_lines()]
        else:
            lines += self._band_lines()
        lines.append(
            f"coverage {self.coverage:.1%} decided without review"
            if self.certified
            else "nothing certifies: every item goes to human review"
        )
        return "\n".join(lines)

    def _band_lines(self) -> list[str]:
        rel = {"accept": "P(pass) >=", "reject": "P(pass) <=", "decide": "confidence >="}
        risk = {
            "accept": "P(fail | accepted)",
            "reject": "P(pass | rejected)",
            "decide": "P(wrong | decided)",
        }
        out = []
        for name, b in self.bands.items():
            if b.threshold is None:
                out.append(f"{name}: no band ({b.reason})")
            else:
                where = (
                    f"{b.n} labelled items tested, the band holds {b.coverage:.1%} of "
                    f"{b.n_total} items"
                    if self.covered is not None
                    else f"{b.n} of {b.n_total} items ({b.coverage:.1%})"
                )
                out.append(
                    f"{name}: {rel[name]} {b.threshold:.6g}: {where}, "
                    f"{b.errors} errors, {risk[name]} <= {b.upper_bound:.3f} "
                    f"<= alpha {b.alpha} at level {b.level:g}"
                    + (
                        f" ({b.level / len(b.starts):.4g} per sequence, {len(b.starts)} "
                        f"starting points at {', '.join(map(str, b.starts))} items)"
                        if len(b.starts) > 1
                        else ""
                    )
                )
        return out


def _band_levels(
    kind: str, alpha_accept: float, alpha_reject: float | None, delta: float
) -> dict[BandName, tuple[float, float]]:
    """Band name -> (alpha, level): binary splits delta over two bands; pairwise has one."""
    if kind == "pairwise":
        return {"decide": (alpha_accept, delta)}
    bands: dict[BandName, tuple[float, float]] = {"accept": (alpha_accept, delta / 2)}
    if alpha_reject is not None:
        bands["reject"] = (alpha_reject, delta / 2)
    return bands


def certify(
    scores: ScoreSet,
    *,
    alpha_accept: float,
    alpha_reject: float | None = None,
    delta: float,
    grid: Grid | str = DEFAULT_GRID,
    starts: Sequence[int] = (MIN_START,),
    slice_key: str | None = None,
    correction: Correction = "holm",
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> BandPolicy:
    """Certify the bands of ``scores`` (binary: accept and reject; pairwise: decide).

    ``starts`` (item counts) and ``start_shares`` (shares of the gold items) are the starting
    points, the band's level split equally over them; ``test`` names the bound (``TESTS``).

    With ``slice_key`` every slice value is certified on its own gold, the band's level split
    over the slices that have enough gold (``correction``: "bonferroni" splits equally; "holm"
    also passes on the level of a slice whose whole sequence passed, as in the graphical Holm
    procedure, and re-tests the others). A slice with too little gold is not automated.
    """
    g = Grid.parse(grid) if isinstance(grid, str) else grid
    _check_request(alpha_accept, alpha_reject, delta, correction, start_shares, test)
    if scores.kind == "pairwise":
        alpha_reject = None
    levels = _band_levels(scores.kind, alpha_accept, alpha_reject, delta)
    template = BandPolicy(
        kind=scores.kind,
        alpha_accept=alpha_accept,
        alpha_reject=alpha_reject,
        delta=delta,
        grid=str(g),
        starts=(),
        bands={},
        n_total=_n_total(scores),
        calibrator=scores.calibrator,
        start_shares=tuple(float(s) for s in start_shares),
        test=test,
    )
    if slice_key is None:
        bands = {
            name: certify_band(
                scores,
                name,
                alpha=a,
                level=lvl,
                grid=g,
                starts=starts,
                start_shares=start_shares,
                test=test,
            )
            for name, (a, lvl) in levels.items()
        }
        return replace(template, starts=_starts_of(bands), bands=bands)
    return _certify_per_slice(
        template,
        _slice_parts(scores, slice_key),
        levels,
        slice_key=slice_key,
        grid=g,
        starts=starts,
        correction=correction,
        start_shares=start_shares,
        test=test,
    )


def _check_request(
    alpha_accept: float,
    alpha_reject: float | None,
    delta: float,
    correction: str,
    start_shares: Sequence[float],
    test: str,
) -> None:
    """An InputError for a level, test, start share or correction :func:`certify` cannot use."""
    for name, a in (
        ("alpha_accept", alpha_accept),
        ("alpha_reject", alpha_reject),
        ("delta", delta),
    ):
        if a is not None and not 0.0 < a < 1.0:
            raise InputError(f"{name} must be in (0, 1), got {a}", field=name)
    _test(test)
    for share in start_shares:
        share_start(share, 1)  # a share outside (0, 1] is an InputError before any test
    if correction not in ("holm", "bonferroni"):
        raise InputError(
            f"unknown correction {correction!r}", field="correction", hint="holm or bonferroni"
        )


def _certify_per_slice(
    template: BandPolicy,
    parts: Mapping[str, ScoreSet],
    levels: Mapping[BandName, tuple[float, float]],
    *,
    slice_key: str,
    grid: Grid,
    starts: Sequence[int],
    correction: Correction,
    start_shares: Sequence[float],
    test: str,
) -> BandPolicy:
    """``template`` with one policy per slice value, each band's level shared by the slices."""
    per_band = {
        name: _certify_slices(
            parts,
            name,
            alpha=a,
            level=lvl,
            grid=grid,
            starts=starts,
            correction=correction,
            start_shares=start_shares,
            test=test,
        )
        for name, (a, lvl) in levels.items()
    }
    per_slice = {}
    for value, part in parts.items():
        bands = {n: per_band[n][value] for n in levels}
        per_slice[value] = replace(
            template, starts=_starts_of(bands), bands=bands, n_total=_n_total(part)
        )
    return replace(
        template,
        starts=tuple(sorted({s for p in per_slice.values() for s in p.starts})),
        slice_key=slice_key,
        per_slice=per_slice,
        correction=correction,
    )


def _n_total(scores: ScoreSet) -> int:
    return len(scores.with_gold().items) + len(scores.unscored)


def _starts_of(bands: Mapping[BandName, BandResult]) -> tuple[int, ...]:
    return tuple(sorted({s for b in bands.values() for s in b.starts}))


def _slice_parts(scores: ScoreSet, key: str) -> dict[str, ScoreSet]:
    values: dict[str, list[str]] = {}
    for item in scores.items:
        values.setdefault(str(item.slices.get(key)), []).append(item.item_id)
    # Unscored items carry no slices here; they stay out of every slice's denominator.
    return {v: scores.subset(ids) for v, ids in sorted(values.items())}


def _certify_slices(
    parts: Mapping[str, ScoreSet],
    name: BandName,
    *,
    alpha: float,
    level: float,
    grid: Grid,
    starts: Sequence[int],
    correction: Correction,
    start_shares: Sequence[float] = (),
    test: str = DEFAULT_TEST,
) -> dict[str, BandResult]:
    """One band over every slice, the level shared by the slices that can be tested at all."""
    # Which slices have any candidate depends on their sizes and scores only (label-free).
    n_starts = max(1, len(starts) + len(start_shares))
    floor = start_size(alpha, level / max(1, len(parts)) / n_starts, test=test)
    testable = [v for v, p in parts.items() if _max_band_n(p, name) >= floor]

    def one(part: ScoreSet, at: float) -> BandResult:
        return certify_band(
            part,
            name,
            alpha=alpha,
            level=at,
            grid=grid,
            starts=starts,
            start_shares=start_shares,
            test=test,
        )

    results = {v: one(p, level) for v, p in parts.items()}
    for v in parts:
        if v not in testable:
            r = results[v]
            results[v] = _no_band(
                r, f"too little gold in this slice: fewer than {floor} items can enter the band"
            )
    if not testable:
        return results
    weights = {v: 1.0 / len(testable) for v in testable}
    active = set(testable)
    while active:
        for v in active:
            results[v] = one(parts[v], level * weights[v])
        done = {v for v in active if correction == "holm" and results[v].exhausted}
        if not done or done == active:
            break
        # Graphical Holm: a slice whose whole sequence was rejected passes its level on.
        freed = sum(weights[v] for v in done)
        active -= done
        for v in active:
            weights[v] += freed / len(active)
    return results


def _max_band_n(scores: ScoreSet, name: BandName) -> int:
    import numpy as np

    x, _ = _band_arrays(scores, name)
    return int(np.isfinite(x).sum())


def _no_band(r: BandResult, reason: str) -> BandResult:
    return replace(
        r,
        threshold=None,
        n=0,
        errors=0,
        upper_bound=None,
        coverage=0.0,
        sequences=(),
        reason=reason,
    )
