"""`judge run` end to end through litellm's real HTTP path to a loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.digests import digest
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for

PASS = '{"verdict": "pass", "evidence": ["E1", "E3"], "rationale": "The tests pass."}'
FAIL = '{"verdict": "fail", "evidence": ["E9"], "rationale": "E9 shows a failing test."}'


def _case(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"case-{i}",
        "kind": "agent_run",
        "task": f"Fix bug {i} in parser.py; AWS key AKIAIOSFODNN7EXAMPLE must not leak",
        "diff": "--- a/parser.py\n+++ b/parser.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "trace": [
            {"id": "m0", "role": "agent", "content": "I will run the tests: pytest -q"},
            {"id": "m1", "role": "observation", "content": "3 passed in 0.1s"},
        ],
        "gold": "pass",
        "slices": {"secret_slice": "SLICE-SENTINEL"},
        **extra,
    }


def _responder(request: dict[str, Any]) -> Reply:
    text = PASS
    return Reply(
        content=text,
        logprobs=logprobs_for(text, {"pass": 0.8, "fail": 0.15, "cannot_determine": 0.05}),
    )


def _write_cases(path: Path, records: list[dict[str, Any] | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_run_stores_full_provenance_and_second_run_makes_no_call(
    tmp_path: Path, api_key: None
) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", [_case(1), _case(2), _case(3)])
    db = tmp_path / "j.db"
    with LoopbackServer(_responder) as server:
        args = [
            "run",
            "--rubric",
            "agent-run-success@1",
            "--model",
            "openai/loopback",
            "--api-base",
            server.api_base,
            "--db",
            str(db),
            "--quiet",
            "--out",
            str(tmp_path / "out.jsonl"),
            str(cases),
        ]
        first = _run(args)
        assert first.exit_code == 0, first.output
        assert len(server.requests) == 3
        second = _run(args)
        assert second.exit_code == 0, second.output
        assert len(server.requests) == 3  # everything came from the store
        assert "0 called the model, 3 from the store" in second.output
    # No secret and no blinded field reached the provider.
    sent = json.dumps(server.requests)
    assert "AKIAIOSFODNN7EXAMPLE" not in sent and "SLICE-SENTINEL" not in sent
    with Store(db) as store:
        judgments = list(store.judgments())
    assert len(judgments) == 3
    j = judgments[0]
    assert j.status == "ok" and j.verdict is not None
    assert j.verdict.label == "pass"
    assert j.verdict.label_probs == pytest.approx(
        {"pass": 0.8, "fail": 0.15, "cannot_determine": 0.05}
    )
    assert j.verdict.confidence == pytest.approx(0.8)
    assert "E1" in j.verdict.cited
    p = j.provenance
    assert p.rubric_id == "agent-run-success" and p.rubric_version == 1
    assert p.rubric_digest.startswith("sha256:") and p.prompt_digest.startswith("sha256:")
    assert p.evidence_digest.startswith("sha256:") and p.selector_version
    assert p.model == "openai/loopback" and p.evidence_ids[0] == "E1"
    assert j.usage.prompt_tokens == 100 and j.raw_output == PASS
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(lines) == 3


def test_invalid_records_are_named_and_valid_ones_still_judged(
    tmp_path: Path, api_key: None
) -> None:
    cases = _write_cases(
        tmp_path / "cases.jsonl", [_case(1), "{broken", {**_case(2), "kind": "essay"}, _case(3)]
    )
    with LoopbackServer(_responder) as server:
        result = _run(
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--quiet",
                str(cases),
            ]
        )
    assert result.exit_code == 1
    assert "cases.jsonl:2: not valid JSON" in result.output
    assert "cases.jsonl:3 field 'kind'" in result.output
    assert len(server.requests) == 2


def test_failures_are_stored_as_failures_never_as_verdicts(tmp_path: Path, api_key: None) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", [_case(1), _case(2)])
    db = tmp_path / "j.db"

    def responder(request: dict[str, Any]) -> Reply:
        task = json.dumps(request["messages"])
        if "bug 1" in task:
            return Reply(content="I think it passes!")  # never valid JSON
        return Reply(status=500, content="upstream down")

    with LoopbackServer(responder) as server:
        result = _run(
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(db),
                "--quiet",
                str(cases),
            ]
        )
    assert result.exit_code == 3
    with Store(db) as store:
        statuses = {j.case_id: (j.status, j.verdict) for j in store.judgments()}
        calls = list(store.db.query("select outcome from calls"))
    assert statuses["case-1"] == ("parse_error", None)
    assert statuses["case-2"] == ("infra_error", None)
    assert sum(1 for c in calls if c["outcome"] == "infra_error") == 5  # the retry budget


def test_abstain_is_its_own_status(tmp_path: Path, api_key: None) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", [_case(1)])
    abstain = '{"verdict": "cannot_determine", "evidence": [], "rationale": "No test output."}'
    with LoopbackServer(lambda r: Reply(content=abstain)) as server:
        result = _run(
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--quiet",
                str(cases),
            ]
        )
    assert result.exit_code == 0
    with Store(tmp_path / "j.db") as store:
        (j,) = list(store.judgments())
    assert j.status == "abstain"


def test_pairwise_both_orders_map_back_to_the_canonical_frame(
    tmp_path: Path, api_key: None
) -> None:
    pair = {
        "id": "p1",
        "kind": "pairwise",
        "task": "Say hi in French",
        "candidates": {"A": "Bonjour", "B": "Hello"},
        "gold": "A",
    }
    cases = _write_cases(tmp_path / "pairs.jsonl", [pair])
    # The judge always prefers the first shown answer: canonical A in order AB, B in order BA.
    first = '{"verdict": "A", "evidence": ["E1"], "rationale": "First is better."}'
    with LoopbackServer(lambda r: Reply(content=first)) as server:
        result = _run(
            [
                "run",
                "--rubric",
                "pairwise-preference@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--quiet",
                str(cases),
            ]
        )
    assert result.exit_code == 0, result.output
    with Store(tmp_path / "j.db") as store:
        stored = {j.provenance.order: j for j in store.judgments()}
    by_order = {order: j.verdict for order, j in stored.items()}
    assert by_order["AB"].label == "A" and by_order["BA"].label == "B"  # type: ignore[union-attr]
    assert by_order["BA"].label_shown == "A"  # type: ignore[union-attr]
    # In order BA the first response shown is canonical B. (The two orders are sent at once:
    # the BA request is the one whose prompt digest its judgment records.)
    ba_request = next(
        r for r in server.requests if digest(r["messages"]) == stored["BA"].provenance.prompt_digest
    )
    ba_prompt = json.dumps(ba_request["messages"])
    assert ba_prompt.index("Hello") < ba_prompt.index("Bonjour")


def test_judge_run_as_a_real_process(tmp_path: Path) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", [_case(1)])
    with LoopbackServer(_responder) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "judge",
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                str(cases),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        )
    assert proc.returncode == 0, proc.stderr
    assert "1 judgments: ok 1" in proc.stderr


def test_prompt_variants_are_judged_and_stored_apart(tmp_path: Path, api_key: None) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", [_case(1)])
    db = tmp_path / "j.db"
    with LoopbackServer(_responder) as server:
        result = _run(
            [
                "run",
                "--rubric",
                "agent-run-success@2",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(db),
                "--quiet",
                str(cases),
            ]
        )
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 3  # one call per prompt variant
        again = _run(
            [
                "run",
                "--rubric",
                "agent-run-success@2",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(db),
                "--quiet",
                "--variants",
                "2",
                str(cases),
            ]
        )
        assert again.exit_code == 0 and len(server.requests) == 3  # both already stored
    with Store(db) as store:
        judgments = list(store.judgments())
    assert sorted(j.provenance.variant for j in judgments) == [0, 1, 2]
    assert len({j.cache_key for j in judgments}) == 3
    prompts = [r["messages"][1]["content"] for r in server.requests]
    assert len(set(prompts)) == 3
