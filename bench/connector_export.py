"""Benchmark: verdicts exported to a platform (``judge export --to URL``), per second.

    .venv/bin/python bench/connector_export.py [--platform phoenix|mlflow] [--verdicts N]
        [--traces N] [--sync-verdicts 2000] [--workers N] [--query '?concurrency=16']
        [--json bench/results/connector_export.json]

For each platform (``PLATFORMS``: Phoenix and MLflow; each entry says how to start a throwaway
server, seed traces, name the target, and count judge's records on it):

1. start a throwaway server on loopback (Phoenix from .venv-phoenix, MLflow from .venv-mlflow
   with ``--workers`` uvicorn workers, SQLite in a temp folder; ``JUDGE_PHOENIX_URL`` /
   ``JUDGE_MLFLOW_URL`` use a running one) and seed ``--traces`` agent runs into a new project
   or experiment (default 1,000 runs and 10,000 verdicts; MLflow 200 and 2,000, a few minutes);
2. import them with ``judge.import_traces(URL)`` into a new store, and store ``--verdicts``
   judgments (``verdicts / traces`` rubrics per run, one judge model; made here, no model call);
3. time ``judge.export_verdicts``: the first export (every verdict new on the platform), the
   same again (nothing changed: the export ledger sends nothing), then forced (every verdict
   updated in place; twice for Phoenix, once for MLflow, whose writes are slow), in each of the
   platform's write modes (Phoenix: asynchronous with read-back, the connector's default, and
   ``sync=true`` on ``--sync-verdicts`` of them; MLflow: its default, 8 requests in flight;
   ``--query`` replaces the modes by one, e.g. ``?concurrency=16``); then count judge's records
   on the platform (one per verdict: updates never duplicate);
4. the platform alone, for comparison: the same records written straight to its API, without
   judge's pooling, ledger or per-batch read-back, timed until the last one reads back (MLflow:
   the first ``CEILING_RECORDS`` of them, one request each, as many in flight as judge had).

Verdicts per second = verdicts confirmed stored / time of the sending (the connector reports a
batch only once it reads it back); ``wall`` also counts reading and pooling the stored
judgments, redaction and the ledger (the whole ``export_verdicts`` call). The machine is shared
(2 cores, other sessions' jobs): figures are pessimistic and move with the load; the 1-minute
load average is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import judge
import judge.connectors
import judge.exchange
from judge.connectors.mlflow import CONCURRENCY as MLFLOW_CONCURRENCY
from judge.connectors.mlflow import MlflowConnector
from judge.connectors.phoenix import PhoenixConnector
from judge.testing import mlflow as mlflow_testing
from judge.testing.mlflow import MLFLOW_URL_ENV, MlflowServer, find_mlflow
from judge.testing.phoenix import (
    PHOENIX_URL_ENV,
    PhoenixServer,
    find_phoenix,
    seed,
    span_annotations,
)
from judge.types import Judgment, Provenance, Verdict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODEL = "openai/bench-judge"
#: Records the MLflow ceiling writes (one request each: a 10,000 would take minutes more).
CEILING_RECORDS = 2000
#: Set by main(): the MLflow server's uvicorn workers, and the requests in flight of the
#: MLflow ceiling (the connector's own, or --query's concurrency=N).
SETTINGS: dict[str, int] = {"workers": mlflow_testing.WORKERS, "concurrency": MLFLOW_CONCURRENCY}


@dataclass
class Platform:
    """How to benchmark one platform's connector."""

    name: str
    #: Start a throwaway server; returns a handle with ``stop()``.
    start: Callable[[], Any]
    #: Seed ``n`` one-span agent runs into a new project or experiment; returns its name.
    seed: Callable[[Any, int], str]
    #: The judge target URL of that project.
    target: Callable[[Any, str], str]
    #: How many of judge's records the platform holds on these cases' traces.
    count: Callable[[Any, str, list[judge.Case]], int]
    #: Write modes: name -> query string added to the target URL.
    modes: dict[str, str]
    #: The platform alone, for comparison: the same records written without judge (no
    #: pooling, no ledger, no per-batch read-back), timed until the last one reads back.
    ceiling: Callable[[Any, str, list[judge.connectors.VerdictOut]], dict[str, Any]] | None = None
    #: Forced exports after the first (every verdict updated in place).
    updates: int = 2
    #: Default size: verdicts and traces (``--verdicts`` / ``--traces`` override them).
    verdicts: int = 10_000
    traces: int = 1000


