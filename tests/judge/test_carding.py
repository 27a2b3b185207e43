"""judge/carding.py: the judge store read on the judge side, and calibration's layering."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from judge.carding import VerdictSource, load_store_rows, load_verdicts
from judge.errors import InputError
from judge.store import Store
from tests.calibration.test_inputs import _judgments, judgment

#: What calibration/ may import of judge/ (issue 13, "one-way house").
ALLOWED = {"judge.errors", "judge.types", "judge.kinds", "judge.digests"}


def _store(path: Path) -> Path:
    with Store(path) as store:
        for j in _judgments():
            store.put(j)
    return path


def test_load_store_rows_with_filters(tmp_path: Path) -> None:
    db = _store(tmp_path / "judge.db")
    rows = load_store_rows(db)
    assert [r.item_id for r in rows] == ["c1", "c2", "c3", "c4"]
    assert [r.status for r in rows] == ["ok", "ok", "ok", "infra_error"]
    assert [r.item_id for r in load_store_rows(db, "m1", rubric="agent-run-success")] == [
        "c1",
        "c4",
    ]
    assert [r.item_id for r in load_store_rows(db, rubric="other")] == ["c3"]
    assert [r.item_id for r in load_store_rows(db, rubric="other@2")] == ["c3"]
    assert load_store_rows(db, rubric="other@1") == []
    assert load_store_rows(db, selector="2") == []


def test_store_bindings_come_from_the_same_read(tmp_path: Path) -> None:
    db = _store(tmp_path / "judge.db")
    loaded = load_verdicts(VerdictSource(db=str(db), rubric="agent-run-success"))
    assert loaded.kind == "judge store" and {r.item_id for r in loaded.rows} == {"c1", "c2", "c4"}
    # m1 judged c1 and c4 with one binding; m2 judged c2
    assert loaded.bindings["m1"] == [
        {"model": "m1", "rubric_id": "agent-run-success", "rubric_version": 1,
         "rubric_digest": "sha256:r", "selector_version": "1", "token_budget": 1000}
    ]  # fmt: skip
    assert set(loaded.bindings) == {"m1", "m2"}


def test_store_errors_name_the_store(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such database"):
        load_store_rows(tmp_path / "none.db")
    Store(tmp_path / "empty.db").close()
    with pytest.raises(InputError, match="holds no judgments"):
        load_store_rows(tmp_path / "empty.db")
    (tmp_path / "text.db").write_text("not a database, just text\n" * 100)
    with pytest.raises(InputError, match="cannot open the judge store"):
        load_store_rows(tmp_path / "text.db")
    db = _store(tmp_path / "bad.db")
    with Store(db) as store:
        # a stored judgment that no longer validates (written by hand or by an old version)
        store.db.execute("update judgments set json = ? where case_id = 'c2'", ['{"id": "x"}'])
    with pytest.raises(InputError, match="oldest first") as info:
        load_store_rows(db)
    assert info.value.line == 2 and info.value.field == "case_id"


def test_exactly_one_source(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="exactly one of"):
        load_verdicts(VerdictSource())
    with pytest.raises(InputError, match="no such file"):
        load_verdicts(VerdictSource(judgments=str(tmp_path / "none.jsonl")))
    path = tmp_path / "j.jsonl"
    path.write_text(judgment("c9").model_dump_json() + "\n")
    assert load_verdicts(VerdictSource(judgments=str(path))).kind == "judgments"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names
