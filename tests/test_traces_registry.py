"""The importer registry, format detection and the shared turn-building rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.traces import (
    IMPORTERS,
    BaseImporter,
    Importer,
    ImportResult,
    detect_format,
    formats,
    get_importer,
    import_file,
    importer,
)
from judge.traces._common import TraceBuilder, classify_result, diff_in, render_call

DATA = Path(__file__).parent / "data" / "traces"
FORMATS = ["claude-code", "codex", "gold", "openai-chat", "otel-genai", "swe-agent", "tau-bench"]


def test_every_format_is_registered_with_a_description() -> None:
    assert sorted(IMPORTERS) == FORMATS
    assert [name for name, _ in formats()] == FORMATS
    for name, imp in IMPORTERS.items():
        assert isinstance(imp, Importer) and imp.name == name and imp.description


def test_unknown_format_error_lists_the_known_ones() -> None:
    with pytest.raises(InputError) as info:
        get_importer("langsmith")
    message = str(info.value)
    assert "langsmith" in message
    for name in FORMATS:
        assert name in message


def test_import_file_names_a_missing_file_and_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        import_file(tmp_path / "absent.jsonl", "codex")
    present = tmp_path / "x.jsonl"
    present.write_text("{}\n")
    with pytest.raises(InputError, match="unknown trace format 'nope'"):
        import_file(present, "nope")


SAMPLES = sorted(p for p in DATA.glob("*/*")
                 if p.is_file() and p.name != "README.md" and p.suffix != ".py")


@pytest.mark.parametrize("path", SAMPLES,
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_is_detected_as_its_own_format(path: Path) -> None:
    assert detect_format(path) == path.parent.name


def test_undetectable_and_ambiguous_files_ask_for_format(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    with pytest.raises(InputError) as info:
        detect_format(text)
    assert "--format" in str(info.value) and "tau-bench" in str(info.value)
    # A line that looks like both a Claude Code event and a gold record.
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps({"type": "system", "session_id": "s", "id": "x",
                                "kind": "agent_run", "task": "t"}) + "\n")
    with pytest.raises(InputError, match="ambiguous"):
        detect_format(both)


def test_decorator_registers_by_name_and_refuses_a_duplicate() -> None:
    try:
        @importer("test-only-format")
        class _Fake(BaseImporter):
            description = "a fake"

            def load(self, path: Path) -> ImportResult:
                return ImportResult(notes=[f"read {path.name}"])

        assert get_importer("test-only-format").load(Path("a.x")).notes == ["read a.x"]
        with pytest.raises(ValueError, match="registered twice"):
            importer("test-only-format")(_Fake)
    finally:
        IMPORTERS.pop("test-only-format", None)


# --- classification -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "kwargs", "kind"), [
    ("ok", {"command": "python -m pytest -q tests"}, "test_run"),
    ("ok", {"command": "cd /repo && go test ./..."}, "test_run"),
    ("ok", {"command": "npm run test -- --ci"}, "test_run"),
    ("....\n4 passed, 1 skipped in 0.51s", {}, "test_run"),
    ("Ran 12 tests in 0.004s\n\nFAILED (failures=1)", {"exit_code": 1}, "test_run"),
    ("test result: FAILED. 3 passed; 1 failed", {}, "test_run"),
    ("ok", {"tool": "run_tests"}, "test_run"),
    ("grep: nothing", {"command": "grep -r foo .", "exit_code": 1}, "error"),
    ("Traceback ...", {"is_error": True}, "error"),
    ("file written", {"command": "cat > tests/test_x.py"}, "tool_result"),
    ("latest: 0 passed", {"command": "ls"}, "tool_result"),
])
def test_results_are_classified(text: str, kwargs: dict[str, object], kind: str) -> None:
    assert classify_result(text, **kwargs) == kind  # type: ignore[arg-type]


def test_shell_calls_render_as_commands_and_other_tools_as_json() -> None:
    assert render_call("Bash", {"command": "pytest -q", "description": "run"}) == (
        "[Bash] $ pytest -q")
    assert render_call("shell", '{"command": ["bash", "-lc", "ls"]}') == "[shell] $ bash -lc ls"
    editor = render_call("str_replace_based_edit_tool", {"command": "view", "path": "/a.py"})
    assert editor == '[str_replace_based_edit_tool] {"command": "view", "path": "/a.py"}'


def test_diff_is_cut_from_its_first_header() -> None:
    assert diff_in("6 passed\ndiff --git a/x b/x\n+1\n") == "diff --git a/x b/x\n+1\n"
    assert diff_in("no diff here") is None


def test_final_answer_is_the_last_message_only_when_no_tool_call_follows() -> None:
    done = TraceBuilder()
    done.add("assistant", "looking", "message", "a")
    done.call("c1", "bash", {"command": "pytest"}, "b", 1)
    done.result("c1", "1 passed in 0.1s", "c")
    done.add("assistant", "all good", "message", "d")
    assert [t.kind for t in done.finish()] == ["message", "tool_call", "test_run", "final_answer"]
    cut = TraceBuilder()
    cut.add("assistant", "let me check", "message", "a")
    cut.call("c1", "bash", {"command": "ls"}, "b", 1)
    assert [t.kind for t in cut.finish()] == ["message", "tool_call"]
    submitted = TraceBuilder()
    submitted.call("c1", "bash", {"command": "submit"}, "b", 1)
    assert submitted.finish(last_assistant_is_final=True)[0].kind == "final_answer"


def test_a_result_shares_the_step_and_command_of_its_call() -> None:
    builder = TraceBuilder()
    builder.call("c7", "bash", {"command": "python -m pytest"}, "s", 4)
    turn = builder.result("c7", "boom", "r", exit_code=2)
    assert (turn.step, turn.kind, turn.id) == (4, "test_run", "turn-2")