def _phoenix_seed(server: PhoenixServer, n: int) -> str:
    project = "bench-" + secrets.token_hex(3)
    start = datetime.now(UTC) - timedelta(hours=1)
    runs = []
    for i in range(n):
        begin = start + timedelta(seconds=i)
        runs.append(
            [
                {
                    "name": "support-agent",
                    "context": {"trace_id": secrets.token_hex(16), "span_id": secrets.token_hex(8)},
                    "parent_id": None,
                    "span_kind": "AGENT",
                    "start_time": begin.isoformat(),
                    "end_time": (begin + timedelta(milliseconds=900)).isoformat(),
                    "status_code": "OK",
                    "attributes": {
                        "agent.name": "support-agent",
                        "input.value": f"Where is my order #A{i}?",
                        "output.value": f"Order A{i} has shipped and arrives on Friday.",
                    },
                }
            ]
        )
    seed(server.url, project, runs, chunk=1000)
    return project


def _phoenix_count(server: PhoenixServer, project: str, cases: list[judge.Case]) -> int:
    spans = [str(c.meta["root_span_id"]) for c in cases]
    total = 0
    for start in range(0, len(spans), 500):
        rows = span_annotations(server.url, project, spans[start : start + 500])
        total += sum(1 for r in rows if str(r["identifier"]).startswith("judge:"))
    return total


def _phoenix_ceiling(
    server: PhoenixServer, project: str, verdicts: list[judge.connectors.VerdictOut]
) -> dict[str, Any]:
    """Phoenix alone: judge's annotations (another identifier) posted asynchronously in batches
    of 1000, one after the other, then polled until the last one reads back."""
    import httpx

    connector = PhoenixConnector()
    items = [{**connector.annotation(v), "identifier": "ceiling"} for v in verdicts]
    load = os.getloadavg()[0]
    began = time.monotonic()
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for start in range(0, len(items), 1000):
            answer = client.post(
                "/v1/span_annotations",
                params={"sync": "false"},
                json={"data": items[start : start + 1000]},
            )
            answer.raise_for_status()
        posted = time.monotonic() - began
        last = items[-1]
        params = {
            "span_ids": last["span_id"],
            "identifier": "ceiling",
            "include_annotation_names": last["name"],
        }
        while not client.get(f"/v1/projects/{project}/span_annotations", params=params).json()[
            "data"
        ]:
            time.sleep(0.1)
    seconds = time.monotonic() - began
    return {
        "records": len(items),
        "posted_s": round(posted, 2),
        "stored_s": round(seconds, 2),
        "records_per_s": round(len(items) / seconds, 1),
        "load_1min": round(load, 1),
    }


def _mlflow_seed(server: MlflowServer, n: int) -> str:
    experiment = server.experiment("bench-" + secrets.token_hex(3))
    start = datetime.now(UTC) - timedelta(hours=1)
    runs = [
        mlflow_testing.agent_trace(
            f"Where is my order #A{i}?",
            f"Order A{i} has shipped and arrives on Friday.",
            start=start + timedelta(seconds=i),
        )
        for i in range(n)
    ]
    mlflow_testing.seed(server.url, experiment, runs, chunk=100)
    return experiment


def _mlflow_count(server: MlflowServer, experiment: str, cases: list[judge.Case]) -> int:
    rows = mlflow_testing.assessments(server.url, [c.id for c in cases])
    return sum(1 for r in rows if r["source"]["source_id"] == MODEL)


