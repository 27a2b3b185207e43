"""First bad decisions in the review queue: diagnosed runs queued as fbd items, labels that name a
step, confirmation read back by judge.diagnosis (and nothing else confirming), gold export with
the critical step and agent, step agreement between people and with the judge."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.gold import GoldRecord, load_gold
from judge.cases import load_cases
from judge.diagnosis import DiagnosisResult, RunDiagnosis, stored_diagnoses
from judge.errors import ConflictError, JudgeError
from judge.review import (
    add_label,
    agreement,
    export_gold,
    get_item,
    gold_records,
    item_view,
    queue,
    queue_diagnoses,
    step_agreement,
)
from judge.store import Store
from tests.fbd_fixtures import MODEL, N_STEPS, ROLES, diagnose_runs, fbd_run
from tests.review_fixtures import make_case, make_judgment, seed_store


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


#: The step sets a card would give: run-a is located, run-b's set has three steps.
SETS = {"run-a": [2], "run-b": [3, 4, 5], "run-c": [1, 2, 3, 4], "run-d": None}


def _with_sets(result: DiagnosisResult) -> list[RunDiagnosis]:
    return [replace(r, step_set=SETS[r.case_id]) for r in result.runs]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "fbd.db"


@pytest.fixture
def queued(db: Path) -> Iterator[Store]:
    """The four runs diagnosed, those with a diagnosis queued for review."""
    result = diagnose_runs(db)
    with Store(db) as store:
        queue_diagnoses(store, _with_sets(result))
        yield store


def _item_of(store: Store, case_id: str) -> str:
    return next(i.id for i in queue(store) if i.case_id == case_id)


def _status(store: Store, case_id: str, model: str = MODEL) -> RunDiagnosis:
    (run,) = stored_diagnoses(store, [fbd_run(case_id)], model=model)
    return run


# --- Queueing ---------------------------------------------------------------------------------


def test_every_diagnosed_run_is_queued_with_its_judgments_step_and_set(db: Path) -> None:
    result = diagnose_runs(db)
    assert all(r.fbd_status == "tentative" and r.review_item is None for r in result.runs)
    with Store(db) as store:
        done = queue_diagnoses(store, _with_sets(result), card_digest="sha256:" + "c" * 64)
        assert done.new == 3 and len(done.items) == 3
        assert [(s.case_id, "parse_error" in s.reason) for s in done.skipped] == [("run-d", True)]
        items = {i.case_id: i for i in queue(store)}
        # The judge named no step first, then the wider set, the located run last.
        assert [i.case_id for i in queue(store)] == ["run-c", "run-b", "run-a"]
        a, b, c = items["run-a"], items["run-b"], items["run-c"]
        assert (a.kind, a.proposed_step, a.step_set, a.reason) == ("fbd", 2, [2], "fbd_located")
        assert (b.proposed_step, b.step_set, b.reason) == (4, [3, 4, 5], "fbd_unlocated")
        assert (c.proposed_step, c.auto_label, c.reason) == (
            None,
            "cannot_determine",
            "fbd_no_step",
        )
        by_case = {r.case_id: r for r in result.runs}
        assert a.judgment_ids == by_case["run-a"].judgment_ids and a.judgment_ids
        assert a.card_digest == "sha256:" + "c" * 64 and a.model == MODEL
        assert a.routing_id is None and a.status == "open" and a.required_labels == 1
        # Queued again: nothing new, the items kept as they are.
        assert queue_diagnoses(store, _with_sets(result)).new == 0
        # Diagnosing again finds each run's item, still tentative.
        again = diagnose_runs(db, ("run-a",))
        assert again.runs[0].review_item == a.id and again.runs[0].fbd_status == "tentative"


def test_located_runs_can_be_left_out_and_a_run_without_a_card_is_queued(db: Path) -> None:
    result = diagnose_runs(db, ("run-a", "run-b"))
    with Store(db) as store:
        done = queue_diagnoses(store, _with_sets(result), unlocated_only=True)
        assert [i.case_id for i in queue(store)] == ["run-b"]
        assert [s.case_id for s in done.skipped] == ["run-a"]
        # Without a card there is no set: the run is queued, to be checked.
        assert queue_diagnoses(store, result, unlocated_only=True).new == 1
        assert {i.case_id: i.reason for i in queue(store)}["run-a"] == "fbd_no_card"
        with pytest.raises(JudgeError, match="double-label fraction"):
            queue_diagnoses(store, result, double_fraction=1.5)


# --- Labels -----------------------------------------------------------------------------------


def test_a_located_label_names_a_step_of_the_run_and_no_other_label_does(queued: Store) -> None:
    item = _item_of(queued, "run-b")
    label = {"reviewer": "ann", "role": "reviewer"}
    with pytest.raises(JudgeError, match="needs the critical step"):
        add_label(queued, item, label="located", **label)  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match=f"0 to {N_STEPS - 1}"):
        add_label(queued, item, label="located", step=N_STEPS, **label)  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match="names no step"):
        add_label(queued, item, label="no_single_step", step=3, **label)  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match="not allowed"):
        add_label(queued, item, label="fail", **label)  # type: ignore[arg-type]
    assert queued.review_labels(item_id=item) == []
    done = add_label(queued, item, label="located", step=4, **label)  # type: ignore[arg-type]
    assert (done.status, done.final_label, done.final_step) == ("done", "located", 4)
    (given,) = queued.review_labels(item_id=item)
    assert (given.reviewer, given.label, given.step) == ("ann", "located", 4)
    with pytest.raises(ConflictError):
        add_label(queued, item, label="located", step=4, reviewer="bob", role="reviewer")


def test_a_verdict_item_takes_no_step(tmp_path: Path) -> None:
    from judge.review import route
    from tests.review_fixtures import make_card

    with Store(tmp_path / "v.db") as store:
        seed_store(store, [make_case(0)], [make_judgment("case-0", 0.5)])
        route(store, make_card(accept=None, reject=None), audit_fraction=0.0)
        (item,) = queue(store)
        with pytest.raises(JudgeError, match="takes no step"):
            add_label(store, item.id, reviewer="ann", role="reviewer", label="fail", step=1)


def test_two_reviewers_agree_only_on_the_same_step(db: Path) -> None:
    result = diagnose_runs(db, ("run-b",))
    with Store(db) as store:
        queue_diagnoses(store, _with_sets(result), double_fraction=1.0)
        item = _item_of(store, "run-b")
        add_label(store, item, reviewer="ann", role="reviewer", label="located", step=4)
        state = add_label(store, item, reviewer="bob", role="reviewer", label="located", step=5)
        assert state.status == "adjudicate" and state.final_step is None
        assert _status(store, "run-b").fbd_status == "tentative"
        final = add_label(store, item, reviewer="cat", role="adjudicator", label="located", step=5)
        assert (final.status, final.final_step) == ("done", 5)
        run = _status(store, "run-b")
    assert (run.fbd_status, run.confirmed_step, run.step_index) == ("confirmed", 5, 4)


# --- Confirmation -----------------------------------------------------------------------------


def test_a_person_confirming_or_moving_the_step_confirms_the_diagnosis(queued: Store) -> None:
    ann = {"reviewer": "ann", "role": "reviewer", "label": "located"}
    add_label(queued, _item_of(queued, "run-a"), step=2, **ann)  # type: ignore[arg-type]
    add_label(queued, _item_of(queued, "run-b"), step=1, **ann)  # type: ignore[arg-type]
    a, b = _status(queued, "run-a"), _status(queued, "run-b")
    assert (a.fbd_status, a.confirmed_step, a.step_index) == ("confirmed", 2, 2)
    # Moved: the person's step is the confirmed one, the judge's was wrong.
    assert (b.fbd_status, b.confirmed_step, b.step_index) == ("confirmed", 1, 4)
    assert b.as_json()["fbd_status"] == "confirmed" and b.as_json()["confirmed_step"] == 1
    assert b.as_report()["confirmed_step"] == "step 1 (E2)"


def test_diagnosing_again_reads_the_confirmations(db: Path) -> None:
    result = diagnose_runs(db, ("run-a", "run-b"))
    with Store(db) as store:
        queue_diagnoses(store, result)
        item = _item_of(store, "run-b")
        add_label(store, item, reviewer="ann", role="reviewer", label="located", step=1)
    again = {r.case_id: r for r in diagnose_runs(db, ("run-a", "run-b")).runs}
    assert (again["run-b"].fbd_status, again["run-b"].confirmed_step) == ("confirmed", 1)
    assert (again["run-a"].fbd_status, again["run-a"].confirmed_step) == ("tentative", None)


def test_nothing_else_confirms_a_diagnosis(db: Path) -> None:
    from judge.diagnosis import with_reviews
    from judge.review import route
    from tests.review_fixtures import make_card

    result = diagnose_runs(db)
    runs = _with_sets(result)
    ann = {"reviewer": "ann", "role": "reviewer"}
    with Store(db) as store:
        # A pass/fail review of run-a, finished with "fail".
        seed_store(store, [], [make_judgment("run-a", 0.1)])
        route(store, make_card(accept=None, reject=None), audit_fraction=0.0)
        (verdict_item,) = [i for i in queue(store) if i.kind == "binary"]
        add_label(store, verdict_item.id, label="fail", **ann)  # type: ignore[arg-type]
        # Another judge's fbd item of run-a, confirmed: that judge's diagnosis, not this one's.
        other = replace(runs[0], model="openai/other-judge")
        queue_diagnoses(store, [other])
        (other_item,) = queue(store)
        add_label(store, other_item.id, label="located", step=2, **ann)  # type: ignore[arg-type]
        (confirmed,) = with_reviews(store, [other])
        assert (confirmed.fbd_status, confirmed.confirmed_step) == ("confirmed", 2)
        # This judge's items: run-a open; run-b needs two labels and has one; run-c "no single
        # step"; run-d never queued (its diagnosis failed).
        queue_diagnoses(store, [r for r in runs if r.case_id == "run-a"])
        queue_diagnoses(store, [r for r in runs if r.case_id == "run-b"], double_fraction=1.0)
        queue_diagnoses(store, [r for r in runs if r.case_id == "run-c"])
        item_b = _item_of(store, "run-b")
        add_label(store, item_b, label="located", step=4, **ann)  # type: ignore[arg-type]
        item_c = _item_of(store, "run-c")
        add_label(store, item_c, label="no_single_step", **ann)  # type: ignore[arg-type]
        assert get_item(store, item_c).status == "done"
        cases = [fbd_run(c) for c in ("run-a", "run-b", "run-c", "run-d")]
        stored = stored_diagnoses(store, cases, model=MODEL)
    assert {r.case_id: r.fbd_status for r in stored} == dict.fromkeys(
        ("run-a", "run-b", "run-c", "run-d"), "tentative"
    )
    assert all(r.confirmed_step is None for r in stored)
    # Diagnosing again reads the same: nothing confirmed.
    assert {r.fbd_status for r in diagnose_runs(db).runs} == {"tentative"}


# --- Gold -------------------------------------------------------------------------------------


def test_a_located_label_is_exported_as_a_failed_run_with_its_critical_step(
    queued: Store, tmp_path: Path
) -> None:
    item_a, item_b = _item_of(queued, "run-a"), _item_of(queued, "run-b")
    add_label(queued, item_a, reviewer="ann", role="reviewer", label="located", step=2)
    add_label(queued, item_b, reviewer="bob", role="reviewer", label="located", step=6, note="x")
    add_label(
        queued, _item_of(queued, "run-c"), reviewer="ann", role="reviewer", label="cannot_determine"
    )
    out = export_gold(queued, tmp_path / "gold.jsonl", license="MIT")
    assert out.n == 2 and [s[0] for s in out.skipped] == [_item_of_done(queued, "run-c")]
    gold = {r.id: r for r in load_gold(out.path)}
    a, b = gold["run-a"], gold["run-b"]
    assert (a.gold, a.critical_step, a.critical_agent) == ("fail", 2, ROLES[2])
    assert (b.gold, b.critical_step, b.critical_agent) == ("fail", 6, ROLES[6])
    assert "step confirmed" in a.gold_source and "step moved from 4" in b.gold_source
    assert b.lineage is not None and b.lineage.labeller == "bob"
    item = get_item(queued, item_b)
    assert b.lineage.derived_from == [f"judgment:{j}" for j in item.judgment_ids] + [
        f"review:{item_b}"
    ]
    assert b.lineage.created_at == item.closed_at
    # Each record is a valid gold record of the run (its step a step of a failed run), and
    # reads back as people's steps for calibrating step scores.
    assert GoldRecord.model_validate(b.model_dump()).critical_step == 6
    assert len(b.trace) == N_STEPS
    loaded = load_cases(out.path)
    assert loaded.errors == [] and loaded.critical == {"run-a": 2, "run-b": 6}
    assert loaded.gold == {"run-a": "fail", "run-b": "fail"}


def _item_of_done(store: Store, case_id: str) -> str:
    return next(i.id for i in store.fbd_items([case_id]))


def test_no_single_step_is_a_failed_run_without_a_step_and_conflicts_are_left_out(
    queued: Store,
) -> None:
    add_label(
        queued, _item_of(queued, "run-a"), reviewer="ann", role="reviewer", label="no_single_step"
    )
    add_label(
        queued, _item_of(queued, "run-b"), reviewer="ann", role="reviewer", label="located", step=4
    )
    # Another judge's item of run-b, where a person located another step: run-b conflicts.
    (run_b,) = stored_diagnoses(queued, [fbd_run("run-b")], model=MODEL)
    queue_diagnoses(queued, [replace(run_b, model="openai/other-judge")])
    add_label(
        queued, _item_of(queued, "run-b"), reviewer="ann", role="reviewer", label="located", step=3
    )
    records, skipped = gold_records(queued)
    assert [(r.id, r.gold, r.critical_step) for r in records] == [("run-a", "fail", None)]
    assert "no single step" in records[0].gold_source
    assert len(skipped) == 2 and all("conflicting critical steps" in why for _, why in skipped)


# --- Agreement --------------------------------------------------------------------------------


def test_double_labels_give_step_agreement_beside_the_judge(db: Path) -> None:
    result = diagnose_runs(db)
    with Store(db) as store:
        queue_diagnoses(store, _with_sets(result), double_fraction=1.0)
        assert step_agreement(store) == []
        given = {"run-a": (2, 3), "run-b": (4, 8 - 1), "run-c": (None, 1)}
        for case_id, (ann, bob) in given.items():
            item = _item_of(store, case_id)
            for who, step in (("ann", ann), ("bob", bob)):
                label = "located" if step is not None else "no_single_step"
                add_label(store, item, reviewer=who, role="reviewer", label=label, step=step)
        people, judge_row = step_agreement(store)
    assert (people.who, people.n, people.exact, people.within_1, people.within_3) == (
        "people",
        2,
        0,
        1,
        2,
    )
    assert people.unmatched == 1 and people.share(people.within_1) == 0.5
    # The judge (steps 2, 4, none) against every person's step (2, 3; 4, 7; none, 1).
    assert (judge_row.who, judge_row.n, judge_row.exact, judge_row.within_1) == (MODEL, 4, 2, 3)
    assert (judge_row.within_3, judge_row.unmatched, judge_row.neither) == (4, 1, 1)
    with Store(db) as store:
        pairs = agreement(store)
    # Kappa compares the steps too: ann and bob never gave the same (label, step).
    assert [(p.kind, p.n, p.agreed) for p in pairs] == [("fbd", 3, 0)]


def test_review_agreement_command_reports_steps(db: Path) -> None:
    from judge.cli import cli

    result = diagnose_runs(db, ("run-a",))
    with Store(db) as store:
        queue_diagnoses(store, result, double_fraction=1.0)
        item = _item_of(store, "run-a")
    runner = CliRunner()
    for who, step in (("ann", "2"), ("bob", "3")):
        out = runner.invoke(
            cli,
            [
                "review",
                "label",
                item,
                "--label",
                "located",
                "--step",
                step,
                "--reviewer",
                who,
                "--db",
                str(db),
            ],
        )
        assert out.exit_code == 0, out.output
    assert "adjudicate" in out.output
    out = runner.invoke(cli, ["review", "agreement", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "critical step, people with people: 1 pairs with a step on both sides: exact 0/1" in (
        out.output
    )
    assert f"critical step, {MODEL} with people: 2 pairs" in out.output
    assert "within 1 2/2 (1.00)" in out.output


# --- The page's view --------------------------------------------------------------------------


def test_the_view_is_a_timeline_with_the_diagnosis_beside_it(queued: Store) -> None:
    view = item_view(queued, _item_of(queued, "run-b"))
    f = view.fbd
    assert f is not None and view.evidence == [] and view.choices[0] == "located"
    assert [s.index for s in f.steps] == list(range(N_STEPS))
    assert [s.role for s in f.steps[: len(ROLES)]] == list(ROLES)
    assert [s.index for s in f.steps if s.proposed] == [4] and f.selected == 4
    assert [s.index for s in f.steps if s.in_set] == [3, 4, 5]
    assert f.steps[4].chain == 1 and f.steps[N_STEPS - 1].chain == 2
    assert f.steps[N_STEPS - 1].symptom
    assert f.steps[0].line == "user at step 0 of run-b" and f.steps[0].more
    assert f.steps[0].text.endswith("second line of step 0")
    assert f.counterfactual == "compare every airline before booking"
    assert [c.step for c in f.causal_chain] == [4, N_STEPS - 1]
    assert f.violated_invariant == "do-not-invent-facts"
    assert view.reason_text is not None and "several steps" in view.reason_text
    # Blind: the timeline alone.
    blind = item_view(queued, _item_of(queued, "run-b"), force_blind=True)
    assert blind.fbd is not None and len(blind.fbd.steps) == N_STEPS
    assert blind.fbd.selected is None and blind.fbd.causal_chain == []
    assert not any(s.proposed or s.in_set or s.chain for s in blind.fbd.steps)
    assert blind.item.proposed_step is None and blind.item.step_set is None
    # An abstaining judge: no proposal, the status said.
    abstained = item_view(queued, _item_of(queued, "run-c")).fbd
    assert abstained is not None and abstained.selected is None
    assert abstained.judge_status is None and abstained.proposed_step is None


def test_the_checks_proposals_are_marked_on_their_steps() -> None:
    from datetime import UTC, datetime

    from judge.review.fbd import fbd_view
    from judge.types import Case, ReviewItem, TraceTurn

    turns = [
        ("assistant", "str_replace(path='src/x.py')", "tool_call"),
        ("tool", "3 passed", "test_run"),
        ("assistant", "str_replace(path='src/y.py')", "tool_call"),
        ("assistant", "Fixed: all tests pass.", "final_answer"),
    ]
    case = Case(
        id="code-run",
        kind="agent_run",
        task="Fix the parser.",
        trace=[
            TraceTurn(id=f"t{i}", role=role, content=text, kind=kind)  # type: ignore[arg-type]
            for i, (role, text, kind) in enumerate(turns)
        ],
    )
    moment = datetime(2025, 6, 1, tzinfo=UTC)
    item = ReviewItem(
        id="f-x",
        routing_id=None,
        card_digest=None,
        case_id=case.id,
        model=MODEL,
        rubric_id="first-bad-decision",
        kind="fbd",
        reason="fbd_no_step",
        detail=None,
        audit=False,
        band=None,
        auto_label=None,
        score=None,
        priority=0.9,
        required_labels=1,
        blind=False,
        status="open",
        final_label=None,
        created_at=moment,
        closed_at=None,
    )
    view = fbd_view(item, case, [], blind=False)
    marked = {s.index: [c.invariant for c in s.checks] for s in view.steps if s.checks}
    assert marked == {
        2: ["rerun-tests-after-the-last-edit"],
        3: ["verify-before-claiming-success"],
    }
    assert all(c.judged == "unjudged" for c in view.checks)
    # No judgment: no report, its status said; nothing picked.
    assert view.judge_status == "infra_error" and view.selected is None
    assert fbd_view(item, case, [], blind=True).checks == []


def test_diagnose_review_label_and_export_from_the_command_line(tmp_path: Path) -> None:
    import json

    from judge.cli import cli
    from judge.testing.loopback import LoopbackServer
    from tests.fbd_fixtures import ANSWERS, fbd_answer

    cases = tmp_path / "runs.jsonl"
    cases.write_text(
        "".join(fbd_run(c).model_dump_json() + "\n" for c in ANSWERS), encoding="utf-8"
    )
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    refused = runner.invoke(cli, ["diagnose", str(cases), "--db", db, "--unlocated-only"])
    assert refused.exit_code == 2 and "--unlocated-only goes with --review" in refused.output
    with LoopbackServer(fbd_answer) as server:
        base = ["diagnose", str(cases), "--model", MODEL, "--api-base", server.api_base]
        base += ["--db", db, "--format", "jsonl", "--quiet"]
        out = runner.invoke(cli, [*base, "--review"])
        assert out.exit_code == 3, out.output  # run-d's diagnosis failed (a parse error)
        assert "review: 3 run(s) in the queue, 3 new" in out.stderr
        assert "not queued run-d: its diagnosis failed (parse_error)" in out.stderr
        with Store(tmp_path / "cli.db") as store:
            item = _item_of(store, "run-b")
        labelled = runner.invoke(
            cli,
            ["review", "label", item, "--label", "located", "--step", "5", "--reviewer", "ann"]
            + ["--db", db],
        )
        assert labelled.exit_code == 0 and "done -> located step 5" in labelled.output
        again = runner.invoke(cli, base)
    lines = {x["case_id"]: x for x in map(json.loads, again.stdout.splitlines())}
    assert (lines["run-b"]["fbd_status"], lines["run-b"]["confirmed_step"]) == ("confirmed", 5)
    assert lines["run-b"]["step_index"] == 4 and lines["run-b"]["review_item"] == item
    assert lines["run-a"]["fbd_status"] == "tentative"
    gold = tmp_path / "gold.jsonl"
    exported = runner.invoke(cli, ["gold", "export", "--out", str(gold), "--db", db])
    assert exported.exit_code == 0, exported.output
    (record,) = load_gold(gold)
    assert (record.id, record.gold, record.critical_step, record.critical_agent) == (
        "run-b",
        "fail",
        5,
        ROLES[5],
    )
