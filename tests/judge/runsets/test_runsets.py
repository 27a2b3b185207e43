"""Run-set loading: valid records, every error naming its line and field, gold conversion,
trace files through the importers, and model families."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from judge.errors import InputError
from judge.runsets import load_runs, runset_from_gold, write_runs
from judge.runsets.families import model_family, same_family
from tests.conftest import DATA

CASE = {"kind": "agent_run", "task": "Fix the slugify bug", "diff": "+x", "trace": []}


def _run(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "run_id": f"r{i}",
        "task_id": f"t{i}",
        "treatment": "A",
        "repetition": 0,
        "case": dict(CASE),
        **extra,
    }


def _write(tmp_path: Path, records: Sequence[dict[str, Any] | str]) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def _errors(tmp_path: Path, records: list[dict[str, Any] | str]) -> list[InputError]:
    return load_runs(_write(tmp_path, records)).errors


def test_sample_run_set_loads_with_rules_and_official_labels() -> None:
    loaded = load_runs(DATA / "runsets" / "small.jsonl")
    assert loaded.errors == []
    assert len(loaded.runs) == 23
    by_id = {r.run_id: r for r in loaded.runs}
    infra = by_id["base-a3-r2"]
    assert infra.record.status == "infra_error" and infra.case is None
    done = by_id["base-a1-r0"]
    # The run id becomes the case id, so judgments and exports name the run.
    assert done.case is not None and done.case.id == "base-a1-r0"
    assert done.official == "pass" and done.agent_model == "gpt-4o"
    assert done.case.agent_model == "gpt-4o"


def test_integer_task_ids_and_gold_format_cases_are_accepted(tmp_path: Path) -> None:
    gold_case = {
        "id": "g1",
        "source": "x",
        "license": "MIT",
        "gold": "fail",
        **CASE,
        "slices": {"agent_model": "claude-3-5-sonnet"},
    }
    loaded = load_runs(_write(tmp_path, [{**_run(1), "task_id": 7, "case": gold_case}]))
    assert loaded.errors == []
    run = loaded.runs[0]
    assert run.record.task_id == "7"
    assert run.official == "fail"  # the gold label of a gold-format case
    assert run.agent_model == "claude-3-5-sonnet"  # from the case's slices
    assert run.record.benchmark == "default"


@pytest.mark.parametrize(
    ("record", "line_text", "field"),
    [
        ({**_run(1), "treatmnet": "B"}, "unknown field", "treatmnet"),
        (
            {k: v for k, v in _run(1).items() if k != "task_id"},
            "required field is missing",
            "task_id",
        ),
        ({**_run(1), "repetition": -1}, "greater than or equal to 0", "repetition"),
        ({**_run(1), "status": "crashed"}, "Input should be", "status"),
        ({**_run(1), "official": "PASS"}, "Input should be", "official"),
        ({**_run(1), "cost_usd": -0.5}, "greater than or equal to 0", "cost_usd"),
        ({**_run(1), "case": {**CASE, "kind": "essay"}}, "Input should be", "case.kind"),
        ({**_run(1), "case": {**CASE, "taks": "x"}}, "unknown field", "case.taks"),
    ],
)
def test_bad_records_name_line_and_field(
    tmp_path: Path, record: dict[str, Any], line_text: str, field: str
) -> None:
    errors = _errors(tmp_path, [_run(0), record])
    assert len(errors) == 1
    err = errors[0]
    assert err.line == 2 and err.field == field
    assert line_text in str(err)
    assert str(err).startswith(f"{tmp_path / 'runs.jsonl'}:2 field '{field}'")


def test_case_and_trace_rules(tmp_path: Path) -> None:
    both = {**_run(1), "trace": "x.jsonl"}
    neither = {k: v for k, v in _run(2).items() if k != "case"}
    fmt_without_trace = {**_run(3), "format": "codex"}
    infra_without_case = {**neither, "run_id": "r4", "task_id": "t4", "status": "infra_error"}
    loaded = load_runs(_write(tmp_path, [both, neither, fmt_without_trace, infra_without_case]))
    messages = [str(e) for e in loaded.errors]
    assert "not both" in messages[0] and ":1" in messages[0]
    assert "a completed run needs 'case'" in messages[1] and ":2" in messages[1]
    assert "apply only with 'trace'" in messages[2]
    # A run that never completed may have nothing to judge.
    assert [r.run_id for r in loaded.runs] == ["r4"]


def test_duplicates_and_broken_lines(tmp_path: Path) -> None:
    errors = _errors(
        tmp_path, [_run(1), "{not json", _run(1), {**_run(2), "task_id": "t1"}, "[1, 2]"]
    )
    text = [str(e) for e in errors]
    assert "runs.jsonl:2: not valid JSON" in text[0]
    assert "duplicate run id (first on line 1)" in text[1] and errors[1].field == "run_id"
    assert "already has repetition 0 (line 1)" in text[2] and errors[2].field == "repetition"
    assert "each line must be a JSON object" in text[3]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_runs(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    assert "empty" in str(load_runs(tmp_path / "empty.jsonl").errors[0])


def test_trace_files_go_through_the_importers(tmp_path: Path) -> None:
    traces = DATA / "traces"
    codex = traces / "codex" / "fix_slugify.jsonl"
    runs = [
        {
            **_run(1),
            "case": None,
            "trace": str(codex),
            "format": "codex",
            "agent_model": "gpt-5-codex",
        },
        {**_run(2), "case": None, "trace": str(codex), "format": "no-such-format"},
        {**_run(3), "case": None, "trace": "missing/trace.jsonl", "format": "codex"},
        {
            **_run(4),
            "case": None,
            "trace": str(traces / "otel-genai" / "batch.jsonl"),
            "format": "otel-genai",
        },
    ]
    for r in runs:
        r.pop("case")
    loaded = load_runs(_write(tmp_path, runs))
    assert [r.run_id for r in loaded.runs] == ["r1"]
    case = loaded.runs[0].case
    assert case is not None and case.id == "r1" and case.trace
    assert case.agent_model == "gpt-5-codex"
    by_line = {e.line: e for e in loaded.errors}
    assert by_line[2].field == "format" and "unknown trace format" in str(by_line[2])
    assert by_line[3].field == "trace" and "no such file" in str(by_line[3])
    # A file with several traces needs trace_case to pick one.
    assert by_line[4].field == "trace_case" and "name one with 'trace_case'" in str(by_line[4])


def test_trace_case_picks_one_case_of_a_multi_case_file(tmp_path: Path) -> None:
    from judge.traces import import_traces

    batch = DATA / "traces" / "otel-genai" / "batch.jsonl"
    first = import_traces(batch, "otel-genai").cases[0]
    record = {**_run(1), "trace": str(batch), "format": "otel-genai", "trace_case": first.id}
    record.pop("case")
    loaded = load_runs(_write(tmp_path, [record]))
    assert loaded.errors == []
    case = loaded.runs[0].case
    assert case is not None and case.meta.get("trace_id") == first.meta.get("trace_id")


def test_runset_from_gold_reads_task_and_repetition(tmp_path: Path) -> None:
    gold = [
        (
            1,
            {
                "id": "x/t0/r0",
                "gold": "pass",
                "kind": "agent_run",
                "task": "t",
                "slices": {"task_id": 0, "trial": 0, "agent_model": "gpt-4o"},
            },
        ),
        (
            2,
            {
                "id": "x/t0/r1",
                "gold": "fail",
                "kind": "agent_run",
                "task": "t",
                "slices": {"task_id": 0, "trial": 1, "agent_model": "gpt-4o"},
            },
        ),
    ]
    runs = runset_from_gold(gold, benchmark="tau")
    assert [(r["task_id"], r["repetition"], r["treatment"], r["official"]) for r in runs] == [
        ("0", 0, "gpt-4o", "pass"),
        ("0", 1, "gpt-4o", "fail"),
    ]
    assert "gold" not in runs[0]["case"]
    write_runs(runs, tmp_path / "r.jsonl")
    loaded = load_runs(tmp_path / "r.jsonl")
    assert loaded.errors == [] and loaded.runs[1].official == "fail"
    with pytest.raises(InputError, match="no 'slices.task_id'.*no task text") as info:
        runset_from_gold([(5, {"id": "y", "slices": {"trial": 1}})])
    assert info.value.line == 5
    with pytest.raises(InputError, match="no treatment") as info:
        runset_from_gold([(6, {"id": "y", "task": "t", "slices": {"task_id": 1}})])
    assert info.value.line == 6


def test_runset_from_cases_without_task_ids_or_repetitions() -> None:
    # What `judge import` writes: no task id, no trial, the agent's model at the top level.
    cases = [
        (1, {"id": "s1", "kind": "agent_run", "task": "Fix X", "agent_model": "m1"}),
        (2, {"id": "s2", "kind": "agent_run", "task": "Fix X ", "agent_model": "m1"}),
        (3, {"id": "s3", "kind": "agent_run", "task": "Fix Y", "agent_model": "m1"}),
        (4, {"id": "s4", "kind": "agent_run", "task": "Fix X", "agent_model": "m2"}),
    ]
    runs = runset_from_gold(cases)
    same = runs[0]["task_id"]
    assert same.startswith("task-") and len(same) == len("task-") + 12
    # The same task text (surrounding blanks aside) is one task; repetitions count per
    # (treatment, task) in file order.
    assert [(r["task_id"] == same, r["treatment"], r["repetition"]) for r in runs] == [
        (True, "m1", 0),
        (True, "m1", 1),
        (False, "m1", 0),
        (True, "m2", 0),
    ]
    assert runs[0]["meta"]["derived"] == {
        "task_id": "task text",
        "treatment": "agent_model",
        "repetition": "file order",
    }
    assert "official" not in runs[0]


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai/gpt-4o-2024-08-06", "openai"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("anthropic/claude-3-5-sonnet-20241022", "anthropic"),
        ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", "anthropic"),
        ("openrouter/meta-llama/llama-3.1-70b-instruct", "meta"),
        ("gemini/gemini-1.5-pro", "google"),
        ("local/qwen2.5-coder-1.5b", "qwen"),
        ("mistral/mistral-large-latest", "mistral"),
        ("anthropic/my-finetune", "anthropic"),  # the name says nothing; the provider does
        ("openai/loopback", None),  # unknown: never matches anything
        (None, None),
    ],
)
def test_model_families(model: str | None, family: str | None) -> None:
    assert model_family(model) == family


def test_same_family_needs_both_known() -> None:
    assert same_family("openai/gpt-4o-mini", "gpt-4o")
    assert not same_family("anthropic/claude-3-5-haiku", "gpt-4o")
    assert not same_family("openai/loopback", "loopback")
