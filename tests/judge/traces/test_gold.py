"""The gold importer is load_cases: the same cases, errors and labels."""

from __future__ import annotations

import pytest

from judge.cases import load_cases
from judge.traces import import_traces
from tests.conftest import DATA, shared_path

SAMPLE = DATA / "traces" / "gold" / "sample.jsonl"


def test_gold_sample_matches_load_cases() -> None:
    result = import_traces(SAMPLE)
    loaded = load_cases(SAMPLE)
    assert result.cases == loaded.cases and result.gold == loaded.gold
    assert [str(e) for e in result.errors] == [str(e) for e in loaded.errors]
    assert [(e.line, e.field) for e in result.errors] == [(3, "kind"), (4, None)]
    assert result.gold == {"textkit-12/run-1": "pass", "pair-1": "A"}
    assert result.cases[0].agent_model == "gpt-4o"


@pytest.mark.shared
def test_the_shared_swe_bench_gold_set_imports_cleanly() -> None:
    result = import_traces(shared_path("gold/swebench_verified_dev.jsonl"), "gold")
    assert not result.errors and len(result.cases) == 306
    assert sum(v == "pass" for v in result.gold.values()) == 233  # README: pass 233 / fail 73
