"""One format story: what `judge import` writes is accepted by `judge run`, `judge runset` and
`judge gold validate`; once labelled it is a gold record; the committed JSON schemas equal the
models; gold/README.md documents the run-set fields RunRecord has and names commands that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import judge
from calibration.gold import case_schema_text, check_file, load_gold, main, schema_text
from judge.cli import cli
from judge.runsets.records import RunRecord
from tests.conftest import REPO

TRACES = REPO / "tests" / "data" / "traces"
STREAM = TRACES / "claude-code" / "max_turns.jsonl"  # `claude -p` stream-json: no prompt
TAU = TRACES / "tau-bench" / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1115143012.json"
README = (REPO / "gold" / "README.md").read_text(encoding="utf-8")


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    """Claude Code stream-json (no task recorded: given with --task) and tau-bench results
    (labelled by their reward), imported as `judge import` writes them."""
    out = tmp_path / "cases.jsonl"
    code, output = _invoke(
        ["import", str(STREAM), "--task", "Fix slugify.", "--out", str(tmp_path / "claude.jsonl")]
    )
    assert code == 0, output
    # One tau-bench run of the sample ended in a rate-limit error: refused (exit 1), the two
    # complete runs written.
    code, output = _invoke(["import", str(TAU), "--out", str(tmp_path / "tau.jsonl")])
    assert code == 1 and "2 cases" in output, output
    out.write_text(
        (tmp_path / "claude.jsonl").read_text(encoding="utf-8")
        + (tmp_path / "tau.jsonl").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    return out


def test_committed_case_schema_equals_generated() -> None:
    committed = (REPO / "gold" / "case.schema.json").read_text(encoding="utf-8")
    assert committed == case_schema_text(), "run: judge gold schema case > gold/case.schema.json"
    assert (REPO / "gold" / "schema.json").read_text(encoding="utf-8") == schema_text()
    code, output = _invoke(["gold", "schema", "case"])
    assert code == 0 and output == committed


def test_import_output_validates_against_the_case_schema(imported: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    case_schema = json.loads((REPO / "gold" / "case.schema.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in imported.read_text(encoding="utf-8").splitlines()]
    assert len(records) >= 2 and any("gold" in r for r in records)
    for record in records:
        jsonschema.validate(record, case_schema)
    # A gold record is a case with a label: labelled, the same record meets the gold schema.
    gold_schema = json.loads((REPO / "gold" / "schema.json").read_text(encoding="utf-8"))
    labelled = {
        **records[0],
        "gold": "pass",
        "gold_source": "a reviewer",
        "source": "mine",
        "license": "CC-BY-4.0",
    }
    jsonschema.validate(labelled, gold_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**records[0], "gold": "pass"}, gold_schema)


def test_gold_validate_accepts_import_output_and_says_what_is_not_gold_yet(
    imported: Path,
) -> None:
    code, output = _invoke(["gold", "validate", str(imported)])
    assert code == 0, output
    found = check_file(imported)
    assert found.errors == []
    assert sum(found.unlabelled.values()) == 1  # the Claude Code run: no label
    assert sum(found.labelled_cases.values()) >= 1  # tau-bench rewards, no provenance yet
    assert "unlabelled" in output and "labelled without source, license, gold_source" in output
    # Calibration needs complete gold records: --labelled says which field is missing.
    code, output = _invoke(["gold", "validate", "--labelled", str(imported)])
    assert code == 1 and "field 'gold'" in output and "is a case" in output
    assert main(["check", str(imported)]) == 0
    assert main(["check", "--labelled", str(imported)]) == 1


def test_a_labelled_import_is_gold_and_judges_the_same_case(imported: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in imported.read_text(encoding="utf-8").splitlines()]
    labelled = tmp_path / "gold.jsonl"
    labelled.write_text(
        "".join(
            json.dumps(
                {
                    **r,
                    "gold": r.get("gold", "pass"),
                    "gold_source": "test author",
                    "source": "tests",
                    "license": "MIT",
                }
            )
            + "\n"
            for r in records
        ),
        encoding="utf-8",
    )
    gold = load_gold(labelled)
    as_cases = judge.load_cases(imported)
    assert as_cases.errors == []
    # The judge sees exactly the imported case: trace kinds, sources and the agent's model kept.
    assert gold.cases() == as_cases.cases
    code, output = _invoke(["gold", "validate", "--labelled", str(labelled)])
    assert code == 0 and f"{len(records)} records" in output


def test_bad_records_are_all_listed_by_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    good = {"id": "a", "kind": "agent_run", "task": "t"}
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({"id": "b", "kind": "agent_run", "task": "t", "trace": [{"id": "x"}]}),
                "{not json",
                json.dumps({**good, "gold": "A"}),  # not a label of an agent run
                json.dumps({**good, "gold_sorce": "typo"}),
                json.dumps(good),  # duplicate id
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    found = check_file(path)
    where = [(e.line, e.field) for e in found.errors]
    assert where == [(2, "trace[0].role"), (3, None), (4, "gold"), (5, "gold_sorce"), (6, "id")]
    assert found.n == 1


def test_judge_run_and_runset_accept_import_output(imported: Path, tmp_path: Path) -> None:
    assert judge.load_cases(imported).errors == []
    runs = tmp_path / "runs.jsonl"
    code, output = _invoke(["runset", str(imported), "--out", str(runs)])
    assert code == 0, output
    loaded = judge.load_runs(runs)
    assert loaded.errors == []
    by_id = {r.run_id: r for r in loaded.runs}
    claude = by_id["1c7e9a02-5d3f-4b8e-8f21-6a4b3c2d1e0f"]
    assert claude.record.treatment == "claude-haiku-4-5-20251001"
    assert claude.record.task_id.startswith("task-") and claude.official is None
    assert claude.record.meta["derived"]["repetition"] == "file order"
    # tau-bench records carry their task id and trial in the slices, and their reward.
    tau = [r for r in loaded.runs if r is not claude]
    assert tau and all(r.official in ("pass", "fail") for r in tau)
    assert "task_id" not in tau[0].record.meta.get("derived", {})


def test_readme_run_set_table_lists_every_run_record_field() -> None:
    section = README[README.index("## Run sets") :]
    documented: set[str] = set()
    for row in re.findall(r"^\| (`[^|]+) \|", section, flags=re.MULTILINE):
        documented |= set(re.findall(r"`([a-z_]+)`", row))
    assert documented == set(RunRecord.model_fields)


def test_gold_readme_names_commands_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert "python -m calibration.gold check" in README
    assert main(["check", str(REPO / "gold" / "demo.jsonl")]) == 0
    assert "14 records" in capsys.readouterr().out
    for command in ("judge gold validate", "judge gold schema", "judge runset", "judge import"):
        assert command in README
        code, _ = _invoke([*command.split()[1:], "--help"])
        assert code == 0, command
