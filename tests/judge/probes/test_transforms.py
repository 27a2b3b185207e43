"""Each probe is a small deterministic transform: what it changes, what it skips, and that the
original is never touched."""

from __future__ import annotations

import pytest

from judge.errors import InputError
from judge.evidence import classify_turns
from judge.probes import (
    PROBES,
    PROBES_BY_NAME,
    Applied,
    ProbeContext,
    Skipped,
    apply_probe,
    perturbed_id,
    plan_probes,
    probe_origin,
    select_probes,
)
from judge.probes.workflow import load_gold_cases
from judge.types import Case, TraceTurn
from tests.conftest import shared_path
from tests.judge.probes.runs import DIFF, pair, run

PASS = ProbeContext(gold="pass", judge_model="openai/gpt-4o-mini")


def applied(name: str, case: Case, context: ProbeContext = PASS) -> Case:
    out = apply_probe(PROBES_BY_NAME[name], case, context)
    assert isinstance(out, Applied), out
    return out.case


def kinds(case: Case) -> list[str]:
    return [t.kind for t in classify_turns(case.trace, case.trace)]


def test_there_are_at_least_ten_named_versioned_seeded_probes_of_both_kinds() -> None:
    assert len(PROBES) >= 10
    assert len({p.name for p in PROBES}) == len(PROBES)
    assert len({p.seed for p in PROBES}) == len(PROBES)
    assert {p.kind for p in PROBES} == {"degradation", "invariance"}
    assert all(p.version >= 1 and p.description for p in PROBES)
    assert [p.name for p in select_probes(["order-swap", "self-family"])] == [
        "self-family",
        "order-swap",
    ]
    with pytest.raises(InputError, match="unknown probe"):
        select_probes(["no-such-probe"])


def test_a_perturbed_case_has_its_own_id_and_lineage_and_the_original_is_untouched() -> None:
    original = run(1, passing=True, reads=2)
    before = original.model_dump()
    for probe in PROBES:
        if probe.case_kind != "agent_run":
            continue
        out = apply_probe(probe, original, PASS)
        assert isinstance(out, Applied), (probe.name, out)
        assert out.case.id == perturbed_id(original.id, probe) == f"run-1#probe:{probe.ref}"
        assert probe_origin(out.case) == {
            "name": probe.name,
            "version": probe.version,
            "seed": probe.seed,
            "kind": probe.kind,
            "original_id": "run-1",
        }
        assert out.case.meta["origin"] == "tests"
        assert out.case.slices == original.slices and out.case.slices is not original.slices
        # Deterministic: the same case gives the same perturbation.
        again = apply_probe(probe, original, PASS)
        assert isinstance(again, Applied) and again.case == out.case
    assert original.model_dump() == before


def test_the_degradations_do_what_they_say() -> None:
    case = run(2, passing=True, reads=2)
    assert kinds(case).count("test_run") == 1

    removed = applied("test-run-removed", case)
    assert "test_run" not in kinds(removed)
    assert len(removed.trace) == len(case.trace) - 2
    assert not any("pytest" in t.content for t in removed.trace)

    errored = applied("tool-result-error", case)
    changed = [t for t, u in zip(errored.trace, case.trace, strict=True) if t != u]
    assert len(changed) == 1 and "ImportError" in changed[0].content
    assert changed[0].content.startswith("<returncode>1</returncode>")
    assert kinds(errored) == kinds(case)  # still read as a test run

    corrupted = applied("tool-args-corrupted", case)
    assert "tests/test_module.py__corrupted" in corrupted.trace[6].content
    assert "file or directory not found" in corrupted.trace[7].content

    hallucinated = applied("hallucinated-tool-call", case)
    assert len(hallucinated.trace) == len(case.trace) + 2
    assert hallucinated.trace[-4].id == "hallucinated-1"
    assert "python -m pytest tests/test_module.py" in hallucinated.trace[-4].content
    assert "2 failed" in hallucinated.trace[-3].content
    assert hallucinated.trace[-2:] == case.trace[-2:]

    dropped = applied("fix-hunk-dropped", case)
    assert dropped.diff is not None and "src/pkg/module.py" not in dropped.diff
    assert "tests/test_module.py" in dropped.diff
    assert "return x + 1" not in dropped.trace[-1].content  # the diff printed again, too

    neglect = applied("evidence-neglect", case)
    assert "2 failed" in neglect.trace[7].content
    assert neglect.trace[-1].role == "agent" and "All tests pass" in neglect.trace[-1].content
    assert kinds(neglect)[-1] == "final_answer"