def _mlflow_ceiling(
    server: MlflowServer, experiment: str, verdicts: list[judge.connectors.VerdictOut]
) -> dict[str, Any]:
    """MLflow alone: judge's assessments (another source id, ids of the server's choosing)
    created one request each with asyncio, as many in flight as judge had."""
    import httpx

    connector = MlflowConnector()
    items = []
    for v in verdicts[:CEILING_RECORDS]:
        body = connector.assessment(v)
        body["source"] = {"source_type": "LLM_JUDGE", "source_id": "ceiling"}
        items.append(body)
    concurrency = SETTINGS["concurrency"]

    async def run() -> float:
        queue = list(reversed(items))
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:

            async def worker() -> None:
                while queue:
                    body = queue.pop()
                    answer = await client.post(
                        f"/api/3.0/mlflow/traces/{body['trace_id']}/assessments",
                        json={"assessment": body},
                    )
                    answer.raise_for_status()

            began = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.monotonic() - began

    load = os.getloadavg()[0]
    seconds = asyncio.run(run())
    return {
        "records": len(items),
        "concurrency": concurrency,
        "stored_s": round(seconds, 2),
        "records_per_s": round(len(items) / seconds, 1),
        "load_1min": round(load, 1),
    }


PLATFORMS: dict[str, Platform] = {
    "phoenix": Platform(
        name="phoenix",
        start=lambda: (
            PhoenixServer.attach(os.environ[PHOENIX_URL_ENV])
            if os.environ.get(PHOENIX_URL_ENV)
            else PhoenixServer.start(find_phoenix(REPO))
        ),
        seed=_phoenix_seed,
        target=lambda server, project: server.target(project),
        count=_phoenix_count,
        modes={"async": "", "sync": "?sync=true"},
        ceiling=_phoenix_ceiling,
    ),
    "mlflow": Platform(
        name="mlflow",
        start=lambda: (
            MlflowServer.attach(os.environ[MLFLOW_URL_ENV])
            if os.environ.get(MLFLOW_URL_ENV)
            else MlflowServer.start(find_mlflow(REPO), workers=SETTINGS["workers"])
        ),
        seed=_mlflow_seed,
        target=lambda server, experiment: server.target(experiment),
        count=_mlflow_count,
        modes={"default": ""},
        ceiling=_mlflow_ceiling,
        updates=1,
        # MLflow writes one assessment per request: 2,000 keep the run to a few minutes.
        verdicts=2000,
        traces=200,
    ),
}


def _judgments(cases: list[judge.Case], per_case: int) -> list[Judgment]:
    """``per_case`` rubrics' judgments of every case (distinct rationales and P(pass))."""
    out = []
    for n, case in enumerate(cases):
        for r in range(per_case):
            p = ((n * 7 + r * 13) % 100) / 100
            label = "pass" if p >= 0.5 else "fail"
            out.append(
                Judgment(
                    id=f"j-{n}-{r}",
                    case_id=case.id,
                    cache_key=f"bench-{n}-{r}",
                    status="ok",
                    verdict=Verdict(
                        label=label,
                        label_probs={"pass": p, "fail": 1 - p},
                        confidence=max(p, 1 - p),
                        cited=["E1", "E2"],
                        rationale=f"Run {n}: the agent answered from the order system ({label}).",
                    ),
                    provenance=Provenance(
                        rubric_id=f"bench-rubric-{r}",
                        rubric_version=1,
                        rubric_digest="sha256:r",
                        model=MODEL,
                        prompt_digest="sha256:p",
                        evidence_digest="sha256:e",
                        selector_version="evidence-v1",
                        token_budget=6000,
                        judge_version="0.1.0",
                    ),
                )
            )
    return out


def _export(store: judge.Store, url: str, **kwargs: Any) -> dict[str, Any]:
    load = os.getloadavg()[0]
    began = time.monotonic()
    report = judge.export_verdicts(store, url, **kwargs)
    wall = time.monotonic() - began
    return {
        "sent": report.sent,
        "unchanged": report.unchanged,
        "seconds": round(report.seconds, 2),
        "verdicts_per_s": round(report.rate, 1),
        # The whole call: reading and pooling the stored judgments, redaction, the ledger.
        "wall_s": round(wall, 2),
        "verdicts_per_s_wall": round(report.sent / wall, 1) if wall > 0 else 0.0,
        "load_1min": round(load, 1),
    }


