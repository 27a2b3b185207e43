"""Claude Code project session files (~/.claude/projects/...): real sessions, detection."""

from __future__ import annotations

import json
from pathlib import Path

from judge.traces import detect_format, import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "claude-code"
SPOTTER = DATA / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"
AGENT_HISTORY = DATA / "06090cb1-3e64-433a-bc7e-a621c0f596d2.jsonl"


def test_real_project_sessions_are_detected() -> None:
    # Their first lines are bookkeeping (file-history-snapshot, queue-operation), not events.
    assert detect_format(SPOTTER) == "claude-code"
    assert detect_format(AGENT_HISTORY) == "claude-code"


def test_a_tool_heavy_session_with_interruptions_and_slash_commands() -> None:
    result = import_traces(SPOTTER)
    assert not result.errors and not result.warnings
    [case] = result.cases
    assert case.id == "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
    assert case.task == "start phoenix in background"
    assert case.agent_model == "claude-opus-4-6"
    assert case.meta["format"] == "claude-code project session"
    assert case.meta["first_line"] == 4
    kinds = [t.kind for t in case.trace]
    # Bash x2, WebSearch, Glob, Read, WebFetch (lines 5, 13, 29, 30, 34, 37), each answered.
    assert kinds.count("tool_call") == 6 and kinds.count("tool_result") == 6
    # Interruption markers, the /mcp command and its output are notes, not user messages.
    notes = [t.content for t in case.trace if t.kind == "note" and t.role == "user"]
    assert notes[0] == "[Request interrupted by user]" and len(notes) == 4
    assert notes[1].startswith("<command-name>/mcp</command-name>")
    users = [t.content for t in case.trace if t.kind == "message" and t.role == "user"]
    assert users[1].startswith("scrolling back in xterm.js still does not work")
    # The session ends interrupted: no final answer is invented.
    assert "final_answer" not in kinds
    # The whitespace-only text block Claude Code writes before thinking is dropped.
    assert all(t.content.strip() for t in case.trace)
    skipped = " | ".join(result.notes)
    assert "'progress' lines" in skipped and "isMeta" in skipped
    assert "'file-history-snapshot' lines" in skipped


def test_a_short_real_session_has_its_final_answer() -> None:
    [case] = import_traces(AGENT_HISTORY).cases
    assert case.task == "[REDACTED_PROMPT]" and case.agent_model == "claude-opus-4-7"
    assert [t.kind for t in case.trace] == ["message", "final_answer"]


def test_sidechain_turns_are_a_subagent_unless_the_file_is_the_subagent(tmp_path: Path) -> None:
    def line(kind: str, text: str, sidechain: bool) -> str:
        message = {"role": kind, "content": [{"type": "text", "text": text}]}
        if kind == "assistant":
            message["id"] = f"msg_{text}"
        return json.dumps(
            {
                "type": kind,
                "sessionId": "s1",
                "isSidechain": sidechain,
                "parentUuid": None,
                "message": message,
            }
        )

    mixed = tmp_path / "s1.jsonl"
    mixed.write_text(
        "\n".join(
            [
                line("user", "fix it", False),
                line("user", "explore", True),
                line("assistant", "found", True),
                line("assistant", "done", False),
            ]
        )
        + "\n"
    )
    [case] = import_traces(mixed, "claude-code").cases
    assert case.task == "fix it"
    assert [t.role for t in case.trace] == ["user", "user", "subagent", "assistant"]
    own = tmp_path / "agent-a1.jsonl"
    own.write_text(
        "\n".join([line("user", "explore", True), line("assistant", "found", True)]) + "\n"
    )
    [agent] = import_traces(own, "claude-code").cases
    assert agent.task == "explore" and agent.trace[-1].kind == "final_answer"
