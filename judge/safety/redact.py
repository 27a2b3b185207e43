"""Replace secrets in text with readable markers before any of it leaves the process.

Every piece of evidence goes through :func:`redact` before it is shown to a judge, stored or
logged. A secret becomes ``[REDACTED:<pattern name>]``; where a pattern has a non-secret part
(the user and host of a URL, the name in ``API_KEY=...``) that part is kept so the judge can
still read what happened.

Design notes:
- A registry of named patterns (:data:`PATTERNS`, its tables in
  :mod:`judge.safety.secret_patterns` and :mod:`judge.safety.secret_shapes`), applied in order:
  specific patterns first (a PEM block, a GitHub token) so that the marker names what was
  found; generic ones last (``Authorization: Bearer``, ``.env`` lines). A later pattern never
  re-matches a marker.
- Every pattern is precompiled and linear: repetitions are bounded or over character classes
  that cannot overlap with what follows, so a 50 MB input without a match costs one scan per
  pattern (tested in tests/judge/safety/test_redact.py). A literal ``needle`` lets a pattern skip
  the scan entirely when its anchor text is absent.
- No generic "high entropy" rule: git SHAs and digests in diffs (``index 92394a7eae..``) are
  evidence, not secrets.
- Four stages (:func:`redact`): this package's provider patterns (:data:`SPECIFIC`), gitleaks'
  published rules for ~220 providers (:mod:`judge.safety.gitleaks`, data not code), this
  package's structural rules (:data:`STRUCTURAL`: headers, URLs, command-line flags, config
  keys, ``.netrc``, ``.npmrc``, docker ``config.json``, Kubernetes Secrets, connection strings),
  and last gitleaks' generic rules (a keyed value of high entropy, ``curl`` credentials).
- Values that sit where a secret could but are dummies (``password='password'``,
  ``user:pass@example.com``, ``SECRET_KEY = 'fake-key'``: test data that a judge must read) are
  left alone: see :func:`judge.safety.secret_patterns.is_trivial`.
- Records too: :func:`redact_judgment` (a model's answer may quote evidence) and
  :func:`redact_case` (the stored case, which the review page shows to people).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from judge.digests import sha256_hex
from judge.safety import joins, unescape
from judge.safety.config_secrets import CONFIG
from judge.safety.gitleaks import find, load_rules, split_generic
from judge.safety.lookalikes import is_lookalike
from judge.safety.paired_secrets import PAIRED
from judge.safety.scan import Hits, Spec, literal_ids, scanner
from judge.safety.secret_patterns import MARKER_PREFIX as MARKER_PREFIX
from judge.safety.secret_patterns import (
    SPECIFIC,
    STRUCTURAL,
    SecretPattern,
    marker,
    replaced_span,
)
from judge.safety.secret_shapes import SHAPES
from judge.types import Case, Judgment, TraceTurn

#: Every pattern of this package, in the order :func:`redact` applies them (the gitleaks stages
#: run between :data:`SPECIFIC` and :data:`STRUCTURAL`, and after it; :data:`SHAPES`,
#: :data:`judge.safety.config_secrets.CONFIG` and :data:`judge.safety.paired_secrets.PAIRED`
#: last, in that order).
PATTERNS: tuple[SecretPattern, ...] = SPECIFIC + STRUCTURAL + SHAPES + CONFIG + PAIRED


def redact(
    text: str, *, patterns: Sequence[SecretPattern] | None = None, decode: bool = True
) -> tuple[str, int]:
    """Replace every secret in ``text`` with a ``[REDACTED:<name>]`` marker.

    Returns the redacted text and how many secrets were replaced. Deterministic: the same text
    always gives the same output. By default six stages run: :data:`SPECIFIC`, gitleaks'
    provider rules, :data:`STRUCTURAL`, gitleaks' generic rules, :data:`SHAPES`, and (with
    ``decode``) the same on the text's decoded views (:mod:`judge.safety.unescape`); the text is
    scanned once (:mod:`judge.safety.scan`) and only the rules the scan allows are run. With
    ``patterns``, only those patterns run (no gitleaks stage, no scan, no views).
    """
    if not text:
        return text, 0
    if patterns is not None:
        return _run_patterns(text, patterns)[:2]
    joined = 0
    plan = _plan()
    scan = _Scan(plan, text)
    if decode and (scan.hits.maybe is None or plan.split_gate in scan.hits.maybe):
        # A key split over two lines is joined before any rule redacts half of it (only where
        # the scan allows one: see unescape.SPLIT_GATE); the rules see the joined text.
        text, joined = unescape.joined_secrets(text, _core)
        if joined:
            scan = _Scan(plan, text)
    if decode and (
        plan.join_gate in scan.hits.maybe if scan.hits.maybe is not None else joins.gate(text)
    ):
        # Two pieces of one token on a line (``"ghp_ab" + "cd"``) or cut by a shell ``\``.
        text, pieces = joins.joined_pieces(text, _core)
        if pieces:
            joined += pieces
            scan = _Scan(plan, text)
    # Which gitleaks rules can match is decided once, on the text as given (a keyword of the
    # rule occurs in it, as gitleaks decides): redaction only removes text.
    provider, generic = plan.gitleaks_candidates(scan.hits.literals)
    text, total = scan.run_own(text, plan.specific)
    text, n = _run_gitleaks(text, scan.allowed(text, provider))
    total += n
    text, n = scan.run_own(text, plan.structural)
    total += n
    text, n = _run_gitleaks(text, scan.allowed(text, generic))
    total += n
    text, n = scan.run_own(text, plan.shapes)
    total += n
    if decode:
        # Redaction only inserts markers (``[`` ... ``]``, which no escape holds) between
        # pieces of the scanned text: an escape of the text now was in the text scanned.
        maybe = scan.hits.maybe
        text, n = _decoded(text, maybe is None or plan.escape_gate in maybe)
        total += n
    return text, total + joined


class _Plan(NamedTuple):
    """Every rule of :func:`redact` and the scan that gates them. This module's patterns are
    numbered in :data:`PATTERNS` order (bit ``j`` of a mask is pattern ``j``); gitleaks' rules
    follow them in the scan's rule ids."""

    #: Literal id -> mask of this module's patterns with that needle.
    needle_masks: dict[int, int]
    #: Mask of this module's patterns without needles (always possible).
    unneedled: int
    #: Masks of the :data:`SPECIFIC`, :data:`STRUCTURAL` and :data:`SHAPES` patterns.
    specific: int
    structural: int
    shapes: int
    #: Rule id of gitleaks rule 0.
    gitleaks_offset: int
    #: Rule ids of :data:`judge.safety.unescape.SPLIT_GATE` and
    #: :data:`judge.safety.unescape.ESCAPE_ASCII` (after gitleaks' rules).
    split_gate: int
    escape_gate: int
    #: Rule id of :data:`judge.safety.joins.GATE`.
    join_gate: int
    #: Literal id -> gitleaks rules with that keyword, split as (provider, generic).
    by_keyword: dict[int, tuple[frozenset[int], frozenset[int]]]
    #: gitleaks rules with no keyword (always run), split the same way.
    always: tuple[frozenset[int], frozenset[int]]
    spec: Spec

    def gitleaks_candidates(self, literals: frozenset[int]) -> tuple[list[int], list[int]]:
        """The gitleaks rules a keyword of which occurs, as (provider, generic) in file order."""
        provider, generic = set(self.always[0]), set(self.always[1])
        for literal in literals:
            found = self.by_keyword.get(literal)
            if found is not None:
                provider |= found[0]
                generic |= found[1]
        return sorted(provider), sorted(generic)

    def possible(self, hits: Hits) -> int:
        """Mask of this module's patterns the scan allows: a needle occurs, and the prefilter
        matches (or was not checked)."""
        mask = self.unneedled
        needle_masks = self.needle_masks
        for literal in hits.literals:
            mask |= needle_masks.get(literal, 0)
        if mask and hits.maybe is not None:
            maybe = 0
            for rule in hits.maybe:
                if rule < self.gitleaks_offset:
                    maybe |= 1 << rule
            mask &= maybe
        return mask


