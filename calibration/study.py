"""Judge-vs-judge studies on the same items (docs/metrics.md section 5).

:func:`compare` scores every judge on the items that all compared judges judged (and that have
gold), ranks them, and says how sure the ranking is:
- per judge: accuracy with a Wilson interval (rows as if independent) and a task-cluster
  bootstrap interval (the honest one: both orders and repeated samples of a task are
  correlated), and a bootstrap interval of its rank;
- per pair: the accuracy difference with a paired cluster-bootstrap interval (both judges
  scored on the same resamples) and McNemar's exact test on the units both judged;
- Cohen's kappa between every two judges; cost per correct verdict where costs are known.

Vectorised: one items x judges matrix of correct and counted verdicts per task cluster, and one
matrix product per block of bootstrap replicates gives every judge's resampled accuracy.

Counting: every row is one verdict (both orders, every sample). By default a failed row
(abstain, parse or infra error) counts as a verdict that is not correct, as in the published
leaderboards; ``failures="exclude"`` scores only ok rows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from calibration.agreement import kappa_matrix
from calibration.inputs import RowArrays, to_arrays
from calibration.intervals import (
    ResampleMatrix,
    compact_codes,
    percentile_interval,
    single_thread_blas,
    weight_blocks,
    wilson,
)
from calibration.options import Failures
from calibration.records import VerdictRow

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class JudgeScore:
    """One judge's accuracy on the common items, with intervals and rank."""

    judge: str
    rank: int
    n: int
    correct: int
    accuracy: float | None
    wilson95: tuple[float, float]
    ci95: tuple[float, float] | None
    rank95: tuple[int, int] | None
    #: Rows with status other than ok among the scored ones.
    n_failed: int
    cost_usd: float | None
    cost_per_correct: float | None


@dataclass(frozen=True)
class Difference:
    """accuracy(judge) - accuracy(versus) on the same items."""

    judge: str
    versus: str
    diff: float | None
    ci95: tuple[float, float] | None
    #: Units (item, order, sample) both judges judged: McNemar's table.
    n_units: int
    only_judge: int
    only_versus: int
    mcnemar_p: float | None


