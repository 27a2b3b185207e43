"""The connector framework without a platform: target URLs, masking, the registry, the shared
HTTP client (against a loopback server that answers what each test needs), verdict pooling and
the export ledger on both store backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from judge.connectors import (
    Connector,
    PlatformAuthError,
    PlatformNotFound,
    PlatformUnavailable,
    TargetError,
    connectors,
    is_target_url,
    mask_url,
    resolve,
    split_target,
)
from judge.connectors.http import HttpClient
from judge.connectors.phoenix import PhoenixConnector, otlp_span, root_span
from judge.errors import InputError
from judge.exchange import parse_label_map, pool, verdict_key
from judge.store import Store
from judge.types import Case, Judgment, Provenance, RoutingDecision, Verdict

# --- target URLs ----------------------------------------------------------------------------


def test_the_scheme_picks_the_connector_and_the_path_names_the_project() -> None:
    connector, target = resolve("phoenix+http://127.0.0.1:6006/projects/agents")
    assert isinstance(connector, PhoenixConnector) and isinstance(connector, Connector)
    assert (target.platform, target.base, target.resource) == (
        "phoenix",
        "http://127.0.0.1:6006",
        "agents",
    )
    assert target.canonical == "phoenix+http://127.0.0.1:6006/projects/agents"
    _, secure = resolve("phoenix+https://user:s3cret@phoenix.example.com/px/projects/my%20agents")
    assert secure.base == "https://phoenix.example.com/px"
    assert secure.resource == "my agents"
    # No credentials in the canonical form (it is stored in every case's meta).
    assert secure.canonical == "phoenix+https://phoenix.example.com/px/projects/my%20agents"
    assert (secure.username, secure.password) == ("user", "s3cret")
    assert "phoenix" in connectors()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nope+http://h:1/projects/x", "no connector for the platform 'nope'"),
        ("phoenix+ftp://h:1/projects/x", "must be http or https"),
        ("phoenix+http://h:1/experiments/3", "a Phoenix target names a project"),
        ("phoenix+http://h:1/projects/x?color=red", "unknown option 'color'"),
        ("phoenix+http://h:99999/projects/x", "not a valid URL"),
    ],
)
def test_bad_targets_are_refused_with_what_to_give(url: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        resolve(url)


def test_target_urls_are_told_from_files() -> None:
    assert is_target_url("phoenix+http://127.0.0.1:6006/projects/a")
    assert not is_target_url("traces/run.json")
    assert not is_target_url("http://127.0.0.1:6006/projects/a")  # no platform
    assert not is_target_url("/tmp/a+b://c")
    assert split_target("phoenix+http://h:1/projects/a?sync=true").options == {"sync": "true"}


def test_secrets_are_masked_in_urls() -> None:
    assert mask_url("phoenix+https://u:pw@h/projects/a") == "phoenix+https://u:***@h/projects/a"
    assert mask_url("https://TOKEN@h/x") == "https://***@h/x"
    assert mask_url("http://h/x?api_key=abc&limit=5&token=t") == (
        "http://h/x?api_key=***&limit=5&token=***"
    )
    assert mask_url("http://h/x?trace_id=abc") == "http://h/x?trace_id=abc"


# --- the HTTP client ------------------------------------------------------------------------


class _Script(BaseHTTPRequestHandler):
    """Answers from the server's script: a list of (status, body) or (status, body, headers);
    the last one repeats. Each request is seen with the moment it came."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        server: Any = self.server
        server.seen.append((self.path, self.headers.get("Authorization")))
        server.times.append(time.monotonic())
        status, body, *headers = server.script[min(len(server.seen) - 1, len(server.script) - 1)]
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers[0] if headers else {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    server.seen, server.times, server.script = [], [], [(200, "{}")]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _client(server: Any, **kwargs: Any) -> HttpClient:
    base = f"http://127.0.0.1:{server.server_address[1]}"
    return HttpClient(base, platform="Phoenix", auth_env="PHOENIX_API_KEY", **kwargs)


def test_5xx_is_retried_then_succeeds(scripted: Any) -> None:
    scripted.script = [(503, "busy"), (500, "oops"), (200, '{"ok": true}')]
    with _client(scripted, backoff_s=0.01) as client:
        assert client.get_json("/v1/x") == {"ok": True}
        assert client.sent == 3


def test_5xx_that_lasts_is_unavailable_naming_the_masked_url(scripted: Any) -> None:
    scripted.script = [(502, "bad gateway")]
    client = _client(scripted, attempts=3, backoff_s=0.01)
    with client, pytest.raises(PlatformUnavailable) as err:
        client.get_json("/v1/x", params={"api_key": "abc", "limit": 3})
    assert client.sent == 3
    assert "answered 502 (bad gateway) after 3 attempts" in str(err.value)
    assert "api_key=***" in str(err.value) and "abc" not in str(err.value)
    assert "run the same command again" in str(err.value)


def test_a_status_the_connector_reads_itself_is_not_retried(scripted: Any) -> None:
    scripted.script = [(500, "constraint violation")]
    with _client(scripted, backoff_s=0.01) as client:
        answer = client.request("GET", "/v1/x", ok=(500,))
    assert (answer.status_code, client.sent) == (500, 1)


def test_a_429_waits_as_long_as_retry_after_asks_then_succeeds(scripted: Any) -> None:
    scripted.script = [
        (429, '{"message": "Rate limit exceeded"}', {"Retry-After": "1"}),
        (429, "slow down", {"retry-after-ms": "300"}),
        (200, '{"ok": true}'),
    ]
    # The back-off would be 0.01 s: the waits are the server's.
    with _client(scripted, backoff_s=0.01) as client:
        assert client.get_json("/v1/x") == {"ok": True}
    assert client.sent == 3
    first, second, third = scripted.times
    assert second - first >= 0.95 and third - second >= 0.28


def test_a_429_retry_after_may_be_a_date_or_absent(scripted: Any) -> None:
    # Four seconds ahead, rounded down to whole seconds: 3-4 s asked, less what the first
    # request took (up to a second or two on a loaded 2-core machine).
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=4), usegmt=True)
    scripted.script = [(429, "busy", {"Retry-After": when}), (429, "busy"), (200, "{}")]
    with _client(scripted, backoff_s=0.01) as client:
        assert client.get_json("/v1/x") == {}
    first, second, third = scripted.times
    # The date was waited for (not the 0.01 s back-off); no header is the back-off again.
    assert second - first >= 1.5 and third - second < 0.5


