"""Secrets: a corpus of planted secrets in tasks, diffs and traces is judged with `judge run`
through litellm's real HTTP path to a loopback server; none reaches the provider (checked in the
server's request log), none is written into the stored judgments, and the redaction markers keep
the evidence readable.

The corpus (tests/data/secrets) stores every fake secret split by the marker "«»", removed on
load, so that no secret scanner mistakes the files for a leak.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply

DATA = Path(__file__).parent / "data" / "secrets"
JOIN = "\u00ab\u00bb"
ANSWER = '{"verdict": "fail", "evidence": ["E1"], "rationale": "E1 shows the problem."}'


def _load(name: str) -> list[dict[str, Any]]:
    lines = (DATA / name).read_text("utf-8").replace(JOIN, "").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _windows(secret: str, size: int = 12) -> set[str]:
    """Every ``size``-character piece of a secret (the whole secret when shorter): a partial
    redaction that leaves a long tail is a leak too."""
    if len(secret) <= size:
        return {secret}
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Judge the whole corpus once; return the request log, the store dump and the outputs."""
    tmp = tmp_path_factory.mktemp("secrets")
    cases = tmp / "cases.jsonl"
    cases.write_text((DATA / "cases.jsonl").read_text("utf-8").replace(JOIN, ""), "utf-8")
    db, out = tmp / "j.db", tmp / "out.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        with LoopbackServer(lambda r: Reply(content=ANSWER)) as server:
            result = CliRunner().invoke(cli, [
                "run", "--rubric", "agent-run-success@1", "--model", "openai/loopback",
                "--api-base", server.api_base, "--db", str(db), "--out", str(out), "--quiet",
                str(cases),
            ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        stored = "\n".join(row["json"] for row in store.db.query("select json from judgments"))
        calls = json.dumps(list(store.db.query("select * from calls")))
    by_case: dict[str, str] = {}
    for request in server.requests:
        user = request["messages"][1]["content"]
        case = next(c["id"] for c in _load("cases.jsonl") if c["task"][:25] in user)
        by_case[case] = user
    return {"requests": server.requests, "by_case": by_case, "stored": stored + calls,
            "out": out.read_text("utf-8")}


def test_corpus_covers_every_kind_and_place() -> None:
    planted = _load("planted.jsonl")
    cases = {c["id"] for c in _load("cases.jsonl")}
    assert {p["case"] for p in planted} == cases
    markers = {p["marker"] for p in planted}
    assert {"aws-access-key-id", "aws-secret-access-key", "github-token", "openai-api-key",
            "jwt", "private-key", "url-password", "env-secret"} <= markers
    assert {p["where"] for p in planted} == {"task", "diff", "trace"}
    for p in planted:  # the loader removed the split markers, so each secret is whole again
        assert JOIN not in p["secret"]


def test_no_planted_secret_reaches_the_provider(judged: dict[str, Any]) -> None:
    sent = json.dumps(judged["requests"], ensure_ascii=False)
    sent_text = "\n".join(m["content"] for r in judged["requests"] for m in r["messages"])
    assert len(judged["by_case"]) == len(_load("cases.jsonl"))  # every case was judged
    for p in _load("planted.jsonl"):
        if p["marker"] is None:
            continue  # a control value, not a secret
        for piece in _windows(p["secret"]):
            assert piece not in sent_text, (p["case"], p["where"], p["marker"], piece)
            assert piece not in sent, (p["case"], p["where"], p["marker"], piece)


def test_no_planted_secret_is_stored_with_the_judgments(judged: dict[str, Any]) -> None:
    for p in _load("planted.jsonl"):
        if p["marker"] is None:
            continue
        assert p["secret"] not in judged["stored"], p
        assert p["secret"] not in judged["out"], p


def test_markers_keep_the_evidence_readable(judged: dict[str, Any]) -> None:
    for p in _load("planted.jsonl"):
        user = judged["by_case"][p["case"]]
        # What surrounds the secret (the key name, the user and host, the file) is still there.
        assert p["context"] in user, (p["case"], p["context"])
        if p["marker"] is not None:
            assert f"[REDACTED:{p['marker']}]" in user, (p["case"], p["marker"])
        else:
            assert p["secret"] in user  # a non-secret beside the secrets is left alone
    # The markers say how many secrets were removed, item by item.
    assert "[REDACTED:" in judged["by_case"]["sec-05-pem-diff"]
    assert "BEGIN RSA PRIVATE KEY" not in judged["by_case"]["sec-05-pem-diff"]


def test_secrets_in_pairwise_candidates_do_not_reach_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "ghp_" + "Rt4Wz1Nc5Kd3Jf6Hg0Ps8Ua2Ee4Io7Uy1Tq3L"
    pair = {"id": "p1", "kind": "pairwise", "task": f"Which answer is safer? token {secret}",
            "candidates": {"A": f"Use {secret} directly.", "B": "Read it from the env."}}
    cases = tmp_path / "pairs.jsonl"
    cases.write_text(json.dumps(pair) + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    answer = '{"verdict": "B", "evidence": [], "rationale": "B keeps the token out."}'
    with LoopbackServer(lambda r: Reply(content=answer)) as server:
        result = CliRunner().invoke(cli, [
            "run", "--rubric", "pairwise-preference@1", "--model", "openai/loopback",
            "--api-base", server.api_base, "--db", str(tmp_path / "p.db"), "--quiet", str(cases),
        ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    sent = json.dumps(server.requests)
    assert len(server.requests) == 2  # both answer orders
    assert secret not in sent and "[REDACTED:github-token]" in sent
