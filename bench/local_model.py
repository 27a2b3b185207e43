"""Time the embedded judge model: assembly check, load, a ~700-token judgment with and without
logprobs (the logits processor's overhead), prompt tokens/s and prefix reuse.

    .venv/bin/python bench/local_model.py [repeats]

Two more modes (benchmark 5 of BENCHMARKS.md; run every model job under the lock, so that one
model job at a time shares the 2 cores):

    flock /tmp/embedded-model.lock .venv/bin/python bench/local_model.py prefix [N]
        N demo cases (default 5) judged through the real path (call_model -> litellm ->
        instructor -> local provider) on their rubric-rendered prompts, twice: without prefix
        reuse (KV cache reset before each call) and with it (consecutive calls share the
        rubric's system prompt). Seconds per judgment, prompt tokens evaluated and their rate
        (llama.cpp's own counters), generation rate.
    flock /tmp/embedded-model.lock .venv/bin/python bench/local_model.py demo
        ``judge demo`` (14 cases of gold/demo.jsonl, every prompt variant) in a fresh output
        directory: the main job's total wall time.

Numbers depend on what else runs on the machine: the load average is printed with each row.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.cases import load_cases
from judge.commands.demo import DEMO_GOLD, DEMO_MODEL, DEMO_RUBRIC
from judge.errors import ParseError
from judge.evidence import select_evidence
from judge.providers import ModelParams, call_model
from judge.rubrics import load_rubric

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import judge  # noqa: E402
from judge.local import DEFAULT_ALIAS, ensure_model  # noqa: E402
from judge.local.llama import GenerationParams, get_engine, run_completion  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail", "cannot_determine"]},
        "rationale": {"type": "string", "maxLength": 120},
    },
    "required": ["verdict", "rationale"],
}


def _messages() -> list[dict[str, str]]:
    code = "\n".join(
        f"def f{i}(x):\n    # helper {i}: returns x plus {i}\n    return x + {i}\n"
        for i in range(23)
    )
    user = (
        'You judge whether an AI coding agent completed its task. Reply with JSON {"verdict": '
        'pass|fail|cannot_determine, "rationale": short}.\nTask: implement helpers f0..f22 where '
        f"fi(x) returns x + i.\nAgent's diff:\n{code}\nTests: all 23 passed."
    )
    return [
        {"role": "system", "content": "You are a careful, strict judge."},
        {"role": "user", "content": user},
    ]


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def main(repeats: int) -> None:
    """Print one line per measurement."""
    started = time.perf_counter()
    path = ensure_model(DEFAULT_ALIAS)
    print(f"ensure_model (already assembled): {time.perf_counter() - started:.3f} s")
    started = time.perf_counter()
    engine = get_engine(path)
    print(f"load: {time.perf_counter() - started:.2f} s, threads {engine.llama.n_threads}")
    messages = _messages()
    rows: dict[str, list[float]] = {"plain": [], "logprobs": []}
    for _ in range(repeats):
        for label, logprobs in (("plain", False), ("logprobs", True)):
            engine.llama.reset()  # no KV-cache prefix reuse between the timed runs
            params = GenerationParams.from_optional_params(
                {
                    "max_tokens": 40,
                    "temperature": 0,
                    "logprobs": logprobs,
                    "top_logprobs": 5,
                    "response_format": {"type": "json_object", "schema": SCHEMA},
                }
            )
            load = _load()
            result = run_completion(engine, messages, params)
            rows[label].append(result.seconds)
            per_step = 1000 * result.processor_seconds / max(result.completion_tokens, 1)
            print(
                f"{label:9s} prompt {result.prompt_tokens} gen {result.completion_tokens} "
                f"{result.seconds:6.2f} s  processor {result.processor_seconds:.3f} s "
                f"({per_step:.2f} ms/step)  load {load}"
            )
    for label, values in rows.items():
        print(f"{label}: median {statistics.median(values):.2f} s, min {min(values):.2f} s")
    for reuse in (False, True):
        if not reuse:
            engine.llama.reset()
        else:
            messages[1]["content"] += " Judge strictly."  # same prefix, new suffix
        load = _load()
        started = time.perf_counter()
        llama: Any = engine.llama
        out: Any = llama.create_chat_completion(messages=messages, max_tokens=1)
        seconds = time.perf_counter() - started
        tokens = out["usage"]["prompt_tokens"]
        what = "prefix reused" if reuse else "cold prompt  "
        print(f"{what} {tokens} tokens {seconds:.2f} s ({tokens / seconds:.1f} tok/s)  load {load}")


def _perf(llama: Any) -> tuple[float, int, float, int]:
    """llama.cpp's counters since the last reset: prompt ms, prompt tokens evaluated (a reused
    prefix is not evaluated again), generation ms, generated tokens."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama._ctx.ctx)
    return float(data.t_p_eval_ms), int(data.n_p_eval), float(data.t_eval_ms), int(data.n_eval)


