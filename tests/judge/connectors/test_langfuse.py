"""The Langfuse connector against Langfuse's recorded contract, replayed over real HTTP.

Langfuse's server cannot run here (ClickHouse, Redis, S3), so these tests run against
``judge.testing.langfuse.LangfuseReplay``: the exchanges of ``tests/data/connectors/langfuse/``
(composed from Langfuse's spec and server code at v4.16.0 and validated by the langfuse Python
SDKs; not captured from a live server: see SOURCE.md there) served on 127.0.0.1, every request
checked against the recorded one (method, path, query, auth header, headers; score bodies
against CreateScoreRequest). Both server generations are replayed: v4 (``/v2/observations``,
``/v3/scores``; the legacy reads answer 404) and v3 (the reverse). A test that derives an
exchange the contract lacks says so where it does.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import judge
from judge.cli import cli
from judge.connectors import (
    LabelError,
    PlatformAuthError,
    TargetError,
    VerdictOut,
    connectors,
    resolve,
)
from judge.connectors.langfuse import LangfuseConnector, otlp_span, score_id, trace_rows
from judge.store import Store
from judge.testing.langfuse import LangfuseReplay
from judge.traces.otel import read_otlp
from judge.types import Case, RoutingDecision
from tests.judge.connectors.test_platform import WHEN, judgment

CONTRACT = Path(__file__).resolve().parents[2] / "data" / "connectors" / "langfuse"
PROJECT = "cm1q7x3pz0004lf09jdg8prj2"
T1 = "4bf92f3577b34da6a3ce929d0e0e4736"  # succeeds
T2 = "0af7651916cd43dd8448eb211c80319c"  # meets a tool error
UNKNOWN = "f" * 32
RUBRIC = "agent-run-success"
MODEL = "openai/judge-x"
#: The window and environment of the recorded listings.
WINDOW = "from=2026-08-20T00:00:00Z&to=2026-08-21T00:00:00Z&environment=production"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay server's keys, as Langfuse's SDKs read them; short back-offs."""
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", LangfuseReplay.keys[0])
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", LangfuseReplay.keys[1])
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(connectors()["langfuse"], "backoff_s", 0.01)


def _serve(**kwargs: Any) -> Iterator[LangfuseReplay]:
    server = LangfuseReplay.start(CONTRACT, **kwargs)
    try:
        yield server
        assert server.mismatches == [], "requests the contract does not record"
        assert server.violations == [], "score bodies that break CreateScoreRequest"
    finally:
        server.stop()


@pytest.fixture
def v4() -> Iterator[LangfuseReplay]:
    """A v4 server (events_only: the legacy reads answer 404)."""
    yield from _serve(generation="v4")


@pytest.fixture
def v3() -> Iterator[LangfuseReplay]:
    """A v3 server (v3.179 or later: /v2/observations answers 404, /v3/scores exists)."""
    yield from _serve(generation="v3")


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _paths(server: LangfuseReplay) -> list[str]:
    return [f"{s.method} {s.path}" for s in server.requests()]


def _turns(case: Case) -> list[tuple[str, str | None, str]]:
    return [(t.role, t.kind, t.content) for t in case.trace]


# --- the target -----------------------------------------------------------------------------


