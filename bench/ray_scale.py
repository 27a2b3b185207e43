"""Benchmark 7: judging on Ray (1 and 2 workers) against the in-process runner, in one run.

    .venv/bin/python bench/ray_scale.py [--n 400] [--concurrency 16] [--latency 0.2]

One loopback server (its own process, answering after ``--latency`` seconds). The same number
of distinct SWE-bench cases is judged three times, each into a fresh store, at the same total
concurrency: in this process (``Runner``, concurrency C), on a local Ray with 1 worker (C
calls in flight) and with 2 workers (C/2 each). For each: wall time (for Ray, including the
start of its judging actors: a worker imports litellm and builds its client), steady
throughput (first to last finished judgment), and the CPU per judgment of every process
involved (this driver, the runner's preparing processes, Ray's workers and its own daemons;
the server's is left out). Ray's own start (``ray.init``) is timed apart: it is paid once per
driver, not per batch.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import judge
import judge.judging

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-not-a-key")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuMeter, load_text, remote_loopback, unique_cases, write_json  # noqa: E402

MODEL = "openai/gpt-4o-mini"


def _one(
    label: str,
    cases: list[Any],
    api_base: str,
    concurrency: int,
    ray: judge.judging.RayOptions | None,
    server_pid: int,
) -> dict[str, Any]:
    finished: list[float] = []
    options = judge.JudgeOptions(
        api_base=api_base, concurrency=concurrency, variants=1, ray=ray, prepare_workers=None
    )
    with tempfile.TemporaryDirectory() as tmp, judge.open_store(Path(tmp) / "j.db") as store:
        started = time.perf_counter()
        at_first: list[float] = []
        with CpuMeter(exclude=[server_pid]) as meter:

            def done(_: Any) -> None:
                finished.append(time.perf_counter())
                if len(finished) == 1:
                    at_first.append(meter.so_far())

            summary = judge.judge_cases(
                store,
                cases,
                rubric="agent-run-success",
                models=[MODEL],
                options=options,
                on_done=done,
            )
        wall = time.perf_counter() - started
        stored = store.count()
    n = len(cases)
    steady = (finished[-1] - finished[0]) if len(finished) > 1 else float("nan")
    return {
        "label": label,
        "n": n,
        "wall_s": wall,
        "throughput": n / wall,
        "first_result_s": finished[0] - started if finished else float("nan"),
        "steady_throughput": (len(finished) - 1) / steady if steady == steady else steady,
        "cpu_ms_per_judgment": 1000 * meter.cpu_s / n,
        # From the first finished judgment on: the cost of a judgment once everything started.
        "steady_cpu_ms_per_judgment": 1000 * (meter.cpu_s - at_first[0]) / max(1, n - 1)
        if at_first
        else float("nan"),
        "called": summary.called,
        "statuses": dict(summary.statuses),
        "errors": len(summary.errors),
        "stored": stored,
    }


def main() -> None:
    """Judge the same cases in process and on Ray with 1 and 2 workers; print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16, help="Total calls in flight.")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--cases", type=Path, default=None)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()
    import ray

    cases = unique_cases(3 * args.n, args.cases)
    sets = [cases[i * args.n : (i + 1) * args.n] for i in range(3)]
    print(
        f"{args.n} judgments each, total concurrency {args.concurrency}, server latency "
        f"{1000 * args.latency:.0f} ms (ideal {args.concurrency / args.latency:.0f}/s); "
        f"{load_text()}"
    )
    with remote_loopback(args.latency) as server:
        runs = [_one("in process", sets[0], server.api_base, args.concurrency, None, server.pid)]
        started = time.perf_counter()
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        ray_start = time.perf_counter() - started
        try:
            for label, workers, in_set in (
                ("ray, 1 worker", 1, sets[1]),
                ("ray, 2 workers", 2, sets[2]),
            ):
                runs.append(
                    _one(
                        label,
                        in_set,
                        server.api_base,
                        args.concurrency // workers,
                        judge.judging.RayOptions(workers=workers),
                        server.pid,
                    )
                )
        finally:
            ray.shutdown()
    base = runs[0]
    print(f"ray.init (local, {os.cpu_count()} CPUs): {ray_start:.1f} s, once per driver")
    print(
        f"{'':16s} {'wall':>7s} {'judg/s':>7s} {'first':>6s} {'steady/s':>8s} "
        f"{'CPU ms/j':>8s} {'steady':>6s}  ratio (wall, steady) to in-process"
    )
    for r in runs:
        print(
            f"{r['label']:16s} {r['wall_s']:6.1f}s {r['throughput']:7.1f} "
            f"{r['first_result_s']:5.1f}s {r['steady_throughput']:8.1f} "
            f"{r['cpu_ms_per_judgment']:8.1f} {r['steady_cpu_ms_per_judgment']:6.1f}  "
            f"{r['throughput'] / base['throughput']:.2f}, "
            f"{r['steady_throughput'] / base['steady_throughput']:.2f}  "
            f"({r['called']} called, {r['statuses']}, {r['errors']} not judged)"
        )
    overhead = {
        r["label"]: {
            "whole run": r["cpu_ms_per_judgment"] - base["cpu_ms_per_judgment"],
            "steady": r["steady_cpu_ms_per_judgment"] - base["steady_cpu_ms_per_judgment"],
        }
        for r in runs[1:]
    }
    print(
        "per-judgment CPU overhead of Ray over in-process (whole run incl. actor start; "
        "steady from the first result): "
        + "; ".join(
            f"{k} {v['whole run']:+.1f} / {v['steady']:+.1f} ms" for k, v in overhead.items()
        )
    )
    print(f"after: {load_text()}")
    write_json(
        args.json,
        {
            "runs": runs,
            "ray_init_s": ray_start,
            "latency_s": args.latency,
            "concurrency": args.concurrency,
            "overhead_ms": overhead,
            "load": load_text(),
        },
    )


if __name__ == "__main__":
    main()
