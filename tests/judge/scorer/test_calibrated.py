"""judge as an Inspect scorer: judging and routing one sample (no inspect_ai needed), then the
real `inspect score LOG --scorer judge/calibrated` against a loopback model server."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.errors import CardError
from judge.scorer import GRADER_FAILED, MARK, NEEDS_REVIEW, CalibratedJudge
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from judge.traces import import_traces
from judge.traces.inspect_eval import read_sample, sample_members
from judge.traces.inspect_zip import ZipReader
from judge.types import Case
from tests.conftest import DATA, require_inspect_ai
from tests.review_fixtures import MODEL, make_card, verdict_for

CALC = DATA / "traces" / "inspect" / "calc.eval"
RUBRIC = "agent-run-success@1"  # the rubric make_card binds


def responder(request: dict[str, Any]) -> Any:
    """P(pass) 0.97 for the sum (the card auto-accepts it), 0.6 for the division (review),
    a broken answer for anything else."""
    text = json.dumps(request.get("messages", []))
    if "2+3" in text:
        return verdict_for(0.97)
    if "1/0" in text:
        return verdict_for(0.6)
    return Reply(content="not JSON at all")


def _cases() -> dict[tuple[str, int], Case]:
    return {(c.slices["task_id"], c.slices["trial"]): c for c in import_traces(CALC).cases}


def _card(tmp_path: Path, **args: Any) -> Path:
    path = tmp_path / "card.yaml"
    path.write_text(make_card(**args).to_yaml())
    return path


# --- judging and routing one case ---------------------------------------------------------------


def test_the_card_decides_c_or_leaves_it_to_people(tmp_path: Path, api_key: None) -> None:
    cases = _cases()
    with LoopbackServer(responder) as server:
        judging = CalibratedJudge.from_args(
            card=str(_card(tmp_path)), db=str(tmp_path / "j.db"), api_base=server.api_base
        )
        # Without rubric and model, the card's judge is used.
        assert judging.rubric.ref == RUBRIC and judging.model == MODEL
        accepted = judging.score(cases["add", 1])
        review = judging.score(cases["2", 1])
        again = judging.score(cases["add", 2])  # the same run: the stored judgment, no call
        assert len(server.requests) == 2
    assert accepted.value == "C" and accepted.reason is None and accepted.answer == "pass"
    meta = accepted.metadata
    assert meta["p_pass"] == pytest.approx(0.97, abs=1e-3)
    assert (
        meta["route"]["decision"] == "auto_accept" and meta["route"]["reason"] == "in_accept_band"
    )
    assert meta["band"]["auto_accept_threshold"] == 0.9 and meta["band"]["decided_by"] == "accept"
    assert meta["card_digest"].startswith("sha256:") and meta[MARK].startswith("j-")
    assert accepted.explanation.startswith("P(pass) set to 0.97.")
    assert accepted.explanation.endswith("Cited evidence: E1, E2")
    assert review.value is None and review.reason == NEEDS_REVIEW and review.answer == "pass"
    assert review.metadata["route"]["reason"] == "outside_bands"
    assert again.value == "C" and again.metadata["called"] == 0 and again.metadata["cached"] == 1
    with Store(tmp_path / "j.db") as store:
        # The case is stored as judge import makes it; the uncertain one waits for people.
        stored = store.get_case(cases["2", 1].id)
        assert stored is not None and stored.trace == cases["2", 1].trace
        queued = {item.case_id for item in store.review_items() if not item.audit}
    assert queued == {cases["2", 1].id}


def test_without_a_card_every_verdict_goes_to_people(tmp_path: Path, api_key: None) -> None:
    with LoopbackServer(responder) as server:
        judging = CalibratedJudge.from_args(
            rubric=RUBRIC, model=MODEL, db=str(tmp_path / "j.db"), api_base=server.api_base
        )
        parts = judging.score(_cases()["add", 1])
    assert parts.value is None and parts.reason == NEEDS_REVIEW and parts.answer == "pass"
    assert parts.metadata["route"]["reason"] == "no_card" and parts.metadata["band"] is None
    assert parts.metadata["p_pass"] == pytest.approx(0.97, abs=1e-3)


def test_a_judge_that_gives_no_verdict_is_a_failed_grader(tmp_path: Path, api_key: None) -> None:
    case = _cases()["add", 1].model_copy(update={"task": "Say something else.", "trace": []})
    case = case.model_copy(update={"diff": "diff --git a/x b/x\n"})
    with LoopbackServer(responder) as server:
        judging = CalibratedJudge.from_args(
            card=str(_card(tmp_path)), db=str(tmp_path / "j.db"), api_base=server.api_base
        )
        parts = judging.score(case)
    assert parts.value is None and parts.reason == GRADER_FAILED
    assert parts.metadata["status"] == "parse_error"
    assert parts.metadata["route"]["reason"] == "parse_error"
    assert parts.explanation.startswith("no verdict (parse_error)")


def test_a_card_for_another_judge_is_refused_before_anything_is_judged(tmp_path: Path) -> None:
    card = _card(tmp_path, model="someone/else")
    with pytest.raises(CardError, match="cannot route this request"):
        CalibratedJudge.from_args(card=str(card), model=MODEL, db=str(tmp_path / "j.db"))
    with pytest.raises(CardError, match="no such card file"):
        CalibratedJudge.from_args(card=str(tmp_path / "absent.yaml"), db=str(tmp_path / "j.db"))


# --- the real `inspect score` -------------------------------------------------------------------


def _scores(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """(sample id, epoch) -> the sample's scores, read back from the log."""
    out = {}
    with ZipReader(path) as log:
        for name in sample_members(log.names()):
            sample = read_sample(log, name)
            out[str(sample["id"]), sample["epoch"]] = sample["scores"]
    return out


