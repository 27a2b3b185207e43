"""What ``judge score --labels`` prints beside the headline: pass@1 by the judge, from the
labels alone and by PPI++, one line per treatment."""

from __future__ import annotations

import judge.runsets


def _interval(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "none"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def label_lines(report: judge.runsets.RunSetReport) -> list[str]:
    """One line per treatment: pass@1 by the judge, from the labels alone, and by PPI++."""
    info = report.labels
    if info is None:
        return []
    lines = [] if info.valid_for_ppi else [f"labels not valid for PPI: {info.reason}"]
    for t in report.treatments:
        sec = report.per_treatment[t]
        at1 = next((f for f in sec.macro.pass_at_k if f.k == 1), None)
        alone = sec.labels_only["pass@1"] if sec.labels_only else None
        line = (
            f"pass@1 {t}: judge {_interval(at1.value, at1.ci95) if at1 else 'none'}; "
            f"labels only {_interval(alone.value, alone.ci95) if alone else 'none'} "
            f"({alone.n_labels if alone else 0} labels)"
        )
        both = sec.ppi["pass@1"] if sec.ppi else None
        if both is not None:
            worth = (
                f", worth {both.effective_labels:.1f} labels"
                if both.effective_labels is not None
                else ""
            )
            line += f"; PPI++ {_interval(both.value, both.ci95)}{worth}"
        lines.append(line)
    return lines
