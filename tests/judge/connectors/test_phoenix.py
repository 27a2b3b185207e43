"""The Phoenix connector against a real Phoenix server (``phoenix serve`` of .venv-phoenix, one
per test session): traces in, verdicts out as span annotations, people's labels back as gold.

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
from judge.connectors import LabelError, PlatformNotFound
from judge.store import Store
from judge.testing.phoenix import agent_trace, annotate, seed, span_annotations
from judge.types import Case, RoutingDecision
from tests.judge.connectors.test_platform import WHEN, judgment

pytestmark = [pytest.mark.phoenix, pytest.mark.slow]

RUBRIC = "agent-run-success"
MODEL = "openai/judge-x"


def _traces() -> list[list[dict[str, Any]]]:
    return [
        agent_trace(
            "Where is my order #A1234?",
            "Your order A1234 has shipped and arrives on Dec 4.",
            tool="get_order_status",
            arguments={"order_id": "A1234"},
            result='{"status": "shipped", "eta": "2026-12-04"}',
        ),
        agent_trace(
            "Should I bring an umbrella in Lisbon today?",
            "I could not reach the weather service; it rained yesterday, so take one.",
            tool="get_weather",
            arguments={"city": "Lisbon"},
            error="weather API timed out after 5s",
        ),
        agent_trace("What is your refund window?", "30 days for unopened items."),
        agent_trace("Can I change my address?", "Yes, in Settings > Addresses."),
    ]


@pytest.fixture(scope="module")
def project(phoenix: Any) -> dict[str, Any]:
    """A project with four agent runs: name, target URL and the traces."""
    name = "agents-" + secrets.token_hex(3)
    traces = _traces()
    seed(phoenix.url, name, traces)
    return {"name": name, "target": phoenix.target(name), "traces": traces}


def _root(trace: list[dict[str, Any]]) -> tuple[str, str]:
    return trace[0]["context"]["trace_id"], trace[0]["context"]["span_id"]


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


# --- traces in ------------------------------------------------------------------------------


def test_import_builds_one_case_per_trace_with_its_source(project: dict[str, Any]) -> None:
    result = judge.import_traces(project["target"])
    assert not result.errors and not result.warnings
    by_id = {c.id: c for c in result.cases}
    assert len(by_id) == 4
    trace_id, root = _root(project["traces"][1])
    case = by_id[trace_id]
    assert case.task == "Should I bring an umbrella in Lisbon today?"
    assert case.meta["platform"] == "phoenix"
    assert case.meta["target"] == project["target"]
    assert case.meta["trace_id"] == trace_id and case.meta["root_span_id"] == root
    assert case.meta["conventions"] == ["openinference"]
    kinds = [t.kind for t in case.trace]
    assert "tool_call" in kinds and "error" in kinds and kinds[-1] == "final_answer"
    error = next(t for t in case.trace if t.kind == "error")
    assert "weather API timed out after 5s" in error.content
    assert case.agent_model == "gpt-4o-mini"


def test_import_with_trace_ids_reads_only_those(project: dict[str, Any], tmp_path: Path) -> None:
    wanted = _root(project["traces"][0])[0]
    out = tmp_path / "cases.jsonl"
    done = _run("import", "--from", project["target"], "--trace-id", wanted, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert "1 cases" in done.stdout
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [wanted]


def test_an_unknown_project_or_trace_is_exit_2_naming_it(
    phoenix: Any, project: dict[str, Any]
) -> None:
    with pytest.raises(PlatformNotFound, match="has no project 'nope'.*" + project["name"]):
        judge.import_traces(phoenix.target("nope"))
    done = _run("import", "--from", phoenix.target("nope"), "--out", "-")
    assert done.exit_code == 2 and "has no project 'nope'" in done.stderr
    missing = "0" * 31 + "1"
    done = _run("import", "--from", project["target"], "--trace-id", missing, "--out", "-")
    assert done.exit_code == 2 and f"has no trace {missing}" in done.stderr


def test_a_server_that_is_down_is_exit_3_naming_the_url() -> None:
    done = _run("import", "--from", "phoenix+http://u:pw@127.0.0.1:9/projects/a", "--out", "-")
    assert done.exit_code == 3
    assert "cannot reach Phoenix at http://127.0.0.1:9" in done.stderr
    assert "pw" not in done.stderr


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


def _ours(base: str, project: str, spans: list[str]) -> list[dict[str, Any]]:
    return [
        r for r in span_annotations(base, project, spans) if r["identifier"].startswith("judge:")
    ]


def test_export_annotates_each_root_span_and_updates_on_a_second_export(
    phoenix: Any, project: dict[str, Any], tmp_path: Path
) -> None:
    roots = [_root(t)[1] for t in project["traces"]]
    # A person's annotation of the same name, made in the UI (no identifier): left alone.
    annotate(
        phoenix.url,
        [{"span_id": roots[0], "name": RUBRIC, "result": {"label": "correct", "score": 1}}],
    )
    store, cases = _store(tmp_path / "judge.db", project["target"])
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
        report = judge.export_verdicts(store, project["target"])
        assert (report.verdicts, report.sent, report.unchanged, report.review) == (4, 4, 0, 1)
        rows = _ours(phoenix.url, project["name"], roots)
        assert len(rows) == 4
        row = next(r for r in rows if r["span_id"] == weather.meta["root_span_id"])
        assert row["name"] == RUBRIC and row["annotator_kind"] == "LLM"
        assert row["identifier"] == f"judge:{MODEL}"
        assert row["result"]["label"] == "fail"
        assert row["result"]["score"] == pytest.approx(0.2)
        assert "Evidence cited: E2, E5." in row["result"]["explanation"]
        meta = row["metadata"]
        assert meta["rubric"] == f"{RUBRIC}@2" and meta["model"] == MODEL
        assert meta["route"] == "review" and meta["band"] is None and meta["reason"] == "band"
        assert meta["card"] == "sha256:" + "c" * 64 and meta["judgment_ids"]
        # Nothing changed: nothing is sent.
        again = judge.export_verdicts(store, project["target"])
        assert (again.sent, again.unchanged) == (0, 4)
        # One verdict changes: only it is sent, and it updates its annotation in place.
        store.put(judgment(weather.id, "pass", 0.9, model=MODEL, variant=1))
        changed = judge.export_verdicts(store, project["target"])
        assert (changed.sent, changed.unchanged) == (1, 3)
        forced = judge.export_verdicts(store, project["target"], force=True)
        assert forced.sent == 4
    rows = _ours(phoenix.url, project["name"], roots)
    assert len(rows) == 4 and len({r["id"] for r in rows}) == 4
    row = next(r for r in rows if r["span_id"] == weather.meta["root_span_id"])
    assert row["result"]["label"] == "pass" and row["result"]["score"] == pytest.approx(0.55)
    people = [
        r
        for r in span_annotations(phoenix.url, project["name"], [roots[0]])
        if r["annotator_kind"] == "HUMAN"
    ]
    assert [(p["name"], p["result"]["label"], p["identifier"]) for p in people] == [
        (RUBRIC, "correct", "")
    ]


def test_export_cli_shows_what_it_sent_and_refuses_a_store_without_the_target(
    phoenix: Any, project: dict[str, Any], tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    store, _ = _store(db, project["target"], models=("openai/other",))
    store.close()
    done = _run("export", "--to", project["target"], "--db", str(db), "--quiet")
    assert done.exit_code == 0, done.output
    assert f"4 verdicts sent to {project['target']}" in done.stderr
    other = phoenix.target("elsewhere")
    done = _run("export", "--to", other, "--db", str(db))
    assert done.exit_code == 2
    assert f"holds no verdict on a case imported from {other}" in done.stderr
    assert project["target"] in done.stderr  # where the judged cases came from
    done = _run("export", "--db", str(db))
    assert done.exit_code == 2 and "give --out FILE" in done.output


def _stop(server: Any) -> None:
    server.shutdown()
    server.server_close()  # connections are refused from now on


class _Forward(BaseHTTPRequestHandler):
    """Forwards to the real Phoenix; after ``fail_after`` annotation POSTs it dies (``kill``:
    drops the connection and stops listening) or answers 503 (``503``)."""

    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        proxy: Any = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if proxy.dead:
            self.close_connection = True
            return
        if self.command == "POST" and self.path.startswith("/v1/span_annotations"):
            proxy.posts += 1
            if proxy.fail_after is not None and proxy.posts > proxy.fail_after:
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
        answer = httpx.request(
            self.command, proxy.upstream + self.path, content=body, headers=headers, timeout=120
        )
        self.send_response(answer.status_code)
        self.send_header("Content-Type", answer.headers.get("content-type", "text/plain"))
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = _forward

    def log_message(self, *args: Any) -> None:
        pass


class Proxy:
    """A proxy on a fixed loopback port to the real Phoenix, that can die and come back."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        self.server: Any = ThreadingHTTPServer(("127.0.0.1", port), _Forward)
        self.server.daemon_threads = True
        self.server.upstream, self.server.dead, self.server.posts = upstream, False, 0
        self.server.fail_after, self.server.mode = None, "kill"
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fail(self, after: int, mode: str) -> None:
        self.server.fail_after, self.server.mode = after, mode

    def close(self) -> None:
        if not self.server.dead:
            self.server.dead = True
            _stop(self.server)