@lru_cache(maxsize=1)
def _plan() -> _Plan:
    rules = load_rules()
    words = [n for p in PATTERNS for n in p.needles] + [k for r in rules.rules for k in r.keywords]
    ids = literal_ids(words)
    needle_masks: dict[int, int] = {}
    unneedled = 0
    for j, pattern in enumerate(PATTERNS):
        if not pattern.needles:
            unneedled |= 1 << j
        for needle in pattern.needles:
            needle_masks[ids[needle]] = needle_masks.get(ids[needle], 0) | 1 << j
    _, generic_ids = split_generic(rules, range(len(rules.rules)))
    generic_set = frozenset(generic_ids)
    by_keyword: dict[int, tuple[set[int], set[int]]] = {}
    for index, rule in enumerate(rules.rules):
        for keyword in rule.keywords:
            pair = by_keyword.setdefault(ids[keyword], (set(), set()))
            pair[1 if index in generic_set else 0].add(index)
    always = [i for i, rule in enumerate(rules.rules) if not rule.keywords]
    return _Plan(
        needle_masks=needle_masks,
        unneedled=unneedled,
        specific=(1 << len(SPECIFIC)) - 1,
        structural=((1 << (len(SPECIFIC) + len(STRUCTURAL))) - 1) ^ ((1 << len(SPECIFIC)) - 1),
        shapes=((1 << len(PATTERNS)) - 1) ^ ((1 << (len(SPECIFIC) + len(STRUCTURAL))) - 1),
        gitleaks_offset=len(PATTERNS),
        split_gate=len(PATTERNS) + len(rules.rules),
        escape_gate=len(PATTERNS) + len(rules.rules) + 1,
        join_gate=len(PATTERNS) + len(rules.rules) + 2,
        by_keyword={k: (frozenset(a), frozenset(b)) for k, (a, b) in by_keyword.items()},
        always=(
            frozenset(i for i in always if i not in generic_set),
            frozenset(i for i in always if i in generic_set),
        ),
        spec=Spec(
            literals=tuple(ids),
            rules=(
                *(p.regex for p in PATTERNS),
                *(rule.regex for rule in rules.rules),
                unescape.SPLIT_GATE,
                unescape.ESCAPE_ASCII,
                joins.GATE,
            ),
        ),
    )


