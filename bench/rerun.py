"""Benchmark 2: nothing paid twice. Re-running a finished batch makes no model call.

    .venv/bin/python bench/rerun.py [--n 1000] [--concurrency 32] [--latency 0.05]

Runs ``judge run`` twice, as separate processes (what a user does), on the same N distinct
cases and the same store, against the loopback server in its own process answering after
``--latency`` seconds. Counts the model calls of the second run twice over: the requests the
server received, and the rows the store's call log gained. Wall times are whole processes
(start-up included). Target: zero calls, and the second run at most 5% of the first's time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_text, remote_loopback, unique_cases, write_json  # noqa: E402

import judge  # noqa: E402

MODEL = "openai/gpt-4o-mini"


@dataclass
class Run:
    """One ``judge run`` process."""

    label: str
    wall_s: float
    requests: int
    call_log_rows: int
    said: str


def _calls(db: Path) -> int:
    if not db.exists():
        return 0
    with judge.open_store(db) as store:
        return store.count("calls")


def main() -> None:
    """Run the batch twice and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--cases", type=Path, default=None)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()

    judge_bin = Path(sys.executable).with_name("judge")
    env = dict(
        os.environ,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY", "sk-loopback-not-a-key"),
    )
    with tempfile.TemporaryDirectory() as tmp, remote_loopback(args.latency) as server:
        cases_file = Path(tmp) / "cases.jsonl"
        with cases_file.open("w", encoding="utf-8") as out:
            for case in unique_cases(args.n, args.cases):
                out.write(case.model_dump_json() + "\n")
        db = Path(tmp) / "judge.db"
        command = [
            str(judge_bin),
            "run",
            str(cases_file),
            "--rubric",
            "agent-run-success",
            "--variants",
            "1",
            "--model",
            MODEL,
            "--api-base",
            server.api_base,
            "--db",
            str(db),
            "--concurrency",
            str(args.concurrency),
            "--quiet",
        ]
        runs: list[Run] = []
        for label in ("first", "second"):
            requests, calls = server.requests, _calls(db)
            started = time.perf_counter()
            done = subprocess.run(
                command, env=env, cwd=REPO, capture_output=True, text=True, check=False
            )
            wall = time.perf_counter() - started
            if done.returncode != 0:
                sys.exit(f"{label} run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
            said = " ".join((done.stdout + done.stderr).split())
            start = said.find(f"{args.n} judgments")
            runs.append(
                Run(
                    label,
                    wall,
                    server.requests - requests,
                    _calls(db) - calls,
                    said[start : said.find("stored in", start)].strip(),
                )
            )
    first, second = runs
    ratio = second.wall_s / first.wall_s
    figures = {
        "n": args.n,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "runs": [asdict(r) for r in runs],
        "ratio": ratio,
        "load": load_text(),
    }
    print(
        f"judge run on {args.n} cases, concurrency {args.concurrency}, server latency "
        f"{1000 * args.latency:.0f} ms; {figures['load']}"
    )
    for run in runs:
        print(
            f"{run.label:6s} run: {run.wall_s:7.2f} s wall, {run.requests} requests to the "
            f"server, {run.call_log_rows} rows added to the call log ({run.said})"
        )
    zero = second.requests == 0 and second.call_log_rows == 0
    print(
        f"second run made {'zero' if zero else 'SOME'} model calls; "
        f"time ratio {ratio:.3f} (target <= 0.05: {'met' if ratio <= 0.05 else 'NOT met'})"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
