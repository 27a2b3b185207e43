"""The importer registry, format detection and the shared turn-building rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import plugins
from judge.errors import InputError
from judge.rubrics import RUBRICS_DIR, list_rubrics, load_rubric
from judge.traces import (
    BaseImporter,
    Importer,
    ImportResult,
    detect_format,
    formats,
    get_importer,
    import_traces,
    importers,
)
from judge.traces._common import (
    AGENTRX_GROUND_TRUTH,
    TraceBuilder,
    classify_result,
    diff_in,
    render_call,
)
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces"
FORMATS = [
    "agentrx-tau",
    "claude-code",
    "codex",
    "gold",
    "inspect",
    "inspect-ai",
    "openai-chat",
    "otel-genai",
    "swe-agent",
    "tau-bench",
    "who-and-when",
]


def test_every_format_is_registered_with_a_description() -> None:
    assert sorted(importers()) == FORMATS
    assert [name for name, _ in formats()] == FORMATS
    for name, imp in importers().items():
        assert isinstance(imp, Importer) and imp.name == name and imp.description


def test_unknown_format_error_lists_the_known_ones() -> None:
    with pytest.raises(InputError) as info:
        get_importer("langsmith")
    message = str(info.value)
    assert "langsmith" in message
    for name in FORMATS:
        assert name in message


def test_import_traces_names_a_missing_file_and_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        import_traces(tmp_path / "absent.jsonl", "codex")
    present = tmp_path / "x.jsonl"
    present.write_text("{}\n")
    with pytest.raises(InputError, match="unknown trace format 'nope'"):
        import_traces(present, "nope")


#: Every trace sample (AgentRx's ground truth is a companion of its runs, not a trace).
SAMPLES = sorted(
    p
    for p in DATA.glob("*/*")
    if p.is_file() and p.suffix not in (".md", ".py") and p.name != AGENTRX_GROUND_TRUTH
)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
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
    both.write_text(
        json.dumps(
            {"type": "system", "session_id": "s", "id": "x", "kind": "agent_run", "task": "t"}
        )
        + "\n"
    )
    with pytest.raises(InputError, match="ambiguous"):
        detect_format(both)


class _Fake(BaseImporter):
    description = "a fake format from a plugin package"

    def load(self, path: Path) -> ImportResult:
        return ImportResult(notes=[f"read {path.name}"])


class _EntryPoint:
    """What importlib.metadata gives for an entry point, as far as judge reads it."""

    def __init__(self, name: str, obj: object) -> None:
        self.name, self.value, self.dist, self._obj = name, f"plugin:{name}", None, obj

    def load(self) -> object:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[_EntryPoint]]:
    """Entry points as if a plugin package were installed beside judge."""
    extra: dict[str, list[_EntryPoint]] = {plugins.IMPORTERS: [], plugins.RUBRICS: []}
    real = plugins.entry_points

    def entry_points(group: str) -> list[object]:
        return sorted([*real(group), *extra.get(group, [])], key=lambda ep: ep.name)

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    plugins.load_group.cache_clear()
    importers.cache_clear()
    yield extra
    plugins.load_group.cache_clear()
    importers.cache_clear()


def test_the_built_in_importers_and_rubrics_are_entry_points() -> None:
    names = {ep.name for ep in plugins.entry_points(plugins.IMPORTERS)}
    assert names == set(FORMATS)
    assert [ep.name for ep in plugins.entry_points(plugins.RUBRICS)] == ["builtin"]


def test_an_installed_plugin_adds_an_importer_and_rubrics(
    installed: dict[str, list[_EntryPoint]], tmp_path: Path
) -> None:
    installed[plugins.IMPORTERS].append(_EntryPoint("test-only-format", _Fake))
    folder = tmp_path / "rubrics" / "plugin-check" / "v1"
    folder.mkdir(parents=True)
    builtin = RUBRICS_DIR / "agent-run-success" / "v1"
    (folder / "rubric.yaml").write_text(
        (builtin / "rubric.yaml").read_text().replace("agent-run-success", "plugin-check")
    )
    (folder / "prompt.md").write_text((builtin / "prompt.md").read_text())
    installed[plugins.RUBRICS].append(_EntryPoint("zz-plugin", tmp_path / "rubrics"))
    assert get_importer("test-only-format").load(Path("a.x")).notes == ["read a.x"]
    assert "test-only-format" in dict(formats())
    assert load_rubric("plugin-check").ref == "plugin-check@1"
    refs = {r.ref for r in list_rubrics()}
    assert "plugin-check@1" in refs and "agent-run-success@2" in refs


def test_a_broken_plugin_is_named(installed: dict[str, list[_EntryPoint]]) -> None:
    installed[plugins.IMPORTERS].append(_EntryPoint("broken", ImportError("no module x")))
    with pytest.raises(plugins.PluginError, match="'broken'.*no module x"):
        get_importer("gold")
    plugins.load_group.cache_clear()
    importers.cache_clear()
    installed[plugins.IMPORTERS][-1] = _EntryPoint("not-an-importer", object())
    with pytest.raises(plugins.PluginError, match="not an importer"):
        get_importer("gold")


# --- classification -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kwargs", "kind"),
    [
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
    ],
)
def test_results_are_classified(text: str, kwargs: dict[str, object], kind: str) -> None:
    assert classify_result(text, **kwargs) == kind  # type: ignore[arg-type]


def test_shell_calls_render_as_commands_and_other_tools_as_json() -> None:
    assert render_call("Bash", {"command": "pytest -q", "description": "run"}) == (
        "[Bash] $ pytest -q"
    )
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
