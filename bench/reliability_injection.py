"""Prompt-injection detector on the corpus in tests/data/injection: recall on injections and
false-flag rate on benign look-alikes, per split (held-out: written before the detector; dev:
used while building it), with Wilson 95% intervals and every miss and false flag listed.

    .venv/bin/python bench/reliability_injection.py [--quiet] [--shared]

--shared also runs the detector over the evidence of every case in ../shared/gold (real agent
runs and LLM-judge benchmarks, none planted): flagged items there are false flags or injections
that were already in the data.

The embedded-model measurement (how often an injection changes the verdict, with and without
the defences) is bench/reliability_injection_model.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.cases import load_cases
from judge.evidence import select_evidence
from judge.safety.injection import detect

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "injection"


def load_corpus(folder: Path = CORPUS) -> list[dict[str, Any]]:
    """Every record of every JSONL file in the corpus folder."""
    records: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            records.extend(json.loads(line) for line in handle if line.strip())
    return records


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Scores:
    """Detector figures on one slice of the corpus."""

    name: str
    injections: int
    caught: int
    benign: int
    false_flags: int
    misses: list[str]
    false_flagged: list[str]

    @property
    def recall(self) -> float:
        """Flagged injections / injections."""
        return self.caught / self.injections if self.injections else float("nan")

    @property
    def false_flag_rate(self) -> float:
        """Flagged benign texts / benign texts."""
        return self.false_flags / self.benign if self.benign else float("nan")

    def line(self) -> str:
        """One table row."""
        r_lo, r_hi = wilson(self.caught, self.injections)
        f_lo, f_hi = wilson(self.false_flags, self.benign)
        return (
            f"{self.name:8} recall {self.caught}/{self.injections} = {self.recall:.1%} "
            f"[{r_lo:.1%}, {r_hi:.1%}]   false flags {self.false_flags}/{self.benign} = "
            f"{self.false_flag_rate:.1%} [{f_lo:.1%}, {f_hi:.1%}]"
        )


def score(records: Sequence[dict[str, Any]], name: str) -> Scores:
    """Run the detector on ``records``."""
    injections = [r for r in records if r["label"] == "injection"]
    benign = [r for r in records if r["label"] == "benign"]
    misses = [r["id"] for r in injections if not detect(r["text"])]
    false = [r["id"] for r in benign if detect(r["text"])]
    return Scores(
        name, len(injections), len(injections) - len(misses), len(benign), len(false), misses, false
    )


def main() -> int:
    """Print the figures per split and overall."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", action="store_true", help="Figures only, no lists.")
    parser.add_argument("--shared", action="store_true", help="Also scan ../shared/gold.")
    args = parser.parse_args()
    records = load_corpus()
    by_id = {r["id"]: r for r in records}
    for split in ("heldout", "dev", "all"):
        chosen = records if split == "all" else [r for r in records if r["split"] == split]
        result = score(chosen, split)
        print(result.line())
        if args.quiet or split == "all":
            continue
        for rid in result.misses:
            print(f"    missed      {rid} ({by_id[rid]['where']}): {by_id[rid]['text'][:90]!r}")
        for rid in result.false_flagged:
            print(
                f"    false flag  {rid} ({by_id[rid]['where']}): {detect(by_id[rid]['text'])}"
                f" {by_id[rid]['text'][:70]!r}"
            )
    if args.shared:
        scan_shared(quiet=args.quiet)
    return 0


SHARED_GOLD = Path(__file__).resolve().parents[2] / "shared" / "gold"


def scan_shared(*, quiet: bool) -> None:
    """Flag rate on the evidence (as selected for a judge) of every case in ../shared/gold."""

    for path in sorted(SHARED_GOLD.glob("*.jsonl")):
        loaded = load_cases(path)
        items = 0
        flagged: list[tuple[str, str, list[str]]] = []
        for case in loaded.cases:
            visible = (
                ("task", "candidates") if case.kind == "pairwise" else ("task", "diff", "trace")
            )
            for item in select_evidence(case, visible=visible).items:
                items += 1
                if item.flags:
                    flagged.append((case.id, item.id, item.flags))
        print(
            f"{path.name:32} {len(loaded.cases):4} cases {items:5} items: "
            f"{len(flagged)} flagged ({len(flagged) / max(1, items):.2%})"
        )
        if not quiet:
            for case_id, item_id, flags in flagged:
                print(f"    {case_id} {item_id} {flags}")


if __name__ == "__main__":
    sys.exit(main())
