"""Confidence intervals: Wilson, Clopper-Pearson, and the task-cluster bootstrap.

The sampling unit is the task, not the row: both orders, repeated samples and several trials of
one task are correlated, so the bootstrap resamples clusters (task ids) with replacement and
gives each row its cluster's draw count as a weight. Everything is vectorised: the draws of a
block of replicates form one (replicates x clusters) count matrix, and a statistic made of sums
is one matrix product. Blocks keep memory bounded; the draws depend only on ``seed``, the
number of clusters and ``n_boot``, so every statistic computed with one seed sees the same
resamples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Upper bound on the entries of one block of bootstrap weights (float32: 4 bytes each).
#: Blocks of at least ~64 replicates keep the matrix products efficient.
_BLOCK_CELLS = 16_000_000


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (statsmodels); (0, 1) when n = 0.

    The lower bound is exactly 0 at k = 0 and the upper bound exactly 1 at k = n: there the
    centre and the half-width are equal (both z^2 / 2n over 1 + z^2 / n), but statsmodels
    subtracts them in floating point and leaves rounding noise (a lower bound of 1.4e-17 at
    k = 0, n = 14; an upper bound of 0.9999999999999999 at k = n = 10).
    """
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=1.0 - level, method="wilson")
    return (0.0 if k == 0 else max(0.0, float(lo)), 1.0 if k == n else min(1.0, float(hi)))


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """One-sided Clopper-Pearson upper bound on a rate, holding with probability >= 1 - delta.

    ``beta.ppf(1 - delta, k + 1, n - k)``; 1.0 when n = 0 or k = n (nothing is certified).
    The project's one Clopper-Pearson upper bound (bands, cascades, routing audits); see
    :func:`clopper_pearson_uppers` for many (k, n) at once.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if n <= 0 or k >= n:
        return 1.0
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    import numpy as np

    return float(clopper_pearson_uppers(np.asarray([k]), np.asarray([n]), delta)[0])


def clopper_pearson_uppers(k: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """:func:`clopper_pearson_upper` of each (k, n) pair, vectorised (1.0 where k >= n)."""
    import numpy as np
    from scipy.stats import beta

    with np.errstate(all="ignore"):
        upper: np.ndarray = np.where(
            k >= n, 1.0, beta.ppf(1.0 - delta, k + 1, np.maximum(n - k, 1))
        )
    return upper


def hoeffding_bentkus_uppers(k: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """One-sided Hoeffding-Bentkus upper bounds on rates, vectorised (1.0 where k >= n).

    The bound of Learn-then-Test (Angelopoulos, Bates et al. 2021): the smallest ``a`` whose
    p-value ``min(exp(-n h(k/n, a)), e P(Bin(n, a) <= k))`` is at most ``delta``, with
    ``h(r, a) = r log(r/a) + (1 - r) log((1 - r)/(1 - a))`` for r <= a. Valid for any [0, 1]
    loss, and never tighter than Clopper-Pearson on a binomial count; found by bisection.
    """
    import numpy as np
    from scipy.stats import binom

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    r = np.where(n > 0, k / np.maximum(n, 1), 1.0)
    lo, hi = r.copy(), np.ones_like(r)

    def p_value(a: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            rr = np.minimum(r, a)
            h = np.where(rr > 0, rr * np.log(rr / a), 0.0) + np.where(
                rr < 1, (1 - rr) * np.log((1 - rr) / (1 - a)), 0.0
            )
            hoeffding = np.exp(-n * h)
            bentkus = np.e * binom.cdf(k, n, a)
        return np.minimum(hoeffding, bentkus)

    for _ in range(45):  # [r, 1] halved 45 times: within 3e-14
        mid = (lo + hi) / 2
        ok = p_value(mid) <= delta
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    upper: np.ndarray = np.where(k >= n, 1.0, hi)
    return upper


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) interval; (0, 1) when n = 0."""
    if n <= 0:
        return (0.0, 1.0)
    from scipy.stats import beta

    a = 1.0 - level
    lo = 0.0 if k <= 0 else float(beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k >= n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return (lo, hi)


def weight_blocks(n_clusters: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Bootstrap draw counts, block by block: arrays of shape (b, n_clusters), rows summing to
    n_clusters, together n_boot rows. Deterministic in (n_clusters, n_boot, seed)."""
    import numpy as np

    if n_clusters <= 0 or n_boot <= 0:
        return
    rng = np.random.default_rng(seed)
    block = max(1, min(n_boot, _BLOCK_CELLS // n_clusters))
    done = 0
    while done < n_boot:
        b = min(block, n_boot - done)
        idx = rng.integers(0, n_clusters, size=(b, n_clusters), dtype=np.int32)
        # float32 (exact for counts below 2**24), so that products with per-cluster sums run
        # through BLAS at half the memory traffic; one bincount per replicate keeps the
        # counting inside the cache (3x faster than one big bincount)
        counts = np.empty((b, n_clusters), dtype=np.float32)
        for i in range(b):
            counts[i] = np.bincount(idx[i], minlength=n_clusters)
        yield counts
        done += b


def cluster_sums(values: np.ndarray, cluster: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per-cluster column sums of ``values`` (rows x k) -> (n_clusters x k)."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    out = np.zeros((n_clusters, v.shape[1]), dtype=np.float64)
    for j in range(v.shape[1]):
        out[:, j] = np.bincount(cluster, weights=v[:, j], minlength=n_clusters)
    return out


def compact_codes(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Renumber cluster codes 0..m-1 over the clusters present (a subset keeps stale codes;
    resampling a cluster with no rows would dilute every statistic)."""
    import numpy as np

    if codes.size == 0:
        return codes.astype(np.int64), 0
    uniq, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(uniq.size)


def bootstrap_sums(per_cluster: np.ndarray, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """Column sums of the per-cluster matrix under each resample: (n_boot x k)."""
    import numpy as np

    per_cluster = np.asarray(per_cluster, dtype=np.float64)
    n_clusters = per_cluster.shape[0]
    matrix = ResampleMatrix([per_cluster])
    with single_thread_blas():
        parts = [matrix.sums(w) for w in weight_blocks(n_clusters, n_boot, seed)]
    if not parts:
        return np.zeros((0, per_cluster.shape[1]))
    return np.vstack(parts)


def single_thread_blas() -> AbstractContextManager[Any]:
    """Run BLAS on one thread inside the block.

    The bootstrap multiplies short, wide weight blocks by tall matrices; OpenBLAS splits that
    product across threads so badly that two threads were measured 50x slower than one on a
    busy two-core machine (threadpoolctl ships with scikit-learn).
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


#: Whole numbers up to these magnitudes are exact in float32 and float64.
_EXACT_32 = 2.0**24
_EXACT_64 = 2.0**53


class ResampleMatrix:
    """Per-cluster sums (clusters x k), ready to be summed under blocks of bootstrap draw
    counts, exactly: the same sums on every machine.

    A matrix product rounds its partial sums in an order that depends on the BLAS kernel (and
    so on the processor), so a product of floating-point sums differs in its last digits from
    one machine to another, and float32 keeps only 7 of them. Products of whole numbers whose
    partial sums stay below 2**24 (float32) or 2**53 (float64) are exact in any order. So:

    - columns of whole numbers small enough (counts, the common case) are multiplied in float32,
      column-major (the fast product: half the memory traffic of float64, and OpenBLAS
      multiplies a short, wide block by a tall row-major float32 matrix up to ten times slower);
    - every other column is written in fixed point, a whole number of units 2**-q with q as
      large as keeps n_clusters x its largest magnitude below 2**53, multiplied in float64 and
      scaled back: a resampled sum is within 2 x n_clusters x 2**-53 of its exact value, relative
      to n_clusters x the column's largest magnitude (2e-11 at 100,000 clusters; float32
      products were within about 1e-7, in an order of the kernel's choosing).

    A draw count is at most n_clusters and a resample's counts sum to n_clusters, so a column
    whose magnitudes are below 2**b / n_clusters has partial sums below 2**b.
    """

    def __init__(self, columns: Sequence[np.ndarray]) -> None:
        import numpy as np

        parts = [np.asarray(c, dtype=np.float64).reshape(len(c), -1) for c in columns]
        n_clusters = parts[0].shape[0] if parts else 0
        peaks = [np.abs(p).max(axis=0) if n_clusters else np.zeros(p.shape[1]) for p in parts]
        small = [
            (peak * n_clusters < _EXACT_32) & (p == np.rint(p)).all(axis=0)
            for p, peak in zip(parts, peaks, strict=True)
        ]
        n_whole = sum(int(m.sum()) for m in small)
        self.width = sum(p.shape[1] for p in parts)
        self.n_clusters = n_clusters
        whole = np.empty((n_clusters, n_whole), dtype=np.float32, order="F")
        fixed = np.empty((n_clusters, self.width - n_whole), dtype=np.float64, order="F")
        whole_at: list[int] = []
        fixed_at: list[int] = []
        exponents: list[int] = []
        at = 0
        for part, peak, mask in zip(parts, peaks, small, strict=True):
            k = part.shape[1]
            w0, f0 = len(whole_at), len(fixed_at)
            whole_at += [at + j for j in range(k) if mask[j]]
            fixed_at += [at + j for j in range(k) if not mask[j]]
            at += k
            if mask.any():
                whole[:, w0 : len(whole_at)] = part[:, mask]
            if not mask.all():
                q = [_fixed_point_exponent(float(x) * n_clusters) for x in peak[~mask]]
                exponents += q
                scaled = np.ldexp(part[:, ~mask], np.asarray(q, dtype=np.int64))
                finite = np.isfinite(peak[~mask])
                scaled[:, finite] = np.rint(scaled[:, finite])  # non-finite: as they are
                fixed[:, f0 : len(fixed_at)] = scaled
        self._whole_at = np.asarray(whole_at, dtype=np.int64)
        self._fixed_at = np.asarray(fixed_at, dtype=np.int64)
        self._whole = whole if whole_at else None
        self._fixed = fixed if fixed_at else None
        self._scales = np.ldexp(1.0, -np.asarray(exponents, dtype=np.int64))

    def sums(self, weights: np.ndarray) -> np.ndarray:
        """The column sums under each row of draw counts ``weights`` (b x n_clusters, float32
        whole numbers, as :func:`weight_blocks` yields them): (b x k), float64."""
        import numpy as np

        out = np.empty((weights.shape[0], self.width), dtype=np.float64)
        if self._whole is not None:
            out[:, self._whole_at] = weights @ self._whole
        if self._fixed is not None:
            # float64 copies of the counts, a few rows at a time (their memory stays bounded)
            step = max(1, _BLOCK_CELLS // (2 * max(self.n_clusters, 1)))
            for start in range(0, weights.shape[0], step):
                w = weights[start : start + step].astype(np.float64)
                out[start : start + step, self._fixed_at] = (w @ self._fixed) * self._scales
        return out


def _fixed_point_exponent(bound: float) -> int:
    """The q that keeps ``bound`` x 2**q below 2**52 (0 for a zero or non-finite bound)."""
    if bound <= 0.0 or not math.isfinite(bound):
        return 0
    _, exponent = math.frexp(bound)  # bound < 2**exponent
    return 52 - exponent


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of the finite replicates (None when there are none)."""
    import numpy as np

    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(r, [a, 1.0 - a])
    return (float(lo), float(hi))


def ratio_interval(
    num: np.ndarray,
    den: np.ndarray,
    cluster: np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Cluster-bootstrap interval of sum(num) / sum(den) (a rate over rows or units)."""
    import numpy as np

    codes, n_clusters = compact_codes(np.asarray(cluster))
    if n_clusters == 0:
        return None
    sums = bootstrap_sums(
        cluster_sums(np.column_stack([num, den]), codes, n_clusters), n_boot, seed
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return percentile_interval(sums[:, 0] / sums[:, 1], level)


def cluster_bootstrap(
    clusters: np.ndarray | object,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Generic task-cluster bootstrap interval of any weighted statistic.

    ``clusters``: one cluster id per row (an array of codes or labels), or the rows themselves
    (a list of VerdictRow or a RowArrays: their task clusters are used). ``statistic(w)``
    receives row weights of shape (b, n_rows) (each row weighted by how often its cluster was
    drawn) and returns b values, so it is evaluated a block of replicates at a time. Returns
    the percentile interval.
    """
    import numpy as np

    codes, n_clusters = compact_codes(_cluster_codes(clusters))
    if n_clusters == 0:
        return None
    n_rows = codes.shape[0]
    sub = max(1, _BLOCK_CELLS // max(n_rows, 1))
    values: list[np.ndarray] = []
    for w in weight_blocks(n_clusters, n_boot, seed):
        for start in range(0, w.shape[0], sub):
            row_w = w[start : start + sub][:, codes].astype(np.float64)
            values.append(np.asarray(statistic(row_w), dtype=np.float64).reshape(-1))
    return percentile_interval(np.concatenate(values), level)


def _cluster_codes(clusters: np.ndarray | object) -> np.ndarray:
    import numpy as np

    arr = getattr(clusters, "cluster", clusters)  # a RowArrays
    if isinstance(arr, list | tuple) and arr and hasattr(arr[0], "cluster"):
        arr = [r.cluster for r in arr]  # VerdictRow values
    arr = np.asarray(arr)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    index: dict[object, int] = {}
    return np.asarray([index.setdefault(v, len(index)) for v in arr.tolist()], dtype=np.int64)
