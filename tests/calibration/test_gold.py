"""Gold sets: strict loading with file/line/field errors, lineage, schema, conversion to cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibration.gold import (
    GoldRecord,
    load_gold,
    main,
    schema_text,
    write_gold,
)
from judge.errors import InputError
from tests.conftest import REPO, shared_path


def _pair(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": "p1",
        "source": "unit",
        "license": "MIT",
        "kind": "pairwise",
        "task": "Which is better?",
        "candidates": {"A": "short", "B": "a longer answer"},
        "diff": None,
        "trace": [],
        "gold": "A",
        "gold_source": "hand",
        "slices": {"subset": "s1"},
        "meta": {"repo": "o/r", "commit": "abc", "path": "d.json"},
    }
    rec.update(over)
    return rec


def _run(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": "r1",
        "source": "unit",
        "license": "MIT",
        "kind": "agent_run",
        "task": "Fix the bug",
        "diff": "diff --git a/x b/x",
        "trace": [{"id": "t1", "role": "agent", "content": "ls", "step": 1}],
        "gold": "pass",
        "gold_source": "tests",
        "slices": {"model": "gemini-3-pro", "task_id": 7},
        "meta": {},
    }
    rec.update(over)
    return rec


def _write(tmp_path: Path, *records: Any, name: str = "gold.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
        encoding="utf-8",
    )
    return path


def test_load_counts_digest_and_lookup(tmp_path: Path) -> None:
    path = _write(tmp_path, _pair(), _pair(id="p2", gold="B"), _run())
    gs = load_gold(path)
    assert gs.n == 3 and len(gs) == 3
    assert gs.name == "gold"
    assert gs.label_counts == {"A": 1, "B": 1, "pass": 1}
    assert gs.kinds == {"pairwise": 2, "agent_run": 1}
    import hashlib

    assert gs.digest == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert gs.labels() == {"p1": "A", "p2": "B", "r1": "pass"}
    assert gs.get("r1") is not None and gs.get("nope") is None


def test_digest_changes_with_any_byte(tmp_path: Path) -> None:
    a = load_gold(_write(tmp_path, _pair(), name="a.jsonl")).digest
    b = load_gold(_write(tmp_path, _pair(task="Which is better?!"), name="b.jsonl")).digest
    assert a != b


def test_gold_label_must_match_kind(tmp_path: Path) -> None:
    path = _write(tmp_path, _pair(), _run(), _run(id="r2", gold="A"))
    with pytest.raises(InputError) as info:
        load_gold(path)
    err = info.value
    assert (err.line, err.field) == (3, "gold")
    assert str(err).startswith(f"{path}:3 field 'gold': must be pass or fail for kind agent_run")


def test_pairwise_gold_may_be_tie_but_not_pass(tmp_path: Path) -> None:
    assert load_gold(_write(tmp_path, _pair(gold="tie"))).label_counts == {"tie": 1}
    with pytest.raises(InputError, match="must be A or B or tie"):
        load_gold(_write(tmp_path, _pair(gold="pass"), name="x.jsonl"))


@pytest.mark.parametrize(
    ("record", "field", "text"),
    [
        (_pair(candidates={"A": "x"}), "candidates", "exactly the keys A and B"),
        (_pair(candidates=None), "candidates", "exactly the keys A and B"),
        (_run(candidates={"A": "x", "B": "y"}), "candidates", "no candidates"),
        (_pair(colour="red"), "colour", "not a field"),
        ({k: v for k, v in _pair().items() if k != "gold_source"}, "gold_source", "required"),
        (_run(trace=[{"id": "t", "role": "agent"}]), "trace[0].content", "required"),
        (_pair(kind="essay"), "kind", "pairwise"),
        (_pair(id=""), "id", "at least 1"),
        (_pair(lineage={"labeller": "me", "when": "now"}), "lineage.when", "not a field"),
    ],
)
def test_errors_name_line_and_field(
    tmp_path: Path, record: dict[str, Any], field: str, text: str
) -> None:
    path = _write(tmp_path, _pair(id="ok"), record)
    with pytest.raises(InputError) as info:
        load_gold(path)
    assert info.value.line == 2
    assert info.value.field == field
    assert text in str(info.value)
    assert str(path) in str(info.value)


def test_invalid_json_and_utf8_name_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _pair(), '{"id": "p2", ')
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_gold(path)
    assert info.value.line == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(_pair()).encode() + b"\n\n" + b'{"id": "\xff"}\n')
    with pytest.raises(InputError, match="UTF-8") as info:
        load_gold(bad)
    assert info.value.line == 3  # the blank line 2 is skipped but still counted


def test_not_an_object_duplicates_and_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected a JSON object"):
        load_gold(_write(tmp_path, "[1, 2]"))
    with pytest.raises(InputError, match=r"duplicate id 'p1' \(first on line 1\)") as info:
        load_gold(_write(tmp_path, _pair(), _pair(gold="B"), name="d.jsonl"))
    assert (info.value.line, info.value.field) == (2, "id")
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no records"):
        load_gold(empty)
    with pytest.raises(InputError, match="cannot read"):
        load_gold(tmp_path / "missing.jsonl")


def test_lineage_derived_when_absent_and_kept_when_present(tmp_path: Path) -> None:
    given = {
        "source": "review queue",
        "labeller": "ann-3",
        "created_at": "2025-01-02T03:04:05Z",
        "derived_from": ["judgment:j1", "card:sha256:ab"],
    }
    gs = load_gold(_write(tmp_path, _pair(), _pair(id="p2", lineage=given), _run()))
    derived = gs.records[0].lineage
    assert derived is not None
    assert (derived.source, derived.labeller) == ("unit", "hand")
    assert derived.derived_from == ["o/r@abc:d.json"]
    kept = gs.records[1].lineage
    assert kept is not None and kept.labeller == "ann-3"
    assert kept.derived_from == ["judgment:j1", "card:sha256:ab"]
    assert kept.created_at is not None and kept.created_at.year == 2025
    run_lineage = gs.records[2].lineage
    assert run_lineage is not None and run_lineage.derived_from == []  # no meta.repo


def test_to_case_drops_labels_and_takes_agent_model() -> None:
    run = GoldRecord.model_validate(_run())
    case = run.to_case()
    assert case.kind == "agent_run" and case.id == "r1"
    assert case.agent_model == "gemini-3-pro"
    assert case.slices["task_id"] == 7
    assert case.trace[0].content == "ls" and case.trace[0].step == 1
    dumped = case.model_dump()
    for label_field in ("gold", "gold_source", "license", "source", "lineage"):
        assert label_field not in dumped
    tau = GoldRecord.model_validate(_run(slices={"agent_model": "gpt-4o"}))
    assert tau.to_case().agent_model == "gpt-4o"
    pair = GoldRecord.model_validate(_pair())
    assert pair.to_case().candidates == {"A": "short", "B": "a longer answer"}
    assert pair.to_case().agent_model is None


def test_write_gold_round_trips(tmp_path: Path) -> None:
    gs = load_gold(_write(tmp_path, _pair(), _run()))
    out = tmp_path / "out.jsonl"
    digest = write_gold(gs.records, out)
    again = load_gold(out)
    assert again.digest == digest
    assert again.records == gs.records  # lineage derived at first load is now explicit


def test_committed_schema_equals_generated() -> None:
    committed = (REPO / "gold" / "schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(), "run: python -m calibration.gold schema > gold/schema.json"
    schema = json.loads(committed)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) >= {"id", "kind", "task", "gold", "gold_source"}


def test_cli_check_and_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _pair())
    assert main(["check", str(path)]) == 0
    assert "1 records" in capsys.readouterr().out
    bad = _write(tmp_path, _pair(gold="pass"), name="bad.jsonl")
    assert main(["check", str(bad)]) == 1
    assert main(["schema"]) == 0
    assert main([]) == 2


@pytest.mark.shared
@pytest.mark.parametrize(
    ("name", "n", "labels"),
    [
        ("judgebench_claude", 270, {"A": 143, "B": 127}),
        ("llmbar_natural", 100, {"A": 42, "B": 58}),
        ("llmbar_casestudy", 315, {"A": 156, "B": 159}),
        ("llmbar_human", 466, {"A": 234, "B": 232}),
        ("swebench_verified_dev", 306, {"pass": 233, "fail": 73}),
        ("taubench_airline_dev", 100, {"pass": 31, "fail": 69}),
    ],
)
def test_shared_gold_sets_load(name: str, n: int, labels: dict[str, int]) -> None:
    gs = load_gold(shared_path(f"gold/{name}.jsonl"))
    assert gs.n == n
    assert gs.label_counts == labels  # the counts in ../shared/gold/README.md
    assert all(r.lineage is not None and r.lineage.labeller == r.gold_source for r in gs)
    cases = gs.cases()
    assert len(cases) == n
    if name == "swebench_verified_dev":
        assert cases[0].agent_model == "gemini-3-pro-preview"
    if name == "taubench_airline_dev":
        assert cases[0].agent_model == "gpt-4o"
