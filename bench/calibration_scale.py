"""Benchmark 4: a full calibration card at scale, against the time to read and parse the file.

    .venv/bin/python bench/calibration_scale.py [--sizes 100000,1000000] [--n-boot 1000]

For each input, times ``judge calibrate``'s work (``judge.calibrate``) run in
this process (its imports warmed first on a small file): load and check the verdicts, gold,
scores, certified bands (grid levels:5000), metrics with cluster-bootstrap intervals (--n-boot
replicates), the card written as YAML. The floor is reading the same file and ``json.loads``
of every line. Inputs: synthetic binary verdicts (one judge, P(pass) on every row, clusters of 4
items, 1% unparseable answers) of each size, and ../shared/judgments/llmbar_evaluators.jsonl for
one judge and for the panel of all 65. Target: the card within 3x of the floor; seconds per row
flat as the size grows.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import judge
from calibration.options import CalibrationOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SHARED, load_text, write_json  # noqa: E402

LLMBAR = SHARED / "judgments" / "llmbar_evaluators.jsonl"


def synthesize(path: Path, n: int, seed: int = 0) -> None:
    """``n`` recorded binary verdicts of one judge: gold pass 70%, a noisy P(pass), clusters of 4
    items sharing a task id, 1% null verdicts (answers the source could not parse)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            gold = "pass" if rng.random() < 0.7 else "fail"
            logit = rng.gauss(1.2 if gold == "pass" else -1.0, 1.3)
            prob = 1.0 / (1.0 + math.exp(-logit))
            verdict = None if rng.random() < 0.01 else ("pass" if prob >= 0.5 else "fail")
            row = {
                "item_id": f"item-{i}",
                "source": "synthetic",
                "judge": "synthetic-judge",
                "order": None,
                "sample": 0,
                "verdict": verdict,
                "verdict_pos": None,
                "prob": round(prob, 6) if verdict is not None else None,
                "gold": gold,
                "slices": {"task_id": f"task-{i // 4}"},
            }
            out.write(json.dumps(row) + "\n")


def floor_seconds(path: Path, keep: bool = True) -> float:
    """Read the file and ``json.loads`` every line: the least any card from it can cost.

    ``keep``: hold the parsed objects in a list (a card needs every row at once), with the
    cyclic GC paused while they are built (as the loader does); else parse and drop each one.
    """
    loads = json.loads
    started = time.perf_counter()
    if keep:
        gc.disable()
        try:
            with path.open(encoding="utf-8") as handle:
                rows = [loads(line) for line in handle]
            seconds = time.perf_counter() - started
        finally:
            gc.enable()
        del rows
        return seconds
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            loads(line)
    return time.perf_counter() - started


def card_seconds(path: Path, judges: list[str], out: Path, n_boot: int) -> tuple[float, str]:
    """Calibrate as ``judge calibrate --recorded PATH`` does, in this process (a panel when
    several judges are given): its seconds and the summary it would print."""
    options = CalibrationOptions(judges=tuple(judges), panel=len(judges) > 1, n_boot=n_boot)
    started = time.perf_counter()
    run = judge.calibrate(recorded=path, options=options, out=out)
    return time.perf_counter() - started, "\n".join(run.result.lines())


def main() -> None:
    """Time every input and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm = root / "warm.jsonl"
        synthesize(warm, 2000, seed=1)
        card_seconds(warm, ["synthetic-judge"], root / "warm.card.yaml", 50)  # imports, caches
        inputs: list[tuple[str, Path, list[str]]] = []
        for size in (int(s) for s in args.sizes.split(",")):
            path = root / f"synthetic-{size}.jsonl"
            synthesize(path, size)
            inputs.append((f"synthetic {size:,}", path, ["synthetic-judge"]))
        if LLMBAR.exists():
            with LLMBAR.open(encoding="utf-8") as handle:
                judges = sorted({json.loads(line)["judge"] for line in handle if line.strip()})
            inputs.append(("llmbar_evaluators, GPT-4/CoT", LLMBAR, ["GPT-4/CoT"]))
            inputs.append((f"llmbar_evaluators, {len(judges)}-judge panel", LLMBAR, judges))
        for label, path, judges in inputs:
            rows = sum(1 for _ in path.open(encoding="utf-8"))
            floor = floor_seconds(path)
            bare = floor_seconds(path, keep=False)
            seconds, said = card_seconds(path, judges, root / "card.yaml", args.n_boot)
            results.append(
                {
                    "input": label,
                    "rows": rows,
                    "mb": path.stat().st_size / 1e6,
                    "floor_s": floor,
                    "parse_only_s": bare,
                    "card_s": seconds,
                    "ratio": seconds / floor,
                    "ratio_parse_only": seconds / bare,
                    "us_per_row": 1e6 * seconds / rows,
                    "summary": said.strip().splitlines()[0] if said.strip() else "",
                }
            )
    print(
        f"full card (bands + metrics with {args.n_boot} cluster-bootstrap replicates) vs the "
        f"floor: read + json.loads of every line, objects kept (parse-only: dropped); "
        f"{load_text()}"
    )
    print(
        f"{'input':36s} {'rows':>9s} {'MB':>6s} {'floor s':>8s} {'parse s':>8s} "
        f"{'card s':>8s} {'ratio':>6s} {'r/parse':>7s} {'us/row':>7s}"
    )
    for r in results:
        print(
            f"{r['input']:36s} {r['rows']:9,d} {r['mb']:6.1f} {r['floor_s']:8.2f} "
            f"{r['parse_only_s']:8.2f} {r['card_s']:8.2f} {r['ratio']:6.2f} "
            f"{r['ratio_parse_only']:7.2f} {r['us_per_row']:7.1f}"
        )
    synthetic = [r for r in results if r["input"].startswith("synthetic")]
    if len(synthetic) >= 2:
        small, large = synthetic[0], synthetic[-1]
        growth = (large["card_s"] / small["card_s"]) / (large["rows"] / small["rows"])
        print(
            f"cost growth {small['rows']:,} -> {large['rows']:,} rows: time x"
            f"{large['card_s'] / small['card_s']:.1f} for rows x"
            f"{large['rows'] / small['rows']:.0f} (1.0 = linear: {growth:.2f})"
        )
    worst = max(r["ratio"] for r in results)
    print(
        f"worst card/floor ratio {worst:.2f} (target <= 3: {'met' if worst <= 3 else 'NOT met'}"
        f"); against parse-only {max(r['ratio_parse_only'] for r in results):.2f}"
    )
    write_json(args.json, {"n_boot": args.n_boot, "results": results, "load": load_text()})


if __name__ == "__main__":
    main()
