"""How many judgments run at once: one default and one knob (``JudgeOptions.concurrency``), the
same in this process and in each Ray worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import judge.judging
import judge.judging.batch as batch_module
import judge.store
from judge.defaults import DEFAULT_MODEL
from judge.rubrics import load_rubric

HOSTED = "openai/gpt-4o"


@pytest.mark.parametrize(
    ("models", "concurrency", "expected"),
    [
        ([DEFAULT_MODEL], None, 1),  # the embedded model runs one call at a time
        ([HOSTED], None, judge.judging.DEFAULT_CONCURRENCY),
        ([HOSTED, DEFAULT_MODEL], None, judge.judging.DEFAULT_CONCURRENCY),
        ([DEFAULT_MODEL], 3, 3),
        ([HOSTED], 7, 7),
        ([HOSTED], 0, 1),  # at least one, on Ray as in this process
    ],
)
def test_each_ray_worker_runs_the_judgments_in_flight_of_this_process(
    models: list[str],
    concurrency: int | None,
    expected: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def on_ray(*args: Any, **kwargs: Any) -> judge.judging.RunSummary:
        seen.update(kwargs)
        return judge.judging.RunSummary(batch_id=kwargs["batch_id"])

    monkeypatch.setattr(batch_module, "run_on_ray", on_ray)
    options = judge.judging.JudgeOptions(
        concurrency=concurrency, ray=judge.judging.RayOptions(workers=2)
    )
    with judge.store.open_store(tmp_path / "j.db") as store:
        judge.judging.run_steps(
            store, [], rubric=load_rubric("agent-run-success@2"), models=models, options=options
        )
    # The in-process Runner runs max(1, options.in_flight(models)) at once: the same number.
    assert seen["concurrency"] == max(1, options.in_flight(models)) == expected
    assert seen["options"] == judge.judging.RayOptions(workers=2)


def test_ray_options_have_no_second_concurrency() -> None:
    with pytest.raises(TypeError):
        judge.judging.RayOptions(concurrency=2)  # type: ignore[call-arg]
