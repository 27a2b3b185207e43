"""Benchmark 1: pipeline overhead against a bare loop of litellm calls, in the same run.

    .venv/bin/python bench/pipeline.py [--n 2000] [--concurrency 32] [--latency 0.05 0.5]

For each latency, both loops call the same loopback server (its own process, answering after
``--latency`` seconds) at the same concurrency. The bare loop sends the pre-rendered prompts
with plain ``litellm.acompletion``; the pipeline runs ``Runner.run`` on the cases: evidence
selection (in its process pool), rendering, instructor structured output, label probabilities,
and the store writes (cases, judgments, call log, step keys). The ratio of their throughputs is
the pipeline's efficiency (targets: >= 0.90 at 50 ms, >= 0.97 at 500 ms).
CPU per judgment is this process's ``time.process_time`` over N, and the same plus the
runner's preparing processes; the server's CPU is measured apart (its share of a core during
the bare loop shows whether it could be the limit: the bare loop shares it).

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

from _common import (  # noqa: E402
    CpuMeter,
    load_text,
    remote_loopback,
    unique_cases,
    write_json,
)

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
                model=MODEL,
                messages=messages,
                api_base=api_base,
                api_key="sk-loopback",
                temperature=0.0,
                max_tokens=DEFAULT_MAX_TOKENS,
                seed=0,
                num_retries=0,
            )

    await asyncio.gather(*(one(m) for m in prompts))


def _timed(fn: Any, exclude: list[int]) -> dict[str, float]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with CpuMeter(exclude=exclude) as meter:
        fn()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "cpu_all_s": meter.cpu_s}


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
        # As the runner does: lookups 64 keys at a time, writes a few judgments per
        # transaction (those that finish in one turn of the event loop; 8 here).
        for start in range(0, len(judgments), 64):
            part = list(zip(keys, judgments, strict=False))[start : start + 64]
            store.cached_steps([key for key, _ in part])
            store.cached_many([j.cache_key for _, j in part])
            for low in range(0, len(part), 8):
                group = part[low : low + 8]
                store.put_batch(
                    judgments=[(j, "b") for _, j in group],
                    calls=[
                        {
                            "cache_key": j.cache_key,
                            "model": MODEL,
                            "attempt": 1,
                            "outcome": "ok",
                            "error": None,
                            "prompt_tokens": 100,
                            "completion_tokens": 20,
                            "cost_usd": None,
                            "latency_s": 0.05,
                            "created_at": j.created_at.isoformat(),
                        }
                        for _, j in group
                    ],
                    steps=[(key, j.cache_key) for key, j in group],
                )
        out["store"] = 1000 * (time.process_time() - started) / n
    return out


TARGETS = {0.05: 0.90, 0.5: 0.97}


def measure(latency: float, n: int, concurrency: int, source: Path | None) -> dict[str, Any]:
    """Both loops at one latency, in this run; the figures."""
    rubric = load_rubric("agent-run-success")
    cases = unique_cases(n + 2 * concurrency, source)
    warm, cases = cases[: 2 * concurrency], cases[2 * concurrency :]
    budget = rubric.spec.token_budget or 1400

    started = time.process_time()
    evidence = [
        select_evidence(c, visible=rubric.spec.evidence_visible, token_budget=budget) for c in cases
    ]
    select_cpu = time.process_time() - started
    started = time.process_time()
    prompts = [rubric.render(c, e) for c, e in zip(cases, evidence, strict=True)]
    render_cpu = time.process_time() - started
    del evidence

    with remote_loopback(latency) as server, tempfile.TemporaryDirectory() as tmp:
        params = ModelParams(api_base=server.api_base, api_key="sk-loopback")
        store = Store(Path(tmp) / "bench.db")
        # Warm both paths (connections, lazy imports, instructor client, the runner's process
        # pool) outside the timing.
        asyncio.run(_bare(server.api_base, prompts[:concurrency], concurrency))
        warm_runner = Runner(store, rubric, params, concurrency=concurrency)
        asyncio.run(warm_runner.run(plan(warm, rubric, [MODEL], variants=1)))

        before, server_cpu = server.requests, server.cpu_s
        bare = _timed(
            lambda: asyncio.run(_bare(server.api_base, prompts, concurrency)), [server.pid]
        )
        bare_calls = server.requests - before
        bare_server_cpu = server.cpu_s - server_cpu

        runner = Runner(store, rubric, params, concurrency=concurrency)
        steps = plan(cases, rubric, [MODEL], variants=1)
        before, server_cpu = server.requests, server.cpu_s
        result: dict[str, Any] = {}

        def run_pipeline() -> None:
            result["summary"] = asyncio.run(runner.run(steps))

        pipe = _timed(run_pipeline, [server.pid])
        pipe_calls = server.requests - before
        pipe_server_cpu = server.cpu_s - server_cpu
        summary = result["summary"]
        stored = store.count()
        store.close()
        stages = _store_costs(Path(tmp) / "stages.db", cases, summary, runner)

    bare_tput = n / bare["wall_s"]
    pipe_tput = n / pipe["wall_s"]
    return {
        "n": n,
        "concurrency": concurrency,
        "latency_s": latency,
        "ideal_throughput": concurrency / latency,
        "bare": {
            **bare,
            "throughput": bare_tput,
            "cpu_ms_per_call": 1000 * bare["cpu_s"] / n,
            "calls": bare_calls,
            "server_cpu_ms_per_call": 1000 * bare_server_cpu / n,
            "server_core_share": bare_server_cpu / bare["wall_s"],
        },
        "pipeline": {
            **pipe,
            "throughput": pipe_tput,
            "cpu_ms_per_judgment": 1000 * pipe["cpu_s"] / n,
            "cpu_all_ms_per_judgment": 1000 * pipe["cpu_all_s"] / n,
            "calls": pipe_calls,
            "statuses": dict(summary.statuses),
            "errors": len(summary.errors),
            "server_core_share": pipe_server_cpu / pipe["wall_s"],
        },
        "stage_cpu_ms": {
            "evidence selection": 1000 * select_cpu / n,
            "rendering": 1000 * render_cpu / n,
            **stages,
        },
        "ratio": pipe_tput / bare_tput,
        "stored_judgments": stored,
    }


def report(figures: dict[str, Any]) -> None:
    """Print one latency's figures."""
    bare, pipe = figures["bare"], figures["pipeline"]
    n, latency = figures["n"], figures["latency_s"]
    print(
        f"\n{n} judgments, concurrency {figures['concurrency']}, server latency "
        f"{1000 * latency:.0f} ms (ideal {figures['ideal_throughput']:.0f}/s)"
    )
    print(
        f"bare litellm loop : {bare['wall_s']:6.2f} s  {bare['throughput']:6.1f}/s  "
        f"CPU {bare['cpu_ms_per_call']:.2f} ms/call  ({bare['calls']} calls); server "
        f"{bare['server_cpu_ms_per_call']:.2f} ms CPU/request, "
        f"{100 * bare['server_core_share']:.0f}% of a core"
    )
    print(
        f"pipeline (Runner) : {pipe['wall_s']:6.2f} s  {pipe['throughput']:6.1f}/s  "
        f"CPU {pipe['cpu_ms_per_judgment']:.2f} ms/judgment in the event loop's process, "
        f"{pipe['cpu_all_ms_per_judgment']:.2f} with its preparing processes  "
        f"({pipe['calls']} calls, {pipe['statuses']}, {pipe['errors']} not judged); "
        f"server {100 * pipe['server_core_share']:.0f}% of a core"
    )
    print(
        "  CPU of each stage timed alone on the same cases (ms per judgment): "
        + ", ".join(f"{k} {v:.2f}" for k, v in figures["stage_cpu_ms"].items())
    )
    cpu_bound = 1000 / bare["cpu_ms_per_call"]
    ideal = figures["ideal_throughput"]
    print(
        f"one core's worth of the bare loop's CPU per call allows {cpu_bound:.0f} calls/s "
        f"({'below' if cpu_bound < ideal else 'above'} the {ideal:.0f}/s the latency allows: "
        f"{'CPU-bound' if cpu_bound < ideal else 'latency-bound'})"
    )
    target = TARGETS.get(latency)
    verdict = (
        ""
        if target is None
        else (f" (target >= {target:.2f}: {'met' if figures['ratio'] >= target else 'NOT met'})")
    )
    print(
        f"ratio pipeline/bare throughput at {1000 * latency:.0f} ms: "
        f"{figures['ratio']:.3f}{verdict}"
    )


def main() -> None:
    """Run both loops at each latency and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.05, 0.5])
    parser.add_argument("--cases", type=Path, default=None)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()

    prepare_litellm()
    print(f"cases: {args.cases or 'swebench_verified_dev (cycled) or demo'}; {load_text()}")
    runs = [measure(latency, args.n, args.concurrency, args.cases) for latency in args.latency]
    for figures in runs:
        report(figures)
    print(f"after: {load_text()}")
    write_json(args.json, {"runs": runs, "load": load_text()})


if __name__ == "__main__":
    main()
