"""Digests of what the safety layer outputs, per record, on every corpus it is measured on.

    PYTHONPATH=$PWD .venv/bin/python bench/safety_outputs.py record FILE [--sets ...]
    PYTHONPATH=$PWD .venv/bin/python bench/safety_outputs.py compare FILE [--sets ...]

For each case of every gold set in ../shared/gold (SWE-bench, tau-bench, LLMBar, JudgeBench)
and of the project's test corpora (tests/data/secrets, tests/data/injection and v2 up to
heldout5, the demo set) it digests: the stored (redacted) case, the evidence a judge is shown
(its items, flags and digest, the default budget), all the evidence unselected
(``render_all_evidence``: redaction and flags on every text), and the second net's suspects.
For each text of the injection corpora and the seeded synthetic attack corpus: the flagger's
reasons with and without the learned detector, and its suspicion score. ``record`` writes the
digests; ``compare`` recomputes them with the code on ``PYTHONPATH`` and lists every record
whose outputs changed. ``JUDGE_SCAN=python`` runs the pure-Python scan instead of Hyperscan.

The fixture ``tests/data/safety_outputs.json`` was recorded with the code of commit 026f1c2
(before the one-pass scan): ``tests/judge/safety/test_scan.py`` checks the current code against
it, and the Hyperscan path against the fallback.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from judge.cases import load_cases
from judge.evidence import items_digest, render_all_evidence, select_evidence
from judge.safety.injection import (
    PREFIX,
    UNCERTAIN,
    detect,
    flag_injection,
    suspect_items,
    suspicion,
)
from judge.safety.redact import redact_case
from judge.types import Case, EvidenceItem, TraceTurn

sys.path.insert(0, str(Path(__file__).resolve().parent))

import injection_synthetic  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
DATA = REPO / "tests" / "data"
JOIN = "\u00ab\u00bb"
#: Never read here: the outside set is measured once, by bench/injection_eval.py and
#: bench/reliability_secrets.py with --split outside6.
OUTSIDE = ("heldout6.jsonl", "outside6_")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _detected(items: list[EvidenceItem]) -> list[EvidenceItem]:
    """The items with every flag as detected, certain or not: the second stage's tiers
    (``injection?:``, step 4) change how a flag is routed, not what is detected, and the
    recorded digests are of what was detected."""
    return [
        item.model_copy(update={"flags": [f.replace(UNCERTAIN, PREFIX) for f in item.flags]})
        if any(f.startswith(UNCERTAIN) for f in item.flags)
        else item
        for item in items
    ]


def case_outputs(case: Case) -> dict[str, Any]:
    """What the safety layer makes of one case (its flags as detected, see _detected); the
    suspects of the second net are compared where no flag is uncertain (an uncertain flag makes
    its item a suspect by design)."""
    stored, count = redact_case(case)
    visible = ("task", "candidates") if case.candidates else ("task", "diff", "trace")
    evidence = select_evidence(case, visible=visible, redacted=stored)
    every = render_all_evidence(case, visible=visible)
    shown = _detected(evidence.items)
    return {
        "case": _digest([stored.model_dump(mode="json"), count]),
        "evidence": items_digest(shown),
        "all": items_digest(_detected(every.items)),
        "flags": sorted({f for item in _detected(every.items) for f in item.flags}),
        "suspects": _digest(suspect_items(shown)),
    }


def text_outputs(text: str, source: str = "", role: str = "") -> dict[str, Any]:
    """What the flagger makes of one text (as an item with a source and role, when given)."""
    out: dict[str, Any] = {
        "rules": detect(text, classifier=False),
        "all": detect(text),
        "suspicion": round(suspicion(text), 6),
    }
    if source:
        item = EvidenceItem(id="E1", kind="message", source=source, role=role or None, text=text)
        out["item"] = [f.replace(UNCERTAIN, PREFIX) for f in flag_injection(item)]
    return out


def _jsonl(path: Path, join: bool = False) -> Iterator[dict[str, Any]]:
    text = path.read_text("utf-8")
    if join:
        text = text.replace(JOIN, "")
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def _gold_sets() -> dict[str, Callable[[], Iterator[tuple[str, Case]]]]:
    sets: dict[str, Callable[[], Iterator[tuple[str, Case]]]] = {}
    for path in sorted((SHARED / "gold").glob("*.jsonl")):

        def cases(path: Path = path) -> Iterator[tuple[str, Case]]:
            for case in load_cases(path).cases:
                yield case.id, case

        sets["gold/" + path.stem] = cases
    return sets


def _corpus_cases() -> Iterator[tuple[str, Case]]:
    for name in ("cases.jsonl", "more_cases.jsonl"):
        for record in _jsonl(DATA / "secrets" / name, join=True):
            yield f"{name}/{record['id']}", Case(**record)
    for case in load_cases(REPO / "gold" / "demo.jsonl").cases:
        yield "demo/" + case.id, case


def _injection_records() -> Iterator[tuple[str, dict[str, Any]]]:
    corpus = DATA / "injection"
    for path in (corpus / "dev.jsonl", corpus / "heldout.jsonl"):
        for n, record in enumerate(_jsonl(path)):
            yield f"{path.name}/{n}", record
    for name in ("heldout.jsonl", "heldout3.jsonl", "heldout4.jsonl", "heldout5.jsonl"):
        assert not any(o in name for o in OUTSIDE)
        for n, record in enumerate(_jsonl(corpus / "v2" / name)):
            yield f"v2/{name}/{n}", record


def _synthetic() -> Iterator[tuple[str, dict[str, Any]]]:
    rnd = random.Random(20260101)
    for n, (text, _) in enumerate(injection_synthetic.injections(rnd, 3000)):
        yield f"syn-inj-{n}", {"text": text}
    for n, (text, _) in enumerate(injection_synthetic.benign(rnd, 3000)):
        yield f"syn-ben-{n}", {"text": text}


def _record_outputs(record: dict[str, Any]) -> dict[str, Any]:
    if record.get("turns"):
        case = Case(
            id="r",
            kind="agent_run",
            task="Fix the failing test in the repository.",
            trace=[
                TraceTurn(id=t["id"], role=t["role"], content=t["content"]) for t in record["turns"]
            ],
        )
        return case_outputs(case)
    return text_outputs(str(record.get("text", "")))


def _case_set(
    cases: Callable[[], Iterator[tuple[str, Case]]],
) -> Callable[[], Iterator[tuple[str, Any]]]:
    return lambda: ((i, case_outputs(c)) for i, c in cases())


def all_sets() -> dict[str, Callable[[], Iterator[tuple[str, Any]]]]:
    """Every set: name -> a generator of (record id, outputs)."""
    sets: dict[str, Callable[[], Iterator[tuple[str, Any]]]] = {}
    for name, cases in _gold_sets().items():
        sets[name] = _case_set(cases)
    sets["corpus/cases"] = lambda: ((i, case_outputs(c)) for i, c in _corpus_cases())
    sets["corpus/injection"] = lambda: ((i, _record_outputs(r)) for i, r in _injection_records())
    sets["corpus/synthetic"] = lambda: ((i, _record_outputs(r)) for i, r in _synthetic())
    return sets


def compute(names: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Digests of every record of the chosen sets (all by default)."""
    out: dict[str, dict[str, str]] = {}
    for name, records in all_sets().items():
        if names and name not in names:
            continue
        started = time.perf_counter()
        out[name] = {i: _digest(outputs) for i, outputs in records()}
        print(
            f"{name}: {len(out[name])} records, {time.perf_counter() - started:.1f} s", flush=True
        )
    return out


def differences(
    expected: dict[str, dict[str, str]], actual: dict[str, dict[str, str]]
) -> list[tuple[str, str]]:
    """(set, record id) of every record whose digest differs or is missing on one side."""
    found: list[tuple[str, str]] = []
    for name in sorted(set(expected) & set(actual)):
        ids = set(expected[name]) | set(actual[name])
        found.extend((name, i) for i in sorted(ids) if expected[name].get(i) != actual[name].get(i))
    return found


def main() -> int:
    """Record or compare."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "compare"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--sets", nargs="*", default=None)
    args = parser.parse_args()
    actual = compute(args.sets)
    if args.action == "record":
        args.file.write_text(json.dumps(actual, indent=0, sort_keys=True) + "\n", "utf-8")
        return 0
    expected = json.loads(args.file.read_text("utf-8"))
    diff = differences({k: v for k, v in expected.items() if k in actual}, actual)
    for name, record in diff:
        print(f"changed: {name} {record}")
    print(f"{len(diff)} records changed")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
