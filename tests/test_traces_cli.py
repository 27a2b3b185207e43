"""``judge import``: counts, errors with their line, exit codes, and a JSONL that loads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cases import load_cases
from judge.cli import cli
from judge.errors import InputError
from judge.traces import import_file

DATA = Path(__file__).parent / "data" / "traces"


def _run(*args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, ["import", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def test_list_shows_every_format() -> None:
    code, out, _, _ = _run("--list")
    assert code == 0
    for name in ("claude-code", "codex", "gold", "openai-chat", "otel-genai", "swe-agent",
                 "tau-bench"):
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
    assert loaded.cases == import_file(source, "claude-code").cases


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
    code, stdout, stderr, _ = _run("--format", "codex", str(source), "--out", str(out),
                                   "--task", "Run the tests.")
    assert code == 1
    assert "1 cases" in stdout and "3 errors" in stdout
    assert f"{source}:3:" in stderr and f"{source}:4 field 'item.id'" in stderr
    assert "note:" in stdout and "session.configured" in stdout
    assert len(load_cases(out).cases) == 1  # the valid records were still written


def test_stdout_output_keeps_the_report_on_stderr() -> None:
    code, stdout, stderr, _ = _run(str(DATA / "openai-chat" / "runs.jsonl"), "--out", "-")
    assert code == 0
    assert [json.loads(line)["id"] for line in stdout.splitlines()] == [
        "chat-run-0101", "chat-run-0102"]
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
