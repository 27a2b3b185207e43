"""``judge check``: the deterministic checks on a case file, and their figures (--suites)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from judge.checks import CHECKS
from judge.cli import cli
from judge.errors import InputError

SKIP_DIFF = (
    "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n"
    "+++ b/tests/test_x.py\n@@ -3,2 +3,3 @@\n import pytest\n+@pytest.mark.skip\n def test_a():\n"
)


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _cases(tmp_path: Path, *records: dict[str, Any] | str) -> Path:
    path = tmp_path / "cases.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_gives_every_check_per_case(tmp_path: Path) -> None:
    path = _cases(
        tmp_path,
        {"id": "skip", "kind": "agent_run", "task": "fix", "diff": SKIP_DIFF},
        {"id": "bare", "kind": "agent_run", "task": "fix"},
    )
    result = _invoke(["check", str(path), "--format", "jsonl", "--protected", "eval/*"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [row["case_id"] for row in rows] == ["skip", "bare"]
    skip = {c["id"]: c for c in rows[0]["checks"]}
    assert list(skip) == list(CHECKS)
    assert set(skip["skip-added"]) == {"id", "version", "status", "hard", "evidence", "reason"}
    assert skip["skip-added"]["status"] == "fail"
    assert skip["skip-added"]["evidence"] == ["diff:tests/test_x.py@@-3,2+3,3"]
    assert skip["protected-touched"]["status"] == "pass"
    assert {c["status"] for c in rows[1]["checks"]} == {"unknown"}


def test_the_table_lists_failures(tmp_path: Path) -> None:
    path = _cases(tmp_path, {"id": "skip", "kind": "agent_run", "task": "fix", "diff": SKIP_DIFF})
    result = _invoke(["check", str(path)])
    assert result.exit_code == 0
    assert "skip-added" in result.output and "fail" in result.output


def test_bad_records_name_their_line_and_exit_1(tmp_path: Path) -> None:
    path = _cases(
        tmp_path,
        {"id": "ok", "kind": "agent_run", "task": "fix", "diff": "not a diff"},
        "{not json",
        {"id": "nokind", "task": "fix"},
    )
    result = CliRunner().invoke(cli, ["check", str(path), "--format", "jsonl"])
    assert result.exit_code == 1
    assert f"{path}:2" in result.output and f"{path}:3" in result.output
    row = json.loads(result.stdout.splitlines()[0])
    statuses = {c["id"]: c["status"] for c in row["checks"]}
    assert statuses["skip-added"] == "unknown"


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "nope.jsonl")])
    assert result.exit_code != 0


def test_suites_print_each_checks_figures() -> None:
    result = _invoke(["check", "--suites", "--format", "jsonl"])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [row["id"] for row in rows] == list(CHECKS)
    for row in rows:
        assert {"all", "handwritten"} <= set(row)
        low, high = row["all"]["precision_wilson"]
        assert 0 <= low <= high <= 1


def test_a_diff_given_as_the_case_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "fix.patch"
    path.write_text("\n" + SKIP_DIFF)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert isinstance(result.exception, InputError)  # the entry point prints it, exit 2
    assert f"{path}: a unified diff, not a case file" in str(result.exception)
    assert f"judge check --diff {path}" in str(result.exception)


def test_a_diff_is_checked_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "fix.patch"
    path.write_text(SKIP_DIFF)
    result = _invoke(["check", "--diff", str(path), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    assert row["case_id"] == "fix.patch"
    status = {c["id"]: c["status"] for c in row["checks"]}
    assert status["skip-added"] == "fail"
    assert status["tests-after-last-edit"] == "unknown"  # no trace
    both = CliRunner().invoke(cli, ["check", str(path), "--diff", str(path)])
    assert both.exit_code == 2 and "not both" in both.output