def _inspect_score(log: Path, server: LoopbackServer, card: Path, db: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    command = [
        str(inspect),
        "score",
        str(log),
        "--scorer",
        "judge/calibrated",
        "-S",
        f"rubric={RUBRIC}",
        "-S",
        f"model={MODEL}",
        "-S",
        f"card={card}",
        "-S",
        f"db={db}",
        "-S",
        f"api_base={server.api_base}",
        "--action",
        "append",
        "--overwrite",
        "--display",
        "none",
    ]
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", INSPECT_LOG_DIR=str(db.parent))
    done = subprocess.run(
        command, cwd=db.parent, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_inspect_score_with_judge_calibrated_and_a_second_run_calls_no_model(
    tmp_path: Path,
) -> None:
    require_inspect_ai()
    log = tmp_path / "calc.eval"
    shutil.copyfile(CALC, log)
    card, db = _card(tmp_path), tmp_path / "judge.db"
    cases = _cases()
    with LoopbackServer(responder) as server:
        _inspect_score(log, server, card, db)
        assert len(server.requests) == 2  # one per distinct run (both epochs are alike)
        first = _scores(log)
        _inspect_score(log, server, card, db)
        assert len(server.requests) == 2  # scoring again: every verdict from the store
    second = _scores(log)
    for epoch in (1, 2):
        accepted = first["add", epoch]["calibrated"]
        assert accepted["value"] == "C" and accepted["answer"] == "pass"
        assert "Cited evidence: E1, E2" in accepted["explanation"]
        assert accepted["metadata"]["route"]["decision"] == "auto_accept"
        assert accepted["metadata"]["card_digest"].startswith("sha256:")
        review = first["2", epoch]["calibrated"]
        assert math.isnan(review["value"]) and review["reason"] == NEEDS_REVIEW
        assert review["metadata"]["route"]["reason"] == "outside_bands"
        assert review["metadata"]["p_pass"] == pytest.approx(0.6, abs=1e-3)
        # The log's own scores are kept; the second run appended its scorer beside the first.
        assert first["add", epoch]["includes"]["value"] == "C"
        assert second["add", epoch]["calibrated1"]["value"] == "C"
        assert second["add", epoch]["calibrated1"]["metadata"]["called"] == 0
    with Store(db) as store:
        for key in (("add", 1), ("2", 1)):
            stored = store.get_case(cases[key].id)
            # The scorer built the same case from the TaskState as judge import from the log.
            assert stored is not None and stored.task == cases[key].task
            assert [(t.role, t.kind, t.content) for t in stored.trace] == [
                (t.role, t.kind, t.content) for t in cases[key].trace
            ]