def _spec() -> Spec:
    return _plan().spec


class _Scan:
    """The scan of the text being redacted, redone when a replacement changed the text (rare:
    the needles are tested on the text as it is, as they always were)."""

    def __init__(self, plan: _Plan, text: str) -> None:
        self.plan = plan
        self.scanner = scanner("secrets", _spec)
        self.text = text
        self.hits = self.scanner.scan(text)
        self.mask = plan.possible(self.hits)

    def current(self, text: str) -> Hits:
        if text is not self.text:
            self.text = text
            self.hits = self.scanner.scan(text)
            self.mask = self.plan.possible(self.hits)
        return self.hits

    def allowed(self, text: str, rule_indexes: Sequence[int]) -> list[int]:
        """The gitleaks rules of ``rule_indexes`` whose prefilter matches ``text``."""
        if not rule_indexes:
            return []
        maybe = self.current(text).maybe
        if maybe is None:
            return list(rule_indexes)
        offset = self.plan.gitleaks_offset
        return [i for i in rule_indexes if offset + i in maybe]

    def run_own(self, text: str, stage: int) -> tuple[str, int]:
        """Apply this module's patterns of ``stage`` (a mask) in order, each only where the scan
        of the current text allows it."""
        total = 0
        j = 0
        while True:
            self.current(text)
            todo = self.mask & stage & ~((1 << j) - 1)
            if not todo:
                return text, total
            j = (todo & -todo).bit_length() - 1  # the next allowed pattern
            redacted, n = _apply(PATTERNS[j], text)
            if n:
                text = redacted
                total += n
            j += 1


def _core(text: str) -> tuple[str, int]:
    """:func:`redact` without the decoded views (what a view is redacted with)."""
    return redact(text, decode=False)


def _decoded(text: str, escapes: bool = True) -> tuple[str, int]:
    """Stage 6: secrets that only show once the text is decoded (character escapes, hidden and
    full-width characters, base64 runs), redacted where they stand
    (:mod:`judge.safety.unescape`; split lines are joined before stage 1). ``escapes=False``:
    the scan found no escape in the text, so it has no escaped view."""
    total = 0
    view = unescape.escaped_view(text) if escapes else None
    if view is not None:
        text, n = unescape.redact_view(text, view, _core)
        total += n
    text, n = unescape.base64_secrets(text, _core)
    return text, total + n