@dataclass(frozen=True)
class Study:
    """The result of :func:`compare`."""

    judges: list[JudgeScore]
    differences: list[Difference]
    kappa: dict[str, Any]
    n_items: int
    n_clusters: int
    #: Items some compared judge did not judge (left out so that all are scored alike).
    items_dropped: int
    rows_without_gold: int
    n_boot: int
    seed: int
    failures: str
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> str | None:
        """The judge ranked first."""
        return self.judges[0].judge if self.judges else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        out = asdict(self)
        out["best"] = self.best
        return out

    def to_table(self) -> str:
        """A Markdown table: rank, judge, accuracy with intervals, difference vs the best."""
        lines = [
            f"Judges compared on {self.n_items} items ({self.n_clusters} task clusters), "
            f"{self.n_boot} bootstrap resamples, seed {self.seed}; failed verdicts count as "
            f"{'wrong' if self.failures == 'wrong' else 'not scored'}.",
            "",
            "| rank | judge | accuracy | 95% CI (task bootstrap) | Wilson 95% | n | "
            "rank 95% | diff vs best [95% CI] | McNemar p | cost per correct |",
            "|---:|---|---:|---|---|---:|---|---|---:|---:|",
        ]
        lines += ["| " + " | ".join(cells) + " |" for cells in self._cells()]
        lines.extend(f"\n{n}" for n in self.notes)
        return "\n".join(lines) + "\n"

    def _cells(self) -> list[list[str]]:
        """The table's cells, one row per judge, best first: rank, judge, accuracy, its two
        intervals, n, rank interval, difference vs the best, McNemar p, cost per correct."""
        versus = {d.judge: d for d in self.differences if d.versus == self.best}
        rows = []
        for s in self.judges:
            d = versus.get(s.judge)
            diff = "" if d is None else f"{_pct(d.diff, signed=True)} {_ci(d.ci95, signed=True)}"
            p = "" if d is None or d.mcnemar_p is None else f"{d.mcnemar_p:.3g}"
            rank95 = "" if s.rank95 is None else f"{s.rank95[0]}-{s.rank95[1]}"
            cost = "" if s.cost_per_correct is None else f"${s.cost_per_correct:.4g}"
            rows.append(
                [
                    str(s.rank),
                    s.judge,
                    _pct(s.accuracy),
                    _ci(s.ci95),
                    _ci(s.wilson95),
                    str(s.n),
                    rank95,
                    diff,
                    p,
                    cost,
                ]
            )
        return rows

    def to_html(self) -> str:
        """A self-contained HTML page (no scripts, no network): the table and an SVG chart of
        each judge's accuracy with its bootstrap interval."""
        rows = []
        for cells in self._cells():
            cells[1] = html.escape(cells[1])  # the judge's name
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        head = (
            "<tr><th>rank</th><th>judge</th><th>accuracy</th><th>95% CI (task bootstrap)</th>"
            "<th>Wilson 95%</th><th>n</th><th>rank 95%</th><th>diff vs best [95% CI]</th>"
            "<th>McNemar p</th>"
            "<th>cost per correct</th></tr>"
        )
        caption = html.escape(self.to_table().split("\n", 1)[0])
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            "<title>Judge comparison</title><style>"
            "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
            "table{border-collapse:collapse;font-size:14px}"
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            "td:nth-child(2),th:nth-child(2){text-align:left}"
            "</style></head><body><h1>Judge comparison</h1>"
            f"<p>{caption}</p>{self._svg()}<table>{head}{''.join(rows)}</table>{notes}"
            "</body></html>\n"
        )

    def _svg(self) -> str:
        """Accuracy dots with 95% bootstrap whiskers, one line per judge, 0-100% axis."""
        left, width, step, top = 220, 460, 18, 24
        height = top + step * len(self.judges) + 10

        def x(v: float) -> float:
            return left + width * v

        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" '
            f'height="{height}" role="img" aria-label="accuracy by judge">'
        ]
        for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
            parts.append(
                f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{height - 6}" '
                f'stroke="#ddd"/><text x="{x(tick):.1f}" y="{top - 10}" font-size="11" '
                f'text-anchor="middle">{tick:.0%}</text>'
            )
        for i, s in enumerate(self.judges):
            y = top + step * i + step / 2
            parts.append(
                f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
                f"{html.escape(s.judge)}</text>"
            )
            if s.ci95 is not None:
                parts.append(
                    f'<line x1="{x(s.ci95[0]):.1f}" y1="{y:.1f}" x2="{x(s.ci95[1]):.1f}" '
                    f'y2="{y:.1f}" stroke="#4a7bb7" stroke-width="3"/>'
                )
            if s.accuracy is not None:
                parts.append(
                    f'<circle cx="{x(s.accuracy):.1f}" cy="{y:.1f}" r="4" fill="#1f3b63">'
                    f"<title>{html.escape(s.judge)}: {_pct(s.accuracy)} {_ci(s.ci95)}</title>"
                    "</circle>"
                )
        parts.append("</svg>")
        return "".join(parts)


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "n/a"
    return f"{v * 100:+.1f}%" if signed else f"{v * 100:.1f}%"


def _ci(ci: tuple[float, float] | None, signed: bool = False) -> str:
    if ci is None:
        return ""
    return f"[{_pct(ci[0], signed)}, {_pct(ci[1], signed)}]"


def _unit_correctness(
    a: RowArrays, judge_idx: np.ndarray, correct: np.ndarray, counted: np.ndarray, n_judges: int
) -> np.ndarray:
    """Units (item, order, sample) x judges: 1 correct, 0 not, -1 not judged (for McNemar)."""
    import numpy as np

    _, sample = np.unique(a.sample, return_inverse=True)
    sample = sample.reshape(-1).astype(np.int64)
    n_s = int(sample.max()) + 1 if sample.size else 1
    key = (a.item * 3 + a.order) * n_s + sample
    rows = np.nonzero(counted)[0]
    _, unit = np.unique(key[rows], return_inverse=True)
    unit = unit.reshape(-1)
    m = np.full((int(unit.max()) + 1 if unit.size else 0, n_judges), -1, dtype=np.int8)
    m[unit, judge_idx[rows]] = correct[rows].astype(np.int8)
    return m


def _mcnemar(m: np.ndarray, i: int, j: int) -> tuple[int, int, int, float | None]:
    """(units both judged, only i right, only j right, exact McNemar p)."""
    import numpy as np
    from statsmodels.stats.contingency_tables import mcnemar

    both = (m[:, i] >= 0) & (m[:, j] >= 0)
    n = int(both.sum())
    only_i = int((both & (m[:, i] == 1) & (m[:, j] == 0)).sum())
    only_j = int((both & (m[:, i] == 0) & (m[:, j] == 1)).sum())
    if n == 0:
        return 0, 0, 0, None
    same_right = int((both & (m[:, i] == 1) & (m[:, j] == 1)).sum())
    table = np.array([[same_right, only_i], [only_j, n - same_right - only_i - only_j]])
    return n, only_i, only_j, float(mcnemar(table, exact=True).pvalue)