def test_a_429_that_lasts_or_asks_too_long_is_unavailable_naming_the_url(scripted: Any) -> None:
    scripted.script = [(429, "Rate limit exceeded", {"Retry-After": "0"})]
    client = _client(scripted, attempts=3, backoff_s=0.01)
    with client, pytest.raises(PlatformUnavailable) as err:
        client.get_json("/v1/x", params={"token": "t0k"})
    assert client.sent == 3
    assert "is rate limiting (429 Rate limit exceeded) after 3 attempts" in str(err.value)
    assert "token=***" in str(err.value) and "t0k" not in str(err.value)
    scripted.seen.clear()
    scripted.script = [(429, "quota", {"Retry-After": "3600"})]
    client = _client(scripted, backoff_s=0.01)
    with client, pytest.raises(PlatformUnavailable, match="asks to wait 3600s") as err:
        client.get_json("/v1/x")
    assert client.sent == 1 and "run the same command again after that" in str(err.value)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_are_not_retried_and_name_the_variable(scripted: Any, status: int) -> None:
    scripted.script = [(status, "Invalid token")]
    client = _client(scripted, backoff_s=0.01)
    with client, pytest.raises(PlatformAuthError, match="set PHOENIX_API_KEY") as err:
        client.get_json("/v1/projects")
    assert client.sent == 1
    assert "Invalid token" in str(err.value)


def test_404_is_not_found_with_the_callers_message(scripted: Any) -> None:
    scripted.script = [(404, "Project with name x not found")]
    with _client(scripted) as client, pytest.raises(PlatformNotFound, match="no project x"):
        client.get_json("/v1/projects/x", not_found="no project x")


def test_a_server_that_is_down_is_said_at_once() -> None:
    client = HttpClient("http://127.0.0.1:9", platform="Phoenix", backoff_s=0.01)
    with client, pytest.raises(PlatformUnavailable, match="cannot reach Phoenix at http://127"):
        client.get_json("/v1/projects")
    assert client.sent == 1


