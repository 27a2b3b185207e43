"""The runner's step keys: a finished batch re-runs from the store without selecting evidence."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import judge.judging.prepare as prepare_module
import judge.judging.runner as runner_module
from judge.judging import Runner, code_digest, plan
from judge.providers import CallResult, ModelParams
from judge.rubrics import load_rubric
from judge.store import Store
from judge.types import Case, TraceTurn


def _case(i: int, task: str = "Fix the parser") -> Case:
    return Case(
        id=f"c{i}",
        kind="agent_run",
        task=f"{task} #{i}",
        diff="--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        trace=[
            TraceTurn(id="m0", role="agent", content="pytest -q"),
            TraceTurn(id="m1", role="observation", content="3 passed in 0.1s"),
        ],
    )


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the provider with a fake that answers pass and counts its calls."""
    made: list[str] = []

    async def fake_call(
        model: str,
        messages: list[dict[str, str]],
        answer_model: type[BaseModel],
        labels: Sequence[str],
        params: ModelParams,
        **_: Any,
    ) -> CallResult:
        made.append(messages[-1]["content"])
        answer = answer_model(verdict="pass", evidence=["E1"], rationale="E1 shows it.")
        return CallResult(answer=answer, raw_output="{}", label_probs=None, prompt_tokens=10)

    monkeypatch.setattr(runner_module, "call_model", fake_call)
    return made


def _run(store: Store, cases: list[Case]) -> Any:
    rubric = load_rubric("agent-run-success")
    runner = Runner(store, rubric, ModelParams(), concurrency=2)
    return asyncio.run(runner.run(plan(cases, rubric, ["fake/judge"], variants=1)))


def test_rerun_finds_every_judgment_by_step_key_without_selecting_evidence(
    tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [_case(i) for i in range(3)]
    with Store(tmp_path / "j.db") as store:
        first = _run(store, cases)
        assert (first.called, first.cached, len(calls)) == (3, 0, 3)
        assert store.count("cases") == 3 and store.count("step_keys") == 3

        def no_selection(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("evidence was selected for a step already judged")

        monkeypatch.setattr(prepare_module, "select_evidence", no_selection)
        second = _run(store, cases)
    assert (second.called, second.cached, len(calls)) == (0, 3, 3)
    assert sorted(o.judgment.id for o in second.outcomes) == sorted(
        o.judgment.id for o in first.outcomes
    )


def test_a_changed_case_misses_its_step_key_and_is_judged_again(
    tmp_path: Path, calls: list[str]
) -> None:
    with Store(tmp_path / "j.db") as store:
        _run(store, [_case(1)])
        again = _run(store, [_case(1, task="Fix the lexer")])
        # Same case id, other content: a new prompt, so a new call; and the case row follows.
        assert (again.called, again.cached, len(calls)) == (1, 0, 2)
        stored = store.get_case("c1")
    assert stored is not None and stored.task == "Fix the lexer #1"


def test_a_prompt_already_judged_under_other_inputs_is_found_by_cache_key(
    tmp_path: Path, calls: list[str]
) -> None:
    # slices never reach the prompt: a new step key, the same cache key, no second call.
    with Store(tmp_path / "j.db") as store:
        _run(store, [_case(1)])
        again = _run(store, [_case(1).model_copy(update={"slices": {"repo": "x"}})])
        assert (again.called, again.cached, len(calls)) == (0, 1, 1)
        assert store.count("step_keys") == 2  # both inputs now lead to the judgment


def test_code_digest_covers_the_modules_that_build_the_prompt() -> None:
    root = Path(runner_module.__file__).resolve().parents[1]
    modules = runner_module._judge_imports(root, "judge.judging.runner")
    assert {
        "judge.judging.runner",
        "judge.evidence",
        "judge.safety.redact",
        "judge.rubrics",
        "judge.store",
        "judge.providers",
        "judge.types",
    } <= set(modules)
    assert "judge.cli" not in modules  # the CLI does not shape prompts
    assert code_digest().startswith("sha256:") and code_digest() == code_digest()
