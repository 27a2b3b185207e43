"""Probes: inject a bias, then recover it; and what a probe run costs against judging directly.

    .venv/bin/python bench/probes.py [--n 60] [--latency 0.5] [--concurrency 16] [--json OUT]

The judges are loopback judges with known behaviour (``judge.testing.biased``), served from
their own process, each call answering after ``--latency`` seconds:

1. Cost: ``run_probes`` with every probe on the first ``--n`` SWE-bench dev cases, judged by
   the fair judge at the rubric's evidence budget, against ``judge_cases`` on exactly the
   cases that probe run judged (originals and perturbations), in a fresh store, same options.
   Target: within 1.2x.
2. Recovery, on the first ``--recovery-n`` cases, every judge reading whole traces: the same
   probes under the fair judge, a judge that passes any run longer than ``--turns`` turns,
   and one that believes the final message. For each probe the *planted* rate is what the
   planted rule gives on these very cases: the rule applied to each original and each
   perturbation (its turn count, or whether it ends on a message claiming success), falling
   back to the fair judge's own verdict on the same case; it is computed from the cases, not
   from the biased run. Target: every measured rate within 0.05 of the planted one, and the
   fair judge at rate 1 on every probe with no P(pass) shift on any invariance (no bias
   reported where none was planted; on a degradation its P(pass) should drop, and does).

Every judge reads whole traces (``--token-budget`` 100000): with the default 1,400-token
budget the evidence selector itself changes what a judge sees when a perturbation adds or
removes turns, which a fair reader would then follow (measured here with ``--budget-effect``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judge.evidence import classify_turns
from judge.judging import JudgeOptions, judge_cases
from judge.probes import PROBES, ProbeOptions, ProbeRun, plan_probes, run_probes
from judge.probes.workflow import load_gold_cases
from judge.store import Store
from judge.testing.biased import JUDGES, claims_success, length_biased, responder
from judge.testing.loopback import LoopbackServer
from judge.types import Case

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SWEBENCH, load_text, write_json  # noqa: E402

BUDGET = 100_000


def _serve(latency: float, turns: int, ready: Any, stop: Any) -> None:
    judges = dict(JUDGES) | {"length": length_biased(turns)}
    with LoopbackServer(responder(judges, delay_s=latency)) as server:
        server.requests = _Discard()
        ready.put(server.api_base)
        stop.wait()


class _Discard(list[Any]):
    def append(self, item: Any) -> None:
        return None


@contextmanager
def biased_server(latency: float, turns: int) -> Iterator[str]:
    """The loopback judges in a spawned process; yields the api_base."""
    ctx = mp.get_context("spawn")
    ready, stop = ctx.Queue(), ctx.Event()
    process = ctx.Process(target=_serve, args=(latency, turns, ready, stop), daemon=True)
    process.start()
    try:
        yield ready.get(timeout=60)
    finally:
        stop.set()
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()


def probe(
    api_base: str, name: str, n: int, concurrency: int, budget: int | None, folder: Path
) -> tuple[ProbeRun, float]:
    """A probe run of every probe with the judge ``name``; (the run, wall seconds)."""
    options = JudgeOptions(
        api_base=api_base, variants=1, concurrency=concurrency, token_budget=budget
    )
    started = time.perf_counter()
    with Store(folder / f"{name}-{budget}.db") as store:
        run = run_probes(
            store,
            SWEBENCH,
            rubric="agent-run-success@2",
            model=f"openai/{name}",
            options=options,
            probe_options=ProbeOptions(limit=n),
        )
    return run, time.perf_counter() - started


def direct(
    api_base: str, cases: list[Case], concurrency: int, budget: int | None, folder: Path
) -> float:
    """Judge ``cases`` directly (fresh store, the fair judge); wall seconds."""
    options = JudgeOptions(
        api_base=api_base, variants=1, concurrency=concurrency, token_budget=budget
    )
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    with Store(folder / "direct.db") as store:
        judge_cases(
            store, cases, rubric="agent-run-success@2", models=["openai/fair"], options=options
        )
    return time.perf_counter() - started


def verdicts(run: ProbeRun) -> dict[str, str]:
    """Every case's verdict in a probe run (originals and perturbations)."""
    out: dict[str, str] = {}
    for report in run.reports:
        for r in report.results:
            if r.original_verdict is not None:
                out[r.original_id] = r.original_verdict
            if r.perturbed_verdict is not None:
                out[r.perturbed_id] = r.perturbed_verdict
    return out


def ends_on_claim(case: Case) -> bool | None:
    """Whether the run ends on an agent message claiming success (None: not on a message)."""
    turns = classify_turns(case.trace, case.trace)
    if not turns or turns[-1].kind != "final_answer":
        return None
    return claims_success(case.trace[-1].content)


Rule = Callable[[Case, str], str]


def length_rule(turns: int) -> Rule:
    return lambda case, fair: "pass" if len(case.trace) > turns else fair


def final_rule(case: Case, fair: str) -> str:
    claim = ends_on_claim(case)
    return fair if claim is None else ("pass" if claim else "fail")


