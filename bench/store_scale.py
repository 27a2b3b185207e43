"""Benchmark: the shared deployment. Store write rate on SQLite and PostgreSQL, and judge-API
job throughput with one and with two `judge serve` replicas on one PostgreSQL database.

    .venv/bin/python bench/store_scale.py [--writes 2000] [--cases 200] [--latency 0.2]
        [--workers 2] [--concurrency 4] [--json bench/results/store_scale.json]

Both parts start a throwaway PostgreSQL cluster (Debian's binaries, judge.testing.pgcluster:
fsync off, as the tests run it; a production server syncing every commit writes slower).

1. Store writes: ``--writes`` judgments stored one by one with ``Store.put`` (each its own
   transaction, as the runner stores them) into a new SQLite file and a new PostgreSQL database,
   from one thread and from four threads sharing the store; writes per second.
2. API throughput: ``--cases`` cases (the demo set, made distinct) submitted as jobs of 4 cases,
   round-robin, to one replica, then to two replicas on a new database; the loopback model
   server (its own process) answers each call after ``--latency`` seconds. Cases judged per
   second from the first submission to the last job done, and the ratio two/one. Each replica
   runs ``--workers`` job workers with ``--concurrency`` calls in flight each.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

import judge
import judge.service
from judge.api.client import JudgeClient
from judge.testing.pgcluster import PgCluster
from judge.testing.processes import free_port
from judge.types import Provenance, Verdict

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-not-a-key")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_text, remote_loopback, unique_cases, write_json  # noqa: E402

MODEL = "openai/gpt-4o-mini"
RUBRIC = "agent-run-success@1"  # one prompt per case: one model call per case


def _judgments(n: int, tag: str) -> list[judge.Judgment]:
    """``n`` distinct judgment records (as the runner makes them), for the write benchmark."""
    prov = Provenance(
        rubric_id="r",
        rubric_version=1,
        rubric_digest="sha256:r",
        model="m",
        prompt_digest="sha256:p",
        evidence_digest="sha256:e",
        selector_version="evidence-v1",
        token_budget=4000,
        judge_version="0",
    )
    return [
        judge.Judgment(
            id=f"j-{tag}-{i}",
            case_id=f"c{i}",
            cache_key=f"sha256:{tag}-{i}",
            status="ok",
            verdict=Verdict(label="pass", rationale="x" * 200),
            provenance=prov,
            raw_output="{}" * 100,
        )
        for i in range(n)
    ]


def write_rate(location: str, n: int, threads: int) -> float:
    """Judgments stored per second by ``threads`` threads sharing one store object each."""
    parts = [_judgments(n // threads, f"{threads}-{t}") for t in range(threads)]

    def work(batch: list[judge.Judgment]) -> None:
        with judge.open_store(location) as store:
            for j in batch:
                store.put(j)

    judge.open_store(location).close()
    workers = [threading.Thread(target=work, args=(b,)) for b in parts]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return (n // threads) * threads / (time.perf_counter() - started)


def api_throughput(
    url: str, replicas: int, cases: list[Any], api_base: str, workers: int, concurrency: int
) -> dict[str, Any]:
    """Cases judged per second through ``replicas`` `judge serve` processes on ``url``."""
    with judge.open_store(url) as store:
        key = judge.service.create_key(store, "bench")[1]
    env = {**os.environ, "JUDGE_DB": url, "JUDGE_JOB_POLL_S": "0.2"}
    procs, bases = [], []
    for _ in range(replicas):
        port = free_port()
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "judge",
                    "serve",
                    "--port",
                    str(port),
                    "--model",
                    MODEL,
                    "--api-base",
                    api_base,
                    "--rate",
                    "0",
                    "--workers",
                    str(workers),
                    "--concurrency",
                    str(concurrency),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        bases.append(f"http://127.0.0.1:{port}")
    try:
        for base in bases:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(base + "/v1/whoami", headers={"X-API-Key": key}).is_success:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"replica {base} did not start")
                time.sleep(0.2)
        clients = [JudgeClient(base, key, timeout=60) for base in bases]
        batches = [cases[i : i + 4] for i in range(0, len(cases), 4)]
        started = time.perf_counter()
        ids = [clients[i % replicas].submit_job(b, rubric=RUBRIC).id for i, b in enumerate(batches)]
        for job_id in ids:
            done = clients[0].wait(job_id, timeout=900, poll=0.1)
            if done.status != "done":
                raise RuntimeError(f"job {job_id} ended {done.status}: {done.error}")
        seconds = time.perf_counter() - started
        for c in clients:
            c.close()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    return {
        "replicas": replicas,
        "cases": len(cases),
        "seconds": round(seconds, 2),
        "cases_per_s": round(len(cases) / seconds, 2),
    }


def main() -> None:
    """Run both parts and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args()
    out: dict[str, Any] = {"load_before": load_text()}
    with PgCluster.start() as pg:
        with tempfile.TemporaryDirectory() as tmp:
            writes = {}
            for threads in (1, 4):
                writes[f"sqlite_{threads}t"] = round(
                    write_rate(str(Path(tmp) / f"w{threads}.db"), args.writes, threads), 1
                )
                writes[f"postgres_{threads}t"] = round(
                    write_rate(pg.create_database(), args.writes, threads), 1
                )
            out["writes_per_s"] = writes
            print("store writes per second:", writes, flush=True)
        cases = unique_cases(
            args.cases, Path(__file__).resolve().parents[1] / "gold" / "demo.jsonl"
        )
        with remote_loopback(args.latency) as model:
            runs = []
            for replicas in (1, 2):
                before = model.requests
                run = api_throughput(
                    pg.create_database(),
                    replicas,
                    cases,
                    model.api_base,
                    args.workers,
                    args.concurrency,
                )
                run["model_calls"] = model.requests - before
                runs.append(run)
                print(run, flush=True)
        out["api"] = runs
        out["ratio_two_over_one"] = round(runs[1]["cases_per_s"] / runs[0]["cases_per_s"], 2)
        out["ceiling_cases_per_s_per_replica"] = round(
            args.workers * args.concurrency / args.latency, 1
        )
    out["load_after"] = load_text()
    out["params"] = vars(args)
    print(out)
    write_json(args.json, out)


if __name__ == "__main__":
    main()