def _run_patterns(
    text: str, patterns: Sequence[SecretPattern], lowered: str | None = None
) -> tuple[str, int, str | None]:
    """Apply ``patterns`` in order; the text, the count and its lower-case view (None when the
    text changed since that view was made)."""
    total = 0
    for pattern in patterns:
        if pattern.needles:
            if lowered is None:
                lowered = text.lower()
            if not any(needle in lowered for needle in pattern.needles):
                continue
        text, n = _apply(pattern, text)
        if n:
            total += n
            lowered = None  # the text changed; recompute the prefilter view when next needed
    return text, total, lowered


_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def _run_gitleaks(text: str, rule_indexes: Sequence[int]) -> tuple[str, int]:
    """Replace what the gitleaks rules ``rule_indexes`` find."""
    if not rule_indexes:
        return text, 0
    spans = find(text, load_rules(), rule_indexes)
    if not spans:
        return text, 0
    # Never rewrite an earlier marker, nor part of one.
    markers = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []
    out: list[str] = []
    last = 0
    count = 0
    for start, end, rule in sorted(spans):
        if start < last or start == end:
            continue  # overlaps a secret already replaced
        if any(s < end and start < e for s, e in markers):
            continue
        if is_lookalike(text[start:end], text, start):
            continue
        out.append(text[last:start])
        out.append(marker(rule))
        last = end
        count += 1
    out.append(text[last:])
    return "".join(out), count


def _apply(pattern: SecretPattern, text: str) -> tuple[str, int]:
    """Run one pattern, counting only the matches that were actually rewritten."""
    changed = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal changed
        new = pattern.replace(m)
        old = m.group(0)
        if new != old:
            head, tail = replaced_span(old, new)
            if is_lookalike(old[head:tail], text, m.start() + head):
                return old
            changed += 1
        return new

    starts = None if pattern.starts is None else pattern.starts(text)
    if starts is None:
        return pattern.regex.sub(replace, text), changed
    # ``sub`` over the given starts only: left to right, each match from where the last ended.
    out: list[str] = []
    last = 0
    match_at = pattern.regex.match
    for start in starts:
        if start < last:
            continue
        m = match_at(text, start)
        if m is None:
            continue
        out.append(text[last:start])
        out.append(replace(m))
        last = m.end()
    if not out:
        return text, 0
    out.append(text[last:])
    return "".join(out), changed


def pattern_names(patterns: Sequence[SecretPattern] = PATTERNS) -> list[str]:
    """The distinct names of the registered patterns, in order."""
    return list(dict.fromkeys(p.name for p in patterns))


def redact_turn_fields(turn: TraceTurn) -> tuple[TraceTurn, int]:
    """The turn with its id, role and source redacted (the content is not touched): the id and
    the role are shown to the judge in each evidence tag, and all three are stored."""
    fields: dict[str, str] = {}
    total = 0
    for name in ("id", "role", "source"):
        value = getattr(turn, name)
        if value:
            fields[name], n = _redact_field(value)
            total += n
    return (turn.model_copy(update=fields) if total else turn), total


@lru_cache(maxsize=4096)
def _redact_field(value: str) -> tuple[str, int]:
    """:func:`redact` of a turn's id, role or source, remembered: roles and ids such as
    ``agent`` or ``msg-3`` repeat across turns and cases (1.4 ms per SWE-bench case uncached)."""
    return redact(value)


