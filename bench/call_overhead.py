"""Benchmark 1c: CPU of one structured judge call against the bare litellm call, in one run.

    .venv/bin/python bench/call_overhead.py [--n 500] [--rounds 2]

The loopback server (its own process, 50 ms) answers a valid verdict. Four loops of N calls
each at concurrency 32, alternated ``--rounds`` times: plain ``litellm.acompletion``; the same
with the JSON-schema ``response_format`` the judge sends; instructor's
``create_with_completion`` over litellm (what ``judge.providers`` uses); and
``judge.providers.call_model`` (instructor, tenacity retries, label probabilities, cost). CPU
per call is this process's ``time.process_time`` over N: what each layer adds to a judgment.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import judge
from judge.providers import AttemptLog, ModelParams, call_model, prepare_litellm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_text, remote_loopback, write_json  # noqa: E402

MODEL = "openai/gpt-4o-mini"
Loop = Callable[[list[dict[str, str]]], Awaitable[Any]]


def main() -> None:
    """Time the four loops, alternated, and print CPU ms per call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()
    litellm = prepare_litellm()
    import instructor

    rubric = judge.load_rubric("agent-run-success")
    answer = rubric.answer_model()
    schema = {
        "type": "json_schema",
        "json_schema": {"name": answer.__name__, "schema": answer.model_json_schema()},
    }
    prompts = [
        [
            {"role": "system", "content": "S" * 2000},
            {"role": "user", "content": f"case {i} " * 1500},
        ]
        for i in range(args.n + 32)
    ]
    client: Any = instructor.from_litellm(litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA)
    with remote_loopback(0.05) as server:
        base: dict[str, Any] = {
            "model": MODEL,
            "api_base": server.api_base,
            "api_key": "sk-loopback",
            "temperature": 0.0,
            "max_tokens": 384,
            "seed": 0,
            "num_retries": 0,
        }
        params = ModelParams(api_base=server.api_base, api_key="sk-loopback")

        async def bare(m: list[dict[str, str]]) -> Any:
            return await litellm.acompletion(messages=m, **base)

        async def with_schema(m: list[dict[str, str]]) -> Any:
            return await litellm.acompletion(messages=m, response_format=schema, **base)

        async def with_instructor(m: list[dict[str, str]]) -> Any:
            return await client.chat.completions.create_with_completion(
                messages=m, response_model=answer, max_retries=1, **base
            )

        async def judge_call(m: list[dict[str, str]]) -> Any:
            return await call_model(MODEL, m, answer, rubric.all_labels, params, log=AttemptLog())

        loops: dict[str, Loop] = {
            "bare litellm": bare,
            "litellm + response_format": with_schema,
            "instructor": with_instructor,
            "call_model": judge_call,
        }

        async def run(fn: Loop, batch: list[list[dict[str, str]]]) -> None:
            semaphore = asyncio.Semaphore(32)

            async def one(m: list[dict[str, str]]) -> None:
                async with semaphore:
                    await fn(m)

            await asyncio.gather(*(one(m) for m in batch))

        for fn in loops.values():
            asyncio.run(run(fn, prompts[:32]))  # warm
        cpu: dict[str, list[float]] = {name: [] for name in loops}
        for _ in range(args.rounds):
            for name, fn in loops.items():
                started = time.process_time()
                asyncio.run(run(fn, prompts[32:]))
                cpu[name].append(1000 * (time.process_time() - started) / args.n)
    print(f"{args.n} calls per loop, concurrency 32, 50 ms server; {load_text()}")
    bare_ms = min(cpu["bare litellm"])
    for name, values in cpu.items():
        print(
            f"{name:28s} CPU {min(values):5.2f} ms/call (min of {args.rounds}; all "
            f"{', '.join(f'{v:.2f}' for v in values)}), +{min(values) - bare_ms:.2f} over bare"
        )
    write_json(args.json, {"cpu_ms_per_call": cpu, "n": args.n, "load": load_text()})


if __name__ == "__main__":
    main()
