"""Judging on Ray (``--engine ray``): a local Ray with 2 workers against loopback model servers.

Every judgment is stored once and a rerun calls nothing; a Router file spreads calls over two
deployments; a worker killed mid-batch is retried by Ray without a second stored judgment; a
driver killed mid-batch leaves what it received stored and a rerun pays only for the rest.
Skipped without Ray (``pip install 'calibrated-judge[ray]'``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import judge
import judge.judging
import judge.providers
from judge.cli import main
from judge.digests import digest
from judge.errors import InputError
from judge.testing.loopback import LoopbackServer, Reply
from judge.testing.processes import descendants

pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
ray = pytest.importorskip("ray", reason="the Ray engine needs the [ray] extra")

RUBRIC = "agent-run-success@1"
PASS = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it done."}'
ENV = {"OPENAI_API_KEY": "sk-test-not-a-real-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _case(i: int) -> dict[str, Any]:
    return {
        "id": f"c-{i:03d}",
        "kind": "agent_run",
        "task": f"Task {i}: make parse() return [] on empty input.",
        "diff": "--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "trace": [
            {"id": "t0", "role": "agent", "content": "pytest -q"},
            {"id": "t1", "role": "observation", "content": f"{i + 1} passed"},
        ],
    }


def _cases(n: int) -> list[judge.Case]:
    return [judge.Case.model_validate(_case(i)) for i in range(n)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _workers() -> list[int]:
    return [p for p in descendants(os.getpid()) if "JudgeWorker" in _cmdline(p)]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray of 2 CPUs for the in-process tests (workers inherit this environment)."""
    saved = {name: os.environ.get(name) for name in ENV}
    os.environ.update(ENV)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        ray.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _judge(db: Path, cases: list[judge.Case], **options: Any) -> judge.RunSummary:
    with judge.open_store(db) as store:
        return judge.judge_cases(
            store,
            cases,
            rubric=RUBRIC,
            models=[options.pop("model")],
            options=judge.JudgeOptions(**options),
        )


def _stored(db: Path) -> dict[str, str]:
    """prompt digest -> status of every stored judgment (read-only, while a writer runs)."""
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("select prompt_digest, status from judgments").fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()
    return dict(rows)


def _prompts(requests: list[dict[str, Any]]) -> list[str]:
    return [digest(r["messages"][:2]) for r in requests]


def test_ray_with_a_router_stores_each_judgment_once_and_a_rerun_calls_nothing(
    tmp_path: Path, local_ray: None
) -> None:
    n = 24
    reply = Reply(content=PASS, delay_s=0.05)
    with LoopbackServer(lambda r: reply) as one, LoopbackServer(lambda r: reply) as two:
        router = tmp_path / "router.yaml"
        router.write_text(
            "model_list:\n"
            + "".join(
                f"  - model_name: judge\n    litellm_params:\n      model: openai/loopback\n"
                f"      api_base: {server.api_base}\n      api_key: sk-loopback\n"
                for server in (one, two)
            )
        )
        options = {
            "model": "judge",
            "concurrency": 4,
            "router": judge.providers.read_router_config(router),
            "ray": judge.judging.RayOptions(workers=2),
        }
        first = _judge(tmp_path / "j.db", _cases(n), **options)
        calls = len(one.requests) + len(two.requests)
        again = _judge(tmp_path / "j.db", _cases(n), **options)
        calls_again = len(one.requests) + len(two.requests)
    assert (first.called, first.cached, first.failed, len(first.errors)) == (n, 0, 0, 0)
    assert calls == n
    # The Router spread the calls over both deployments.
    assert len(one.requests) > 0 and len(two.requests) > 0
    assert (again.called, again.cached, calls_again) == (0, n, n)
    with judge.open_store(tmp_path / "j.db") as store:
        stored = list(store.judgments())
        assert store.count("cases") == n and store.count("calls") == n
    assert len(stored) == len({j.cache_key for j in stored}) == n
    assert {j.status for j in stored} == {"ok"}


def test_the_router_alone_spreads_the_in_process_runner_over_both_deployments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    with (
        LoopbackServer(lambda r: Reply(content=PASS)) as one,
        LoopbackServer(lambda r: Reply(content=PASS)) as two,
    ):
        router = tmp_path / "router.json"
        router.write_text(
            json.dumps(
                {
                    "model_list": [
                        {
                            "model_name": "judge",
                            "litellm_params": {
                                "model": "openai/loopback",
                                "api_base": s.api_base,
                                "api_key": "sk-loopback",
                            },
                        }
                        for s in (one, two)
                    ]
                }
            )
        )
        summary = _judge(
            tmp_path / "j.db",
            _cases(16),
            model="judge",
            concurrency=4,
            router=judge.providers.read_router_config(router),
        )
    assert summary.called == 16 and summary.failed == 0
    assert len(one.requests) + len(two.requests) == 16
    assert len(one.requests) > 0 and len(two.requests) > 0


