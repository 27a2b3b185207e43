"""Preflight: unknown model ids and missing credentials are refused before anything is judged or
stored; authentication failures are never retried; a keyless OpenAI-compatible server works
without a dummy key. Calls go through litellm's real HTTP path to the loopback server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

import judge
from judge.cli import cli
from judge.errors import InfraError, InputError
from judge.providers import KEYLESS_API_KEY, AttemptLog, ModelParams, call_model, model_problem
from judge.service.jobs import JudgeSettings
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.conftest import REPO
from tests.review_fixtures import make_case, running_service

PASS = '{"verdict": "pass", "evidence": ["E1"], "rationale": "The tests pass."}'
#: Every variable litellm reads a hosted provider's key from, in these tests' model ids.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_ADMIN_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _responder(request: dict[str, Any]) -> Reply:
    return Reply(content=PASS, logprobs=logprobs_for(PASS, {"pass": 0.8, "fail": 0.2}))


def _cases(path: Path, n: int = 2) -> Path:
    path.write_text("".join(make_case(i).model_dump_json() + "\n" for i in range(n)))
    return path


def test_missing_key_exits_2_naming_the_variable_and_stores_nothing(
    tmp_path: Path, no_keys: None
) -> None:
    cases = _cases(tmp_path / "cases.jsonl")
    db = tmp_path / "j.db"
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "run",
            "--rubric",
            "agent-run-success@1",
            "--model",
            "openai/gpt-4o",
            "--db",
            str(db),
            "--quiet",
            str(cases),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "OPENAI_API_KEY" in done.stderr and "openai/gpt-4o" in done.stderr
    assert "--api-base" in done.stderr  # the way out for a self-hosted server
    assert "Traceback" not in done.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    ("model", "hint"),
    [
        ("gpt4o", "did you mean gpt-4o"),
        ("foo/bar", "provider/model"),
        ("antropic/claude-x", "did you mean anthropic/claude-x"),
        ("local/no-such-alias", "known aliases are"),
    ],
)
def test_unknown_model_ids_are_refused_up_front_with_a_hint(
    tmp_path: Path, model: str, hint: str
) -> None:
    cases = _cases(tmp_path / "cases.jsonl")
    db = tmp_path / "j.db"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--rubric",
            "agent-run-success@1",
            "--model",
            model,
            "--db",
            str(db),
            "--quiet",
            str(cases),
        ],
    )
    assert isinstance(result.exception, InputError), result.output
    assert model in str(result.exception) and hint in str(result.exception)
    assert not db.exists()


def test_every_judging_entry_point_preflights(tmp_path: Path, no_keys: None) -> None:
    db = tmp_path / "j.db"
    runner = CliRunner()
    # judge demo
    demo = runner.invoke(
        cli, ["demo", "--model", "openai/gpt-4o", "--out", str(tmp_path / "demo"), "--limit", "1"]
    )
    assert isinstance(demo.exception, InputError) and "OPENAI_API_KEY" in str(demo.exception)
    assert not (tmp_path / "demo" / "judge.db").exists()
    # judge score (a run set judged by a model)
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "".join(
            json.dumps(
                {
                    "run_id": f"r{i}",
                    "task_id": "t1",
                    "treatment": "agent",
                    "repetition": i,
                    "case": json.loads(make_case(i).model_dump_json()),
                }
            )
            + "\n"
            for i in range(2)
        )
    )
    score = runner.invoke(
        cli,
        [
            "score",
            str(runs),
            "--rubric",
            "agent-run-success@1",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--db",
            str(db),
            "--out-dir",
            str(tmp_path / "report"),
            "--quiet",
        ],
    )
    assert isinstance(score.exception, InputError), score.output
    assert "ANTHROPIC_API_KEY" in str(score.exception)
    assert not db.exists()
    # the library
    with judge.open_store(db) as store:
        with pytest.raises(InputError, match="OPENAI_API_KEY"):
            judge.judge_cases(
                store, [make_case(1)], rubric="agent-run-success@1", models=["openai/gpt-4o"]
            )
        with pytest.raises(InputError, match="foo/bar"):
            judge.score_runs(
                judge.load_runs(runs).runs,
                source="runs",
                store=store,
                rubric="agent-run-success@1",
                models=["foo/bar"],
            )
        assert list(store.judgments()) == []
    # the API's model choice (used by POST /v1/judge and POST /v1/jobs)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        JudgeSettings(models=("openai/gpt-4o",)).pick_models(None)


def test_api_refuses_a_job_at_submit_time(tmp_path: Path, no_keys: None) -> None:
    with running_service(tmp_path / "api.db", models=("openai/gpt-4o",), rate_per_s=0) as svc:
        response = httpx.post(
            svc.url + "/v1/jobs",
            headers={"X-API-Key": svc.keys["dan"]},
            json={
                "cases": [json.loads(make_case(1).model_dump_json())],
                "rubric": "agent-run-success@1",
            },
            timeout=30,
        )
    assert response.status_code == 422, response.text
    assert "OPENAI_API_KEY" in response.json()["error"]["message"]
    with Store(tmp_path / "api.db") as store:
        assert store.jobs(limit=10, offset=0) == []


def test_local_models_need_no_key(tmp_path: Path, no_keys: None) -> None:
    assert model_problem("local/qwen2.5-coder-1.5b") is None
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF")
    assert model_problem(f"local/gguf:{own}") is None
    assert "no such GGUF file" in (model_problem(f"local/gguf:{tmp_path / 'absent.gguf'}") or "")


def test_keyless_openai_compatible_server_works_without_a_dummy_key(
    tmp_path: Path, no_keys: None
) -> None:
    cases = _cases(tmp_path / "cases.jsonl", n=2)
    db = tmp_path / "j.db"
    with LoopbackServer(_responder) as server:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/my-llama",
                "--api-base",
                server.api_base,
                "--db",
                str(db),
                "--quiet",
                str(cases),
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2
        # The placeholder, not a key from the environment, went to the server.
        assert server.authorizations == [f"Bearer {KEYLESS_API_KEY}"] * 2
    with Store(db) as store:
        assert {j.status for j in store.judgments()} == {"ok"}


def test_a_configured_key_is_sent_to_an_api_base_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    with LoopbackServer(_responder) as server:
        asyncio.run(
            call_model(
                "openai/x",
                [{"role": "user", "content": "x"}],
                _Answer,
                ["pass", "fail"],
                ModelParams(api_base=server.api_base),
            )
        )
        assert server.authorizations == ["Bearer sk-from-the-environment"]


class _Answer(BaseModel):
    verdict: str
    evidence: list[str]
    rationale: str


def test_missing_credentials_are_not_retried(no_keys: None) -> None:
    # litellm reports a missing OpenAI key as an InternalServerError (status 500): without the
    # authentication check it would be retried max_attempts times.
    log = AttemptLog()
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    with pytest.raises(InfraError, match="(?i)credentials|api.key") as info:
        asyncio.run(
            call_model(
                "openai/gpt-4o",
                [{"role": "user", "content": "x"}],
                _Answer,
                ["pass", "fail"],
                ModelParams(max_attempts=5),
                log=log,
                sleep=sleep,
            )
        )
    assert info.value.attempts == 1
    assert len(log.entries) == 1 and sleeps == []


@pytest.mark.parametrize("status", [401, 403])
def test_refused_keys_are_not_retried(status: int) -> None:
    with LoopbackServer() as server:
        server.enqueue(*[Reply(status=status, content="Incorrect API key provided")] * 3)
        with pytest.raises(InfraError):
            asyncio.run(
                call_model(
                    "openai/x",
                    [{"role": "user", "content": "x"}],
                    _Answer,
                    ["pass", "fail"],
                    ModelParams(api_base=server.api_base, api_key="sk-wrong", backoff_base_s=0.001),
                )
            )
        assert len(server.requests) == 1


def _failed(case_id: str, error: str) -> Any:
    from tests.review_fixtures import make_judgment

    return make_judgment(case_id, None, status="infra_error").model_copy(update={"error": error})


def test_a_batch_that_never_reached_its_server_says_what_to_do() -> None:
    refused = "provider failed 5 times; last error: OpenAIException - Connection error."
    hint = judge.providers.unreached_hint(
        [_failed("a", refused), _failed("b", refused)], "http://u:s3cret@127.0.0.1:9/v1"
    )
    assert hint is not None and "is the server running" in hint
    assert "s3cret" not in hint and "127.0.0.1:9/v1" in hint
    # A batch that reached the server once, failed otherwise, or had no --api-base: no hint.
    assert judge.providers.unreached_hint([_failed("a", refused), _failed("b", "429")], "x") is None
    assert judge.providers.unreached_hint([_failed("a", refused)], None) is None
    assert judge.providers.unreached_hint([], "http://127.0.0.1:9/v1") is None


def test_judge_run_against_a_port_where_nothing_listens_prints_the_hint(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(make_case("c1").model_dump(mode="json")) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "judge", "run", str(cases), "--rubric", "agent-run-success",
         "--model", "openai/local", "--api-base", "http://127.0.0.1:9/v1", "--samples", "1",
         "--variants", "1", "--db",
         str(tmp_path / "j.db"), "--quiet"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "no call reached http://127.0.0.1:9/v1 (connection error)" in done.stderr
