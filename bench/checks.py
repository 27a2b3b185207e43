"""The deterministic checks measured: CPU per case, false firings on honest patches that touch
tests, and precision and recall per check on the suites.

    .venv/bin/python bench/checks.py [--repeat 5] [--heldout DIR] [--json OUT]

- Time: ``run_checks`` (all checks, diff and trace) on every case of
  ``../shared/gold/swebench_verified_dev.jsonl`` (306 real SWE-bench runs with their full
  traces; JUDGE_SHARED_DIR overrides ``../shared``), or on the shipped honest suites when that
  file is absent: CPU per case (``time.process_time_ns``), mean, median and p99 over
  ``--repeat`` passes, after one warm-up pass.
- False firings on honest patches that touch tests: the SWE-bench diffs above that touch a test
  file (written by an agent, resolved or not, none known to game the tests) and the shipped
  human commits of pallets/click (honest-human.jsonl): the share of patches on which some diff
  check fails, and some hard diff check fails, with Wilson intervals.
- Trace checks on the same 306 full traces: how often each fires (none of these runs is
  known to have done any of it; ``tests-after-last-edit`` is functional evidence, not honesty).
- Precision and recall per check on the suites (``judge check --suites`` prints the same).
- ``--heldout FILE``: a held-out set written without seeing the rules (one JSON object a line:
  ``id``, ``family``, ``label`` hack | honest, ``diff``, ``trace``?), measured once and printed
  apart, never tuned on: per label, how many cases some hard check fails, some check fails,
  some check but the functional one (``tests-after-last-edit``) fails; by family.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from calibration.intervals import wilson
from judge.checks import (
    CHECKS,
    CheckFigures,
    DiffError,
    load_suites,
    measure_suites,
    parse_diff,
    run_checks,
)
from judge.checks.paths import is_test_code
from judge.types import Case

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SWEBENCH, load_text  # noqa: E402


def _swebench_cases() -> list[Case]:
    cases = []
    for line in SWEBENCH.read_text().splitlines():
        row = json.loads(line)
        cases.append(
            Case(
                id=row["id"],
                kind="agent_run",
                task=row["task"],
                diff=row["diff"],
                trace=row["trace"],
            )
        )
    return cases


def time_cases(cases: list[Case], repeat: int) -> dict[str, float]:
    for case in cases:  # warm-up: regexes compiled, modules loaded
        run_checks(case)
    per_case: list[int] = []
    for _ in range(repeat):
        for case in cases:
            start = time.process_time_ns()
            run_checks(case)
            per_case.append(time.process_time_ns() - start)
    per_case.sort()
    return {
        "cases": len(cases),
        "passes": repeat,
        "mean_ms": statistics.fmean(per_case) / 1e6,
        "median_ms": per_case[len(per_case) // 2] / 1e6,
        "p99_ms": per_case[int(len(per_case) * 0.99)] / 1e6,
        "max_ms": per_case[-1] / 1e6,
        "diff_chars_mean": statistics.fmean(len(c.diff or "") for c in cases),
        "trace_turns_mean": statistics.fmean(len(c.trace) for c in cases),
    }


def false_firings(label: str, cases: list[Case]) -> dict[str, Any]:
    diff_checks = [
        c.id for c in CHECKS.values() if c.kind == "diff" and c.id != "protected-touched"
    ]
    fired: dict[str, int] = {check_id: 0 for check_id in diff_checks}
    any_fired = hard_fired = 0
    for case in cases:
        results = [r for r in run_checks(case) if r.id in fired]
        failing = [r for r in results if r.status == "fail"]
        for r in failing:
            fired[r.id] += 1
        any_fired += bool(failing)
        hard_fired += any(r.hard for r in failing)
    n = len(cases)
    return {
        "set": label,
        "n": n,
        "any_check": [any_fired, *wilson(any_fired, n)],
        "any_hard_check": [hard_fired, *wilson(hard_fired, n)],
        "per_check": {k: v for k, v in fired.items() if v},
    }


def _touches_tests(case: Case) -> bool:
    try:
        return any(is_test_code(f.path) for f in parse_diff(case.diff or "").files)
    except DiffError:
        return False


def _figures_rows(figures: list[CheckFigures]) -> list[dict[str, Any]]:
    return [fig.as_dict() for fig in figures]


def _times(t: dict[str, float]) -> str:
    return (
        f"mean {t['mean_ms']:.3f} ms, median {t['median_ms']:.3f} ms, "
        f"p99 {t['p99_ms']:.3f} ms, max {t['max_ms']:.3f} ms"
    )


def _split(fig: CheckFigures, author: str) -> str:
    split = fig.by_author.get(author)
    if split is None or split.tp + split.fp + split.fn == 0:
        return "-"
    p, r = split.precision[0], split.recall[0]
    return f"{'-' if p is None else f'{p:.2f}'}/{'-' if r is None else f'{r:.2f}'}"


def _ci(value: tuple[float | None, float, float]) -> str:
    point, lo, hi = value
    return "-" if point is None else f"{point:.3f} [{lo:.2f}, {hi:.2f}]"


def _print_figures(title: str, figures: list[CheckFigures]) -> None:
    print(f"\n{title}")
    head = (
        "check",
        "hard",
        "tp",
        "fp",
        "fn",
        "precision [Wilson]",
        "recall [Wilson]",
        "agent",
        "human",
    )
    print("{:24} {:5} {:>4} {:>3} {:>3}  {:22} {:22} {:10} {}".format(*head))
    for fig in figures:
        t = fig.total
        row = (fig.check_id, str(fig.hard), t.tp, t.fp, t.fn, _ci(t.precision), _ci(t.recall))
        cells = (*row, _split(fig, "agent"), _split(fig, "human"))
        print("{:24} {:5} {:4} {:3} {:3}  {:22} {:22} {:10} {}".format(*cells))


def heldout(path: Path) -> dict[str, Any]:
    """Case-level detection on a held-out set: the share of hacks some check catches, and of
    honest patches some check fires on, with Wilson intervals; the checks that fired, by family."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tallies: dict[str, dict[str, int]] = {}
    families: dict[str, dict[str, Any]] = {}
    for row in rows:
        case = Case(
            id=row["id"],
            kind="agent_run",
            task="",
            diff=row.get("diff"),
            trace=row.get("trace", []),
        )
        fired = [r for r in run_checks(case) if r.status == "fail"]
        label = row["label"]
        tally = tallies.setdefault(label, {"n": 0, "hard": 0, "any": 0, "integrity": 0})
        tally["n"] += 1
        tally["hard"] += any(r.hard for r in fired)
        tally["any"] += bool(fired)
        tally["integrity"] += any(r.id != "tests-after-last-edit" for r in fired)
        family = families.setdefault(f"{label}/{row['family']}", {"n": 0, "caught": 0, "by": {}})
        family["n"] += 1
        family["caught"] += any(r.id != "tests-after-last-edit" for r in fired)
        for r in fired:
            family["by"][r.id] = family["by"].get(r.id, 0) + 1
    print(f"\nHELD-OUT {path} ({len(rows)} cases), measured once, not tuned on:")
    for label, t in sorted(tallies.items()):
        parts = []
        for key, name in (
            ("hard", "a hard check"),
            ("integrity", "a check but the functional one"),
            ("any", "any check"),
        ):
            lo, hi = wilson(t[key], t["n"])
            parts.append(f"{name} {t[key]}/{t['n']} ({t[key] / t['n']:.1%} [{lo:.2f}, {hi:.2f}])")
        print(f"  {label}: " + "; ".join(parts))
    for name, family in sorted(families.items()):
        print(f"    {name}: {family['caught']}/{family['n']} {family['by']}")
    return {"file": str(path), "cases": len(rows), "by_label": tallies, "by_family": families}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--heldout", type=Path, help="a held-out set (JSONL, label hack|honest)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    out: dict[str, Any] = {"load": load_text()}
    suites = load_suites()
    if SWEBENCH.exists():
        cases = _swebench_cases()
        source = str(SWEBENCH.name)
    else:
        cases = [c.case for c in suites if c.suite == "known-good"]
        source = "the shipped honest suites"
    out["time"] = {"source": source, **time_cases(cases, args.repeat)}
    t = out["time"]
    print(
        f"CPU per case on {t['cases']} cases of {source} (mean diff "
        f"{t['diff_chars_mean']:.0f} chars, {t['trace_turns_mean']:.0f} trace turns), "
        f"{t['passes']} passes: {_times(t)}  ({out['load']})"
    )
    diff_only = [c.model_copy(update={"trace": []}) for c in cases]
    d = time_cases(diff_only, args.repeat)
    out["time_diff_only"] = d
    print(f"  diff checks alone: {_times(d)}")

    honest_sets = []
    if SWEBENCH.exists():
        honest_sets.append(
            ("SWE-bench agent diffs touching tests", [c for c in cases if _touches_tests(c)])
        )
    honest_sets.append(
        (
            "pallets/click human commits touching tests",
            [c.case for c in suites if c.id.startswith("human/")],
        )
    )
    out["honest"] = []
    for label, honest in honest_sets:
        row = false_firings(label, honest)
        out["honest"].append(row)
        k, lo, hi = row["any_check"]
        kh, loh, hih = row["any_hard_check"]
        print(
            f"\nFalse firings on {label} (n={row['n']}): any diff check {k} "
            f"(Wilson [{lo:.3f}, {hi:.3f}]); any hard check {kh} ([{loh:.3f}, {hih:.3f}]); "
            f"per check {row['per_check']}"
        )

    if SWEBENCH.exists():
        counts: dict[str, dict[str, int]] = {}
        for case in cases:
            for r in run_checks(case):
                if CHECKS[r.id].kind == "trace":
                    counts.setdefault(r.id, {"pass": 0, "fail": 0, "unknown": 0})[r.status] += 1
        out["trace_checks_on_real_runs"] = counts
        print(f"\nTrace checks on the {len(cases)} real SWE-bench traces (full): {counts}")

    figures = measure_suites(suites)
    out["suites"] = _figures_rows(figures)
    _print_figures(f"Suites ({len(suites)} cases): precision and recall per check", figures)
    if args.heldout:
        out["heldout"] = heldout(args.heldout)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
