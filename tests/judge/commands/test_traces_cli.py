"""``judge import``: counts, errors with their line, exit codes, and a JSONL that loads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cases import load_cases
from judge.cli import cli
from judge.errors import InputError
from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces"


def _run(*args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, ["import", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def test_list_shows_every_format() -> None:
    code, out, _, _ = _run("--list")
    assert code == 0
    for name in (
        "claude-code",
        "codex",
        "gold",
        "inspect",
        "inspect-ai",
        "openai-chat",
        "otel-genai",
        "swe-agent",
        "tau-bench",
    ):
        assert name in out
    assert "v1.38.0" in out


def test_converts_and_the_output_loads_back_as_the_same_cases(tmp_path: Path) -> None:
    source = DATA / "claude-code" / "fix_slugify.jsonl"
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run("--format", "claude-code", str(source), "--out", str(out))
    assert code == 0, stderr
    assert f"{source}: 1 cases, 17 turns, 0 errors" in stdout
    loaded = load_cases(out)
    assert not loaded.errors
    assert loaded.cases == import_traces(source, "claude-code").cases


def test_gold_labels_are_written_and_read_back(tmp_path: Path) -> None:
    source = next((DATA / "tau-bench").glob("tool-calling-*.json"))
    out = tmp_path / "cases.jsonl"
    code, _, stderr, _ = _run(str(source), "--out", str(out))  # format detected
    assert code == 1 and "task1/trial0' has no trace turns" in stderr  # the infra failure
    loaded = load_cases(out)
    assert len(loaded.cases) == 2
    assert sorted(loaded.gold.values()) == ["fail", "pass"]


def test_malformed_input_exits_1_and_names_each_line(tmp_path: Path) -> None:
    source = DATA / "codex" / "malformed.jsonl"
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run(
        "--format", "codex", str(source), "--out", str(out), "--task", "Run the tests."
    )
    assert code == 1
    assert "1 cases" in stdout and "3 errors" in stdout
    assert f"{source}:3:" in stderr and f"{source}:4 field 'item.id'" in stderr
    assert "note:" in stdout and "session.configured" in stdout
    assert len(load_cases(out).cases) == 1  # the valid records were still written


def test_stdout_output_keeps_the_report_on_stderr() -> None:
    code, stdout, stderr, _ = _run(str(DATA / "openai-chat" / "runs.jsonl"), "--out", "-")
    assert code == 0
    assert [json.loads(line)["id"] for line in stdout.splitlines()] == [
        "chat-run-0101",
        "chat-run-0102",
    ]
    assert "2 cases" in stderr


def test_the_same_case_id_in_two_files_is_an_error(tmp_path: Path) -> None:
    source = DATA / "openai-chat" / "runs.jsonl"
    copy = tmp_path / "again.jsonl"
    copy.write_text(source.read_text())
    code, _, stderr, _ = _run("--format", "openai-chat", str(source), str(copy))
    assert code == 1
    assert "'chat-run-0101' already imported" in stderr


def test_unknown_format_is_refused_with_the_known_ones() -> None:
    code, _, _, exc = _run("--format", "nope", str(DATA / "gold" / "sample.jsonl"))
    assert code != 0
    assert isinstance(exc, InputError) and "otel-genai" in str(exc)


@pytest.mark.parametrize("args", [[], ["--format", "codex"]])
def test_no_file_is_a_usage_error(args: list[str]) -> None:
    code, _, stderr, _ = _run(*args)
    assert code == 2 and "at least one FILE" in stderr


def test_text_utf8_cannot_encode_is_written_escaped(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text('[{"role": "user", "content": "caf\u00e9 \\ud800 ok"}]')
    out = tmp_path / "cases.jsonl"
    code, _, stderr, _ = _run("--format", "openai-chat", str(source), "--out", str(out))
    assert code == 0, stderr
    assert "\\ud800" in out.read_text("utf-8")  # written escaped: the JSONL stays valid UTF-8
    # ...but a lone surrogate cannot be judged (not valid Unicode): load_cases names the field.
    loaded = load_cases(out)
    assert loaded.cases == [] and loaded.errors[0].field == "task"
    assert "surrogate" in str(loaded.errors[0])


# --- never a silent empty case; --task / --task-from -----------------------------------------

CODEX_STREAM = DATA / "codex" / "fix_slugify.jsonl"
CODEX_ID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
CLAUDE_STREAM = DATA / "claude-code" / "max_turns.jsonl"
CLAUDE_ID = "1c7e9a02-5d3f-4b8e-8f21-6a4b3c2d1e0f"


@pytest.mark.parametrize(
    ("source", "case_id"), [(CODEX_STREAM, CODEX_ID), (CLAUDE_STREAM, CLAUDE_ID)]
)
def test_a_stream_without_its_prompt_is_an_error_naming_case_file_and_line(
    tmp_path: Path, source: Path, case_id: str
) -> None:
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run(str(source), "--out", str(out))
    assert code == 1
    assert f"{source}: 0 cases" in stdout and "1 errors" in stdout
    assert f"error: {source}:1: case '{case_id}' has no task" in stderr
    assert "--task TEXT or --task-from FILE" in stderr
    assert out.read_text() == ""  # the judge never reads an empty task


def test_task_supplies_the_prompt_of_a_stream(tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run(str(CODEX_STREAM), "--task", "Fix slugify.", "--out", str(out))
    assert code == 0, stderr
    [case] = load_cases(out).cases
    assert case.task == "Fix slugify." and "task_missing" not in case.meta
    assert case.meta["task_source"] == "--task"


def test_task_from_a_text_file_and_a_recorded_task_is_kept(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Fix slugify: strip the hyphens at both ends.\n")
    recorded = DATA / "claude-code" / "fix_slugify.jsonl"  # replays its prompt
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run(
        str(CODEX_STREAM), str(recorded), "--task-from", str(prompt), "--out", str(out)
    )
    assert code == 0, stderr
    codex, claude = load_cases(out).cases
    assert codex.task == "Fix slugify: strip the hyphens at both ends."
    assert codex.meta["task_source"] == str(prompt)
    assert claude.task.startswith("slugify() keeps leading and trailing hyphens")
    assert "record their own task" in stdout


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".list.json"])
def test_task_from_a_mapping_by_session_id(tmp_path: Path, suffix: str) -> None:
    tasks = {
        CODEX_ID: "Fix slugify (codex).",
        CLAUDE_ID: "Add a --strict flag.",
        "no-such-session": "unused",
    }
    mapping = tmp_path / f"tasks{suffix}"
    records = [{"session_id": k, "task": v} for k, v in tasks.items()]
    if suffix == ".json":
        mapping.write_text(json.dumps(tasks))
    elif suffix == ".jsonl":
        mapping.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    else:
        mapping.write_text(json.dumps(records))
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr, _ = _run(
        str(CODEX_STREAM), str(CLAUDE_STREAM), "--task-from", str(mapping), "--out", str(out)
    )
    assert code == 0, stderr
    by_id = {c.id: c.task for c in load_cases(out).cases}
    assert by_id == {CODEX_ID: "Fix slugify (codex).", CLAUDE_ID: "Add a --strict flag."}
    assert "1 session id(s) matched no case: no-such-session" in stdout


def test_a_mapping_without_the_session_leaves_the_case_an_error(tmp_path: Path) -> None:
    mapping = tmp_path / "tasks.json"
    mapping.write_text(json.dumps({CLAUDE_ID: "Add a --strict flag."}))
    code, _, stderr, _ = _run(str(CODEX_STREAM), "--task-from", str(mapping))
    assert code == 1 and f"case '{CODEX_ID}' has no task" in stderr


def test_a_bad_task_mapping_is_refused_before_any_trace(tmp_path: Path) -> None:
    mapping = tmp_path / "tasks.jsonl"
    mapping.write_text('{"session_id": "a", "task": "x"}\n{"session": "b", "task": "y"}\n')
    code, _, _, exc = _run(str(CODEX_STREAM), "--task-from", str(mapping))
    assert code != 0 and isinstance(exc, InputError)
    assert (exc.file, exc.line) == (str(mapping), 2) and "session" in str(exc)
    code, _, stderr, _ = _run(str(CODEX_STREAM), "--task", "a", "--task-from", str(mapping))
    assert code == 2 and "not both" in stderr


def test_a_codex_stream_cut_after_turn_started_is_an_error(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"type":"thread.started","thread_id":"t-cut"}\n{"type":"turn.started"}\n')
    code, stdout, stderr, _ = _run(str(cut), "--task", "Fix slugify.")
    assert code == 1 and f"{cut}: 0 cases" in stdout
    assert f"error: {cut}:1: case 't-cut' has no trace turns: nothing to judge" in stderr


def test_a_file_with_nothing_in_it_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, _, stderr, _ = _run("--format", "codex", str(empty))
    assert code == 1 and "no case found in the file" in stderr


def test_session_files_import_with_their_own_task(tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    sources = [
        DATA / "codex" / "rollout-2026-04-30T20-32-35-plangate.jsonl",
        DATA / "claude-code" / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl",
    ]
    code, stdout, stderr, _ = _run(*map(str, sources), "--out", str(out))
    assert code == 0, stderr
    assert [c.task for c in load_cases(out).cases] == [
        "respond with only the literal string CODEX_OK if you can read this",
        "start phoenix in background",
    ]
