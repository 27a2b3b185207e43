"""PPI++ in a run-set report, end to end on real runs and a real judge, with no model call.

The embedded judge's recorded judgments (``bench/results/quality/{tau,swe}.judgments.jsonl``:
local/qwen2.5-coder-1.5b, agent-run-success v2, 3 prompt variants) are put in a fresh store;
the judged runs become a run set; ``judge score`` finds every judgment in the store. Then the
user's path: ``judge review plan`` draws BUDGET runs at random and queues them, a "reviewer"
labels each with its gold label (the benchmark's own outcome), ``judge gold export --plan``
writes the labels, and ``judge score --labels`` reports pass@1 by the judge alone, from the
labels alone and by PPI++, beside the truth (the gold labels of every run).

Usage: PYTHONPATH=$PWD .venv/bin/python bench/ppi_report.py [--dataset tau|swe]
       [--budget 20] [--seed 0] [--out DIR]      (needs ../shared beside the clone)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import judge  # noqa: E402
import judge.review  # noqa: E402
import judge.runsets  # noqa: E402
from judge.types import Judgment  # noqa: E402

SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))

DATASETS = {
    "tau": ("tau.judgments.jsonl", "taubench_airline_dev"),
    "swe": ("swe.judgments.jsonl", "swebench_verified_dev"),
}
MODEL = "local/qwen2.5-coder-1.5b"
RUBRIC = "agent-run-success"


def run_records(gold_file: Path, ids: set[str]) -> list[dict[str, Any]]:
    """One run per judged gold record: its task (tau-bench task, or the SWE-bench instance),
    its trial, the agent's model as the treatment, its gold label as the official outcome."""
    out = []
    for line in gold_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] not in ids:
            continue
        slices = record.get("slices") or {}
        case = {k: record[k] for k in ("kind", "task", "diff", "trace") if k in record}
        out.append(
            {
                "run_id": record["id"],
                "task_id": str(slices.get("task_id", record["id"].rsplit("/", 1)[-1])),
                "treatment": str(slices.get("agent_model") or slices.get("model") or "agent"),
                "repetition": int(slices.get("trial", 0)),
                "benchmark": gold_file.stem,
                "case": case,
                "official": record["gold"],
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the pipeline; print the judge-only, labels-only, PPI++ and true pass@1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="tau")
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--active", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    # No model is needed: a judgment missing from the store fails fast instead of loading one.
    os.environ.setdefault("JUDGE_HOME", tempfile.mkdtemp(prefix="judge-nohome-"))
    out = args.out or Path(tempfile.mkdtemp(prefix=f"judge-ppi-{args.dataset}-"))
    out.mkdir(parents=True, exist_ok=True)
    judgments_file, gold_name = DATASETS[args.dataset]
    recorded = [
        Judgment.model_validate_json(x)
        for x in (REPO / "bench" / "results" / "quality" / judgments_file).read_text().splitlines()
    ]
    runs_path = out / "runs.jsonl"
    judge.runsets.write_runs(
        run_records(SHARED / "gold" / f"{gold_name}.jsonl", {j.case_id for j in recorded}),
        runs_path,
    )
    runs = judge.load_runs(runs_path).runs
    db = out / "judge.db"
    with judge.open_store(db) as store:
        for j in recorded:
            store.put(j)
        truth = judge.score_runs(
            runs, source=str(runs_path), gold_labels=True, report=judge.ReportOptions(n_boot=500)
        )
        judged = judge.score_runs(
            runs, source=str(runs_path), store=store, rubric=RUBRIC, models=[MODEL]
        )
        assert judged.judging is not None
        if judged.judging.called:
            print(f"{judged.judging.called} judgment(s) were not in the store", file=sys.stderr)
            return 1
        plan = judge.runsets.plan_review(
            store,
            runs,
            source=str(runs_path),
            budget=args.budget,
            seed=args.seed,
            active=args.active,
            models=[MODEL],
        )
        gold = {r.run_id: r.official for r in runs}
        for item in judge.review.queue(store, limit=10_000):
            judge.review.add_label(
                store, item.id, reviewer="bench", role="reviewer", label=str(gold[item.case_id])
            )
        labels = out / "labels.jsonl"
        judge.export_gold(store, labels, plan=plan.stored.id)
        report = judge.score_runs(
            runs, source=str(runs_path), store=store, rubric=RUBRIC, models=[MODEL], labels=labels
        )
    judge.write_report(report, out / "report", charts=False)
    print(
        f"{args.dataset}: {len(runs)} runs, {judged.judging.cached} judgments from the store, "
        f"plan {plan.stored.id} ({plan.stored.plan.design}, {len(plan.stored.plan.chosen)} "
        f"labels, seed {args.seed})"
    )
    for t in report.treatments:
        sec, true = report.per_treatment[t], truth.per_treatment[t]
        at1 = sec.macro.pass_at_k[0]
        assert sec.labels_only is not None and sec.ppi is not None
        alone, both = sec.labels_only["pass@1"], sec.ppi["pass@1"]
        print(
            f"  {t}: truth {true.macro.pass_at_k[0].value:.3f}; judge {at1.value:.3f} "
            f"{_ci(at1.ci95)}; labels only {alone.value:.3f} {_ci(alone.ci95)}; PPI++ "
            f"{both.value:.3f} {_ci(both.ci95)} (lambda {both.lam:.2f}, "
            f"{both.effective_labels:.1f} effective labels)"
        )
    print(f"report: {out / 'report' / 'report.md'}")
    return 0


def _ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[none]"


if __name__ == "__main__":
    sys.exit(main())
