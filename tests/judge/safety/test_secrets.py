"""Secrets: a corpus of planted secrets in tasks, diffs and traces is judged with `judge run`
through litellm's real HTTP path to a loopback server; none reaches the provider (checked in the
server's request log), none is written into the store (its tables and its raw file bytes) or any
output (`--out`, `judge show`, `judge export`), even when the model's answer quotes one; the
redaction markers keep the evidence readable, and benign look-alikes are left alone.

The corpus (tests/data/secrets: README.md) stores every fake secret split by the marker "«»",
removed on load, so that no secret scanner mistakes the files for a leak.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import judge.evidence
from judge.cases import load_cases
from judge.cli import cli
from judge.evidence import select_evidence
from judge.safety.redact import redact, redact_case, redact_judgment
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case, CriterionVerdict, Judgment, Provenance, Verdict
from tests.conftest import DATA as TEST_DATA
from tests.conftest import REPO, shared_path

DATA = TEST_DATA / "secrets"
JOIN = "\u00ab\u00bb"
CASE_FILES = ("cases.jsonl", "more_cases.jsonl", "shapes_cases.jsonl")
PLANTED_FILES = ("planted.jsonl", "more_planted.jsonl", "shapes_planted.jsonl")
ANSWER = '{"verdict": "fail", "evidence": ["E1"], "rationale": "E1 shows the problem."}'
#: Not planted in any case: the model brings it up on its own (an unparseable answer).
MODEL_SECRET = "ghp_" + "Mq4Zt8Kw2Xv6Nb0Rc3Lp7Ys1Hd5Jf9Ga2Te6Ui"


def _load(name: str) -> list[dict[str, Any]]:
    lines = (DATA / name).read_text("utf-8").replace(JOIN, "").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _cases() -> list[dict[str, Any]]:
    return [c for name in CASE_FILES for c in _load(name)]


def _planted() -> list[dict[str, Any]]:
    return [p for name in PLANTED_FILES for p in _load(name)]


def _secrets() -> list[dict[str, Any]]:
    """The planted values that are secrets (not benign look-alikes)."""
    return [p for p in _planted() if p["marker"] is not None and not p.get("false_positive")]


def _windows(secret: str, size: int = 12) -> set[str]:
    """Every ``size``-character piece of a secret (the whole secret when shorter): a partial
    redaction that leaves a long tail is a leak too."""
    if len(secret) <= size:
        return {secret}
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def _leaks(text: str, secrets: list[str]) -> Iterator[str]:
    for secret in secrets:
        for piece in _windows(secret):
            if piece in text:
                yield f"{piece!r} of {secret[:6]}..."
                break


def _case_of(user: str) -> str:
    return next(c["id"] for c in _cases() if c["task"][:25] in user)


def _respond(request: dict[str, Any]) -> Reply:
    """A model that quotes a planted secret in one rationale and answers one case with
    unparseable text holding a secret of its own."""
    case = _case_of(request["messages"][1]["content"])
    if case == "sec-12-stripe":
        stripe = next(p["secret"] for p in _secrets() if p["case"] == case)
        return Reply(
            content=json.dumps(
                {
                    "verdict": "fail",
                    "evidence": ["E1"],
                    "rationale": f"E1: the key {stripe} is hard-coded.",
                }
            )
        )
    if case == "sec-17-netrc":
        return Reply(content=f"I will not grade this; use the token {MODEL_SECRET} instead.")
    return Reply(content=ANSWER)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Judge the whole corpus once; return the request log, the store and the outputs."""
    tmp = tmp_path_factory.mktemp("secrets")
    cases = tmp / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in _cases()), "utf-8")
    db, out, otel = tmp / "j.db", tmp / "out.jsonl", tmp / "otel.json"
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        with LoopbackServer(_respond) as server:
            result = runner.invoke(
                cli,
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
                    "--out",
                    str(out),
                    "--quiet",
                    str(cases),
                ],
                catch_exceptions=False,
            )
    # 3: a judgment failed, the one that the model answered with prose (a parse error).
    assert result.exit_code == 3, result.output
    shown = [
        runner.invoke(
            cli, ["show", "--db", str(db), "--limit", "1000", *fmt], catch_exceptions=False
        )
        for fmt in ([], ["--format", "jsonl"])
    ]
    exported = runner.invoke(
        cli, ["export", "--db", str(db), "--out", str(otel)], catch_exceptions=False
    )
    assert exported.exit_code == 0, exported.output
    with Store(db) as store:
        tables = {
            t: json.dumps(list(store.db.query(f"select * from {t}")))
            for t in ("judgments", "cases", "calls")
        }
        stored_cases = {c["id"]: store.get_case(c["id"]) for c in _cases()}
    raw = b"".join(p.read_bytes() for p in tmp.glob("j.db*"))  # the file, its WAL and shm
    by_case: dict[str, str] = {}
    for request in server.requests:
        user = request["messages"][1]["content"]
        by_case.setdefault(_case_of(user), user)
    return {
        "requests": server.requests,
        "by_case": by_case,
        "tables": tables,
        "raw": raw,
        "stored_cases": stored_cases,
        "out": out.read_text("utf-8"),
        "shown": "\n".join(r.output for r in shown),
        "otel": otel.read_text("utf-8"),
    }