def planted_rates(
    run: ProbeRun, cases: Mapping[str, Case], fair: Mapping[str, str], rule: Rule
) -> dict[str, float | None]:
    """Per probe: the as-expected rate the planted rule gives on these cases."""
    out: dict[str, float | None] = {}
    for report in run.reports:
        hits = []
        for r in report.results:
            if r.original_id not in fair or r.perturbed_id not in fair:
                continue
            v0 = rule(cases[r.original_id], fair[r.original_id])
            v1 = rule(cases[r.perturbed_id], fair[r.perturbed_id])
            if report.probe.kind == "degradation":
                if v0 == "pass":
                    hits.append(v1 == "fail")
            else:
                hits.append(v1 == v0)
        out[report.probe.name] = sum(hits) / len(hits) if hits else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=60, help="Cases for the cost comparison.")
    parser.add_argument("--recovery-n", type=int, default=30, help="Cases for the recovery.")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--turns", type=int, default=60, help="The length-biased judge's N.")
    parser.add_argument(
        "--budget-effect",
        action="store_true",
        help="Also probe the fair judge at the default budget.",
    )
    parser.add_argument("--cost-only", action="store_true", help="Skip the recovery part.")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(load_text())
    cases, gold, _ = load_gold_cases(SWEBENCH, args.n)
    plan = plan_probes(cases, gold, PROBES, "openai/fair")
    used = {a.original.id for a in plan.applied}
    to_judge = [c for c in cases if c.id in used] + [a.case for a in plan.applied]
    few, few_gold, _ = load_gold_cases(SWEBENCH, args.recovery_n)
    few_plan = plan_probes(few, few_gold, PROBES, "openai/fair")
    by_id = {c.id: c for c in few} | {a.case.id: a.case for a in few_plan.applied}
    result: dict[str, Any] = {
        "n_cases": len(cases),
        "judged": len(to_judge),
        "probes": len(PROBES),
        "recovery_n": len(few),
    }
    with tempfile.TemporaryDirectory() as tmp, biased_server(args.latency, args.turns) as api_base:
        folder = Path(tmp)
        # Warm up first (imports, litellm, the first connection), so that neither timed run
        # pays the process's start-up; then direct, then the probe run.
        direct(api_base, to_judge[:4], args.concurrency, None, folder / "warm")
        direct_s = direct(api_base, to_judge, args.concurrency, None, folder)
        cost_run, probe_s = probe(api_base, "fair", args.n, args.concurrency, None, folder)
        ratio = probe_s / direct_s
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in cost_run.timings.items())
        print(
            f"cost: {len(cases)} cases x {len(PROBES)} probes = {len(to_judge)} cases judged "
            f"({len(plan.applied)} perturbations, {args.latency} s provider, concurrency "
            f"{args.concurrency}): probe run {probe_s:.1f} s ({parts}), judging them directly "
            f"{direct_s:.1f} s, ratio {ratio:.2f} (target <= 1.2)",
            flush=True,
        )
        result |= {
            "probe_s": probe_s,
            "direct_s": direct_s,
            "ratio": ratio,
            "timings": cost_run.timings,
        }
        if args.cost_only:
            write_json(args.json, result)
            return
        runs: dict[str, ProbeRun] = {}
        for name in ("fair", "length", "final-message"):
            runs[name], _ = probe(api_base, name, args.recovery_n, args.concurrency, BUDGET, folder)
        fair_run = runs["fair"]
        fair = verdicts(fair_run)
        planted = {
            "fair": planted_rates(fair_run, by_id, fair, lambda c, f: f),
            "length": planted_rates(fair_run, by_id, fair, length_rule(args.turns)),
            "final-message": planted_rates(fair_run, by_id, fair, final_rule),
        }
    if args.budget_effect:
        runs["fair@1400"] = cost_run
    header = f"{'probe':24} {'applied':>7} " + " ".join(
        f"{j:>22}" for j in ("fair", "length", "final-message")
    )
    print(header)
    worst = 0.0
    table: dict[str, Any] = {}
    for k, p in enumerate(PROBES):
        cells = []
        row: dict[str, Any] = {"applied": fair_run.reports[k].applied}
        for name in ("fair", "length", "final-message"):
            measured = runs[name].reports[k].as_expected.rate
            want = planted[name][p.name]
            row[name] = {
                "measured": measured,
                "planted": want,
                "shift": runs[name].reports[k].shift.mean,
            }
            if measured is None or want is None:
                cells.append(f"{'-':>22}")
                continue
            worst = max(worst, abs(measured - want))
            cells.append(f"{measured:6.3f} (planted {want:5.3f})")
        table[p.name] = row
        print(f"{p.name:24} {fair_run.reports[k].applied:7d} " + " ".join(cells))
    if args.budget_effect:
        at_default = {r.probe.name: r.as_expected.rate for r in runs["fair@1400"].reports}
        print("fair judge at the default 1,400-token budget:", at_default)
        result["fair_at_default_budget"] = at_default
    # A fair judge's P(pass) drops on a degradation (that is the probe working); only a shift
    # on an invariance, or a rate below 1, would be bias reported where none was planted.
    fair_ok = all(
        r.as_expected.rate in (None, 1.0)
        and (r.probe.kind == "degradation" or abs(r.shift.mean or 0.0) < 1e-9)
        for r in fair_run.reports
    )
    print(
        f"largest |measured - planted|: {worst:.3f} (target <= 0.05); fair judge: "
        f"{'no bias reported' if fair_ok else 'BIAS REPORTED'}"
    )
    result |= {"table": table, "worst_gap": worst, "fair_clean": fair_ok, "turns": args.turns}
    result["median_turns"] = statistics.median(len(c.trace) for c in few)
    write_json(args.json, result)


if __name__ == "__main__":
    main()