def test_a_bad_router_file_is_named_with_its_field(tmp_path: Path) -> None:
    bad = tmp_path / "router.yaml"
    bad.write_text("model_list:\n  - litellm_params: {model: openai/x}\n")
    with pytest.raises(InputError) as info:
        judge.providers.read_router_config(bad)
    assert "model_list.0.model_name" in str(info.value) and str(bad) in str(info.value)


def test_a_worker_killed_mid_batch_is_retried_without_a_second_stored_judgment(
    tmp_path: Path, local_ray: None
) -> None:
    n = 40
    killed: list[int] = []
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.2)) as server:

        def kill_one_worker() -> None:
            deadline = time.monotonic() + 120
            while len(server.requests) < 10 and time.monotonic() < deadline:
                time.sleep(0.02)
            workers = _workers()
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])

        watcher = threading.Thread(target=kill_one_worker, daemon=True)
        watcher.start()
        summary = _judge(
            tmp_path / "j.db",
            _cases(n),
            model="openai/loopback",
            concurrency=4,
            api_base=server.api_base,
            ray=judge.judging.RayOptions(workers=2),
        )
        watcher.join(10)
        requests = _prompts(server.requests)
    assert killed, "no judging worker was found to kill"
    assert (summary.called, summary.failed, len(summary.errors)) == (n, 0, 0)
    with judge.open_store(tmp_path / "j.db") as store:
        stored = list(store.judgments())
    assert len(stored) == len({j.cache_key for j in stored}) == n
    assert set(requests) == {j.provenance.prompt_digest for j in stored}
    # Paid twice at most for what the killed worker had in flight: 4 batches of 2 cases.
    assert n <= len(requests) <= n + 8


def test_a_driver_killed_mid_batch_leaves_its_results_stored_and_a_rerun_pays_the_rest(
    tmp_path: Path,
) -> None:
    n = 60
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(_case(i)) + "\n" for i in range(n)))
    db = tmp_path / "j.db"
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.1)) as server:

        def judge_run() -> subprocess.Popen[str]:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "judge",
                    "run",
                    "--rubric",
                    RUBRIC,
                    "--model",
                    "openai/loopback",
                    "--api-base",
                    server.api_base,
                    "--db",
                    str(db),
                    "--engine",
                    "ray",
                    "--workers",
                    "2",
                    "--concurrency",
                    "4",
                    "--quiet",
                    str(cases),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **ENV},
            )

        driver = judge_run()
        try:
            deadline = time.monotonic() + 240
            while len(_stored(db)) < 12:
                assert driver.poll() is None, driver.communicate()[1]
                assert time.monotonic() < deadline, "the Ray run stored too little in time"
                time.sleep(0.05)
        finally:
            # The driver and the local Ray it started (processes this test started).
            started = descendants(driver.pid)
            driver.kill()
            for pid in started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            driver.wait(30)
        stored_before = _stored(db)
        paid_before = len(server.requests)
        assert 12 <= len(stored_before) < n
        final = judge_run()
        _, err = final.communicate(timeout=300)
        resumed = _prompts(server.requests[paid_before:])
        every = _prompts(server.requests)
    assert final.returncode == 0, err
    # The rerun paid for exactly the missing judgments, each once.
    assert not set(resumed) & set(stored_before)
    assert len(resumed) == len(set(resumed)) == n - len(stored_before)
    assert f"{n - len(stored_before)} called the model, {len(stored_before)} from the store" in err
    stored = _stored(db)
    assert len(stored) == n and set(stored.values()) == {"ok"}
    assert set(every) == set(stored)
    # Calls <= judgments + what was in flight at the kill (2 workers x 4 batches of 2 cases).
    assert len(every) <= n + 16