def test_the_api_key_is_sent_as_bearer(scripted: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_API_KEY", "k-123")
    _, target = resolve(f"phoenix+http://127.0.0.1:{scripted.server_address[1]}/projects/a")
    with PhoenixConnector().client(target) as client:
        client.get_json("/v1/projects/a")
    assert scripted.seen[0][1] == "Bearer k-123"
    monkeypatch.delenv("PHOENIX_API_KEY")
    port = scripted.server_address[1]
    _, target = resolve(f"phoenix+http://:k-456@127.0.0.1:{port}/projects/a")
    with PhoenixConnector().client(target) as client:
        client.get_json("/v1/projects/a")
    assert scripted.seen[1][1] == "Bearer k-456"


# --- Phoenix spans as OTLP ------------------------------------------------------------------


def test_phoenix_spans_become_otlp_with_their_kind_and_json_attributes_back() -> None:
    span = {
        "name": "get_weather",
        "context": {"trace_id": "a" * 32, "span_id": "b" * 16},
        "parent_id": "c" * 16,
        "span_kind": "TOOL",
        "start_time": "2026-12-01T15:53:06.195059+00:00",
        "end_time": "2026-12-01T15:53:11+00:00",
        "status_code": "ERROR",
        "status_message": "timed out",
        "attributes": {"tool.name": "get_weather", "tool.parameters.city": "Lisbon", "n": 3},
        "events": [{"name": "exception", "timestamp": "2026-12-01T15:53:11+00:00"}],
    }
    out = otlp_span(span)
    attrs = {a["key"]: a["value"] for a in out["attributes"]}
    assert attrs["openinference.span.kind"] == {"stringValue": "TOOL"}
    assert attrs["tool.parameters"] == {"stringValue": '{"city": "Lisbon"}'}
    assert "tool.parameters.city" not in attrs and attrs["n"] == {"intValue": "3"}
    assert out["status"] == {"code": 2, "message": "timed out"}
    assert out["parentSpanId"] == "c" * 16
    assert out["startTimeUnixNano"] == 1796140386195059000
    assert root_span([span, {**span, "context": {"span_id": "c" * 16}, "parent_id": None}]) == (
        "c" * 16
    )


# --- pooling verdicts -----------------------------------------------------------------------

WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def judgment(
    case_id: str,
    label: str | None,
    p_pass: float | None = None,
    *,
    variant: int = 0,
    model: str = "openai/judge",
    rationale: str = "The tool failed and the agent guessed.",
    status: str = "ok",
) -> Judgment:
    verdict = None
    if label is not None:
        probs = None if p_pass is None else {"pass": p_pass, "fail": 1 - p_pass}
        verdict = Verdict(label=label, label_probs=probs, cited=["E2", "E5"], rationale=rationale)
    return Judgment(
        id=f"j-{case_id}-{model}-{variant}-{label}",
        case_id=case_id,
        cache_key=f"k-{case_id}-{model}-{variant}-{label}",
        status=status,  # type: ignore[arg-type]
        verdict=verdict,
        error="provider timed out" if status == "infra_error" else None,
        provenance=Provenance(
            rubric_id="agent-run-success",
            rubric_version=2,
            rubric_digest="sha256:r",
            model=model,
            prompt_digest="sha256:p",
            evidence_digest="sha256:e",
            selector_version="evidence-v1",
            token_budget=6000,
            judge_version="0.1.0",
            variant=variant,
        ),
        created_at=WHEN,
    )


def _case(trace_id: str = "f" * 32) -> Case:
    return Case(
        id=trace_id,
        kind="agent_run",
        task="Where is my order?",
        meta={
            "platform": "phoenix",
            "target": "phoenix+http://h:1/projects/a",
            "trace_id": trace_id,
            "root_span_id": "1" * 16,
        },
    )


def test_a_verdict_pools_the_variants_and_carries_its_evidence() -> None:
    group = [
        judgment("t", "fail", 0.2, variant=0),
        judgment("t", "fail", 0.3, variant=1),
        judgment("t", "pass", 0.55, variant=2, rationale="api_key=sk-live-0123456789abcdef0123"),
    ]
    v = pool(group, _case("t"), None)
    assert v is not None
    assert (v.label, v.status, v.p_pass) == ("fail", "ok", pytest.approx(0.35))
    assert v.explanation.startswith("The tool failed and the agent guessed.")
    assert "Evidence cited: E2, E5." in v.explanation and "fail x2, pass x1" in v.explanation
    assert v.key == verdict_key("t", "agent-run-success", "openai/judge")
    assert v.metadata()["rubric"] == "agent-run-success@2"
    assert v.metadata()["judgment_ids"] == [j.id for j in group]
    assert "route" not in v.metadata()
    assert v.metadata()["digest"] == v.short_digest == v.digest[7:23]
    # The same judgments give the same digest; a routing decision changes it.
    decision = RoutingDecision(
        id="r1",
        card_digest="sha256:card",
        case_id="t",
        model="openai/judge",
        rubric_id="agent-run-success",
        rubric_version=2,
        kind="binary",
        decision="review",
        reason="band",
        detail="between the bands",
        band=None,
        score=0.41,
        judgment_ids=[j.id for j in group],
        routed_at=WHEN,
    )
    routed = pool(group, _case("t"), decision)
    assert routed is not None and routed.digest != v.digest
    assert pool(group, _case("t"), None) == v
    assert routed.metadata()["route"] == "review" and routed.metadata()["card"] == "sha256:card"


def test_secrets_in_a_rationale_are_redacted_before_they_leave() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    v = pool([judgment("t", "pass", 0.9, rationale=f"used token {secret}")], _case("t"), None)
    assert v is not None and secret not in v.explanation and "REDACTED" in v.explanation


def test_an_abstention_or_a_failure_has_no_label_but_says_why() -> None:
    abstained = pool([judgment("t", "cannot_determine", None, status="abstain")], _case("t"), None)
    assert abstained is not None
    assert (abstained.label, abstained.status, abstained.p_pass) == (None, "abstain", None)
    assert abstained.explanation.startswith("The judge could not determine the verdict")
    failed = pool([judgment("t", None, status="infra_error")], _case("t"), None)
    assert failed is not None and (failed.label, failed.status) == (None, "infra_error")
    assert "provider timed out" in failed.explanation


def test_label_maps_are_read_and_checked() -> None:
    assert parse_label_map("correct=pass, incorrect=fail") == {
        "correct": "pass",
        "incorrect": "fail",
    }
    assert parse_label_map(["a=b=pass", "x=fail"]) == {"a=b": "pass", "x": "fail"}
    with pytest.raises(InputError, match="maps to pass or fail, not 'yes'"):
        parse_label_map("correct=yes")
    with pytest.raises(InputError, match="give RAW=pass or RAW=fail"):
        parse_label_map("correct")


# --- the export ledger ----------------------------------------------------------------------


def test_the_export_ledger_keeps_the_last_digest_per_destination(store_location: str) -> None:
    with Store(store_location) as store:
        assert store.exported("phoenix+http://h:1/projects/a") == {}
        rows = [
            {"verdict_key": "k1", "digest": "d1", "case_id": "c1", "rubric_id": "r", "model": "m"},
            {"verdict_key": "k2", "digest": "d2", "case_id": "c2", "rubric_id": "r", "model": "m"},
        ]
        assert store.record_exports("phoenix+http://h:1/projects/a", rows) == 2
        store.record_exports("phoenix+http://h:1/projects/b", rows[:1])
        store.record_exports("phoenix+http://h:1/projects/a", [{**rows[0], "digest": "d1b"}])
        assert store.exported("phoenix+http://h:1/projects/a") == {"k1": "d1b", "k2": "d2"}
        assert store.exported("phoenix+http://h:1/projects/b") == {"k1": "d1"}
        assert [(d["destination"], d["verdicts"]) for d in store.export_destinations()] == [
            ("phoenix+http://h:1/projects/a", 2),
            ("phoenix+http://h:1/projects/b", 1),
        ]


def test_import_list_names_the_platforms_and_file_options_are_checked() -> None:
    from click.testing import CliRunner

    from judge.cli import cli

    done = CliRunner().invoke(cli, ["import", "--list"])
    assert done.exit_code == 0 and "phoenix+http(s)://" in done.stdout
    done = CliRunner().invoke(cli, ["import", "x.json", "--trace-id", "abc"])
    assert done.exit_code == 2 and "--trace-id picks traces of --from URL" in done.output
    done = CliRunner().invoke(cli, ["import", "--from", "nope+http://h/x", "--out", "-"])
    assert done.exit_code == 2 and "no connector for the platform 'nope'" in done.stderr
