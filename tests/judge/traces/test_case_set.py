"""The cases of several imports as one set: what ``judge import`` writes, from Python."""

from __future__ import annotations

from pathlib import Path

from judge.traces import CaseSet, ImportResult, import_traces
from tests.conftest import DATA
from tests.review_fixtures import make_case


def test_a_case_without_a_task_or_with_a_taken_id_is_left_out() -> None:
    untasked = make_case(3).model_copy(update={"task": "  "})
    first = ImportResult(cases=[make_case(1), make_case(2), untasked], gold={"case-2": "pass"})
    second = ImportResult(cases=[make_case(2), make_case(4)], gold={"case-2": "fail"})
    found = CaseSet()
    added = found.add(first, "a.jsonl")
    assert (added.added, added.duplicates, [c.id for c in added.read]) == (
        2,
        [],
        ["case-1", "case-2"],
    )
    again = found.add(second, "b.jsonl")
    assert again.added == 1 and [c.id for c in again.read] == ["case-2", "case-4"]
    [duplicate] = again.duplicates
    assert str(duplicate) == "b.jsonl: case id 'case-2' already imported from a.jsonl; skipped"
    assert [c.id for c in found.cases] == ["case-1", "case-2", "case-4"]
    assert found.origins == {"case-1": "a.jsonl", "case-2": "a.jsonl", "case-4": "b.jsonl"}
    records = found.records()
    assert [r.get("gold") for r in records] == [None, "pass", None]  # the first import's label
    assert records[0] == make_case(1).model_dump(mode="json")


def test_the_same_file_twice_adds_its_cases_once(tmp_path: Path) -> None:
    source = DATA / "traces" / "openai-chat" / "runs.jsonl"
    copy = tmp_path / "again.jsonl"
    copy.write_text(source.read_text())
    found = CaseSet()
    for path in (source, copy):
        found.add(import_traces(path, "openai-chat"), str(path))
    assert [c.id for c in found.cases] == ["chat-run-0101", "chat-run-0102"]
    assert set(found.origins.values()) == {str(source)}