def test_corpus_covers_every_kind_and_place() -> None:
    planted = _planted()
    cases = {c["id"] for c in _cases()}
    assert {p["case"] for p in planted} == cases
    markers = {p["marker"] for p in planted}
    assert {
        "aws-access-key-id",
        "aws-secret-access-key",
        "github-token",
        "openai-api-key",
        "jwt",
        "private-key",
        "url-password",
        "env-secret",
        "stripe-key",
        "connection-string",
        "npm-access-token",
        "huggingface-access-token",
        "netrc-password",
        "cli-password",
        "sendgrid-api-token",
        "docker-auth",
        "kubernetes-secret",
        "mailgun-api-key",
        "api-key-header",
        "twilio-api-key",
        "npmrc-auth",
        "kubeconfig-key",
        "bearer-token",
        "config-secret",
    } <= markers
    # The 15 kinds that reached the provider in issue 16 are all planted.
    kinds = {p.get("kind") for p in planted}
    assert {
        "stripe-restricted-key",
        "azure-storage-account-key",
        "azure-sas-signature",
        "pgp-private-key",
        "npm-token",
        "huggingface-token",
        "netrc-password",
        "curl-user-password",
        "sendgrid-key",
        "docker-config-auth",
        "mysql-password-flag",
        "kubernetes-secret-data",
        "mailgun-key",
        "datadog-api-key-header",
        "twilio-auth-token",
    } <= kinds
    assert sum(1 for k in kinds if k and k.startswith("benign:")) >= 15
    assert {p["where"] for p in planted} == {"task", "diff", "trace"}
    for p in planted:  # the loader removed the split markers, so each secret is whole again
        assert JOIN not in p["secret"]


def test_the_corpus_file_is_what_its_generator_writes(tmp_path: Path) -> None:
    import runpy

    module = runpy.run_path(str(DATA / "make_more.py"))
    assert [json.dumps(c, ensure_ascii=False) for c in module["CASES"]] == [
        line for line in (DATA / "more_cases.jsonl").read_text("utf-8").splitlines()
    ]
    assert [json.dumps(p, ensure_ascii=False) for p in module["PLANTED"]] == [
        line for line in (DATA / "more_planted.jsonl").read_text("utf-8").splitlines()
    ]


def test_the_shapes_corpus_file_is_what_its_generator_writes() -> None:
    import runpy

    module = runpy.run_path(str(DATA / "make_shapes.py"))
    for rows, name in (
        (module["CASES"], "shapes_cases.jsonl"),
        (module["PLANTED"], "shapes_planted.jsonl"),
    ):
        assert [json.dumps(r, ensure_ascii=False) for r in rows] == (
            (DATA / name).read_text("utf-8").splitlines()
        )


