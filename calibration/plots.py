"""Figures for the calibration report, as inline SVG strings (no files, no network).

matplotlib is imported inside each function with the Agg backend, so importing this module
costs nothing and works without a display.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from calibration.bands import BandPolicy

ACCEPT_COLOUR = "#2e7d32"
REJECT_COLOUR = "#c62828"
REVIEW_COLOUR = "#9e9e9e"
#: Room around the unit square of the reliability diagram, in data units (a marker's radius is
#: about 0.02 of the axes).
EDGE_MARGIN = 0.04


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, set up for small, reproducible SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text as text (small files) and a fixed id salt (the same figure gives the same SVG).
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "judge", "font.size": 9})
    return plt


def svg(fig: Any) -> str:
    """The figure as inline SVG text (no prolog, no metadata); closes the figure."""
    plt = pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    # Inline SVG inside HTML needs no XML prolog, DOCTYPE or RDF metadata block.
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    return text[text.index("<svg") :]


def confusion_matrix_svg(gold: Sequence[str], decided: Sequence[str], labels: Sequence[str]) -> str:
    """Counts of gold label (rows) against the judge's decision (columns)."""
    from sklearn.metrics import confusion_matrix

    plt = pyplot()
    matrix = confusion_matrix(list(gold), list(decided), labels=list(labels))
    fig, ax = plt.subplots(figsize=(3.2, 2.8))
    ax.imshow(matrix, cmap="Blues")
    top = matrix.max() if matrix.size else 0
    for (i, j), v in _cells(matrix):
        ax.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("judge decision")
    ax.set_ylabel("gold")
    ax.set_title("confusion matrix")
    return svg(fig)


def _cells(matrix: NDArray[np.int64]) -> list[tuple[tuple[int, int], int]]:
    return [
        ((i, j), int(matrix[i, j])) for i in range(matrix.shape[0]) for j in range(matrix.shape[1])
    ]


def reliability_svg(
    prob: NDArray[np.float64], outcome: NDArray[np.bool_], *, n_bins: int = 10, label: str = ""
) -> str:
    """Reliability diagram: mean predicted probability against observed frequency, 10 bins."""
    import numpy as np
    from sklearn.calibration import calibration_curve

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.plot([0, 1], [0, 1], ls="--", color=REVIEW_COLOUR, lw=1, label="perfect")
    if prob.size and 0 < outcome.sum() < outcome.size:
        frac, mean = calibration_curve(outcome.astype(int), prob, n_bins=n_bins, strategy="uniform")
        ax.plot(mean, frac, marker="o", color="#1565c0", label="judge")
        counts, _ = np.histogram(prob, bins=n_bins, range=(0, 1))
        ax2 = ax.twinx()
        ax2.bar(
            (np.arange(n_bins) + 0.5) / n_bins,
            counts,
            width=1 / n_bins,
            alpha=0.15,
            color="#1565c0",
        )
        ax2.set_ylabel("items per bin")
    # A margin around [0, 1]: a point on an edge (a bin observed at 0 or 1, a mean probability
    # of 1) is drawn whole; with limits at exactly 0 and 1 the axes clipped half of it.
    ax.set_xlim(-EDGE_MARGIN, 1 + EDGE_MARGIN)
    ax.set_ylim(-EDGE_MARGIN, 1 + EDGE_MARGIN)
    ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1])
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1])
    ax.set_xlabel(f"predicted {label}".strip())
    ax.set_ylabel("observed frequency")
    ax.set_title("reliability diagram")
    ax.legend(loc="upper left", frameon=False)
    return svg(fig)


def band_svg(
    score: NDArray[np.float64], positive: NDArray[np.bool_], policy: BandPolicy, *, seed: int = 0
) -> str:
    """Scores against gold (jittered strip per gold class), certified bands shaded.

    Binary: x is P(pass), accept band shaded green, reject band red. Pairwise: x is the
    confidence max(P(A), 1 - P(A)), decide band green; ``positive`` is then "decision correct".
    """
    import numpy as np

    plt = pyplot()
    pairwise = policy.kind == "pairwise"
    # A logit axis: recorded confidences crowd within 1e-3 of 1, where the bands are.
    eps = 1e-6
    raw = np.maximum(score, 1 - score) if pairwise else score
    x = np.clip(raw, eps, 1 - eps)
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    lo, hi = (0.5, 1 - eps) if pairwise else (eps, 1 - eps)
    ax.set_xscale("logit")
    ax.axvspan(lo, hi, color=REVIEW_COLOUR, alpha=0.12, lw=0)
    shaded = [
        (policy.accept_threshold, hi, ACCEPT_COLOUR, "auto-accept"),
        (policy.decide_threshold, hi, ACCEPT_COLOUR, "auto-decide"),
        (lo, policy.reject_threshold, REJECT_COLOUR, "auto-reject"),
    ]
    for left, right, colour, name in shaded:
        if left is None or right is None:
            continue
        t = min(max(left if name != "auto-reject" else right, eps), 1 - eps)
        ax.axvspan(max(left, lo), min(right, hi), color=colour, alpha=0.2, lw=0)
        ax.axvline(t, color=colour, lw=1)
        ax.text(
            t,
            1.62,
            f"{name} {'<=' if name == 'auto-reject' else '>='} {t:.6g}",
            color=colour,
            ha="left" if name != "auto-reject" else "right",
            va="top",
            fontsize=8,
        )
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-0.25, 0.25, size=x.size)
    y = np.where(positive, 1.0, 0.0) + jitter
    ax.scatter(x[positive], y[positive], s=6, color="#1565c0", alpha=0.6)
    ax.scatter(x[~positive], y[~positive], s=6, color="#ef6c00", alpha=0.6)
    ax.set_yticks([0, 1], ["wrong", "right"] if pairwise else ["gold fail", "gold pass"])
    ax.set_ylim(-0.5, 1.7)
    ax.set_xlim(lo, hi)
    ticks = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]
    if not pairwise:
        ticks = [1e-5, 1e-3, 0.1, 0.5, 0.9, 0.999, 0.99999]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel(
        "confidence max(P(A), 1 - P(A)), logit scale" if pairwise else "P(pass), logit scale"
    )
    title = "certified bands (shaded); grey: human review"
    if not policy.certified:
        title = "nothing certifies: every item goes to human review"
    ax.set_title(title)
    return svg(fig)
