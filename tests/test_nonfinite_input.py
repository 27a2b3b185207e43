"""NaN and infinities in input (issue 16): Python's json reads ``NaN``, ``Infinity`` and
``-Infinity`` (not JSON) and overflows ``1e999`` to infinity; in ``meta`` or ``slices`` (which
take any value) they were accepted silently and stored as null, exit 0. Now they are refused
naming the file, line and field (``judge run`` exits 1, as for other invalid records; the
valid records are still judged), and the API answers 422 naming the field, storing nothing.
The corpus entries in tests/data/bad_inputs (MANIFEST.jsonl) run in tests/test_bad_input.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from judge.cases import bad_value, load_cases
from judge.cli import cli
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from tests.review_fixtures import MODEL, RunningService, make_case, responder, running_service

ANSWER = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it."}'
GOOD = make_case(1).model_dump(mode="json")

#: (JSON text of the bad value, where it goes, the field path named, the problem named)
BAD = [
    ("NaN", ("meta", "score"), "meta.score", "is NaN"),
    ("Infinity", ("slices", "cost_usd"), "slices.cost_usd", "is infinite"),
    ("-Infinity", ("meta", "runs"), "meta.runs", "is infinite"),
    ("1e999", ("meta", "ratio"), "meta.ratio", "is infinite"),
    ("-1E+400", ("slices", "delta"), "slices.delta", "is infinite"),
    ("1" + "0" * 400 + ".5", ("meta", "big"), "meta.big", "is infinite"),
]


def _record(case_id: str, value: str, where: tuple[str, str]) -> str:
    """A valid case's JSON with ``where`` set to the raw JSON text ``value``."""
    data = dict(GOOD, id=case_id, task=f"Fix bug in {case_id}.")
    data[where[0]] = {where[1]: "PLACEHOLDER"}
    return json.dumps(data).replace('"PLACEHOLDER"', value)


@pytest.mark.parametrize(("value", "where", "field", "problem"), BAD, ids=[b[0][:9] for b in BAD])
def test_load_cases_names_file_line_and_field(
    tmp_path: Path, value: str, where: tuple[str, str], field: str, problem: str
) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "\n".join(
            [
                _record("ok-1", "1", where),
                _record("bad", value, where),
                _record("ok-2", "2.5", where),
            ]
        )
        + "\n"
    )
    loaded = load_cases(path)
    assert [c.id for c in loaded.cases] == ["ok-1", "ok-2"]
    (error,) = loaded.errors
    assert error.file == str(path) and error.line == 2 and error.field == field
    assert problem in str(error) and f"{path}:2" in str(error)
    assert "null" in str(error)  # says what to write instead


def test_bad_value_finds_non_finite_numbers_anywhere() -> None:
    assert bad_value({"a": [1.0, {"b": float("nan")}]}) == (
        "a.1.b",
        "is NaN (nan): JSON has no such number; write null, or the value as a string",
    )
    assert bad_value({"x": float("-inf")})[0] == "x"  # type: ignore[index]
    assert bad_value({"x": 1e308, "y": -0.0, "z": "NaN"}) is None
    assert bad_value({"x": float("inf")}, check_strings=False, check_numbers=False) is None


def test_judge_run_refuses_the_record_and_judges_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = tmp_path / "batch.jsonl"
    path.write_text(
        "\n".join(
            [
                _record("ok-1", "1", ("meta", "score")),
                _record("nan", "NaN", ("meta", "score")),
                _record("inf", "Infinity", ("slices", "cost")),
            ]
        )
        + "\n"
    )
    db = tmp_path / "j.db"
    with LoopbackServer(lambda r: Reply(content=ANSWER)) as server:
        result = CliRunner().invoke(
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
                "--quiet",
                str(path),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 1, result.output  # as for any invalid record
    assert f"{path}:2" in result.output and "meta.score" in result.output
    assert f"{path}:3" in result.output and "slices.cost" in result.output
    assert "2 invalid record(s) skipped" in result.output
    assert len(server.requests) == 1
    with Store(db) as store:
        assert store.get_case("nan") is None and store.get_case("inf") is None


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningService]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with (
        LoopbackServer(responder) as loopback,
        running_service(
            tmp_path / "nan.db", models=(MODEL,), api_base=loopback.api_base, rate_per_s=0
        ) as svc,
    ):
        yield svc


@pytest.mark.parametrize(("value", "where", "field", "problem"), BAD, ids=[b[0][:9] for b in BAD])
def test_the_api_answers_422_naming_the_field(
    service: RunningService, value: str, where: tuple[str, str], field: str, problem: str
) -> None:
    headers = {"X-API-Key": service.keys["dan"], "content-type": "application/json"}
    case = _record("c1", value, where)
    with httpx.Client(base_url=service.url, headers=headers) as http:
        first = _record("c0", "1", where)
        for path, body in [
            ("/v1/judge", f'{{"rubric": "agent-run-success@1", "case": {case}}}'),
            ("/v1/jobs", f'{{"cases": [{first}, {case}]}}'),
        ]:
            r = http.post(path, content=body.encode())
            assert r.status_code == 422, (path, r.status_code, r.text)
            err = r.json()["error"]
            assert err["code"] == "invalid_request"
            named = field if path == "/v1/judge" else f"1.{field}"
            assert f"{named}: {problem}" in err["message"], err["message"]
    with Store(service.db) as store:
        assert store.count() == 0 and store.get_case("c1") is None
