"""Inject, then recover: loopback judges with a known bias (or none) go through the whole probe
run, and the probes must report what was planted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import judge
from calibration.card import parse_card
from judge.errors import InputError
from judge.judging import JudgeOptions
from judge.probes import (
    PROBES,
    ProbeOptions,
    ProbeRun,
    plan_probes,
    run_probes,
    write_reports,
)
from judge.probes.workflow import judging_order, shared_prefix
from judge.store import Store
from judge.testing.biased import JUDGES, length_biased, responder
from judge.testing.loopback import LoopbackServer
from judge.types import Case
from tests.judge.probes.runs import pair, run
from tests.review_fixtures import make_card

#: Longer than every run below shows: the loopback judges read whole traces.
BUDGET = 100_000
N_TURNS = 15  # the length-biased judge passes runs longer than this


def gold_file(path: Path, cases: list[Case], labels: dict[str, str]) -> Path:
    with path.open("w") as out:
        for c in cases:
            record = c.model_dump(mode="json", exclude_none=True)
            record |= {"source": "tests", "license": "MIT", "gold": labels[c.id]}
            record["gold_source"] = "written for the test"
            out.write(json.dumps(record) + "\n")
    return path


def runs() -> tuple[list[Case], dict[str, str]]:
    """8 runs, 4 passing (8, 16, 12, 8 turns) and 4 failing (18, 14, 10, 18), in 6 tasks."""
    cases, labels = [], {}
    for i in range(8):
        passing = i % 2 == 0
        case = run(i, passing=passing, reads=1 + (i * 5) % 6, task_id=f"t{i % 6}")
        cases.append(case)
        labels[case.id] = "pass" if passing else "fail"
    return cases, labels


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    judges = dict(JUDGES) | {"length": length_biased(N_TURNS)}
    with LoopbackServer(responder(judges)) as s:
        yield s


def probe(
    server: LoopbackServer, tmp: Path, name: str, gold: Path, orders: str = "both"
) -> ProbeRun:
    options = JudgeOptions(
        api_base=server.api_base,
        variants=1,
        concurrency=8,
        token_budget=BUDGET,
        orders=orders,  # type: ignore[arg-type]
    )
    with Store(tmp / f"{name}.db") as store:
        rubric = (
            "pairwise-preference@2" if "pair" in name or "first" in name else "agent-run-success@2"
        )
        return run_probes(store, gold, rubric=rubric, model=f"openai/{name}", options=options)


def by_name(result: ProbeRun) -> dict[str, object]:
    return {r.probe.name: r for r in result.reports}


@pytest.fixture(scope="module")
def agent_gold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cases, labels = runs()
    return gold_file(tmp_path_factory.mktemp("gold") / "runs.jsonl", cases, labels)


def test_a_fair_judge_shows_no_bias(
    server: LoopbackServer, tmp_path: Path, agent_gold: Path
) -> None:
    result = probe(server, tmp_path, "fair", agent_gold)
    reports = by_name(result)
    for p in PROBES:
        r = reports[p.name]
        if p.case_kind == "pairwise":
            assert r.applied == 0 and r.skipped == 8 and r.status == "no data"  # type: ignore[attr-defined]
            continue
        assert r.unscored == 0  # type: ignore[attr-defined]
        assert r.as_expected.rate == 1.0, p.name  # type: ignore[attr-defined]
        if p.kind == "degradation":
            # The four passing runs, judged pass at 0.9 / (0.9 + 0.09); degraded, 0.09 / 0.99.
            assert r.as_expected.n == 4  # type: ignore[attr-defined]
            assert r.shift.mean == pytest.approx((0.09 - 0.9) / 0.99)  # type: ignore[attr-defined]
        else:
            assert r.as_expected.n == 8 and r.shift.mean == pytest.approx(0.0)  # type: ignore[attr-defined]
    assert result.failed() == []
    assert result.median_turns == 13


def test_a_length_biased_judge_is_caught_at_its_planted_rate(
    server: LoopbackServer, tmp_path: Path, agent_gold: Path
) -> None:
    cases, labels = runs()
    result = probe(server, tmp_path, "length", agent_gold)
    reports = by_name(result)
    # Planted: a run longer than N_TURNS passes whatever it shows; every padded run is longer.
    # So the verdict stays only where the original passed already: gold pass, or long.
    planted = sum(1 for c in cases if labels[c.id] == "pass" or len(c.trace) > N_TURNS) / 8
    length = reports["length-padding"]
    assert abs(length.as_expected.rate - planted) <= 0.05  # type: ignore[attr-defined]
    assert length.as_expected.rate == planted == 0.75  # type: ignore[attr-defined]
    # Degradations of long passing runs are missed: they stay longer than N_TURNS.
    long_passing = [c for c in cases if labels[c.id] == "pass" and len(c.trace) > N_TURNS]
    removed = reports["test-run-removed"]  # two turns shorter
    caught = 1 - sum(1 for c in long_passing if len(c.trace) - 2 > N_TURNS) / 4
    assert removed.as_expected.rate == pytest.approx(caught)  # type: ignore[attr-defined]
    assert "length-padding" in result.failed() or length.status == "inconclusive"  # type: ignore[attr-defined]


def test_a_judge_that_believes_the_final_message_is_caught(
    server: LoopbackServer, tmp_path: Path, agent_gold: Path
) -> None:
    result = probe(server, tmp_path, "final-message", agent_gold)
    reports = by_name(result)
    # Planted: a success claim at the end decides. Evidence neglect is never caught; a verbose
    # confident restatement moves every failing run (half of them) to pass.
    assert reports["evidence-neglect"].as_expected.rate == 0.0  # type: ignore[attr-defined]
    assert reports["evidence-neglect"].status == "fail"  # type: ignore[attr-defined]
    assert reports["verbose-final"].as_expected.rate == 0.5  # type: ignore[attr-defined]
    assert reports["verbose-final"].shift.mean > 0.3  # type: ignore[attr-defined]
    # Where the run does not end on a message, it judges fairly.
    assert reports["tool-result-error"].as_expected.rate == 1.0  # type: ignore[attr-defined]
    assert reports["length-padding"].as_expected.rate == 1.0  # type: ignore[attr-defined]
    assert "evidence-neglect" in result.failed()


def test_pairwise_probes_catch_a_position_biased_judge(
    server: LoopbackServer, tmp_path: Path
) -> None:
    cases = [pair(i, good="A" if i % 2 else "B") for i in range(6)]
    labels = {c.id: ("A" if i % 2 else "B") for i, c in enumerate(cases)}
    gold = gold_file(tmp_path / "pairs.jsonl", cases, labels)
    fair = by_name(probe(server, tmp_path, "fair-pairwise", gold, orders="AB"))
    assert fair["order-swap"].as_expected.rate == 1.0  # type: ignore[attr-defined]
    assert fair["reference-shown"].as_expected.rate == 1.0  # type: ignore[attr-defined]
    assert fair["order-swap"].shift.mean == pytest.approx(0.0)  # type: ignore[attr-defined]
    biased = by_name(probe(server, tmp_path, "first-shown", gold, orders="AB"))
    assert biased["order-swap"].as_expected.rate == 0.0  # type: ignore[attr-defined]
    assert biased["order-swap"].status == "fail"  # type: ignore[attr-defined]


def test_perturbations_are_stored_apart_and_never_leak_into_the_originals(
    server: LoopbackServer, tmp_path: Path, agent_gold: Path
) -> None:
    cases, _ = runs()
    options = JudgeOptions(api_base=server.api_base, variants=1, token_budget=BUDGET)
    with Store(tmp_path / "leak.db") as store:
        result = judge.run_probes(
            store,
            agent_gold,
            rubric="agent-run-success@2",
            model="openai/fair",
            options=options,
            probe_options=ProbeOptions(probes=["length-padding", "fix-hunk-dropped"]),
        )
        stored = store.get_cases([c.id for c in cases])
        assert all(stored[c.id] == c for c in cases)
        padded = store.get_cases(["run-0#probe:length-padding@v1"])["run-0#probe:length-padding@v1"]
        assert padded.meta["probe"]["original_id"] == "run-0"
        assert len(padded.trace) == len(cases[0].trace) + 10
    assert [r.probe.name for r in result.reports] == ["fix-hunk-dropped", "length-padding"]
    # Files: probes.json with the fields a reader needs, the reports and the plot.
    paths = write_reports(result, tmp_path / "out")
    entries = json.loads(paths["json"].read_text())
    for entry in entries:
        assert {"name", "kind", "applied", "skipped", "as_expected", "p_pass_shift"} <= set(entry)
        assert {"rate", "ci95"} <= set(entry["as_expected"])
        assert {"value", "ci95"} <= set(entry["p_pass_shift"])
    assert entries[1]["as_expected"]["rate"] == 1.0 and entries[1]["kind"] == "invariance"
    assert "| length-padding@v1 | invariance | 8 | 0 | 8/8 |" in paths["markdown"].read_text()
    assert paths["plot"].read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64," in paths["html"].read_text()


def test_the_card_gets_a_probes_section_and_old_cards_keep_their_digests(
    server: LoopbackServer, tmp_path: Path, agent_gold: Path
) -> None:
    card = make_card(accept=0.9, reject=0.1).sealed()
    assert card.probes is None and "probes" not in card.to_yaml()
    assert parse_card(card.to_yaml()).card_digest == card.card_digest
    result = probe(server, tmp_path, "final-message", agent_gold)
    probed = card.with_probes(result.card_section())
    assert probed.card_digest != card.card_digest
    again = parse_card(probed.to_yaml())
    assert again == probed and again.probes is not None
    assert "evidence-neglect" in again.probes.failed
    assert again.probes.long_trace_turns == 13
    assert {p.name for p in again.probes.probes} == {p.name for p in PROBES}


def test_a_gold_set_without_passing_runs_gets_a_clear_message(tmp_path: Path) -> None:
    cases = [run(i, passing=False) for i in range(3)]
    gold = gold_file(tmp_path / "failing.jsonl", cases, {c.id: "fail" for c in cases})
    with (
        Store(tmp_path / "x.db") as store,
        pytest.raises(InputError, match="no passing run") as err,
    ):
        run_probes(store, gold, rubric="agent-run-success@2", model="openai/fair")
    assert "fail 3" in str(err.value) and "invariance probes only" in str(err.value)


def test_each_original_is_judged_before_its_perturbations_latest_change_first() -> None:
    cases, labels = runs()
    plan = plan_probes(cases[:2], labels, PROBES, "openai/fair")
    order = judging_order(cases[:2], plan.applied)
    assert order[0] is cases[0]
    second = order.index(cases[1])
    first_block = [c.id.split("#probe:")[1] for c in order[1:second]]
    # Appended at the end first (all of the original's prompt is shared), the diff last.
    assert first_block[0] == "verbose-final@v1" and first_block[-1] == "fix-hunk-dropped@v1"
    prefixes = [shared_prefix(cases[0], c) for c in order[1:second]]
    assert prefixes == sorted(prefixes, reverse=True)
    assert shared_prefix(cases[0], cases[0]) == 2 + len(cases[0].trace)
    assert len(order) == 2 + len(plan.applied)