@pytest.fixture
def outage(phoenix: Any) -> Iterator[dict[str, Any]]:
    """A fresh project of seven runs, reached through a proxy; the cases imported through it."""
    name = "outage-" + secrets.token_hex(3)
    seed(phoenix.url, name, [agent_trace(f"Question {i}?", f"Answer {i}.") for i in range(7)])
    proxy = Proxy(phoenix.url)
    target = f"phoenix+http://127.0.0.1:{proxy.port}/projects/{name}"
    state = {"name": name, "target": target, "proxy": proxy}
    yield state
    state["proxy"].close()


@pytest.mark.parametrize("mode", ["kill", "503"])
def test_a_server_lost_mid_export_stops_it_and_a_rerun_sends_only_the_rest(
    phoenix: Any, outage: dict[str, Any], tmp_path: Path, mode: str
) -> None:
    db = tmp_path / "judge.db"
    store, cases = _store(db, outage["target"], models=(MODEL, "openai/other"))
    store.close()
    total = 2 * len(cases)
    assert total == 14
    outage["proxy"].fail(after=3, mode=mode)
    url = outage["target"] + "?batch=3"
    done = _run("export", "--to", url, "--db", str(db), "--quiet")
    assert done.exit_code == 3, done.output
    assert f"127.0.0.1:{outage['proxy'].port}" in done.stderr
    assert ("answered 503" if mode == "503" else "cannot reach") in done.stderr, done.stderr
    assert "the same command sends the other" in done.stderr
    with Store(db) as store:
        first = len(store.exported(outage["target"]))
    # Batches of 3, posted two ahead of the one read back: the first was read back before the
    # fourth failed; after a 503 (Phoenix still reads) the second and third are read back too.
    assert first == (3 if mode == "kill" else 9)
    # The server is back (on the same address): the same command sends the rest only.
    port = outage["proxy"].port
    outage["proxy"].close()
    outage["proxy"] = Proxy(phoenix.url, port)
    done = _run("export", "--to", url, "--db", str(db), "--quiet")
    assert done.exit_code == 0, done.output
    assert f"{total - first} verdicts sent" in done.stderr
    spans = [c.meta["root_span_id"] for c in cases]
    rows = _ours(phoenix.url, outage["name"], spans)
    assert len(rows) == total
    assert {(r["span_id"], r["identifier"]) for r in rows} == {
        (s, f"judge:{m}") for s in spans for m in (MODEL, "openai/other")
    }


