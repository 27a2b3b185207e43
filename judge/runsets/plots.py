"""Charts of the run-set report as inline SVG strings, in the style of calibration.plots.

Each chart takes the report and returns SVG text, or "" when there is nothing to draw.
matplotlib is imported only inside the functions (through calibration.plots).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from calibration.plots import pyplot, svg
from judge.runsets.estimates import compared_rows
from judge.runsets.models import RunSetReport

#: One colour per treatment, in order (colour-blind-safe Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
#: Room above 1 and below 0 on rate axes, so that a curve at 0 or at 1 (a judge that says
#: "pass" everywhere) is drawn inside the frame instead of on it.
RATE_MARGIN = 0.06


def pass_k_figure(report: RunSetReport) -> Any:
    """The matplotlib figure of :func:`pass_k_curves_svg` (None when there is nothing to draw).

    pass^k solid with filled circles, pass@k dashed with open squares: where the two coincide
    (every run passed, or none did) both stay visible.
    """
    ks = report.params.ks
    if not report.treatments or not ks:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    styles = {"pass^k": ("-", "o", None), "pass@k": ("--", "s", "none")}
    for i, t in enumerate(report.treatments):
        colour = PALETTE[i % len(PALETTE)]
        macro = report.per_treatment[t].macro
        for metric, all_figs in (("pass^k", macro.pass_hat_k), ("pass@k", macro.pass_at_k)):
            figs = [f for f in all_figs if f.value is not None]
            if not figs:
                continue
            line, marker, face = styles[metric]
            xs = [f.k for f in figs]
            ys = [f.value for f in figs]
            lo = [f.value - f.ci95[0] if f.value is not None and f.ci95 else 0.0 for f in figs]
            hi = [f.ci95[1] - f.value if f.value is not None and f.ci95 else 0.0 for f in figs]
            ax.errorbar(
                xs,
                ys,
                yerr=[lo, hi],
                fmt=marker + line,
                color=colour,
                capsize=3,
                markersize=5,
                markerfacecolor=face or colour,
                label=f"{t} {metric}",
            )
    ax.set_xticks(ks)
    ax.set_ylim(-RATE_MARGIN, 1 + RATE_MARGIN)
    ax.set_yticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("k")
    ax.set_ylabel("macro over tasks")
    ax.set_title("pass^k (solid) and pass@k (dashed)")
    ax.legend(fontsize=7, loc="best")
    return fig


def pass_k_curves_svg(report: RunSetReport) -> str:
    """Macro pass@k (dashed) and pass^k (solid) against k, per treatment, with 95% intervals."""
    fig = pass_k_figure(report)
    return svg(fig) if fig is not None else ""


def task_matrix_svg(report: RunSetReport) -> str:
    """Pass share of each task (rows) under each treatment (columns); grey where not run."""
    import numpy as np

    m = report.task_matrix
    if not m.rows or not m.treatments:
        return ""
    plt = pyplot()
    grid = np.full((len(m.rows), len(m.treatments)), np.nan)
    for i, row in enumerate(m.rows):
        for j, t in enumerate(m.treatments):
            cell = row.cells.get(t)
            if cell and cell.n:
                grid[i, j] = cell.c / cell.n
    height = min(12.0, 1.0 + 0.18 * len(m.rows))
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * len(m.treatments), height))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#e0e0e0")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(m.treatments)), m.treatments, rotation=30, ha="right")
    labels = [r.task for r in m.rows]
    ax.set_yticks(range(len(labels)), labels, fontsize=6 if len(labels) > 30 else 8)
    ax.set_title("pass share per task")
    fig.colorbar(image, ax=ax, fraction=0.05)
    return svg(fig)


def paired_svg(report: RunSetReport) -> str:
    """Forest plot of paired differences (candidate minus baseline) with 95% intervals."""
    rows = [(p, p.diff) for p in report.paired if p.diff is not None]
    if not rows:
        return ""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 0.6 + 0.35 * len(rows)))
    for i, (p, diff) in enumerate(rows):
        ci = p.ci95 or [diff, diff]
        ax.plot(ci, [i, i], color="#424242")
        ax.plot([diff], [i], "o", color=PALETTE[0])
    ax.axvline(0, color="#9e9e9e", linestyle=":")
    ax.set_yticks(range(len(rows)), [f"{p.candidate} - {p.baseline} {p.metric}" for p, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("difference on shared tasks")
    ax.set_title("paired differences")
    return svg(fig)


#: The three estimates of a report with human labels: name, colour, marker.
FOREST_METHODS = (
    ("judge only", "#757575", "s"),
    ("labels only", PALETTE[1], "^"),
    ("PPI++", PALETTE[0], "o"),
)


def ppi_forest_figure(report: RunSetReport) -> Any:
    """The matplotlib figure of :func:`ppi_forest_svg` (None when there is nothing to draw)."""
    rows = compared_rows(report)
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 0.9 + 0.55 * len(rows)))
    drawn = set()
    for i, row in enumerate(rows):
        figures = [
            (row.judge_value, row.judge_ci),
            (row.labels_only.value, row.labels_only.ci95),
            (row.ppi.value if row.ppi else None, row.ppi.ci95 if row.ppi else None),
        ]
        for j, ((name, colour, marker), (value, ci)) in enumerate(
            zip(FOREST_METHODS, figures, strict=True)
        ):
            if value is None:
                continue
            y = i + (j - 1) * 0.25
            lo, hi = ci if ci else (value, value)
            ax.plot([lo, hi], [y, y], color=colour, linewidth=2)
            ax.plot(
                [value],
                [y],
                marker,
                color=colour,
                markersize=6,
                label=None if name in drawn else name,
            )
            drawn.add(name)
    if any(r.difference for r in rows):
        ax.axvline(0, color="#9e9e9e", linestyle=":")
    ax.set_yticks(range(len(rows)), [r.name for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("pass@1, or difference (95% intervals)")
    ax.set_title("judge only, labels only and PPI++", pad=16)
    # Between the title and the axes, so that it never hides an interval.
    ax.legend(
        fontsize=7,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=3,
        frameon=False,
        borderaxespad=0.2,
    )
    return fig


def ppi_forest_svg(report: RunSetReport) -> str:
    """Forest plot: for each pass@1 and paired difference, the judge's interval, the labels'
    alone and PPI++'s (judge plus labels), one above the other."""
    fig = ppi_forest_figure(report)
    return svg(fig) if fig is not None else ""


#: Charts by the name sections use.
CHARTS: Mapping[str, Callable[[RunSetReport], str]] = {
    "pass_k_curves": pass_k_curves_svg,
    "task_matrix": task_matrix_svg,
    "paired": paired_svg,
    "ppi_forest": ppi_forest_svg,
}
