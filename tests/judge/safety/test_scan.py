"""The one-pass scan (judge.safety.scan): Hyperscan and the pure-Python fallback give the same
redactions and flags, and the same as the code before the scan (commit 026f1c2) on every gold
set and corpus; a prefilter never misses a match of its rule.

Fake secrets are assembled from pieces so that no scanner mistakes this file for a leak.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from judge.safety import scan
from judge.safety.gitleaks import load_rules
from judge.safety.redact import PATTERNS, redact
from tests.conftest import DATA, REPO, SHARED, bench_module

hyperscan = pytest.importorskip("hyperscan", reason="the fast extra (Hyperscan) is not installed")

FIXTURE = DATA / "safety_outputs.json"
JOIN = "\u00ab\u00bb"


def _texts(path: Path) -> list[str]:
    """Every string of a JSONL file (the planted corpora, with their «» removed)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for line in path.read_text("utf-8").replace(JOIN, "").splitlines():
        if line.strip():
            walk(json.loads(line))
    return out


def _corpus_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((DATA / "secrets").glob("*.jsonl")):
        if not path.name.startswith("outside6_"):
            texts.extend(_texts(path))
    for path in [
        *sorted((DATA / "injection").glob("*.jsonl")),
        *sorted((DATA / "injection" / "v2").glob("*.jsonl")),
    ]:
        if "heldout6" not in path.name:
            texts.extend(_texts(path))
    return texts


def test_both_backends_redact_the_test_corpora_alike() -> None:
    texts = _corpus_texts()
    assert len(texts) > 1000
    with scan.use_backend("hyperscan"):
        fast = [redact(t) for t in texts]
    with scan.use_backend("python"):
        slow = [redact(t) for t in texts]
    assert fast == slow
    assert sum(n for _, n in fast) > 100


def _prefiltered() -> list[tuple[str, re.Pattern[str]]]:
    rules = [(p.name, p.regex) for p in PATTERNS] + [(r.id, r.regex) for r in load_rules().rules]
    return [(name, regex) for name, regex in rules if scan.prefilter_source(regex.pattern)]


def test_almost_every_rule_has_a_prefilter() -> None:
    rules = [p.regex for p in PATTERNS] + [r.regex for r in load_rules().rules]
    with scan.use_backend("hyperscan"):
        from judge.safety.redact import _plan

        built = scan.scanner("secrets", lambda: _plan().spec)
    assert isinstance(built, scan.HyperscanScanner)
    assert len(built.prefiltered) >= len(rules) - 3


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"(?P<keep>a\s{1,5})(?P=keep)", r"(?:a[\s\x1c-\x1f]{1,})[\s\S]*"),
        (r"[^\s\"']{8,200}x\Z", r"[^\s\x1c-\x1f\"']{8,}x"),
        (r"[\S]{29}|[\s\S-]{64,}?", r"[^\s\x1c-\x1f]{29}|[\s\S]{64,}?"),
        (r"\Aab(?:\n|\Z)", r"ab(?:\n|)"),
        (r"[]a]b", r"[\]a]b"),
        (r"[^a\S]", None),
    ],
)
def test_prefilter_translation(pattern: str, expected: str | None) -> None:
    assert scan.prefilter_source(pattern) == expected


def _built() -> tuple[scan.HyperscanScanner, list[re.Pattern[str] | None]]:
    from judge.safety.redact import _plan

    with scan.use_backend("hyperscan"):
        built = scan.scanner("secrets", lambda: _plan().spec)
    assert isinstance(built, scan.HyperscanScanner)
    return built, list(_plan().spec.rules)


def test_a_prefilter_never_misses_a_match_of_its_rule_in_the_corpora() -> None:
    built, rules = _built()
    texts = [t for t in _corpus_texts() if t.isascii()]
    seen: set[int] = set()
    for index, regex in enumerate(rules):
        if regex is None or index not in built.prefiltered:
            continue
        for text in texts:
            if regex.search(text):
                hits = built.scan(text)
                assert hits.maybe is not None and index in hits.maybe, (regex.pattern, text)
                seen.add(index)
    assert len(seen) > 40