# --- labels back ----------------------------------------------------------------------------


def test_people_s_labels_become_gold_with_lineage(
    phoenix: Any, project: dict[str, Any], tmp_path: Path
) -> None:
    traces = project["traces"]
    imported = [_root(t)[0] for t in traces[:3]]  # the fourth run is never imported
    db = tmp_path / "judge.db"
    with Store(db) as store:
        for case in judge.import_traces(project["target"], trace_ids=imported).cases:
            store.put_case(case)
    name = "correctness-" + secrets.token_hex(2)
    roots = [_root(t)[1] for t in traces]
    ids = annotate(
        phoenix.url,
        [
            {
                "span_id": roots[0],
                "name": name,
                "result": {"label": "correct"},
                "identifier": "px-app:alice",
            },
            {
                "span_id": roots[0],
                "name": name,
                "result": {"label": "correct"},
                "identifier": "px-app:bob",
            },
            {
                "span_id": roots[1],
                "name": name,
                "result": {"label": "incorrect", "explanation": "guessed the weather"},
                "identifier": "px-app:alice",
            },
            {"span_id": roots[3], "name": name, "result": {"label": "correct"}},
            # Not labels: a program's annotation of that name.
            {
                "span_id": roots[2],
                "name": name,
                "result": {"label": "meh"},
                "annotator_kind": "LLM",
            },
        ],
    )
    # A trace-level label (the UI's trace annotations) counts too.
    annotate(
        phoenix.url,
        [{"trace_id": _root(traces[2])[0], "name": name, "result": {"label": "incorrect"}}],
        kind="trace",
    )
    out = tmp_path / "gold.jsonl"
    with Store(db) as store:
        # Labels that are neither pass nor fail need a mapping, named in the refusal.
        with pytest.raises(LabelError, match="'correct' x3, 'incorrect' x2.*--label-map"):
            judge.import_labels(store, project["target"], annotation=name)
        done = judge.import_labels(
            store,
            project["target"],
            annotation=name,
            label_map="correct=pass,incorrect=fail",
            out=out,
        )
    assert done.labels == 5
    assert [x.trace_id for x in done.unmatched] == [_root(traces[3])[0]]
    gold = {r.id: r for r in done.records}
    assert {k: r.gold for k, r in gold.items()} == {
        imported[0]: "pass",
        imported[1]: "fail",
        imported[2]: "fail",
    }
    first = gold[imported[0]]
    assert first.lineage is not None
    assert first.lineage.labeller == "px-app:alice, px-app:bob"
    assert first.lineage.source == f"phoenix annotation {name!r} at {project['target']}"
    assert set(first.lineage.derived_from) >= {
        f"phoenix:annotation:{ids[0]}",
        f"phoenix:annotation:{ids[1]}",
    }
    assert first.lineage.created_at is not None
    assert first.gold_source == f"2 human annotation(s) {name!r} in phoenix"
    assert len(out.read_text().splitlines()) == 3
    assert judge.load_cases(out).errors == []