def test_a_failing_or_stalling_model_server_gives_typed_failures_on_ray(
    tmp_path: Path, local_ray: None
) -> None:
    """As in the single-process runner: a server that answers 500, or too late, gives
    infra_error judgments (never a verdict), which a rerun tries again."""

    def responder(request: dict[str, Any]) -> Reply:
        failing = "Task 1" in json.dumps(request["messages"])
        return Reply(status=500, content="boom") if failing else Reply(content=PASS, delay_s=3)

    with LoopbackServer(responder) as server:
        summary = _judge(
            tmp_path / "j.db",
            _cases(2),
            model="openai/loopback",
            concurrency=2,
            api_base=server.api_base,
            timeout_s=0.5,
            max_attempts=1,
            ray=judge.judging.RayOptions(workers=2),
        )
    assert summary.statuses == {"infra_error": 2} and summary.failed == 2
    with judge.open_store(tmp_path / "j.db") as store:
        stored = list(store.judgments())
    assert {j.status for j in stored} == {"infra_error"}
    assert all(j.verdict is None and j.error for j in stored)
    errors = " ".join(j.error or "" for j in stored)
    assert "500" in errors or "InternalServerError" in errors
    assert "Timeout" in errors or "timed out" in errors.lower()


def test_workers_can_write_the_store_themselves(tmp_path: Path, local_ray: None) -> None:
    """The path a database URL takes (every worker its own connection), on a SQLite file that
    the workers of a local Ray can open: each judgment stored once, the rerun calls nothing."""
    n = 12
    db = tmp_path / "j.db"
    judge.open_store(db).close()  # workers write only into a store that exists
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.05)) as server:
        options = {
            "model": "openai/loopback",
            "concurrency": 4,
            "api_base": server.api_base,
            "ray": judge.judging.RayOptions(workers=2, writes="workers"),
        }
        first = _judge(db, _cases(n), **options)
        again = _judge(db, _cases(n), **options)
        calls = len(server.requests)
    assert (first.called, again.called, again.cached, calls) == (n, 0, n, n)
    with judge.open_store(db) as store:
        stored = list(store.judgments())
        assert store.count("calls") == n and store.count("step_keys") == n
    assert len(stored) == len({j.cache_key for j in stored}) == n
    assert {j.status for j in stored} == {"ok"}


@pytest.mark.postgres
def test_on_a_postgresql_store_the_workers_write_their_judgments(
    pg_url: str, local_ray: None
) -> None:
    """A database URL: every worker opens its own connection and writes its judgments (writes
    "auto"); the driver only counts them. Each stored once; the rerun calls nothing."""
    n = 12
    with LoopbackServer(lambda r: Reply(content=PASS, delay_s=0.05)) as server:
        options = judge.JudgeOptions(
            concurrency=4, api_base=server.api_base, ray=judge.judging.RayOptions(workers=2)
        )
        with judge.open_store(pg_url) as store:
            written_here: list[int] = []
            put_batch = store.put_batch

            def spy(**rows: Any) -> None:
                written_here.append(len(rows.get("judgments", ())))
                put_batch(**rows)

            store.put_batch = spy  # type: ignore[method-assign]
            first, again = (
                judge.judge_cases(
                    store, _cases(n), rubric=RUBRIC, models=["openai/loopback"], options=options
                )
                for _ in range(2)
            )
            stored = list(store.judgments())
            calls_logged = store.count("calls")
        calls = len(server.requests)
    assert (first.called, again.called, again.cached, calls, calls_logged) == (n, 0, n, n, n)
    assert len(stored) == len({j.cache_key for j in stored}) == n
    assert sum(written_here) == 0  # the driver wrote no judgment: the workers did


def test_a_cluster_that_refuses_the_driver_ends_with_exit_2_naming_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ray 2.60 cluster with token authentication refuses a driver without RAY_AUTH_MODE
    and the token: ray.init raises ConnectionError after ~20 s of 'Unauthenticated' retries
    (seen against a real `RAY_AUTH_MODE=token ray start --head`). judge run used to end in a
    raw traceback with exit code 1, which its help reserves for invalid records."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(_case(0)) + "\n")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:6379")

    monkeypatch.setattr(ray, "init", refuse)
    # A Ray another test of the session started is used as it is: this driver starts afresh.
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    argv = [
        "judge", "run", str(cases), "--rubric", "agent-run-success@1", "--model",
        "openai/local", "--api-base", "http://127.0.0.1:9/v1", "--db", str(tmp_path / "j.db"),
        "--engine", "ray", "--ray-address", "127.0.0.1:6379", "--quiet",
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "could not start or join the Ray cluster at 127.0.0.1:6379" in err
    assert "RAY_AUTH_MODE=token" in err and "RAY_AUTH_TOKEN" in err
    assert "RAY_AUTH_MODE unset" in err and "Traceback" not in err
