"""Benchmark 3: prompt tokens per judgment, default evidence selection against the whole trace.

    .venv/bin/python bench/tokens.py [--rubric agent-run-success] [--cases GOLD.jsonl]

For every case of ../shared/gold/swebench_verified_dev.jsonl, renders the rubric's real
messages twice: with ``select_evidence`` under the rubric's budget (what the runner sends), and
with ``render_all_evidence`` (every turn, nothing clipped). Tokens are counted on the prompt the
embedded model would see: the messages put through the GGUF's own chat template and tokenised
with its vocabulary (``Llama(vocab_only=True)``, no weights loaded). Without the model it falls
back to the project's estimate (``ceil(chars / 3.5)``) and says so. Also checks, case by case,
that the selection kept the diff, the final turns and the test runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.cases import load_cases
from judge.evidence import (
    DEFAULT_TOKEN_BUDGET,
    FINAL_TURNS,
    classify_turns,
    estimate_tokens,
    render_all_evidence,
    select_evidence,
)
from judge.local.weights import DEFAULT_ALIAS, get_spec, model_path, override_path  # noqa: E402
from judge.rubrics import load_rubric

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SWEBENCH, load_text, median, percentile, write_json  # noqa: E402

Counter = Callable[[list[dict[str, str]]], int]


def _qwen_counter() -> tuple[Counter, str] | None:
    """Count tokens with the embedded model's tokenizer and chat template, if installed."""
    try:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError:
        return None
    path = override_path() or model_path(get_spec(DEFAULT_ALIAS))
    if not path.is_file():
        return None
    llama: Any = Llama(str(path), vocab_only=True, verbose=False)
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    formatter: Any = Jinja2ChatFormatter(template=template, eos_token="", bos_token="")

    def count(messages: list[dict[str, str]]) -> int:
        prompt = formatter(messages=messages).prompt
        return len(llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    return count, f"embedded model's tokenizer + chat template ({path.name})"


def _estimate_counter() -> tuple[Counter, str]:

    def count(messages: list[dict[str, str]]) -> int:
        return sum(estimate_tokens(m["content"]) for m in messages)

    return count, "estimate ceil(chars / 3.5) (embedded model not installed)"


def _kept(case: Any, selected: Any) -> dict[str, Any]:
    """Which of the diff, the final turns and the test runs the selection kept."""

    sources = {item.source for item in selected.items}
    turns = classify_turns(case.trace)
    final = [t.turn.id for t in turns if t.kind != "note"][-FINAL_TURNS:]
    tests = [t.turn.id for t in turns if t.kind == "test_run"]
    diff_item = next((i for i in selected.items if i.kind == "diff"), None)
    return {
        "has_diff": case.diff is not None,
        "diff_kept": diff_item is not None,
        "diff_clipped": bool(diff_item and diff_item.clipped),
        "final_missing": [f for f in final if f not in sources],
        "tests": len(tests),
        "tests_kept": sum(1 for t in tests if t in sources),
        "last_test_kept": (not tests) or tests[-1] in sources,
    }


def main() -> None:
    """Count, compare and check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rubric", default="agent-run-success")
    parser.add_argument("--cases", type=Path, default=SWEBENCH)
    parser.add_argument("--estimate", action="store_true", help="Use the estimate only.")
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()

    rubric = load_rubric(args.rubric)
    budget = rubric.spec.token_budget or DEFAULT_TOKEN_BUDGET
    visible = rubric.spec.evidence_visible
    counter = None if args.estimate else _qwen_counter()
    count, how = counter or _estimate_counter()
    cases = load_cases(args.cases).cases
    started = time.perf_counter()
    rows = []
    for case in cases:
        selected = select_evidence(case, visible=visible, token_budget=budget)
        whole = render_all_evidence(case, visible=visible)
        rows.append(
            {
                "case": case.id,
                "selected": count(rubric.render(case, selected)),
                "whole": count(rubric.render(case, whole)),
                **_kept(case, selected),
            }
        )
    seconds = time.perf_counter() - started

    sel = [r["selected"] for r in rows]
    whole_t = [r["whole"] for r in rows]
    per_case = [r["whole"] / r["selected"] for r in rows]
    with_diff = [r for r in rows if r["has_diff"]]
    figures = {
        "cases": len(rows),
        "file": str(args.cases),
        "rubric": rubric.ref,
        "budget": budget,
        "counted_with": how,
        "seconds": seconds,
        "load": load_text(),
        "selected": {"median": median(sel), "p95": percentile(sel, 95), "max": max(sel)},
        "whole": {"median": median(whole_t), "p95": percentile(whole_t, 95), "max": max(whole_t)},
        "ratio_of_medians": median(whole_t) / median(sel),
        "ratio_of_p95": percentile(whole_t, 95) / percentile(sel, 95),
        "per_case_ratio": {"median": median(per_case), "min": min(per_case)},
        "total_ratio": sum(whole_t) / sum(sel),
        "diff_missing": sum(1 for r in with_diff if not r["diff_kept"]),
        "diff_clipped": sum(1 for r in with_diff if r["diff_clipped"]),
        "cases_with_diff": len(with_diff),
        "final_turn_missing_cases": sum(1 for r in rows if r["final_missing"]),
        "cases_with_tests": sum(1 for r in rows if r["tests"]),
        "last_test_missing_cases": sum(1 for r in rows if not r["last_test_kept"]),
        "cases_with_a_test_run_dropped": sum(1 for r in rows if r["tests_kept"] < r["tests"]),
        "test_runs": sum(r["tests"] for r in rows),
        "test_runs_kept": sum(r["tests_kept"] for r in rows),
    }
    f = figures
    print(
        f"{f['cases']} cases of {Path(args.cases).name}, rubric {rubric.ref}, evidence budget "
        f"{budget}; tokens counted with the {how}; {f['load']}"
    )
    print("prompt tokens per judgment   median   p95     max")
    print(
        f"  default selection        {f['selected']['median']:7.0f} {f['selected']['p95']:7.0f} "
        f"{f['selected']['max']:7.0f}"
    )
    print(
        f"  whole trace              {f['whole']['median']:7.0f} {f['whole']['p95']:7.0f} "
        f"{f['whole']['max']:7.0f}"
    )
    print(
        f"fewer tokens: {f['ratio_of_medians']:.1f}x at the median, {f['ratio_of_p95']:.1f}x at "
        f"p95, {f['total_ratio']:.1f}x in total; per case median "
        f"{f['per_case_ratio']['median']:.1f}x, "
        f"min {f['per_case_ratio']['min']:.2f}x (target >= 4x: "
        f"{'met' if min(f['ratio_of_medians'], f['ratio_of_p95']) >= 4 else 'NOT met'})"
    )
    print(
        f"kept: diff missing in {f['diff_missing']} of {f['cases_with_diff']} cases with a diff "
        f"(clipped in {f['diff_clipped']}); a final turn missing in "
        f"{f['final_turn_missing_cases']} cases; the last test run missing in "
        f"{f['last_test_missing_cases']} of {f['cases_with_tests']} cases with test runs; "
        f"test runs kept {f['test_runs_kept']} of {f['test_runs']} "
        f"({f['cases_with_a_test_run_dropped']} cases dropped at least one)"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