def prefix(args: list[str]) -> None:
    """Real judgments of demo cases without and with reuse of the shared rubric prefix."""

    import llama_cpp

    n = int(args[0]) if args else 5
    rubric = load_rubric(DEMO_RUBRIC)
    budget = rubric.spec.token_budget or 1400
    cases = load_cases(DEMO_GOLD).cases[:n]
    prompts = [
        rubric.render(
            c, select_evidence(c, visible=rubric.spec.evidence_visible, token_budget=budget)
        )
        for c in cases
    ]
    engine = get_engine(ensure_model(DEFAULT_ALIAS))
    llama: Any = engine.llama
    params = ModelParams()
    print(
        f"{len(cases)} demo cases, {rubric.ref} variant 0, {DEMO_MODEL}, "
        f"{engine.llama.n_threads} threads, max_tokens {params.max_tokens}, logprobs on"
    )
    # Warm the path (litellm import, provider registration) on a tiny prompt; its answer,
    # cut at 8 tokens, is not valid and does not matter.
    with contextlib.suppress(ParseError):
        asyncio.run(
            call_model(
                DEMO_MODEL,
                [{"role": "user", "content": "Say ok."}],
                rubric.answer_model(),
                rubric.all_labels,
                ModelParams(max_tokens=8, max_reasks=0),
            )
        )
    summary: dict[str, dict[str, float]] = {}
    for label, reuse in (("without reuse", False), ("with reuse", True)):
        rows: list[tuple[float, int, int, float, float]] = []
        for case, messages in zip(cases, prompts, strict=True):
            if not reuse:
                llama.reset()  # forget the previous prompt: nothing is reused
            llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
            load = _load()
            started = time.perf_counter()
            result = asyncio.run(
                call_model(DEMO_MODEL, messages, rubric.answer_model(), rubric.all_labels, params)
            )
            seconds = time.perf_counter() - started
            p_ms, p_n, g_ms, g_n = _perf(llama)
            rows.append(
                (
                    seconds,
                    result.prompt_tokens,
                    p_n,
                    p_n / (p_ms / 1000),
                    g_n / (g_ms / 1000) if g_ms else 0.0,
                )
            )
            print(
                f"{label:14s} {case.id[-28:]:28s} {seconds:6.1f} s  prompt "
                f"{result.prompt_tokens} tok, {p_n} evaluated in {p_ms / 1000:.1f} s "
                f"({p_n / (p_ms / 1000):.1f} tok/s)  gen {g_n} tok ({rows[-1][4]:.1f} tok/s)  "
                f"load {load}"
            )
        summary[label] = {
            "s_per_judgment": statistics.median(r[0] for r in rows),
            "prompt_tokens": statistics.median(r[1] for r in rows),
            "evaluated": statistics.median(r[2] for r in rows),
            "prompt_tok_s": statistics.median(r[3] for r in rows),
            "gen_tok_s": statistics.median(r[4] for r in rows),
            "total_s": sum(r[0] for r in rows),
        }
    for label, m in summary.items():
        effective = m["prompt_tokens"] / m["s_per_judgment"]
        print(
            f"{label:14s} median {m['s_per_judgment']:.1f} s/judgment, prompt "
            f"{m['prompt_tokens']:.0f} tok of which {m['evaluated']:.0f} evaluated at "
            f"{m['prompt_tok_s']:.1f} tok/s (effective {effective:.1f} prompt tok per second "
            f"of judgment), generation {m['gen_tok_s']:.1f} tok/s; total {m['total_s']:.0f} s"
        )
    saved = 1 - summary["with reuse"]["total_s"] / summary["without reuse"]["total_s"]
    print(f"prefix reuse saved {100 * saved:.0f}% of the time; load now {_load()}")


def demo(args: list[str]) -> None:
    """``judge demo`` in a fresh output directory, timed as a whole process."""

    judge_bin = Path(sys.executable).with_name("judge")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo-out"
        print(f"judge demo --out {out}  (load before {os.getloadavg()})", flush=True)
        started = time.perf_counter()
        done = subprocess.run(
            [str(judge_bin), "demo", "--out", str(out), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        print("\n".join(lines[-8:]))
        if done.returncode != 0:
            print(done.stderr[-2000:])
        with_store = out / "judge.db"
        n = 0
        if with_store.exists():
            with judge.open_store(with_store) as store:
                n = store.count("judgments")
    print(
        f"judge demo: exit {done.returncode}, {seconds:.0f} s wall for {n} judgments "
        f"({seconds / max(n, 1):.1f} s each); load after {os.getloadavg()}"
    )


#: Extra modes by name (the default, with an optional repeat count, is main()).
MODES = {"prefix": prefix, "demo": demo}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in MODES:
        MODES[sys.argv[1]](sys.argv[2:])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