def test_a_prefilter_never_misses_a_match_of_its_rule_on_generated_text() -> None:
    """Hypothesis draws texts that contain a match of each rule (``from_regex``): on every
    ASCII one, the rule's prefilter hits."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    built, rules = _built()

    def checker(index: int, regex: re.Pattern[str]) -> Any:
        @settings(
            max_examples=int(os.environ.get("JUDGE_FUZZ_EXAMPLES", "3")),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.from_regex(regex, fullmatch=False))
        def check(text: str) -> None:
            if text.isascii() and regex.search(text):
                hits = built.scan(text)
                assert hits.maybe is not None and index in hits.maybe, (regex.pattern, text)

        return check

    tried = 0
    for index, regex in enumerate(rules):
        if regex is not None and index in built.prefiltered:
            checker(index, regex)()
            tried += 1
    assert tried >= len(rules) - 3


def test_non_ascii_text_runs_every_rule_its_literals_allow() -> None:
    # A Kelvin sign lower-cases to "k": the literal test is on the lower-cased text, as before.
    text = "export API_\u212aEY=" + "Zq8" * 6 + " caf\u00e9"
    with scan.use_backend("hyperscan"):
        fast = redact(text)
    with scan.use_backend("python"):
        slow = redact(text)
    assert fast == slow


def test_the_compiled_database_is_cached_and_reloaded(tmp_path: Path) -> None:
    from judge.safety.redact import _plan

    spec = _plan().spec
    first = scan.HyperscanScanner(spec, tmp_path)
    files = list(tmp_path.glob("scan-*.hsdb"))
    assert len(files) == 1
    again = scan.HyperscanScanner(spec, tmp_path)
    assert again.prefiltered == first.prefiltered
    text = "token: " + "AKIA" + "Z7QK3M2XN4P5R6T8" + " and ghp_" + "x" * 36
    assert again.scan(text) == first.scan(text)
    files[0].write_bytes(b"0\nnot a database")  # a broken cache is compiled again
    assert scan.HyperscanScanner(spec, tmp_path).scan(text) == first.scan(text)


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("backend", ["hyperscan", "python"])
def test_outputs_equal_the_recorded_outputs_of_the_code_before(backend: str) -> None:
    """Redactions, evidence, flags and suspects of every gold case and corpus record, against
    digests recorded with the code of 026f1c2 (bench/safety_outputs.py); the differences the
    fixture lists as mended are the only ones allowed."""
    if not (SHARED / "gold").is_dir():
        pytest.skip("../shared/gold is absent")
    outputs = bench_module("safety_outputs")
    recorded = json.loads(FIXTURE.read_text("utf-8"))
    mended = recorded.pop("mended", {})
    with scan.use_backend(backend):
        actual = outputs.compute(sorted(recorded))
    changed = outputs.differences(recorded, actual)
    assert [c for c in changed if c[1] not in mended.get(c[0], {})] == []
    assert REPO.is_dir()


def test_the_split_gate_matches_every_text_whose_split_keys_are_joined() -> None:
    """unescape.SPLIT_GATE (a rule of the secrets scan) lets the split regex be skipped: it
    must match wherever joined_secrets joins and redacts something."""
    from judge.safety.redact import _core
    from judge.safety.unescape import SPLIT_GATE, joined_secrets

    texts = _corpus_texts() + [
        'key = "ghp_abcdefghijklmnop" +\n    "qrstuvwxyz0123456789ABCD"',
        "TOKEN=Zq8Xw2Lp0Rt5Yu1Io9Pa\\\nZq8Xw2Lp0Rt5Yu1Io9Pa\n",
    ]
    joined = [t for t in texts if joined_secrets(t, _core)[1]]
    assert len(joined) >= 2
    assert all(SPLIT_GATE.search(t) for t in joined)