def test_no_planted_secret_reaches_the_provider(judged: dict[str, Any]) -> None:
    sent = json.dumps(judged["requests"], ensure_ascii=False)
    sent_text = "\n".join(m["content"] for r in judged["requests"] for m in r["messages"])
    assert len(judged["by_case"]) == len(_cases())  # every case was judged
    secrets = [p["secret"] for p in _secrets()] + [p["plain"] for p in _secrets() if "plain" in p]
    assert list(_leaks(sent_text, secrets)) == []
    assert list(_leaks(sent, secrets)) == []


def test_no_secret_is_in_the_store_or_any_output(judged: dict[str, Any]) -> None:
    # The model's own secret is in its answer: it must not be stored or shown either.
    secrets = [p["secret"] for p in _secrets()] + [MODEL_SECRET]
    secrets += [p["plain"] for p in _secrets() if "plain" in p]
    for table, dump in judged["tables"].items():
        assert list(_leaks(dump, secrets)) == [], table
    raw = judged["raw"].decode("utf-8", errors="replace")
    assert list(_leaks(raw, secrets)) == [], "the SQLite file's bytes"
    for output in ("out", "shown", "otel"):
        assert list(_leaks(judged[output], secrets)) == [], output
    # ... and the model's words around them are still there, with markers.
    judgments = [json.loads(line) for line in judged["out"].splitlines()]
    stripe = next(j for j in judgments if j["case_id"] == "sec-12-stripe")
    assert stripe["verdict"]["rationale"] == "E1: the key [REDACTED:stripe-key] is hard-coded."
    refused = next(j for j in judgments if j["case_id"] == "sec-17-netrc")
    assert refused["status"] == "parse_error"
    assert "[REDACTED:github-token]" in refused["raw_output"]


def test_the_stored_case_is_redacted_and_others_are_stored_as_given(judged: dict[str, Any]) -> None:
    given = {c["id"]: Case.model_validate(c) for c in _cases()}
    for case_id, stored in judged["stored_cases"].items():
        assert stored is not None
        expected, n = redact_case(given[case_id])
        assert stored == expected
        assert (n > 0) == (stored != given[case_id])
    # The review page rebuilds the evidence from the stored case: the same digest as judged.
    for case_id in ("sec-13-azure", "sec-22-kubernetes-secret"):
        assert (
            select_evidence(judged["stored_cases"][case_id]).digest
            == select_evidence(given[case_id]).digest
        )


def test_markers_keep_the_evidence_readable(judged: dict[str, Any]) -> None:
    for p in _planted():
        user = judged["by_case"][p["case"]]
        # What surrounds the secret (the key name, the user and host, the file) is still there.
        assert p["context"] in user, (p["case"], p["context"])
        if p["marker"] is not None:
            assert f"[REDACTED:{p['marker']}]" in user, (p["case"], p["marker"])
        else:
            assert p["secret"] in user, p["kind"]  # a benign look-alike is left alone
    # The markers say how many secrets were removed, item by item.
    assert "[REDACTED:" in judged["by_case"]["sec-05-pem-diff"]
    assert "BEGIN RSA PRIVATE KEY" not in judged["by_case"]["sec-05-pem-diff"]


