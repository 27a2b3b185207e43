"""Charts of the run-set report as inline SVG strings, in the style of calibration.plots.

Each chart takes the report dict and returns SVG text, or "" when there is nothing to draw.
matplotlib is imported only inside the functions (through calibration.plots).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from calibration.plots import _pyplot, _svg

#: One colour per treatment, in order (colour-blind-safe Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


def pass_k_curves_svg(report: Mapping[str, Any]) -> str:
    """Macro pass@k (dashed) and pass^k (solid) against k, per treatment, with 95% intervals."""
    ks = report["params"]["ks"]
    if not report["treatments"] or not ks:
        return ""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for i, t in enumerate(report["treatments"]):
        colour = PALETTE[i % len(PALETTE)]
        for metric, style in (("pass^k", "-"), ("pass@k", "--")):
            figs = [f for f in report["per_treatment"][t]["macro"][metric]
                    if f["value"] is not None]
            if not figs:
                continue
            xs = [f["k"] for f in figs]
            ys = [f["value"] for f in figs]
            lo = [f["value"] - f["ci95"][0] if f["ci95"] else 0.0 for f in figs]
            hi = [f["ci95"][1] - f["value"] if f["ci95"] else 0.0 for f in figs]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o" + style, color=colour, capsize=3,
                        markersize=4, label=f"{t} {metric}")
    ax.set_xticks(ks)
    ax.set_ylim(0, 1)
    ax.set_xlabel("k")
    ax.set_ylabel("macro over tasks")
    ax.set_title("pass^k (solid) and pass@k (dashed)")
    ax.legend(fontsize=7, loc="best")
    return _svg(fig)


def task_matrix_svg(report: Mapping[str, Any]) -> str:
    """Pass share of each task (rows) under each treatment (columns); grey where not run."""
    import numpy as np

    m = report["task_matrix"]
    if not m["rows"] or not m["treatments"]:
        return ""
    plt = _pyplot()
    grid = np.full((len(m["rows"]), len(m["treatments"])), np.nan)
    for i, row in enumerate(m["rows"]):
        for j, t in enumerate(m["treatments"]):
            cell = row["cells"].get(t)
            if cell and cell["n"]:
                grid[i, j] = cell["c"] / cell["n"]
    height = min(12.0, 1.0 + 0.18 * len(m["rows"]))
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * len(m["treatments"]), height))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#e0e0e0")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(m["treatments"])), m["treatments"], rotation=30, ha="right")
    labels = [r["task"] for r in m["rows"]]
    ax.set_yticks(range(len(labels)), labels, fontsize=6 if len(labels) > 30 else 8)
    ax.set_title("pass share per task")
    fig.colorbar(image, ax=ax, fraction=0.05)
    return _svg(fig)


def paired_svg(report: Mapping[str, Any]) -> str:
    """Forest plot of paired differences (candidate minus baseline) with 95% intervals."""
    rows = [p for p in report["paired"] if p["diff"] is not None]
    if not rows:
        return ""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 0.6 + 0.35 * len(rows)))
    for i, p in enumerate(rows):
        ci = p["ci95"] or [p["diff"], p["diff"]]
        ax.plot(ci, [i, i], color="#424242")
        ax.plot([p["diff"]], [i], "o", color=PALETTE[0])
    ax.axvline(0, color="#9e9e9e", linestyle=":")
    ax.set_yticks(range(len(rows)),
                  [f"{p['candidate']} - {p['baseline']} {p['metric']}" for p in rows])
    ax.invert_yaxis()
    ax.set_xlabel("difference on shared tasks")
    ax.set_title("paired differences")
    return _svg(fig)


#: Charts by the name sections use.
CHARTS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "pass_k_curves": pass_k_curves_svg,
    "task_matrix": task_matrix_svg,
    "paired": paired_svg,
}
