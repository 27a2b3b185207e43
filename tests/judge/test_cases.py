"""Reading cases: every bad record named by line and field, every good one kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cases import MAX_DEPTH, bad_value, load_cases
from judge.errors import InputError
from tests.conftest import shared_path

GOOD = {
    "id": "r1",
    "kind": "agent_run",
    "task": "Fix the bug",
    "diff": "--- a\n+++ b\n",
    "trace": [{"id": "m0", "role": "agent", "content": "ran tests"}],
    "gold": "pass",
    "source": "demo",
    "license": "x",
    "gold_source": "tests",
    "slices": {"model": "gpt-x"},
    "meta": {},
}


def _write(tmp_path: Path, lines: list[str | bytes]) -> Path:
    path = tmp_path / "cases.jsonl"
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line if isinstance(line, bytes) else line.encode())
            handle.write(b"\n")
    return path


def test_gold_format_becomes_cases_with_gold_and_agent_model(tmp_path: Path) -> None:
    loaded = load_cases(_write(tmp_path, [json.dumps(GOOD)]))
    assert not loaded.errors
    case = loaded.cases[0]
    assert case.agent_model == "gpt-x" and loaded.gold == {"r1": "pass"}


def test_each_bad_record_is_named_and_the_rest_are_kept(tmp_path: Path) -> None:
    bad_kind = dict(GOOD, id="r2", kind="essay")
    extra = dict(GOOD, id="r3", colour="red")
    missing = {k: v for k, v in GOOD.items() if k != "task"} | {"id": "r4"}
    pair_no_candidates = dict(GOOD, id="r5", kind="pairwise")
    lines: list[str | bytes] = [
        json.dumps(GOOD),
        "{oops",
        b"\xff\xfe",
        json.dumps(bad_kind),
        json.dumps(extra),
        json.dumps(missing),
        json.dumps(pair_no_candidates),
        "[1, 2]",
        json.dumps(GOOD),
    ]
    loaded = load_cases(_write(tmp_path, lines))
    assert [c.id for c in loaded.cases] == ["r1"]
    messages = [str(e) for e in loaded.errors]
    assert len(messages) == 8
    assert ":2: not valid JSON" in messages[0]
    assert ":3: not valid UTF-8" in messages[1]
    assert ":4 field 'kind'" in messages[2]
    assert ":5 field 'colour': unknown field" in messages[3]
    assert ":6 field 'task': required field is missing" in messages[4]
    assert ":7" in messages[5] and "candidates" in messages[5]
    assert ":8: each line must be a JSON object" in messages[6]
    assert ":9 field 'id': duplicate id (first on line 1)" in messages[7]
    assert all(isinstance(e, InputError) and e.file for e in loaded.errors)


def _nest(depth: int, leaf: object) -> object:
    """``leaf`` inside ``depth`` levels of alternating lists and dicts."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("leaf", ["text", 3, None, [], {}, ["x"], {"a": 1}])
def test_the_nesting_only_check_agrees_with_the_full_check(depth: int, leaf: object) -> None:
    # What iter_jsonl skips when the text has no \u0000 or surrogate escape: the depth
    # verdict and the field named must be the same as the full walk's.
    doc = {"id": "x", "meta": {"pad": ["a", {"b": "c"}], "deep": _nest(depth, leaf)}}
    assert bad_value(doc, check_strings=False) == bad_value(doc)


@pytest.mark.parametrize(
    ("escape", "problem"),
    [
        ("\\u0000", "contains a NUL character"),
        ("\\ud800", "contains a lone UTF-16 surrogate"),
        ("\\uDC00", "contains a lone UTF-16 surrogate"),  # a low surrogate, upper-case hex
    ],
)
def test_escaped_nul_and_surrogates_are_found_through_the_text_precheck(
    tmp_path: Path, escape: str, problem: str
) -> None:
    good = json.dumps(GOOD)
    bad = good.replace('"Fix the bug"', f'"Fix {escape} the bug"')
    pair = json.dumps(dict(GOOD, id="r2")).replace('"Fix the bug"', '"Fix \\ud83d\\ude00"')
    loaded = load_cases(_write(tmp_path, [bad, pair]))
    assert len(loaded.errors) == 1 and problem in str(loaded.errors[0])
    assert "field 'task'" in str(loaded.errors[0])
    assert [c.task for c in loaded.cases] == ["Fix \U0001f600"]  # a valid pair is kept


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_cases(tmp_path / "nope.jsonl")


@pytest.mark.shared
def test_every_shared_gold_file_loads() -> None:
    for name in (
        "swebench_verified_dev.jsonl",
        "taubench_airline_dev.jsonl",
        "llmbar_natural.jsonl",
        "judgebench_claude.jsonl",
    ):
        loaded = load_cases(shared_path(f"gold/{name}"))
        assert not loaded.errors, loaded.errors[:3]
        assert len(loaded.gold) == len(loaded.cases) > 0
