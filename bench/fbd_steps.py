"""First bad decision on the shared failed runs: step accuracy, baselines, certified step sets.

    .venv/bin/python bench/fbd_steps.py [--set who-and-when|agentrx] [--model M] [--limit N]
        [--samples K] [--api-base URL] [--db PATH] [--alpha 0.2] [--draws 500] [--json OUT]

Reads ``../shared/fbd`` (JUDGE_SHARED_DIR overrides ``..``/shared): the 126 Who&When runs or
the 29 AgentRx tau-bench retail runs, with people's critical steps. Prints, for the judge
(``--model``, default the embedded one) on the first ``--limit`` runs: exact, within 1 and 3
steps, same agent (Who&When) and abstention, each with a Wilson interval, beside the baselines
that read nothing (a random step, the first, the last) on the same runs and on all of them; then
the split-conformal step set at ``--alpha`` over ``--draws`` random halves (mean held-out
coverage, the worst half, mean set size as a share of the run); and the cost and time per
diagnosis. Judgments are stored in ``--db`` (a rerun pays for nothing already stored).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from calibration.fbd import baselines, split_check, step_accuracy, step_run
from judge.defaults import DEFAULT_MODEL
from judge.diagnosis import diagnose
from judge.judging import JudgeOptions
from judge.store import open_store
from judge.traces.stepwise import AgentRxTauImporter, WhoAndWhenImporter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))


def _load(which: str) -> Any:
    if which == "who-and-when":
        return WhoAndWhenImporter().load(SHARED / "fbd" / "who_and_when_algorithm_generated")
    return AgentRxTauImporter().load(
        SHARED / "fbd" / "agentrx_tau_retail" / "tau_dataset_failed.json"
    )


def _fmt(rate: dict[str, Any]) -> str:
    if rate.get("rate") is None:
        return "-"
    ci = rate.get("ci95")
    return f"{rate['rate']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--set", dest="which", choices=["who-and-when", "agentrx"], default="who-and-when"
    )
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--api-base")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--db", default="fbd_bench.db")
    parser.add_argument("--alpha", type=float, default=0.2)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if not (SHARED / "fbd").is_dir():
        print(f"{SHARED / 'fbd'} is absent: set JUDGE_SHARED_DIR", file=sys.stderr)
        return 2
    loaded = _load(args.which)
    cases = loaded.cases[: args.limit] if args.limit else loaded.cases
    gold_steps = {cid: c.step for cid, c in loaded.critical.items()}
    agents = {cid: c.agent for cid, c in loaded.critical.items()}
    everyone = [
        step_run(c.id, "none", len(c.trace), {}, gold_steps.get(c.id)) for c in loaded.cases
    ]
    with open_store(args.db) as store:
        result = diagnose(
            store,
            cases,
            models=[args.model],
            options=JudgeOptions(api_base=args.api_base, samples=args.samples),
            gold=loaded.gold,
        )
    by_case = {c.id: c for c in cases}
    runs = [
        step_run(
            r.case_id,
            r.model,
            r.n_steps,
            dict(enumerate(r.step_scores)),
            gold_steps.get(r.case_id),
            gold_agent=agents.get(r.case_id),
            step_agents=[t.role for t in by_case[r.case_id].trace],
            abstained=r.status == "abstain",
        )
        for r in result.runs
        if r.status in ("ok", "abstain")
    ]
    statuses: dict[str, int] = {}
    for r in result.runs:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    latencies = [
        o.judgment.usage.latency_s
        for o in (result.summary.outcomes if result.summary else [])
        if not o.cached
    ]
    costs = [
        o.judgment.usage.cost_usd
        for o in (result.summary.outcomes if result.summary else [])
        if o.judgment.usage.cost_usd is not None
    ]
    out: dict[str, Any] = {
        "set": args.which,
        "model": args.model,
        "samples": args.samples,
        "n_runs": len(cases),
        "statuses": statuses,
        "judge": step_accuracy(runs),
        "baselines_same_runs": baselines(runs),
        "baselines_all_runs": baselines(everyone),
        "seconds_per_call_median": statistics.median(latencies) if latencies else None,
        "cost_usd_per_diagnosis": (sum(costs) / len(result.runs))
        if costs and result.runs
        else None,
    }
    labelled = [r for r in runs if r.gold_step is not None]
    if len(labelled) >= 4:
        check = split_check(runs, args.alpha, draws=args.draws, seed=0)
        out["step_set"] = {
            "alpha": args.alpha,
            "draws": check.draws,
            "mean_coverage": round(check.mean_coverage, 4),
            "min_coverage": round(check.min_coverage, 4),
            "mean_set_share": round(check.mean_set_share, 4),
        }
    judged = out["judge"]
    print(f"{args.which}: {len(cases)} runs, {args.model}, statuses {statuses}")
    for name in ("exact", "within_1", "within_3", "same_agent", "abstention"):
        print(f"  judge {name:10s} {_fmt(judged[name])}")
    for base in ("random", "first", "last"):
        same = out["baselines_same_runs"][base]
        print(
            f"  {base:6s} exact {_fmt(same['exact'])}  within 1 {_fmt(same['within_1'])}  "
            f"within 3 {_fmt(same['within_3'])}"
        )
    if "step_set" in out:
        s = out["step_set"]
        print(
            f"  step set alpha {s['alpha']}: held-out coverage {s['mean_coverage']} "
            f"(worst half {s['min_coverage']}), mean set {s['mean_set_share']:.2f} of a run, "
            f"{s['draws']} random halves"
        )
    if out["seconds_per_call_median"] is not None:
        print(f"  {out['seconds_per_call_median']:.1f} s per call (median)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
