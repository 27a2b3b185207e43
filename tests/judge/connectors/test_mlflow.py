"""The MLflow connector against a real MLflow tracking server (``mlflow server`` of .venv-mlflow,
one per test session, SQLite): traces in, verdicts out as assessments, people's feedback back as
gold.

The outage tests put a small HTTP proxy between judge and the real server, and stop it midway
(or make it answer 503): from judge's side the server went away in the middle of an export.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import judge
import judge.connectors
from judge.cli import cli
from judge.connectors import LabelError, PlatformAuthError, PlatformNotFound
from judge.connectors.mlflow import MlflowConnector, assessment_id
from judge.store import Store
from judge.testing.mlflow import AgentTrace, agent_trace, assess, assessments, seed
from judge.types import Case, RoutingDecision
from tests.judge.connectors.test_platform import WHEN, judgment

pytestmark = [pytest.mark.mlflow, pytest.mark.slow]

RUBRIC = "agent-run-success"
MODEL = "openai/judge-x"


def _traces() -> list[AgentTrace]:
    return [
        agent_trace(
            "Where is my order #A1234?",
            "Your order A1234 has shipped and arrives on Dec 4.",
            tool="get_order_status",
            arguments={"order_id": "A1234"},
            result={"status": "shipped", "eta": "2026-12-04"},
        ),
        agent_trace(
            "Should I bring an umbrella in Lisbon today?",
            "I could not reach the weather service; it rained yesterday, so take one.",
            tool="get_weather",
            arguments={"city": "Lisbon"},
            error="weather API timed out after 5s",
            session="sess-2",
        ),
        agent_trace("What is your refund window?", "30 days for unopened items."),
        agent_trace("Can I change my address?", "Yes, in Settings > Addresses."),
    ]


@pytest.fixture(scope="module")
def experiment(mlflow_server: Any) -> dict[str, Any]:
    """An experiment with four agent runs: id, target URL and the traces."""
    experiment_id = mlflow_server.experiment("agents-" + secrets.token_hex(3))
    traces = _traces()
    seed(mlflow_server.url, experiment_id, traces)
    return {"id": experiment_id, "target": mlflow_server.target(experiment_id), "traces": traces}


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


# --- traces in ------------------------------------------------------------------------------


def test_import_builds_one_case_per_trace_with_its_source(experiment: dict[str, Any]) -> None:
    result = judge.import_traces(experiment["target"])
    assert not result.errors and not result.warnings and not result.notes
    by_id = {c.id: c for c in result.cases}
    assert set(by_id) == {t.trace_id for t in experiment["traces"]}
    trace = experiment["traces"][1]
    case = by_id[trace.trace_id]
    assert case.id.startswith("tr-")
    assert case.task == "Should I bring an umbrella in Lisbon today?"
    assert case.meta["platform"] == "mlflow"
    assert case.meta["target"] == experiment["target"]
    assert case.meta["trace_id"] == trace.trace_id
    assert case.meta["root_span_id"] == trace.root_span_id
    assert case.meta["experiment_id"] == experiment["id"]
    assert case.meta["conventions"] == ["mlflow"]
    assert case.meta["conversation_id"] == "sess-2"
    assert case.meta["usage"] == {"input_tokens": 240, "output_tokens": 60}
    assert case.agent_model == "gpt-4o-mini"
    kinds = [t.kind for t in case.trace]
    assert kinds == ["system", "message", "tool_call", "error", "final_answer"]
    assert case.trace[2].content == '[get_weather] {"city": "Lisbon"}'
    assert "weather API timed out after 5s" in case.trace[3].content
    assert case.trace[-1].content.startswith("I could not reach the weather service")


def test_import_with_trace_ids_reads_only_those(experiment: dict[str, Any], tmp_path: Path) -> None:
    first, second = (t.trace_id for t in experiment["traces"][:2])
    out = tmp_path / "cases.jsonl"
    # MLflow's id, or the bare OTel trace id the agent's exporter knows.
    args = ["--trace-id", first, "--trace-id", second.removeprefix("tr-")]
    done = _run("import", "--from", experiment["target"], *args, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert "2 cases" in done.stdout
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [first, second]


def test_an_unknown_experiment_or_trace_is_exit_2_naming_it(
    mlflow_server: Any, experiment: dict[str, Any]
) -> None:
    with pytest.raises(PlatformNotFound, match=f"has no experiment 999999 .*{experiment['id']} "):
        judge.import_traces(mlflow_server.target("999999"))
    done = _run("import", "--from", mlflow_server.target("999999"), "--out", "-")
    assert done.exit_code == 2 and "has no experiment 999999" in done.stderr
    missing = "tr-" + "0" * 31 + "1"
    done = _run("import", "--from", experiment["target"], "--trace-id", missing, "--out", "-")
    assert done.exit_code == 2 and f"has no trace {missing}" in done.stderr
    # A trace of another experiment is not one of this experiment's.
    other = mlflow_server.experiment("other-" + secrets.token_hex(3))
    done = _run(
        "import", "--from", mlflow_server.target(other), "--trace-id", missing, "--out", "-"
    )
    assert done.exit_code == 2
    done = _run("import", "--from", mlflow_server.url.replace("http", "mlflow+http") + "/x/1")
    assert done.exit_code == 2 and "names an experiment by its id" in done.stderr


def test_a_server_that_is_down_is_exit_3_naming_the_url() -> None:
    done = _run("import", "--from", "mlflow+http://u:pw@127.0.0.1:9/experiments/1", "--out", "-")
    assert done.exit_code == 3
    assert "cannot reach MLflow at http://127.0.0.1:9" in done.stderr
    assert "pw" not in done.stderr


def test_a_host_header_mlflow_refuses_is_named_with_the_flag_to_start_it_with(
    mlflow_server: Any, experiment: dict[str, Any]
) -> None:
    proxy = Proxy(mlflow_server.url, host="mlflow.example.com")
    try:
        target = f"mlflow+http://127.0.0.1:{proxy.port}/experiments/{experiment['id']}"
        with pytest.raises(PlatformAuthError, match="--allowed-hosts"):
            judge.import_traces(target)
    finally:
        proxy.close()


# --- verdicts out ---------------------------------------------------------------------------


def _store(path: Path, target: str, models: tuple[str, ...] = (MODEL,)) -> tuple[Store, list[Case]]:
    """A store with the target's cases and a judgment of each by each model (fail for the
    weather run, pass for the others)."""
    cases = judge.import_traces(target).cases
    store = Store(path)
    for case in cases:
        store.put_case(case)
        for model in models:
            failed = "umbrella" in case.task
            store.put(
                judgment(case.id, "fail" if failed else "pass", 0.2 if failed else 0.8, model=model)
            )
    return store, cases


def _ours(base: str, trace_ids: list[str]) -> list[dict[str, Any]]:
    return [a for a in assessments(base, trace_ids) if a["source"]["source_type"] == "LLM_JUDGE"]


def test_export_writes_one_assessment_per_verdict_and_updates_it_on_a_second_export(
    mlflow_server: Any, experiment: dict[str, Any], tmp_path: Path
) -> None:
    traces = [t.trace_id for t in experiment["traces"]]
    # A person's feedback of the same name, made in the UI (no auth: source id ""): left alone.
    person = assess(mlflow_server.url, traces[0], RUBRIC, "correct", rationale="checked it")
    store, cases = _store(tmp_path / "judge.db", experiment["target"])
    with store:
        weather = next(c for c in cases if "umbrella" in c.task)
        decision = RoutingDecision(
            id="r1",
            card_digest="sha256:" + "c" * 64,
            case_id=weather.id,
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
        store.save_decisions([decision])
        report = judge.export_verdicts(store, experiment["target"])
        assert (report.verdicts, report.sent, report.unchanged, report.review) == (4, 4, 0, 1)
        rows = _ours(mlflow_server.url, traces)
        assert len(rows) == 4
        row = next(r for r in rows if r["trace_id"] == weather.id)
        assert row["assessment_id"] == assessment_id(weather.id, RUBRIC, MODEL)
        assert row["assessment_name"] == RUBRIC
        assert row["source"] == {"source_type": "LLM_JUDGE", "source_id": MODEL}
        assert row["feedback"]["value"] is False and row["valid"] is True
        assert "Evidence cited: E2, E5." in row["rationale"]
        meta = row["metadata"]
        assert meta["judge.rubric"] == f"{RUBRIC}@2" and meta["judge.model"] == MODEL
        assert meta["judge.p_pass"] == "0.2" and meta["judge.status"] == "ok"
        assert meta["judge.route"] == "review" and meta["judge.band"] == ""
        assert meta["judge.reason"] == "band" and meta["judge.card"] == "sha256:" + "c" * 64
        assert meta["judge.judgment_ids"] and meta["judge.digest"]
        passing = next(r for r in rows if r["trace_id"] != weather.id)
        assert passing["feedback"]["value"] is True and "judge.route" not in passing["metadata"]
        # Nothing changed: nothing is sent.
        again = judge.export_verdicts(store, experiment["target"])
        assert (again.sent, again.unchanged) == (0, 4)
        # One verdict changes: only it is sent, and it updates its assessment in place.
        store.put(judgment(weather.id, "pass", 0.9, model=MODEL, variant=1))
        changed = judge.export_verdicts(store, experiment["target"])
        assert (changed.sent, changed.unchanged) == (1, 3)
        forced = judge.export_verdicts(store, experiment["target"], force=True)
        assert forced.sent == 4
    rows = _ours(mlflow_server.url, traces)
    assert len(rows) == 4 and len({r["assessment_id"] for r in rows}) == 4
    row = next(r for r in rows if r["trace_id"] == weather.id)
    assert row["feedback"]["value"] is True and row["metadata"]["judge.p_pass"] == "0.55"
    assert row["create_time"] != row["last_update_time"]
    people = [a for a in assessments(mlflow_server.url, traces) if a not in rows]
    assert [(p["assessment_id"], p["feedback"], p["rationale"], p["valid"]) for p in people] == [
        (person["assessment_id"], {"value": "correct"}, "checked it", True)
    ]


def test_a_person_s_override_stands_and_a_stale_read_updates_instead_of_duplicating(
    mlflow_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment_id = mlflow_server.experiment("override-" + secrets.token_hex(3))
    traces = [agent_trace(f"Question {i}?", f"Answer {i}.") for i in range(3)]
    seed(mlflow_server.url, experiment_id, traces)
    target = mlflow_server.target(experiment_id)
    store, _ = _store(tmp_path / "judge.db", target)
    ids = [t.trace_id for t in traces]
    with store:
        assert judge.export_verdicts(store, target).sent == 3
        # A person corrects judge's assessment of the first run in the UI: a new HUMAN
        # assessment that overrides it (MLflow marks judge's invalid).
        ours = assessment_id(ids[0], RUBRIC, MODEL)
        fix = assess(mlflow_server.url, ids[0], RUBRIC, False, source_id="alice", overrides=ours)
        # The read of existing assessments misses them all (as if another export had created
        # them meanwhile): each create meets MLflow's duplicate-key 500 and updates instead.
        monkeypatch.setattr(MlflowConnector, "existing", lambda *a: ({}, set(ids)))
        assert judge.export_verdicts(store, target, force=True).sent == 3
    rows = assessments(mlflow_server.url, ids)
    assert len(rows) == 4  # three of judge's, one person's
    by_id = {r["assessment_id"]: r for r in rows}
    assert by_id[ours]["valid"] is False  # still overridden
    assert by_id[fix["assessment_id"]]["valid"] is True
    assert by_id[fix["assessment_id"]]["feedback"] == {"value": False}


def test_export_cli_shows_what_it_sent_and_refuses_a_store_without_the_target(
    mlflow_server: Any, experiment: dict[str, Any], tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    store, _ = _store(db, experiment["target"], models=("openai/other",))
    store.close()
    done = _run("export", "--to", experiment["target"] + "?concurrency=2", "--db", str(db))
    assert done.exit_code == 0, done.output
    assert f"4 verdicts sent to {experiment['target']}" in done.stderr
    other = mlflow_server.target("0")
    done = _run("export", "--to", other, "--db", str(db))
    assert done.exit_code == 2
    assert f"holds no verdict on a case imported from {other}" in done.stderr
    done = _run("export", "--to", experiment["target"] + "?concurrency=0", "--db", str(db))
    assert done.exit_code == 2 and "concurrency='0'" in done.stderr


def _stop(server: Any) -> None:
    server.shutdown()
    server.server_close()  # connections are refused from now on


class _Forward(BaseHTTPRequestHandler):
    """Forwards to the real MLflow (with the ``host`` Host header, when set); after
    ``fail_after`` assessment writes it dies (``kill``: drops the connection and stops
    listening) or answers 503 (``503``)."""

    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        proxy: Any = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if proxy.dead:
            self.close_connection = True
            return
        if self.command in ("POST", "PATCH") and "/assessments" in self.path:
            with proxy.lock:
                proxy.writes += 1
                failing = proxy.fail_after is not None and proxy.writes > proxy.fail_after
            if failing:
                if proxy.mode == "kill":
                    proxy.dead = True
                    self.close_connection = True
                    threading.Thread(target=_stop, args=(proxy,), daemon=True).start()
                    return
                self.send_response(503)
                self.send_header("Content-Length", "11")
                self.end_headers()
                self.wfile.write(b"unavailable")
                return
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in ("host", "content-length", "connection")
        }
        if proxy.host:
            headers["Host"] = proxy.host
        answer = httpx.request(
            self.command, proxy.upstream + self.path, content=body, headers=headers, timeout=120
        )
        self.send_response(answer.status_code)
        self.send_header("Content-Type", answer.headers.get("content-type", "text/plain"))
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = do_PATCH = _forward

    def log_message(self, *args: Any) -> None:
        pass


class Proxy:
    """A proxy on a fixed loopback port to the real MLflow, that can die and come back."""

    def __init__(self, upstream: str, port: int = 0, host: str | None = None) -> None:
        self.server: Any = ThreadingHTTPServer(("127.0.0.1", port), _Forward)
        self.server.daemon_threads = True
        self.server.upstream, self.server.dead, self.server.writes = upstream, False, 0
        self.server.fail_after, self.server.mode, self.server.host = None, "kill", host
        self.server.lock = threading.Lock()
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fail(self, after: int, mode: str) -> None:
        self.server.fail_after, self.server.mode = after, mode

    def close(self) -> None:
        if not self.server.dead:
            self.server.dead = True
            _stop(self.server)


@pytest.fixture
def outage(mlflow_server: Any) -> Iterator[dict[str, Any]]:
    """A fresh experiment of seven runs, reached through a proxy."""
    experiment_id = mlflow_server.experiment("outage-" + secrets.token_hex(3))
    traces = [agent_trace(f"Question {i}?", f"Answer {i}.") for i in range(7)]
    seed(mlflow_server.url, experiment_id, traces)
    proxy = Proxy(mlflow_server.url)
    target = f"mlflow+http://127.0.0.1:{proxy.port}/experiments/{experiment_id}"
    state = {"id": experiment_id, "target": target, "proxy": proxy, "traces": traces}
    yield state
    state["proxy"].close()


@pytest.mark.parametrize("mode", ["kill", "503"])
def test_a_server_lost_mid_export_stops_it_and_a_rerun_sends_only_the_rest(
    mlflow_server: Any, outage: dict[str, Any], tmp_path: Path, mode: str
) -> None:
    db = tmp_path / "judge.db"
    store, cases = _store(db, outage["target"], models=(MODEL, "openai/other"))
    store.close()
    total = 2 * len(cases)
    assert total == 14
    outage["proxy"].fail(after=5, mode=mode)
    url = outage["target"] + "?concurrency=2"
    done = _run("export", "--to", url, "--db", str(db), "--quiet")
    assert done.exit_code == 3, done.output
    assert f"127.0.0.1:{outage['proxy'].port}" in done.stderr
    assert ("answered 503" if mode == "503" else "cannot reach") in done.stderr, done.stderr
    assert "5 of 14 verdicts were exported" in done.stderr
    assert "the same command sends the other 9" in done.stderr
    with Store(db) as store:
        assert len(store.exported(outage["target"])) == 5  # what MLflow stored, no more
    # The server is back (on the same address): the same command sends the rest only.
    port = outage["proxy"].port
    outage["proxy"].close()
    outage["proxy"] = Proxy(mlflow_server.url, port)
    done = _run("export", "--to", url, "--db", str(db), "--quiet")
    assert done.exit_code == 0, done.output
    assert "9 verdicts sent" in done.stderr
    assert outage["proxy"].server.writes == 9
    ids = [t.trace_id for t in outage["traces"]]
    rows = _ours(mlflow_server.url, ids)
    assert len(rows) == total
    assert {(r["trace_id"], r["source"]["source_id"]) for r in rows} == {
        (t, m) for t in ids for m in (MODEL, "openai/other")
    }


def test_a_verdict_of_a_deleted_trace_is_named_and_the_others_are_sent(
    mlflow_server: Any, tmp_path: Path
) -> None:
    experiment_id = mlflow_server.experiment("deleted-" + secrets.token_hex(3))
    traces = [agent_trace(f"Question {i}?", f"Answer {i}.") for i in range(3)]
    seed(mlflow_server.url, experiment_id, traces)
    target = mlflow_server.target(experiment_id)
    store, _ = _store(tmp_path / "judge.db", target)
    with store:
        gone = traces[2].trace_id
        answer = httpx.post(
            f"{mlflow_server.url}/api/3.0/mlflow/traces/delete-traces",
            json={"experiment_id": experiment_id, "request_ids": [gone]},
        )
        assert answer.status_code == 200, answer.text
        with pytest.raises(PlatformNotFound, match=f"has no trace {gone}") as err:
            judge.export_verdicts(store, target)
        assert "2 of 3 verdicts were exported" in str(err.value)
    assert len(_ours(mlflow_server.url, [t.trace_id for t in traces[:2]])) == 2


# --- labels back ----------------------------------------------------------------------------


def test_people_s_feedback_becomes_gold_with_lineage(
    mlflow_server: Any, experiment: dict[str, Any], tmp_path: Path
) -> None:
    traces = [t.trace_id for t in experiment["traces"]]
    imported = traces[:3]  # the fourth run is never imported
    db = tmp_path / "judge.db"
    with Store(db) as store:
        for case in judge.import_traces(experiment["target"], trace_ids=imported).cases:
            store.put_case(case)
    name = "correctness-" + secrets.token_hex(2)
    base = mlflow_server.url
    ids = [
        assess(base, traces[0], name, "correct", source_id="alice@example.com")["assessment_id"],
        assess(base, traces[0], name, "correct", source_id="bob@example.com")["assessment_id"],
    ]
    assess(base, traces[1], name, "incorrect", source_id="alice", rationale="guessed the weather")
    assess(base, traces[3], name, "correct")
    # Not labels: a program's feedback of that name, and a person's that another overrode.
    assess(base, traces[2], name, "meh", source_type="LLM_JUDGE", source_id="some-judge")
    first = assess(base, traces[2], name, "correct", source_id="carol")
    assess(base, traces[2], name, "incorrect", source_id="carol", overrides=first["assessment_id"])
    out = tmp_path / "gold.jsonl"
    with Store(db) as store:
        # Labels that are neither pass nor fail need a mapping, named in the refusal.
        with pytest.raises(LabelError, match="'correct' x3, 'incorrect' x2.*--label-map"):
            judge.import_labels(store, experiment["target"], annotation=name)
        done = judge.import_labels(
            store,
            experiment["target"],
            annotation=name,
            label_map="correct=pass,incorrect=fail",
            out=out,
        )
    assert done.labels == 5
    assert [x.trace_id for x in done.unmatched] == [traces[3]]
    gold = {r.id: r for r in done.records}
    assert {k: r.gold for k, r in gold.items()} == {
        imported[0]: "pass",
        imported[1]: "fail",
        imported[2]: "fail",
    }
    record = gold[imported[0]]
    assert record.lineage is not None
    assert record.lineage.labeller == "alice@example.com, bob@example.com"
    assert record.lineage.source == f"mlflow annotation {name!r} at {experiment['target']}"
    assert set(record.lineage.derived_from) >= {f"mlflow:annotation:{i}" for i in ids}
    assert f"mlflow:trace:{imported[0]}" in record.lineage.derived_from
    assert record.lineage.created_at is not None
    assert record.gold_source == f"2 human annotation(s) {name!r} in mlflow"
    assert len(out.read_text().splitlines()) == 3
    assert judge.load_cases(out).errors == []


def test_gold_import_cli_refuses_an_unknown_annotation_and_an_unmapped_label(
    mlflow_server: Any, experiment: dict[str, Any], tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    with Store(db) as store:
        for case in judge.import_traces(experiment["target"]).cases:
            store.put_case(case)
    name = "helpful-" + secrets.token_hex(2)
    # A boolean from the UI: true is not taken as pass without saying so.
    assess(mlflow_server.url, experiment["traces"][0].trace_id, name, True)
    out = tmp_path / "gold.jsonl"
    args = ["gold", "import", "--from", experiment["target"], "--db", str(db), "--out", str(out)]
    done = _run(*args, "--annotation", "nobody-used-this")
    assert done.exit_code == 2
    assert "no person's annotation named 'nobody-used-this'" in done.stderr
    assert name in done.stderr  # what people did use
    done = _run(*args, "--annotation", name)
    assert done.exit_code == 2
    assert "'true' x1" in done.stderr and "--label-map true=pass" in done.stderr
    assert not out.exists()
    done = _run(*args, "--annotation", name, "--label-map", "true=pass,false=fail")
    assert done.exit_code == 0, done.output
    assert "1 gold records (pass 1)" in done.stdout