def test_the_target_is_the_host_and_the_keys_select_the_project(v4: LangfuseReplay) -> None:
    connector, target = resolve(v4.target)
    assert isinstance(connector, LangfuseConnector)
    port = v4.url.rsplit(":", 1)[1]
    assert target.canonical == f"langfuse+http://127.0.0.1:{port}/project/{PROJECT}"
    assert (target.base, target.resource) == (v4.url, PROJECT)
    # The canonical form (the project's address in Langfuse's UI) may be given back ...
    assert resolve(target.canonical)[1].canonical == target.canonical
    # ... but only for the keys' project.
    with pytest.raises(TargetError, match=f"keys are of project {PROJECT}.*not other"):
        resolve(v4.target + "/project/other")
    assert _paths(v4) == ["GET /api/public/projects"] * 3


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("/projects/agents", "the host alone"),
        ("?color=red", "unknown option 'color'"),
        ("?from=yesterday", "from='yesterday' is not an ISO 8601 time"),
        ("?limit=0", "limit='0': give a whole number from 1 up to 1000"),
        ("?batch=x", "batch='x': give a whole number"),
    ],
)
def test_bad_targets_are_refused_before_any_request(tail: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        resolve("langfuse+http://127.0.0.1:9" + tail)


def test_missing_keys_name_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGFUSE_SECRET_KEY")
    with pytest.raises(PlatformAuthError, match="set LANGFUSE_SECRET_KEY"):
        resolve("langfuse+https://cloud.langfuse.com")
    done = _run("import", "--from", "langfuse+https://cloud.langfuse.com", "--out", "-")
    assert done.exit_code == 2 and "no Langfuse API key" in done.stderr


# --- auth -----------------------------------------------------------------------------------


def test_refused_keys_name_both_variables_and_are_never_retried(
    v4: LangfuseReplay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-wrong")
    monkeypatch.setenv("LANGFUSE_BASE_URL", "https://cloud.langfuse.com")
    done = _run("import", "--from", v4.target, "--out", "-")
    assert done.exit_code == 2
    assert "Langfuse refused the credentials (401" in done.stderr
    assert "Invalid credentials. Confirm that you've configured the correct host." in done.stderr
    assert "set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY" in done.stderr
    assert "LANGFUSE_BASE_URL is https://cloud.langfuse.com" in done.stderr
    assert "sk-lf-wrong" not in done.stderr
    assert [(s.path, s.status, s.answered_by) for s in v4.requests()] == [
        ("/api/public/projects", 401, "error_401_invalid_credentials")
    ]


# --- traces in: v4 --------------------------------------------------------------------------


def test_v4_import_follows_the_cursor_and_builds_one_case_per_trace(v4: LangfuseReplay) -> None:
    result = judge.import_traces(f"{v4.target}?{WINDOW}&limit=5")
    assert not result.errors
    pages = v4.requests("GET", "/api/public/v2/observations")
    assert [s.answered_by for s in pages] == ["observations_v2_page1", "observations_v2_page2"]
    assert not any("/traces" in p for p in _paths(v4))  # never the legacy reads
    by_id = {c.id: c for c in result.cases}
    assert sorted(by_id) == sorted([T1, T2])
    case = by_id[T2]
    assert case.task.startswith("Can I change the delivery address for order #B-55120")
    assert case.agent_model == "gpt-4o-mini-2024-07-18"
    assert case.meta["platform"] == "langfuse"
    assert case.meta["target"] == resolve(v4.target)[1].canonical
    assert case.meta["trace_id"] == T2 and case.meta["root_span_id"] == "c1a9e6b0f2d34e57"
    assert case.meta["project"] == PROJECT and case.meta["project_name"] == "acme-support-bot"
    assert case.meta["environment"] == "production" and case.meta["trace_name"] == "support-agent"
    assert case.meta["langfuse_api"] == "v2/observations"
    assert case.meta["usage"] == {"input_tokens": 943, "output_tokens": 95}
    kinds = [t.kind for t in case.trace]
    assert "tool_call" in kinds and "error" in kinds and kinds[-1] == "final_answer"
    error = next(t for t in case.trace if t.kind == "error")
    assert "ShippingPartnerError" in error.content
    call = next(t for t in case.trace if t.kind == "tool_call")
    assert "update_shipping_address" in call.content
    ok = by_id[T1]
    assert "error" not in [t.kind for t in ok.trace]
    assert "1Z999AA10123456784" in ok.trace[-1].content


def test_v4_trace_ids_are_read_one_by_one(v4: LangfuseReplay, tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    target = f"{v4.target}?from=2026-08-20T00:00:00Z"
    done = _run("import", "--from", target, "--trace-id", T2, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [T2]
    (read,) = v4.requests("GET", "/api/public/v2/observations")
    assert ("traceId", T2) in read.query and read.answered_by == "observations_v2_trace_t2"


def test_v4_an_unknown_trace_is_exit_2_naming_it(v4: LangfuseReplay) -> None:
    # Derived: the recorded trace query for another trace id, which has no rows.
    v4.add(
        v4.exchanges["observations_v2_trace_t2"].derive(
            "observations_v2_trace_unknown",
            query={"traceId": UNKNOWN},
            response={"data": [], "meta": {}},
        )
    )
    target = f"{v4.target}?from=2026-08-20T00:00:00Z"
    done = _run("import", "--from", target, "--trace-id", UNKNOWN, "--out", "-")
    assert done.exit_code == 2
    assert f"Langfuse project 'acme-support-bot' at {v4.url} has no trace {UNKNOWN}" in (
        done.stderr
    )


def test_name_and_tags_options_filter_on_v4(v4: LangfuseReplay) -> None:
    assert judge.import_traces(f"{v4.target}?{WINDOW}&limit=5&tags=support").cases
    assert not judge.import_traces(f"{v4.target}?{WINDOW}&limit=5&name=other-agent").cases


# --- traces in: the v3 fallback -------------------------------------------------------------


def test_v3_falls_back_to_the_trace_api_and_reads_the_same_cases(
    v4: LangfuseReplay, v3: LangfuseReplay
) -> None:
    current = {c.id: c for c in judge.import_traces(f"{v4.target}?{WINDOW}&limit=5").cases}
    result = judge.import_traces(f"{v3.target}?{WINDOW}&tags=support")
    assert not result.errors
    assert [s.answered_by for s in v3.requests()] == [
        "projects_get",
        "error_404_v2_observations_on_v3",
        "traces_list",
        "trace_get_t2_tool_error",
        "trace_get_t1_ok",
    ]
    legacy = {c.id: c for c in result.cases}
    assert sorted(legacy) == sorted(current)
    for trace_id, case in legacy.items():
        assert _turns(case) == _turns(current[trace_id])
        assert case.task == current[trace_id].task
        assert case.meta["root_span_id"] == current[trace_id].meta["root_span_id"]
        assert case.meta["langfuse_api"] == "traces"


def test_v3_pages_by_page_and_limit(v3: LangfuseReplay) -> None:
    # Derived: the recorded listing cut into pages of one trace.
    v3.add(*v3.exchanges["traces_list"].paged(1))
    result = judge.import_traces(f"{v3.target}?{WINDOW}&tags=support&limit=1")
    pages = [dict(s.query)["page"] for s in v3.requests("GET", "/api/public/traces")]
    assert pages == ["1", "2"]
    assert sorted(c.id for c in result.cases) == sorted([T1, T2])


def test_v3_an_unknown_trace_is_exit_2_naming_it(v3: LangfuseReplay) -> None:
    done = _run("import", "--from", v3.target, "--trace-id", UNKNOWN, "--out", "-")
    assert done.exit_code == 2 and f"has no trace {UNKNOWN}" in done.stderr
    assert v3.requests()[-1].answered_by == "error_404_trace"


def test_a_query_too_big_says_to_narrow_it(v3: LangfuseReplay) -> None:
    v3.fail("GET", "/api/public/traces", "error_422_clickhouse_resource")
    done = _run("import", "--from", f"{v3.target}?{WINDOW}&tags=support", "--out", "-")
    assert done.exit_code == 2
    assert "422 " in done.stderr and "narrow your request" in done.stderr


# --- verdicts out ---------------------------------------------------------------------------


def _store(path: Path, server: LangfuseReplay, models: tuple[str, ...] = (MODEL,)) -> Store:
    """A store with the two recorded traces and a judgment of each by each model (fail for the
    tool error, pass for the other)."""
    store = Store(path)
    for case in judge.import_traces(f"{server.target}?{WINDOW}&limit=5").cases:
        store.put_case(case)
        for model in models:
            failed = case.id == T2
            store.put(
                judgment(case.id, "fail" if failed else "pass", 0.2 if failed else 0.8, model=model)
            )
    return store


def _posted(server: LangfuseReplay) -> list[dict[str, Any]]:
    return [s.body for s in server.requests("POST", "/api/public/scores")]


def test_export_sends_one_categorical_score_per_verdict_and_updates_it_again(
    v4: LangfuseReplay, tmp_path: Path
) -> None:
    with _store(tmp_path / "judge.db", v4) as store:
        store.save_decisions(
            [
                RoutingDecision(
                    id="r1",
                    card_digest="sha256:" + "c" * 64,
                    case_id=T2,
                    model=MODEL,
                    rubric_id=RUBRIC,
                    rubric_version=2,
                    kind="binary",
                    decision="review",
                    reason="band",
                    detail="P(pass) 0.20 lies between the certified bands",
                    score=0.2,
                    judgment_ids=["j"],
                    routed_at=WHEN,
                )
            ]
        )
        target = f"{v4.target}?environment=production"
        report = judge.export_verdicts(store, target)
        assert (report.verdicts, report.sent, report.unchanged, report.review) == (2, 2, 0, 1)
        posted = {b["traceId"]: b for b in _posted(v4)}
        assert sorted(posted) == sorted([T1, T2])
        body = posted[T2]
        assert uuid.UUID(body["id"]).version == 8
        assert {k: body[k] for k in ("name", "value", "dataType", "source", "environment")} == {
            "name": RUBRIC,
            "value": "fail",
            "dataType": "CATEGORICAL",
            "source": "API",
            "environment": "production",
        }
        assert posted[T1]["value"] == "pass" and posted[T1]["id"] != body["id"]
        assert body["comment"].startswith("The tool failed and the agent guessed.")
        assert "Evidence cited: E2, E5." in body["comment"]
        meta = body["metadata"]
        assert meta["p_pass"] == pytest.approx(0.2) and meta["rubric"] == f"{RUBRIC}@2"
        assert meta["model"] == MODEL and meta["judgment_ids"] and meta["digest"]
        assert meta["route"] == "review" and meta["band"] is None and meta["reason"] == "band"
        assert meta["card"] == "sha256:" + "c" * 64
        assert "route" not in posted[T1]["metadata"]
        # The replay server keeps a score per id, as Langfuse does (an upsert).
        assert set(v4.scores) == {posted[T1]["id"], body["id"]}
        first_ids = sorted(b["id"] for b in _posted(v4))

        # Nothing changed: nothing is sent.
        again = judge.export_verdicts(store, target)
        assert (again.sent, again.unchanged) == (0, 2) and len(_posted(v4)) == 2
        # Forced: the same ids again, so Langfuse updates its two scores, adds none.
        forced = judge.export_verdicts(store, target, force=True)
        assert forced.sent == 2
        assert sorted(b["id"] for b in _posted(v4)[2:]) == first_ids
        assert len(v4.scores) == 2
        # One verdict changes: only it is sent, under its id.
        store.put(judgment(T2, "pass", 0.9, model=MODEL, variant=1))
        changed = judge.export_verdicts(store, target)
        assert (changed.sent, changed.unchanged) == (1, 1)
        assert _posted(v4)[-1]["id"] == body["id"] and v4.scores[body["id"]]["value"] == "pass"
        assert len(v4.scores) == 2


def test_each_judge_model_has_its_own_score(v4: LangfuseReplay, tmp_path: Path) -> None:
    with _store(tmp_path / "judge.db", v4, models=(MODEL, "openai/judge-y")) as store:
        judge.export_verdicts(store, v4.target)
    ids = {(b["traceId"], b["metadata"]["model"]): b["id"] for b in _posted(v4)}
    assert len(ids) == len(set(ids.values())) == 4
    assert "environment" not in _posted(v4)[0]  # the target names none: Langfuse's default


def test_a_5xx_midway_is_exit_3_naming_the_masked_url_and_a_rerun_sends_the_rest(
    v4: LangfuseReplay, tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    _store(db, v4, models=(MODEL, "openai/judge-y")).close()
    # Composed (no 5xx is recorded): the body of the server's 503 (withMiddlewares).
    v4.fail(
        "POST",
        "/api/public/scores",
        status=503,
        body={"message": "Service Unavailable"},
        after=2,
        times=None,
    )
    port = v4.url.rsplit(":", 1)[1]
    # Keys in the URL too (the environment's win): the secret never shows.
    target = f"langfuse+http://pk-lf-url:sk-lf-SECRET@127.0.0.1:{port}?batch=1"
    done = _run("export", "--to", target, "--db", str(db), "--quiet")
    assert done.exit_code == 3, done.output
    assert f"POST {v4.url}/api/public/scores: Langfuse answered 503" in done.stderr
    assert "2 of 4 verdicts were exported" in done.stderr
    assert "the same command sends the other 2" in done.stderr
    assert "sk-lf-SECRET" not in done.stderr
    sent = [b["id"] for b in _posted(v4)]
    assert len(set(sent)) == 3 and len(sent) == 2 + 4  # the third verdict, tried 4 times
    failed = [s.at for s in v4.requests("POST", "/api/public/scores") if s.status == 503]
    # The shortened back-off (0.07 s in all; the default would wait 3.5 s), with room for a
    # loaded machine (a 4.6 s stall was seen at load 10).
    assert len(failed) == 4 and failed[-1] - failed[0] < 3.0
    v4.clear_faults()
    done = _run("export", "--to", target, "--db", str(db), "--quiet")
    assert done.exit_code == 0, done.output
    assert "2 verdicts sent" in done.stderr and "2 unchanged" in done.stderr
    rerun = [b["id"] for b in _posted(v4)[6:]]
    assert len(rerun) == 2 and not set(rerun) & set(sent[:2])
    assert len(v4.scores) == 4


def test_a_429_is_waited_on_as_retry_after_asks(v4: LangfuseReplay, tmp_path: Path) -> None:
    with _store(tmp_path / "judge.db", v4) as store:
        # The recorded Cloud 429 (Retry-After: 3), once.
        v4.fail("POST", "/api/public/scores", "error_429_rate_limited_generic")
        report = judge.export_verdicts(store, v4.target)
    assert report.sent == 2
    posts = v4.requests("POST", "/api/public/scores")
    assert [s.status for s in posts] == [429, 200, 200]
    assert posts[0].body == posts[1].body
    assert posts[1].at - posts[0].at >= 2.9


# --- labels back ----------------------------------------------------------------------------


def test_people_scores_become_gold_with_lineage(v4: LangfuseReplay, tmp_path: Path) -> None:
    db, out = tmp_path / "judge.db", tmp_path / "gold.jsonl"
    _store(db, v4).close()
    args = ["gold", "import", "--from", v4.target, "--db", str(db), "--out", str(out)]
    done = _run(*args, "--annotation", "correctness")
    assert done.exit_code == 2
    assert "labels that are neither pass nor fail: 'correct' x1" in done.stderr
    assert "--label-map" in done.stderr
    done = _run(*args, "--annotation", "correctness", "--label-map", "correct=pass")
    assert done.exit_code == 0, done.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["id"], record["gold"]) == (T1, "pass")
    lineage = record["lineage"]
    assert lineage["labeller"] == "cm1q8a2bc0007lf09annot0r1"
    assert lineage["derived_from"] == [
        "langfuse:annotation:1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed",
        f"langfuse:trace:{T1}",
    ]
    assert lineage["created_at"].startswith("2026-08-21T08:05:19")
    assert (
        lineage["source"]
        == f"langfuse annotation 'correctness' at {resolve(v4.target)[1].canonical}"
    )
    (read,) = v4.requests("GET", "/api/public/v3/scores")[-1:]
    assert ("source", "ANNOTATION") in read.query and read.answered_by == "scores_v3_annotation"


def test_scores_on_traces_never_imported_are_counted(v4: LangfuseReplay, tmp_path: Path) -> None:
    db, out = tmp_path / "judge.db", tmp_path / "gold.jsonl"
    with Store(db) as store:  # only the tool-error trace was imported
        for case in judge.import_traces(f"{v4.target}?{WINDOW}&limit=5").cases:
            if case.id == T2:
                store.put_case(case)
    done = _run(
        "gold",
        "import",
        "--from",
        v4.target,
        "--annotation",
        "helpfulness",
        "--label-map",
        "4=pass,2=fail",
        "--db",
        str(db),
        "--out",
        str(out),
    )
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["gold"] for line in out.read_text().splitlines()] == ["fail"]
    assert "1 labels are on 1 trace(s) not imported from" in done.stderr and T1 in done.stderr


def test_an_annotation_no_one_gave_names_those_people_gave(
    v4: LangfuseReplay, tmp_path: Path
) -> None:
    with _store(tmp_path / "judge.db", v4) as store, pytest.raises(LabelError) as err:
        judge.import_labels(store, v4.target, annotation="judge.helpfulness")
    assert "(people's annotations there: correctness, hallucination, helpfulness)" in str(err.value)


def test_scores_follow_the_v3_cursor(v4: LangfuseReplay) -> None:
    # Derived: the recorded pages with the annotation filter the connector sends (the rows
    # the server would keep; the second page has none left).
    v4.add(
        *(
            v4.exchanges[name].narrowed(f"{name}[ANNOTATION]", "source", "ANNOTATION")
            for name in ("scores_v3_page1", "scores_v3_page2")
        )
    )
    _, target = resolve(f"{v4.target}?from=2026-08-20T00:00:00Z&limit=4")
    read = connectors()["langfuse"].labels(target, name="helpfulness")
    assert [s.answered_by for s in v4.requests("GET", "/api/public/v3/scores")] == [
        "scores_v3_page1[ANNOTATION]",
        "scores_v3_page2[ANNOTATION]",
    ]
    assert sorted((x.trace_id, x.value, x.score) for x in read.labels) == [
        (T2, "2", 2.0),
        (T1, "4", 4.0),
    ]


def test_an_old_v3_server_falls_back_to_v2_scores(keys_v3_old: LangfuseReplay) -> None:
    server = keys_v3_old
    _, target = resolve(f"{server.target}?from=2026-08-20T00:00:00Z")
    connector = connectors()["langfuse"]
    read = connector.labels(target, name="hallucination")
    assert [s.answered_by for s in server.requests()[1:]] == [
        "next.js 404",
        "scores_v2_list_annotation",
    ]
    (label,) = read.labels
    assert (label.trace_id, label.span_id, label.value, label.score) == (
        T2,
        "d4e5f60718293a4b",
        "False",
        0.0,
    )
    assert label.annotator == "cm1q8a2bc0008lf09annot0r2"
    assert label.explanation == "The 2-hour email promise is policy, not invented."
    categorical = connector.labels(target, name="correctness").labels
    assert [(x.trace_id, x.value, x.score) for x in categorical] == [(T1, "correct", None)]


@pytest.fixture
def keys_v3_old() -> Iterator[LangfuseReplay]:
    """A v3 server older than 3.179 (no /v3/scores route)."""
    yield from _serve(generation="v3", v3_scores=False)


# --- the replay server itself ---------------------------------------------------------------


def test_the_replay_server_holds_to_the_recorded_contract(v4: LangfuseReplay) -> None:
    auth = httpx.BasicAuth(*LangfuseReplay.keys)
    with httpx.Client(base_url=v4.url, auth=auth) as client:
        for name in (
            "scores_create_numeric",
            "scores_create_boolean_observation",
            "scores_create_categorical_config",
            "scores_create_400_annotation_without_config",
            "scores_create_400_boolean_value",
        ):
            recorded = v4.exchanges[name]
            answer = client.post(recorded.path, json=recorded.body)
            assert (answer.status_code, answer.json()) == (recorded.status, recorded.response)
        assert len(v4.violations) == 2
        v4.violations.clear()
        # An unrecorded query is refused and kept, naming the nearest exchange.
        answer = client.get("/api/public/v2/observations", params={"limit": 7})
        assert answer.status_code == 400 and "observations_v2" in answer.json()["message"]
        assert len(v4.mismatches) == 1
        v4.mismatches.clear()
        # A missing header is the recorded 401.
        answer = httpx.get(v4.url + "/api/public/projects")
        assert answer.json() == v4.exchanges["error_401_no_auth_header"].response
        # The legacy reads of a v4 server.
        answer = client.get("/api/public/traces", params={"page": 1})
        assert answer.status_code == 404 and "events_only" in answer.json()["message"]


# --- observations of other shapes -----------------------------------------------------------


def test_a_decorated_function_root_and_plain_messages_become_turns() -> None:
    trace = "a" * 32
    rows: list[dict[str, Any]] = [
        {
            "id": "r1",
            "traceId": trace,
            "type": "SPAN",
            "name": "answer",
            "parentObservationId": None,
            "startTime": "2026-08-20T10:00:00Z",
            "endTime": "2026-08-20T10:00:03Z",
            "input": '{"args": ["What is the capital of Peru?"], "kwargs": {}}',
            "output": '"Lima."',
        },
        {
            "id": "g1",
            "traceId": trace,
            "type": "GENERATION",
            "parentObservationId": "r1",
            "startTime": "2026-08-20T10:00:01Z",
            "endTime": "2026-08-20T10:00:02Z",
            "model": "gpt-4o",
            "input": [{"role": "user", "content": "What is the capital of Peru?"}],
            "output": "Lima.",
            "usageDetails": {"input": 9, "output": 2},
        },
    ]
    marked, root = trace_rows(trace, rows)
    assert root == "r1"
    spans = [otlp_span(r, root=r["id"] == root) for r in marked]
    (case,) = read_otlp([{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}], "x").cases
    assert case.task == "What is the capital of Peru?"
    assert [(t.role, t.kind, t.content) for t in case.trace] == [
        ("user", "message", "What is the capital of Peru?"),
        ("assistant", "final_answer", "Lima."),
    ]
    assert case.agent_model == "gpt-4o" and case.meta["root_span_id"] == "r1"
    # Two top-level observations: the trace itself stands over them, under its own id.
    twin = {**rows[1], "id": "g2", "parentObservationId": None}
    marked, root = trace_rows(trace, [{**rows[1], "parentObservationId": None}, twin])
    assert root == trace and [r["parentObservationId"] for r in marked[:2]] == [trace, trace]


def test_score_ids_are_fixed_by_trace_rubric_and_model() -> None:
    fields: dict[str, Any] = {
        "key": "k",
        "digest": "sha256:" + "0" * 64,
        "case_id": T1,
        "trace_id": T1,
        "root_span_id": "r",
        "rubric_id": RUBRIC,
        "rubric_version": 1,
        "model": MODEL,
        "status": "ok",
        "label": "pass",
        "p_pass": 0.9,
        "explanation": "",
        "judgment_ids": (),
    }
    one = VerdictOut(**fields)
    assert score_id(one) == score_id(VerdictOut(**{**fields, "label": "fail", "p_pass": 0.1}))
    assert score_id(one) != score_id(VerdictOut(**{**fields, "model": "other"}))
    assert score_id(one) != score_id(VerdictOut(**{**fields, "trace_id": T2}))
