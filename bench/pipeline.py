"""Benchmark 1: pipeline overhead against a bare loop of litellm calls, in the same run.

    .venv/bin/python bench/pipeline.py [--n 2000] [--concurrency 32] [--latency 0.05]

Both loops call the same loopback server (its own process, answering after ``--latency``
seconds) at the same concurrency. The bare loop sends the pre-rendered prompts with plain
``litellm.acompletion``; the pipeline runs ``Runner.run`` on the cases: evidence selection,
rendering, instructor structured output, label probabilities, and the store writes (judgment and
call log). The ratio of their throughputs is the pipeline's efficiency (target >= 0.90).
CPU per judgment is this process's ``time.process_time`` over N: the server's CPU is elsewhere.

The cases are the SWE-bench Verified dev runs (real traces, ~30 KB each) cycled with a unique
task suffix, or the demo set when ../shared is absent (``--cases`` picks a file).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.defaults import DEFAULT_MAX_TOKENS
from judge.evidence import select_evidence
from judge.judging import Runner, plan
from judge.providers import ModelParams, prepare_litellm
from judge.rubrics import load_rubric
from judge.store import Store

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-not-a-key")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_text, remote_loopback, unique_cases, write_json  # noqa: E402

#: A priced model name (litellm prices every response; an unknown name takes a slower path in
#: litellm's cost lookup), served by the loopback server through api_base.
MODEL = "openai/gpt-4o-mini"


async def _bare(api_base: str, prompts: list[list[dict[str, str]]], concurrency: int) -> None:
    """N plain litellm.acompletion calls, ``concurrency`` at a time."""
    import litellm


    semaphore = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict[str, str]]) -> None:
        async with semaphore:
            await litellm.acompletion(
                model=MODEL, messages=messages, api_base=api_base, api_key="sk-loopback",
                temperature=0.0, max_tokens=DEFAULT_MAX_TOKENS, seed=0, num_retries=0,
            )

    await asyncio.gather(*(one(m) for m in prompts))


def _timed(label: str, fn: Any) -> dict[str, float]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"wall_s": wall, "cpu_s": cpu}


def _store_costs(db: Path, cases: list[Any], summary: Any, runner: Any) -> dict[str, float]:
    """CPU ms per judgment of the step key and of the store writes, replayed on a fresh store
    with the judgments the pipeline made."""

    judgments = [o.judgment for o in summary.outcomes]
    steps = plan(cases, runner.rubric, [MODEL], variants=1)
    n = max(len(judgments), 1)
    out: dict[str, float] = {}
    started = time.process_time()
    keys = [runner.step_key(step) for step in steps]
    out["step key"] = 1000 * (time.process_time() - started) / n
    with Store(db) as store:
        started = time.process_time()
        for case in cases:
            store.put_case(case)
        for key, j in zip(keys, judgments, strict=False):
            store.cached_step(key)
            store.cached(j.cache_key)
            store.record_call(cache_key=j.cache_key, model=MODEL, attempt=1, outcome="ok",
                              prompt_tokens=100, completion_tokens=20, latency_s=0.05)
            store.put(j, batch_id="b")
            store.remember_step(key, j.cache_key)
        out["store"] = 1000 * (time.process_time() - started) / n
    return out


def main() -> None:
    """Run both loops and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--cases", type=Path, default=None)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()


    prepare_litellm()
    rubric = load_rubric("agent-run-success")
    n = args.n
    cases = unique_cases(n + 2 * args.concurrency, args.cases)
    warm, cases = cases[: 2 * args.concurrency], cases[2 * args.concurrency :]
    budget = rubric.spec.token_budget or 1400

    started = time.process_time()
    evidence = [select_evidence(c, visible=rubric.spec.evidence_visible, token_budget=budget)
                for c in cases]
    select_cpu = time.process_time() - started
    started = time.process_time()
    prompts = [rubric.render(c, e) for c, e in zip(cases, evidence, strict=True)]
    render_cpu = time.process_time() - started
    del evidence

    with remote_loopback(args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        params = ModelParams(api_base=server.api_base, api_key="sk-loopback")
        store = Store(Path(tmp) / "bench.db")
        # Warm both paths (connections, lazy imports, instructor client) outside the timing.
        asyncio.run(_bare(server.api_base, prompts[: args.concurrency], args.concurrency))
        warm_runner = Runner(store, rubric, params, concurrency=args.concurrency)
        asyncio.run(warm_runner.run(plan(warm, rubric, [MODEL], variants=1)))

        before = server.requests
        bare = _timed("bare", lambda: asyncio.run(_bare(server.api_base, prompts,
                                                        args.concurrency)))
        bare_calls = server.requests - before

        runner = Runner(store, rubric, params, concurrency=args.concurrency)
        steps = plan(cases, rubric, [MODEL], variants=1)
        before = server.requests
        result: dict[str, Any] = {}

        def run_pipeline() -> None:
            result["summary"] = asyncio.run(runner.run(steps))

        pipe = _timed("pipeline", run_pipeline)
        pipe_calls = server.requests - before
        summary = result["summary"]
        stored = store.count()
        store.close()
        stages = _store_costs(Path(tmp) / "stages.db", cases, summary, runner)

    bare_tput = n / bare["wall_s"]
    pipe_tput = n / pipe["wall_s"]
    ideal = args.concurrency / args.latency
    figures = {
        "n": n,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "cases": str(args.cases or "swebench_verified_dev (cycled) or demo"),
        "ideal_throughput": ideal,
        "bare": {**bare, "throughput": bare_tput, "cpu_ms_per_call": 1000 * bare["cpu_s"] / n,
                 "calls": bare_calls},
        "pipeline": {**pipe, "throughput": pipe_tput,
                     "cpu_ms_per_judgment": 1000 * pipe["cpu_s"] / n, "calls": pipe_calls,
                     "statuses": dict(summary.statuses), "errors": len(summary.errors)},
        "stage_cpu_ms": {"evidence selection": 1000 * select_cpu / n,
                         "rendering": 1000 * render_cpu / n, **stages},
        "ratio": pipe_tput / bare_tput,
        "load": load_text(),
        "stored_judgments": stored,
    }
    print(f"{n} judgments, concurrency {args.concurrency}, server latency "
          f"{1000 * args.latency:.0f} ms (ideal {ideal:.0f}/s); {figures['load']}")
    print(f"bare litellm loop : {bare['wall_s']:6.2f} s  {bare_tput:6.1f}/s  "
          f"CPU {figures['bare']['cpu_ms_per_call']:.2f} ms/call  ({bare_calls} calls)")
    print(f"pipeline (Runner) : {pipe['wall_s']:6.2f} s  {pipe_tput:6.1f}/s  "
          f"CPU {figures['pipeline']['cpu_ms_per_judgment']:.2f} ms/judgment  "
          f"({pipe_calls} calls, {dict(summary.statuses)}, {len(summary.errors)} not judged)")
    known = sum(figures["stage_cpu_ms"].values())
    rest = figures["pipeline"]["cpu_ms_per_judgment"] - figures["bare"]["cpu_ms_per_call"] - known
    print("  pipeline CPU beyond the bare call, by stage (each timed alone on the same cases): "
          + ", ".join(f"{k} {v:.2f}" for k, v in figures["stage_cpu_ms"].items())
          + f"; the rest (instructor, answer parsing, label probabilities, Judgment and"
          f" Provenance, asyncio) {rest:.2f} ms")
    figures["stage_cpu_ms"]["rest"] = rest
    cpu_bound = 1000 / figures["bare"]["cpu_ms_per_call"]
    print(f"one core's worth of the bare loop's CPU per call allows {cpu_bound:.0f} calls/s "
          f"({'below' if cpu_bound < ideal else 'above'} the {ideal:.0f}/s the latency allows: "
          f"{'CPU-bound' if cpu_bound < ideal else 'latency-bound'})")
    print(f"ratio pipeline/bare throughput: {figures['ratio']:.3f} (target >= 0.90: "
          f"{'met' if figures['ratio'] >= 0.90 else 'NOT met'})")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