def compare(
    rows: Sequence[VerdictRow] | RowArrays,
    judges: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    all_pairs: bool = False,
    failures: Failures = "wrong",
    level: float = 0.95,
) -> Study:
    """Compare judges on the items every one of them judged (rows with gold only).

    ``judges``: the judges to compare (default: all in ``rows``). ``all_pairs``: paired
    differences for every pair, not only against the best judge.
    """
    a = to_arrays(rows)
    wanted = _wanted(a, judges, failures)
    common = _common_rows(a, wanted, failures)
    acc = _accuracy(common, len(wanted), n_boot, seed)
    order = acc.ranking(wanted)
    scores = _judge_scores(common, acc, wanted, order, level)
    differences = _differences(common, acc, wanted, order, all_pairs, level)
    kappa = (
        kappa_matrix(common.rows)
        if len(wanted) > 1
        else {"judges": wanted, "kappa": [[1.0]], "n": []}
    )
    return Study(
        judges=scores,
        differences=differences,
        kappa=kappa,
        n_items=common.n_items,
        n_clusters=acc.n_clusters,
        items_dropped=common.items_dropped,
        rows_without_gold=common.rows_without_gold,
        n_boot=n_boot,
        seed=seed,
        failures=failures,
        notes=_notes(differences, common),
    )


def _wanted(a: RowArrays, judges: Sequence[str] | None, failures: str) -> list[str]:
    """The judges to compare (default: every judge present, sorted), each checked present."""
    names = list(a.judge_names)
    wanted = list(dict.fromkeys(judges)) if judges is not None else sorted(set(names))
    missing = [j for j in wanted if j not in names]
    if missing:
        raise ValueError(f"no rows for judge(s) {missing}; judges present: {sorted(names)}")
    if failures not in ("wrong", "exclude"):
        raise ValueError(f"failures must be 'wrong' or 'exclude', not {failures!r}")
    return wanted


@dataclass(frozen=True)
class _Common:
    """The scored rows of the items every compared judge judged."""

    rows: RowArrays
    #: Per row: the judge's index in the compared list.
    judge: np.ndarray
    #: Per row: an ok verdict equal to gold.
    correct: np.ndarray
    n_items: int
    #: Items some compared judge did not judge.
    items_dropped: int
    #: Rows of the compared judges without a gold label (never scored).
    rows_without_gold: int


def _common_rows(a: RowArrays, wanted: Sequence[str], failures: str) -> _Common:
    """Rows with gold of the compared judges (ok rows only when failures are excluded), on the
    items every one of them has a scored row on."""
    import numpy as np

    code_of = {n: i for i, n in enumerate(a.judge_names)}
    to_local = np.full(len(a.judge_names), -1, dtype=np.int64)
    for i, n in enumerate(wanted):
        to_local[code_of[n]] = i
    local = to_local[a.judge]
    has_gold = a.gold >= 0
    counted = (local >= 0) & has_gold
    if failures == "exclude":
        counted &= a.status == 0
    present = np.zeros((len(wanted), len(a.items)), dtype=bool)
    present[local[counted], a.item[counted]] = True
    common = np.asarray(present.all(axis=0), dtype=bool)
    judged_any = np.asarray(present.any(axis=0), dtype=bool)
    keep = counted & common[a.item]
    sub = a.take(np.nonzero(keep)[0])
    return _Common(
        rows=sub,
        judge=local[keep],
        correct=(sub.status == 0) & (sub.verdict == sub.gold),
        n_items=int(common.sum()),
        items_dropped=int((judged_any & ~common).sum()),
        rows_without_gold=int(((local >= 0) & ~has_gold).sum()),
    )


@dataclass(frozen=True)
class _Accuracy:
    """Each judge's accuracy on the common rows, and its task-cluster bootstrap replicates."""

    #: Per judge: correct verdicts, scored verdicts, their ratio.
    k: np.ndarray
    n: np.ndarray
    value: np.ndarray
    #: Resamples x judges (no rows when there is no bootstrap).
    replicates: np.ndarray
    n_clusters: int

    def ranking(self, wanted: Sequence[str]) -> list[int]:
        """Judge indices, highest accuracy first (no accuracy last, ties by name)."""
        import numpy as np

        acc = self.value
        return sorted(
            range(len(wanted)), key=lambda i: (-acc[i] if np.isfinite(acc[i]) else 1.0, wanted[i])
        )