def test_secrets_in_pairwise_candidates_do_not_reach_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "ghp_" + "Rt4Wz1Nc5Kd3Jf6Hg0Ps8Ua2Ee4Io7Uy1Tq3L"
    pair = {
        "id": "p1",
        "kind": "pairwise",
        "task": f"Which answer is safer? token {secret}",
        "candidates": {"A": f"Use {secret} directly.", "B": "Read it from the env."},
    }
    cases = tmp_path / "pairs.jsonl"
    cases.write_text(json.dumps(pair) + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    answer = '{"verdict": "B", "evidence": ["E1"], "rationale": "B keeps the token out."}'
    with LoopbackServer(lambda r: Reply(content=answer)) as server:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--rubric",
                "pairwise-preference@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "p.db"),
                "--quiet",
                str(cases),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    sent = json.dumps(server.requests)
    assert len(server.requests) == 2  # both answer orders
    assert secret not in sent and "[REDACTED:github-token]" in sent
    with Store(tmp_path / "p.db") as store:
        stored = store.get_case("p1")
    assert stored is not None and secret not in stored.model_dump_json()


def test_redact_judgment_covers_every_free_text_field() -> None:
    token = "ghp_" + "Rt4Wz1Nc5Kd3Jf6Hg0Ps8Ua2Ee4Io7Uy1Tq3L"
    provenance = Provenance(
        rubric_id="r",
        rubric_version=1,
        rubric_digest="d",
        model="m",
        prompt_digest="p",
        evidence_digest="e",
        selector_version="s",
        token_budget=1,
        judge_version="0",
    )
    verdict = Verdict(
        label="fail",
        rationale=f"uses {token}",
        criteria=[CriterionVerdict(id="c1", label="fail", rationale=f"E2 has {token}")],
    )
    ok = Judgment(
        id="j",
        case_id="c",
        cache_key="k",
        status="ok",
        verdict=verdict,
        provenance=provenance,
        raw_output=f'{{"rationale": "uses {token}"}}',
    )
    failed = Judgment(
        id="j",
        case_id="c",
        cache_key="k",
        status="parse_error",
        error=f"no valid answer: input_value='{token}'",
        provenance=provenance,
        raw_output=token,
    )
    for judgment, expected in ((ok, 3), (failed, 2)):
        redacted, n = redact_judgment(judgment)
        assert n == expected
        assert token not in redacted.model_dump_json()
        assert "[REDACTED:github-token]" in redacted.model_dump_json()
    clean = ok.model_copy(update={"raw_output": "fine", "verdict": Verdict(label="pass")})
    assert redact_judgment(clean) == (clean, 0)


def _evidence_digests(cases: list[Case], monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each case: is its evidence the same with redaction as with none at all?"""
    with_redaction = [select_evidence(c).digest for c in cases]
    with monkeypatch.context() as mp:
        mp.setattr(judge.evidence, "redact", lambda text: (text, 0))
        without = [select_evidence(c).digest for c in cases]
    return [a == b for a, b in zip(with_redaction, without, strict=True)]


def test_cases_without_secrets_keep_their_evidence_and_so_their_cache_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Redaction that finds nothing leaves the evidence digest (and so the prompt and the cache
    # key) exactly as if there were no redaction: a store of such cases is reused as it is.
    cases = load_cases(REPO / "gold" / "demo.jsonl").cases
    clean = [c for c in cases if redact_case(c)[1] == 0]
    assert len(clean) == len(cases) - 1  # demo/09 holds AWS's documented example keys
    assert all(_evidence_digests(clean, monkeypatch))


@pytest.mark.shared
def test_real_traces_keep_their_evidence_where_nothing_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = load_cases(shared_path("gold/swebench_verified_dev.jsonl"), limit=60).cases
    clean = [c for c in cases if redact_case(c)[1] == 0]
    assert len(clean) >= 50
    assert all(_evidence_digests(clean, monkeypatch))


def test_redact_case_keeps_identity_fields_and_clean_slices_and_meta() -> None:
    case = Case(
        id="c1",
        kind="agent_run",
        task="deploy with AKIA" + "Z7QK3M2XN4P5R6T8",
        meta={"source": "x"},
        slices={"repo": "a"},
    )
    redacted, n = redact_case(case)
    assert n == 1
    assert (redacted.id, redacted.meta, redacted.slices) == ("c1", {"source": "x"}, {"repo": "a"})
    assert redacted.task == "deploy with [REDACTED:aws-access-key-id]"
    assert redact(redacted.task) == (redacted.task, 0)


def test_secrets_in_turn_ids_roles_slices_and_meta_reach_neither_provider_nor_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by an outside attacker: a turn's id and role are shown to the judge in its
    evidence tag, and they, the slices and the meta were stored as given."""
    import judge as library

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    in_id = "ghp_" + "TurnIdLeak9Qz7aB3cD4eF5gH6iJ7kL8mN9oP"
    in_role = "eyJhbGciOiJIUzI1NiJ9" + ".eyJyb2xlIjoiYWRtaW4ifQ.RoleLeakSig0123456789abcdef"
    in_slice = "glpat-" + "SliceLeak7aB3cD4eF5g"
    in_meta = "sk_live_" + "MetaLeak4eF5gH6iJ7kL8mN9"
    case = Case(
        id="leaky",
        kind="agent_run",
        task="Fix the bug.",
        trace=[
            {"id": "call_" + in_id, "role": "tool", "content": "ok"},
            {"id": "t2", "role": "assistant Authorization: Bearer " + in_role, "content": "done"},
        ],
        slices={"deploy_token": in_slice},
        meta={"env": {"STRIPE": in_meta}, "n": 3},
    )
    with (
        LoopbackServer(lambda r: Reply(content=ANSWER)) as server,
        Store(tmp_path / "s.db") as store,
    ):
        library.judge_cases(
            store,
            [case],
            rubric="agent-run-success@1",
            models=["openai/loopback"],
            options=library.JudgeOptions(api_base=server.api_base),
        )
        stored = store.get_case("leaky")
    sent = json.dumps(server.requests)
    kept = (tmp_path / "s.db").read_bytes().decode("utf-8", "replace")
    for secret in (in_id, in_role, in_slice, in_meta):
        assert secret not in sent and secret not in kept, secret
    assert stored is not None and stored.meta["n"] == 3
    assert "[REDACTED:" in stored.trace[0].id and "[REDACTED:" in stored.slices["deploy_token"]


def test_a_secret_in_the_case_id_is_redacted_and_the_id_stays_unique(tmp_path: Path) -> None:
    """The case id was kept as given (it identifies the case); it is stored, printed and
    exported, so a secret in it is now redacted, with a digest that keeps ids apart."""
    from judge.safety.redact import safe_case_id

    token = "ghp_" + "IdLeak9Qz7aB3cD4eF5gH6iJ7kL8mN9oPq1r2"
    ids = [f"run-{token}-1", f"run-{token}-2", "plain-id"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": i, "kind": "agent_run", "task": f"Fix bug {n}."}) + "\n"
            for n, i in enumerate(ids)
        ),
        "utf-8",
    )
    safe = [safe_case_id(i) for i in ids]
    assert safe[2] == "plain-id" and len(set(safe)) == 3
    assert all(token not in s and "[REDACTED:" in s for s in safe[:2])
    out = tmp_path / "out.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        with LoopbackServer(lambda r: Reply(content=ANSWER)) as server:
            result = CliRunner().invoke(
                cli,
                ["run", "--rubric", "agent-run-success@1", "--model", "openai/loopback"]
                + ["--api-base", server.api_base, "--db", str(tmp_path / "j.db")]
                + ["--out", str(out), str(cases)],
                catch_exceptions=False,
            )
    assert result.exit_code == 0, result.output
    kept = b"".join(p.read_bytes() for p in tmp_path.glob("j.db*")).decode("utf-8", "replace")
    for text in (json.dumps(server.requests), kept, out.read_text("utf-8"), result.output):
        assert token[4:20] not in text
    with Store(tmp_path / "j.db") as store:
        assert all(store.get_case(s) is not None for s in safe)
    judged = {json.loads(line)["case_id"] for line in out.read_text("utf-8").splitlines()}
    assert judged == set(safe)