def test_the_invariances_change_only_what_must_not_matter() -> None:
    case = run(3, passing=False, reads=4)  # invariances apply to failing runs too
    fail = ProbeContext(gold="fail", judge_model="local/qwen2.5-coder-1.5b")

    padded = applied("length-padding", case, fail)
    added = [t for t in padded.trace if t.id.startswith("pad-")]
    assert len(added) == 10 and len(padded.trace) == len(case.trace) + 10
    assert [t for t in padded.trace if not t.id.startswith("pad-")] == case.trace
    assert all("echo" in t.content for t in added[::2])
    assert "test_run" not in [kinds(padded)[i] for i, t in enumerate(padded.trace) if t in added]

    verbose = applied("verbose-final", case, fail)
    assert verbose.trace[:-1] == case.trace
    assert "completely confident" in verbose.trace[-1].content

    early = applied("early-failure-fixed", case, fail)
    assert [t for t in early.trace if not t.id.startswith("early-")] == case.trace
    first = next(i for i, t in enumerate(early.trace) if t.id.startswith("early-"))
    assert first == 10  # just before the call of the run's first receipt
    assert kinds(early)[-3] == "test_run"  # the run's own last test run stays last

    family = applied("self-family", case, fail)
    assert family.trace[1:] == case.trace
    assert "qwen (qwen2.5-coder-1.5b)" in family.trace[0].content


def test_pairwise_probes() -> None:
    case = pair(1, good="A")
    shown = applied("reference-shown", case, ProbeContext(gold="A"))
    assert shown.candidates == case.candidates
    assert shown.task.endswith(case.candidates["B"])  # type: ignore[index]
    swapped = applied("order-swap", case, ProbeContext(gold="A"))
    assert swapped.candidates == {"A": case.candidates["B"], "B": case.candidates["A"]}  # type: ignore[index]
    same = case.model_copy(update={"candidates": {"A": "x", "B": "x"}})
    out = apply_probe(PROBES_BY_NAME["order-swap"], same, PASS)
    assert isinstance(out, Skipped) and out.reason == "the two candidates are identical"


def test_a_case_a_probe_cannot_apply_to_is_skipped_with_its_reason() -> None:
    bare = Case(
        id="bare",
        kind="agent_run",
        task="Say hello.",
        trace=[TraceTurn(id="m1", role="assistant", content="Hello.")],
    )
    plan = plan_probes([bare], {"bare": "pass"}, PROBES, "openai/gpt-4o")
    reasons = {s.probe.name: s.reason for s in plan.skipped}
    assert reasons["test-run-removed"] == "the trace has no test run"
    assert reasons["tool-result-error"] == "the trace has no tool call"
    assert reasons["fix-hunk-dropped"] == "the run has no diff"
    assert reasons["length-padding"] == "the trace has no tool call to pad around"
    assert reasons["order-swap"] == "a pairwise probe; the case is agent_run"
    # What does apply to a bare run: a final message restated, the judge's family named.
    assert {a.probe.name for a in plan.applied} == {"verbose-final", "self-family"}
    # A degradation needs a run known to pass.
    failing = plan_probes([run(4, passing=False)], {"run-4": "fail"}, PROBES[:1], None)
    assert failing.skipped[0].reason.startswith("gold label is fail")
    tests_only = run(5, passing=True).model_copy(
        update={
            "diff": DIFF.split("diff --git a/tests")[0].replace(
                "src/pkg/module.py", "tests/helper.py"
            )
        }
    )
    out = apply_probe(PROBES_BY_NAME["fix-hunk-dropped"], tests_only, PASS)
    assert isinstance(out, Skipped) and "test or a helper script" in out.reason


def test_each_agent_run_probe_applies_to_at_least_80_percent_of_swebench_passing_runs() -> None:
    cases, gold, _ = load_gold_cases(shared_path("gold/swebench_verified_dev.jsonl"))
    plan = plan_probes(cases, gold, PROBES, "local/qwen2.5-coder-1.5b")
    table = {row["name"]: row for row in plan.applicability()}
    for probe in PROBES:
        row = table[probe.name]
        print(probe.name, row["applied_to_meant"], row["meant_for"], row["applicability"])
        if probe.case_kind == "agent_run":
            assert row["applicability"] >= 0.80, row
        else:
            assert row["meant_for"] == 0  # pairwise probes: SWE-bench has no pairs