def test_gold_import_cli_refuses_an_unknown_annotation_and_an_unmapped_label(
    phoenix: Any, project: dict[str, Any], tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    with Store(db) as store:
        for case in judge.import_traces(project["target"]).cases:
            store.put_case(case)
    name = "helpful-" + secrets.token_hex(2)
    root = _root(project["traces"][0])[1]
    annotate(phoenix.url, [{"span_id": root, "name": name, "result": {"label": "yes"}}])
    out = tmp_path / "gold.jsonl"
    args = ["gold", "import", "--from", project["target"], "--db", str(db), "--out", str(out)]
    done = _run(*args, "--annotation", "nobody-used-this")
    assert done.exit_code == 2
    assert "no person's annotation named 'nobody-used-this'" in done.stderr
    assert name in done.stderr  # what people did use
    done = _run(*args, "--annotation", name)
    assert (
        done.exit_code == 2 and "'yes' x1" in done.stderr and "--label-map yes=pass" in done.stderr
    )
    assert not out.exists()
    done = _run(*args, "--annotation", name, "--label-map", "yes=pass,no=fail")
    assert done.exit_code == 0, done.output
    assert "1 gold records (pass 1)" in done.stdout


def test_an_annotation_phoenix_accepts_but_cannot_store_is_named_not_lost(
    phoenix: Any, project: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Phoenix takes an asynchronous annotation of a span it does not have (and drops it ten
    # minutes later): the read-back misses it, and the synchronous retry names the span.
    monkeypatch.setattr(judge.connectors.connectors()["phoenix"], "confirm_s", 1.0)
    store, cases = _store(tmp_path / "judge.db", project["target"])
    with store:
        ghost = cases[0].model_copy(
            update={
                "id": "e" * 32,
                "meta": {**cases[0].meta, "trace_id": "e" * 32, "root_span_id": "00000000deadbeef"},
            }
        )
        store.put_case(ghost)
        store.put(judgment(ghost.id, "pass", 0.9, model=MODEL))
        with pytest.raises(PlatformNotFound, match="among 00000000deadbeef") as err:
            judge.export_verdicts(store, project["target"])
    assert "0 of 5 verdicts were exported" in str(err.value)
