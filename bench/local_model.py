"""Time the embedded judge model: assembly check, load, a ~700-token judgment with and without
logprobs (the logits processor's overhead), prompt tokens/s and prefix reuse.

    .venv/bin/python bench/local_model.py [repeats]

Numbers depend on what else runs on the machine: the load average is printed with each row.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from judge.local import DEFAULT_ALIAS, ensure_model  # noqa: E402
from judge.local_provider import GenerationParams, get_engine, run_completion  # noqa: E402

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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
