"""A probe run's files: probes.json, a Markdown and an HTML report, and one plot."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from judge.probes.workflow import ProbeRun

PLOT = "probes.png"


def _ci(ci: tuple[float, float] | None, digits: int = 2) -> str:
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "-"


def _num(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def rows(run: ProbeRun) -> list[list[str]]:
    """The report table: one row per probe."""
    out = []
    for r in run.reports:
        rate = r.as_expected
        out.append(
            [
                f"{r.probe.name}@v{r.probe.version}",
                r.probe.kind,
                str(r.applied),
                str(r.skipped),
                f"{rate.k}/{rate.n}",
                _num(rate.rate),
                _ci(rate.ci95),
                _num(r.shift.mean, signed=True),
                _ci(r.shift.ci95),
                r.status,
            ]
        )
    return out


HEADER = [
    "probe",
    "kind",
    "applied",
    "skipped",
    "as expected",
    "rate",
    "95% CI",
    "P(pass) shift",
    "95% CI",
    "status",
]


def markdown(run: ProbeRun) -> str:
    """The report as Markdown."""
    lines = [
        f"# Probes: {run.model} with {run.rubric} on {run.gold}",
        "",
        f"{run.n_cases} cases ({run.n_passing} passing); bar {run.bar:g}: a probe passes when "
        "the lower end of its as-expected rate's 95% interval reaches the bar, fails when the "
        "upper end is below it. Degradations count the originals the judge passed; invariances "
        "every case judged both ways. Intervals are clustered by task.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows(run)]
    failed = run.failed()
    lines += ["", f"Fails: {', '.join(failed) if failed else 'none'}.", ""]
    for r in run.reports:
        if r.skip_reasons:
            reasons = "; ".join(f"{why} ({n})" for why, n in sorted(r.skip_reasons.items()))
            lines.append(f"- {r.probe.name} skipped: {reasons}")
    lines += ["", f"![P(pass) shift per probe]({PLOT})", ""]
    return "\n".join(lines)


def html_report(run: ProbeRun, plot_png: bytes | None) -> str:
    """The report as a self-contained HTML page (the plot inlined)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows(run)
    )
    img = ""
    if plot_png:
        data = base64.b64encode(plot_png).decode()
        img = f'<img alt="P(pass) shift per probe" src="data:image/png;base64,{data}">'
    failed = ", ".join(run.failed()) or "none"
    title = html.escape(f"Probes: {run.model} with {run.rubric} on {run.gold}")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
        f"<h1>{title}</h1><p>{run.n_cases} cases ({run.n_passing} passing); bar {run.bar:g}. "
        f"Fails: {html.escape(failed)}.</p><table><tr>{head}</tr>{body}</table>{img}</body></html>"
    )


def _error_bar(value: float, ci: tuple[float, float]) -> list[list[float]]:
    """Matplotlib's ``xerr`` for ``value`` and its interval: the distances down and up, never
    negative (an interval's end can miss its value by a rounding error, and a mean can fall
    outside its percentile interval)."""
    lo, hi = ci
    return [[max(0.0, value - lo)], [max(0.0, hi - value)]]


def plot(run: ProbeRun, path: Path) -> bytes:
    """One figure: each probe's as-expected rate and mean P(pass) shift with their 95%
    intervals; written to ``path`` as PNG, returned as bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.probe.name for r in run.reports]
    y = list(range(len(names)))[::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.45 * len(names) + 1.5), sharey=True)
    for yi, r in zip(y, run.reports, strict=True):
        color = "tab:red" if r.probe.kind == "degradation" else "tab:blue"
        panels = (
            (left, r.as_expected.rate, r.as_expected.ci95),
            (right, r.shift.mean, r.shift.ci95),
        )
        for axis, value, ci in panels:
            if value is not None and ci:
                axis.errorbar(value, yi, xerr=_error_bar(value, ci), fmt="o", color=color)
    left.axvline(run.bar, color="grey", linestyle="--", linewidth=1)
    left.set_xlim(-0.02, 1.02)
    left.set_xlabel("share as expected (red: degradation, blue: invariance)")
    right.axvline(0.0, color="grey", linewidth=1)
    right.set_xlim(-1.02, 1.02)
    right.set_xlabel("mean shift of P(pass)")
    left.set_yticks(y)
    left.set_yticklabels(names)
    fig.suptitle(f"{run.model} / {run.rubric} on {run.gold} (95% intervals, by task)")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path.read_bytes()


def write_reports(run: ProbeRun, out: str | Path, *, with_plot: bool = True) -> dict[str, Path]:
    """DIR/probes.json, probes.md, probes.html (and probes.png); returns their paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": folder / "probes.json",
        "markdown": folder / "probes.md",
        "html": folder / "probes.html",
    }
    paths["json"].write_text(json.dumps(run.to_json(), indent=2) + "\n", encoding="utf-8")
    png = None
    if with_plot:
        paths["plot"] = folder / PLOT
        png = plot(run, paths["plot"])
    paths["markdown"].write_text(markdown(run), encoding="utf-8")
    paths["html"].write_text(html_report(run, png), encoding="utf-8")
    return paths