def _redact_values(value: Any) -> tuple[Any, int]:
    """Every string inside ``value`` (dicts, lists) redacted, and the count."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            out[key], n = _redact_values(item)
            total += n
        return (out if total else value), total
    if isinstance(value, list):
        items = [_redact_values(item) for item in value]
        total = sum(n for _, n in items)
        return ([v for v, _ in items] if total else value), total
    return value, 0


#: Joins a redacted case id and the short digest that keeps it unique.
CASE_ID_DIGEST_SEPARATOR = "~"


@lru_cache(maxsize=4096)
def safe_case_id(case_id: str) -> str:
    """``case_id`` as judge keeps it: unchanged when it holds no secret; otherwise redacted, with
    a short digest of the whole id appended (``run-[REDACTED:github-token]-7~1a2b3c4d``) so that
    it stays unique and the same id always maps to the same one.

    A case id is stored, shown to reviewers, printed by ``judge run`` and exported, so a secret
    in it must not stay. The mapping is the function itself (no table keeps the original):
    whoever has the original id computes the kept one with this function, and nothing stored
    holds the secret. The digest is 32 bits of SHA-256 of the id, too few to recover a random
    token and enough to keep distinct ids apart."""
    redacted, count = redact(case_id)
    if not count:
        return case_id
    digest = sha256_hex(("judge-case-id\0" + case_id).encode("utf-8", "surrogatepass"))
    return f"{redacted}{CASE_ID_DIGEST_SEPARATOR}{digest[:8]}"


def with_safe_id(case: Case) -> Case:
    """``case`` with :func:`safe_case_id` of its id (itself when the id holds no secret)."""
    safe = safe_case_id(case.id)
    return case if safe == case.id else case.model_copy(update={"id": safe})


def redact_case(case: Case) -> tuple[Case, int]:
    """The case with its texts redacted (task, diff, candidates, trace turns with their ids,
    roles and sources, and every string in slices and meta) and the count.

    For the stored copy of a case, which the review page and exports show to people. The id,
    kind and agent model are kept as given: they identify the case. Returns ``case`` itself
    when nothing was redacted.
    """
    task, n_task = redact(case.task)
    diff, n_diff = redact(case.diff) if case.diff is not None else (None, 0)
    candidates: dict[str, str] | None = None
    n_candidates = 0
    if case.candidates is not None:
        candidates = {}
        for label, text in case.candidates.items():
            candidates[label], n = redact(text)
            n_candidates += n
    turns: list[TraceTurn] = []
    n_turns = 0
    for turn in case.trace:
        content, n = redact(turn.content)
        shown, m = redact_turn_fields(turn)
        n_turns += n + m
        turns.append(shown.model_copy(update={"content": content}) if n else shown)
    slices, n_slices = _redact_values(case.slices)
    meta, n_meta = _redact_values(case.meta)
    total = n_task + n_diff + n_candidates + n_turns + n_slices + n_meta
    if not total:
        return case, 0
    update = {
        "task": task,
        "diff": diff,
        "candidates": candidates,
        "trace": turns,
        "slices": slices,
        "meta": meta,
    }
    return case.model_copy(update=update), total


# Pydantic's validation errors quote the model's output as ``input_value='head...tail'``: a cut
# secret whose tail no pattern recognises any more. The raw output is kept (redacted) anyway.
_INPUT_VALUE = re.compile(r"input_value=(?P<q>['\"]).{0,1000}?(?P=q)(?=, input_type=)")


def redact_error(text: str) -> tuple[str, int]:
    """:func:`redact` for error messages: also elides the quoted input of validation errors."""
    elided, n = (
        _INPUT_VALUE.subn("input_value=[elided]", text) if "input_value=" in text else (text, 0)
    )
    redacted, m = redact(elided)
    return redacted, n + m


def redact_judgment(judgment: Judgment) -> tuple[Judgment, int]:
    """The judgment with its free text redacted, and the count.

    A model's answer may quote the evidence it was shown (redacted already) or bring back a
    secret from elsewhere (its training data, a tool): the rationale, the criteria rationales,
    the raw output and the error text are redacted before the judgment is stored or shown.
    Returns ``judgment`` itself when nothing was redacted.
    """
    total = 0

    def scrub(text: str | None) -> str | None:
        nonlocal total
        if text is None:
            return None
        redacted, n = redact(text)
        total += n
        return redacted

    verdict = judgment.verdict
    if verdict is not None:
        criteria = [
            c.model_copy(update={"rationale": scrub(c.rationale)}) for c in verdict.criteria
        ]
        verdict = verdict.model_copy(
            update={"rationale": scrub(verdict.rationale), "criteria": criteria}
        )
    raw_output = scrub(judgment.raw_output)
    error = None
    if judgment.error is not None:
        error, n = redact_error(judgment.error)
        total += n
    if not total:
        return judgment, 0
    update = {"verdict": verdict, "raw_output": raw_output, "error": error}
    return judgment.model_copy(update=update), total