def bench(platform: Platform, verdicts: int, traces: int, sync_verdicts: int) -> dict[str, Any]:
    """Start, seed, import, store, export in each mode; the figures."""
    per_case = max(1, verdicts // traces)
    began = time.monotonic()
    server = platform.start()
    out: dict[str, Any] = {"platform": platform.name, "start_s": round(time.monotonic() - began)}
    if platform.name == "mlflow":
        out["server_workers"] = SETTINGS["workers"]
    try:
        began = time.monotonic()
        project = platform.seed(server, traces)
        out["seed_s"] = round(time.monotonic() - began, 1)
        target = platform.target(server, project)
        cases = judge.import_traces(target).cases
        assert len(cases) == traces, f"{len(cases)} cases imported of {traces}"
        with tempfile.TemporaryDirectory() as tmp, judge.open_store(Path(tmp) / "b.db") as store:
            for case in cases:
                store.put_case(case)
            store.put_batch(judgments=[(j, None) for j in _judgments(cases, per_case)])
            out["verdicts"] = len(cases) * per_case
            for mode, query in platform.modes.items():
                url = target + query
                if mode == "sync":
                    # The same verdicts, forced: synchronous writes of updates, on a subset.
                    subset = max(1, sync_verdicts // traces)
                    rubric_ids = [f"bench-rubric-{r}" for r in range(subset)]
                    runs = [_export(store, url, rubric_id=rid, force=True) for rid in rubric_ids]
                    sent = sum(r["sent"] for r in runs)
                    seconds = sum(r["seconds"] for r in runs)
                    out[mode] = {
                        "update": {
                            "sent": sent,
                            "seconds": round(seconds, 2),
                            "verdicts_per_s": round(sent / seconds, 1),
                            "load_1min": runs[-1]["load_1min"],
                        }
                    }
                    continue
                out[mode] = {"insert": _export(store, url), "unchanged": _export(store, url)}
                for n in range(platform.updates):
                    out[mode]["update" + "_again" * n] = _export(store, url, force=True)
            out["records_on_platform"] = platform.count(server, project, cases)
            if platform.ceiling is not None:
                found = judge.exchange.target_verdicts(store, judge.connectors.resolve(target)[1])
                out["platform_alone"] = platform.ceiling(server, project, found.verdicts)
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="phoenix")
    parser.add_argument(
        "--verdicts", type=int, default=None, help="Default: the platform's (10,000; MLflow 2,000)."
    )
    parser.add_argument(
        "--traces", type=int, default=None, help="Default: the platform's (1,000; MLflow 200)."
    )
    parser.add_argument("--sync-verdicts", type=int, default=2000)
    parser.add_argument(
        "--workers",
        type=int,
        default=mlflow_testing.WORKERS,
        help="MLflow: the throwaway server's uvicorn workers.",
    )
    parser.add_argument(
        "--query",
        default=None,
        help="One write mode instead of the platform's: this query string on the target URL "
        "(e.g. '?concurrency=16' for MLflow).",
    )
    parser.add_argument("--json", default=None, help="Also write the figures here.")
    args = parser.parse_args(argv)
    platform = PLATFORMS[args.platform]
    if args.query is not None:
        platform = replace(platform, modes={"custom": args.query})
        found = re.search(r"concurrency=(\d+)", args.query)
        if found:
            SETTINGS["concurrency"] = int(found.group(1))
    SETTINGS["workers"] = args.workers
    verdicts = platform.verdicts if args.verdicts is None else args.verdicts
    traces = platform.traces if args.traces is None else args.traces
    result = bench(platform, verdicts, traces, args.sync_verdicts)
    for key, value in result.items():
        print(f"{key}: {value}")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
