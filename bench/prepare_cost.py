"""CPU of preparing a case (redaction, evidence selection, injection flags, suspects, prompt,
keys): what a judgment pays before its call, per SWE-bench dev case.

    .venv/bin/python bench/prepare_cost.py [--passes 3] [--against DIR] [--rounds 3]

Prepares every case of ../shared/gold/swebench_verified_dev.jsonl with ``prepare_case`` (the
runner's own function, one step per case) ``--passes`` times in one process, after one warm-up
pass, and prints the CPU per case of the best pass, with its parts timed apart (``redact_case``,
``select_evidence`` from the redacted copy). With ``--against DIR`` (a checkout of other code)
the same measurement runs in alternating subprocesses, this code and DIR's, ``--rounds`` times,
and the ratio of each pair is printed: on a shared machine only ratios measured side by side
mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from judge.cases import load_cases
from judge.evidence import select_evidence
from judge.judging.prepare import StepSpec, prepare_case
from judge.providers import ModelParams
from judge.rubrics import load_rubric
from judge.safety.redact import redact_case

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))


def measure(passes: int, limit: int | None) -> dict[str, float]:
    """CPU ms per case of the best of ``passes`` passes over the SWE-bench dev cases."""
    cases = load_cases(SHARED / "gold" / "swebench_verified_dev.jsonl", limit=limit).cases
    rubric = load_rubric("agent-run-success")
    params = ModelParams()
    specs = [StepSpec(model="openai/gpt-4o-mini")]
    budget = rubric.spec.token_budget or 1400
    started = time.process_time()
    prepare_case(cases[0], specs, rubric, params, budget)
    first = time.process_time() - started
    for case in cases:  # warm-up pass: caches of the process, not of the cases' texts
        prepare_case(case, specs, rubric, params, budget)

    def best(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(passes):
            started = time.process_time()
            fn()
            times.append(time.process_time() - started)
        return 1000 * min(times) / len(cases)

    stored = [redact_case(c)[0] for c in cases]
    visible = rubric.spec.evidence_visible
    return {
        "cases": len(cases),
        "first_case_ms": 1000 * first,
        "prepare_ms": best(lambda: [prepare_case(c, specs, rubric, params, budget) for c in cases]),
        "redact_case_ms": best(lambda: [redact_case(c) for c in cases]),
        "select_evidence_ms": best(
            lambda: [
                select_evidence(c, visible=visible, token_budget=budget, redacted=s)
                for c, s in zip(cases, stored, strict=True)
            ]
        ),
    }


def _child(code: Path, passes: int, limit: int | None) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code), "JUDGE_SHARED_DIR": str(SHARED)}
    command = [sys.executable, str(Path(__file__).resolve()), "--passes", str(passes), "--json"]
    if limit:
        command += ["--limit", str(limit)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Measure here, or side by side with another checkout."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()
    if args.against is None:
        figures = measure(args.passes, args.limit)
        if args.json:
            print(json.dumps(figures))
            return
        one, five, _ = os.getloadavg()
        print(
            f"{figures['cases']:.0f} SWE-bench dev cases, CPU ms per case (best of "
            f"{args.passes}): prepare_case {figures['prepare_ms']:.2f} (redact_case "
            f"{figures['redact_case_ms']:.2f}, select_evidence from the redacted copy "
            f"{figures['select_evidence_ms']:.2f}); first case in the process "
            f"{figures['first_case_ms']:.0f} ms (load {one:.1f} {five:.1f})"
        )
        return
    for n in range(args.rounds):
        ours = _child(REPO, args.passes, args.limit)
        theirs = _child(args.against, args.passes, args.limit)
        one, _, _ = os.getloadavg()
        print(
            f"round {n + 1}: prepare_case {theirs['prepare_ms']:.2f} (other) -> "
            f"{ours['prepare_ms']:.2f} ms (this) = x{theirs['prepare_ms'] / ours['prepare_ms']:.2f}"
            f"; redact_case {theirs['redact_case_ms']:.2f} -> {ours['redact_case_ms']:.2f}; "
            f"select_evidence {theirs['select_evidence_ms']:.2f} -> "
            f"{ours['select_evidence_ms']:.2f}; first case {theirs['first_case_ms']:.0f} -> "
            f"{ours['first_case_ms']:.0f} ms (load {one:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