def _accuracy(common: _Common, n_j: int, n_boot: int, seed: int) -> _Accuracy:
    """One clusters x judges matrix of correct and scored verdicts, and one matrix product per
    block of resamples for every judge's resampled accuracy."""
    import numpy as np

    clusters, n_cl = compact_codes(common.rows.cluster)
    cells = n_cl * n_j
    c_mat = np.bincount(clusters * n_j + common.judge, weights=common.correct, minlength=cells)
    n_mat = np.bincount(clusters * n_j + common.judge, minlength=cells).astype(np.float64)
    c_mat, n_mat = c_mat.reshape(n_cl, n_j), n_mat.reshape(n_cl, n_j)
    k, n = c_mat.sum(axis=0), n_mat.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = k / n
    reps = np.zeros((0, n_j))
    if n_boot > 0 and n_cl > 0:
        both = ResampleMatrix([c_mat, n_mat])
        with single_thread_blas():
            parts = [both.sums(w) for w in weight_blocks(n_cl, n_boot, seed)]
        sums = np.vstack(parts)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = sums[:, :n_j] / sums[:, n_j:]
    return _Accuracy(k, n, acc, reps, n_cl)


def _judge_scores(
    common: _Common, acc: _Accuracy, wanted: Sequence[str], order: Sequence[int], level: float
) -> list[JudgeScore]:
    """Each judge's score, best first: accuracy with its intervals, rank interval, cost."""
    import numpy as np

    sub, reps = common.rows, acc.replicates
    rank_of = {i: r + 1 for r, i in enumerate(order)}
    rank_reps = None
    if reps.shape[0]:
        # rank 1 = highest accuracy in that resample (NaN ranks last)
        filled = np.where(np.isfinite(reps), reps, -np.inf)
        rank_reps = (-filled).argsort(axis=1, kind="stable").argsort(axis=1) + 1
    cost_known = np.isfinite(sub.cost)
    scores = []
    for i in order:
        rows_i = common.judge == i
        failed = int((rows_i & (sub.status != 0)).sum())
        cost = float(sub.cost[rows_i].sum()) if rows_i.any() and cost_known[rows_i].all() else None
        r95 = None
        if rank_reps is not None:
            lo, hi = np.quantile(rank_reps[:, i], [(1 - level) / 2, (1 + level) / 2])
            r95 = (int(np.floor(lo)), int(np.ceil(hi)))
        k, n, value = acc.k[i], acc.n[i], acc.value[i]
        scores.append(
            JudgeScore(
                judge=wanted[i],
                rank=rank_of[i],
                n=int(n),
                correct=int(k),
                accuracy=float(value) if np.isfinite(value) else None,
                wilson95=wilson(int(k), int(n), level),
                ci95=_interval(reps[:, i], level) if reps.shape[0] else None,
                rank95=r95,
                n_failed=failed,
                cost_usd=cost,
                cost_per_correct=cost / k if cost is not None and k > 0 else None,
            )
        )
    return scores


def _differences(
    common: _Common,
    acc: _Accuracy,
    wanted: Sequence[str],
    order: Sequence[int],
    all_pairs: bool,
    level: float,
) -> list[Difference]:
    """Paired differences against the best judge (or every pair): the bootstrap interval on
    the same resamples and McNemar's exact test on the units both judged."""
    import numpy as np

    n_j = len(wanted)
    units = _unit_correctness(
        common.rows, common.judge, common.correct, np.ones(common.rows.n, dtype=bool), n_j
    )
    pairs: list[tuple[int, int]] = []
    if all_pairs:
        # (lower-ranked, higher-ranked), so that point differences are <= 0
        pairs = [(order[y], order[x]) for x in range(n_j) for y in range(x + 1, n_j)]
    elif order:
        pairs = [(i, order[0]) for i in order[1:]]
    reps = acc.replicates
    differences = []
    for i, j in pairs:
        n_u, only_i, only_j, p = _mcnemar(units, i, j)
        diff = acc.value[i] - acc.value[j]
        differences.append(
            Difference(
                judge=wanted[i],
                versus=wanted[j],
                diff=float(diff) if np.isfinite(diff) else None,
                ci95=_interval(reps[:, i] - reps[:, j], level) if reps.shape[0] else None,
                n_units=n_u,
                only_judge=only_i,
                only_versus=only_j,
                mcnemar_p=p,
            )
        )
    return differences


def _notes(differences: Sequence[Difference], common: _Common) -> list[str]:
    notes = []
    if any(d.n_units == 0 for d in differences):
        notes.append(
            "McNemar's test needs units (item, order, sample) judged by both judges; it is "
            "blank where the two used different protocols (e.g. one averaged verdict per item "
            "vs both orders). The bootstrap interval of the difference still applies."
        )
    if common.items_dropped:
        notes.append(
            f"{common.items_dropped} items were left out because not every "
            "compared judge judged them."
        )
    if common.rows_without_gold:
        notes.append(f"{common.rows_without_gold} rows had no gold label and were not scored.")
    return notes


def _interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    return percentile_interval(values, level)
