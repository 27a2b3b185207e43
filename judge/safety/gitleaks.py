"""gitleaks' published rule set, run in Python, as a layer of :mod:`judge.safety.redact`.

The rules are data: ``judge/safety/rules/gitleaks.toml`` is gitleaks' default configuration
(v8.30.1, MIT; source, licence and version in ``judge/safety/rules/README.md``), read unchanged.
It knows about 220 providers' token shapes (Stripe, SendGrid, npm, Hugging Face, Mailgun,
Datadog, GitLab, Vault, ...) and is maintained upstream: updating it is copying a newer file.

What follows gitleaks' semantics (``detect/detect.go``): a rule runs only where one of its
keywords occurs (case-insensitively); the secret is the rule's ``secretGroup``, else its first
non-empty capture group, else the whole match; a secret whose Shannon entropy is not above the
rule's ``entropy`` is skipped; the global and the rule's allowlists (regexes on the secret, the
match or the line; stopwords in the secret) skip a finding. Only the secret is replaced, so the
name in ``DATADOG_KEY = ...`` stays readable.

What differs, and why:
- Go RE2 syntax is translated to Python's (a ``(?i)`` inside a pattern becomes a scoped group,
  ``\\z`` becomes ``\\Z``); patterns are compiled with ``re.ASCII`` as RE2's classes are ASCII.
- Python's regex engine backtracks where RE2 is linear. The ``[\\w.-]{0,50}?`` that many rules
  put before their keyword (only to make the match include the variable name) would cost up to
  50 steps at every position of every text, so it is dropped from the pattern; a rule allowlist
  that reads the match sees the match extended back over the same 50 characters, as in gitleaks.
- Paths are unknown here (a trace is not a file), so rules and allowlists that need a path are
  skipped, or applied without it: see :data:`SKIPPED`.
- The keyword prefilter is one pass per text (a trie-shaped regex over all keywords), instead
  of one substring search per rule: 220 searches per trace turn cost about twice as much.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from judge.safety.scan import trie_regex

RULES_FILE = "gitleaks.toml"
#: gitleaks release the vendored rules come from (see judge/safety/rules/README.md).
GITLEAKS_VERSION = "v8.30.1"

#: Rules not run, with the reason.
SKIPPED: dict[str, str] = {
    # Matches by file name only; there are no file names here.
    "pkcs12-file": "a path-only rule",
    # Redacts only the first entry of a Secret's data; judge.safety.redact's kubernetes-secret rule
    # redacts every entry.
    "kubernetes-secret-yaml": "replaced by judge.safety.redact's kubernetes-secret rule",
}

#: Rules of the generic kind: run after judge.safety.redact's own structural rules (whose markers
#: name what was found more precisely), as the last net.
GENERIC = frozenset({"generic-api-key", "curl-auth-header", "curl-auth-user"})


def split_generic(ruleset: RuleSet, indexes: Sequence[int]) -> tuple[list[int], list[int]]:
    """``indexes`` split into (provider rules, generic rules)."""
    rules = ruleset.rules
    return (
        [i for i in indexes if rules[i].id not in GENERIC],
        [i for i in indexes if rules[i].id in GENERIC],
    )


_LAZY_CONTEXT = r"[\w.-]{0,50}?"
_CONTEXT_CHARS = re.compile(r"[\w.-]{1,50}\Z", re.ASCII)


@dataclass(frozen=True)
class Allowlist:
    """One gitleaks allowlist: a finding is allowed (not a secret) when it matches."""

    target: str  # "secret", "match" or "line"
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    #: "AND": every check must hold (only used with paths in the shipped rules).
    require_all: bool

    def allows(self, secret: str, match: str, line: str) -> bool:
        """Whether this allowlist lets the finding pass as not a secret."""
        target = {"secret": secret, "match": match, "line": line}[self.target]
        by_regex = bool(target) and any(r.search(target) for r in self.regexes)
        lowered = secret.lower()
        by_word = bool(secret) and any(w in lowered for w in self.stopwords)
        if self.require_all:
            checks = ([by_regex] if self.regexes else []) + ([by_word] if self.stopwords else [])
            return bool(checks) and all(checks)
        return by_regex or by_word


@dataclass(frozen=True)
class Rule:
    """One gitleaks rule, translated."""

    id: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    #: The pattern had gitleaks' lazy ``[\\w.-]{0,50}?`` prefix (dropped; see module doc).
    context_prefix: bool


_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "upper": "A-Z",
    "lower": "a-z",
    "space": "\\t\\n\\v\\f\\r ",
    "word": "0-9A-Za-z_",
}


def go_to_python(pattern: str) -> str:
    """Translate a Go RE2 pattern to Python ``re`` syntax.

    RE2 allows ``(?i)`` anywhere and applies it to the rest of the enclosing group; Python
    only at the start. Each such flag group becomes ``(?i:`` closed where its group closes.
    ``\\z`` (end of text) is Python's ``\\Z``; POSIX classes (``[[:alnum:]]``) are spelt out.
    """
    out: list[str] = []
    #: For each open group: the flags of the scoped groups opened inside it.
    pending: list[list[str]] = [[]]
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            pair = pattern[i : i + 2]
            out.append("\\Z" if pair == "\\z" and not in_class else pair)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\w+):\]", pattern[i:])
            if posix:
                out.append(_POSIX_CLASSES[posix.group(1)])
                i += posix.end()
                continue
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            # A "]" right after "[" or "[^" is a literal in both syntaxes.
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            if pattern.startswith("]", i + 1):
                out.append("]")
                i += 1
            i += 1
            continue
        flag = re.match(r"\(\?([imsU]+)\)", pattern[i:])
        if flag and (i > 0 or len(pending) > 1):
            out.append(f"(?{flag.group(1)}:")
            pending[-1].append(flag.group(1))
            i += flag.end()
            continue
        if ch == "(":
            pending.append([])
        elif ch == ")":
            out.append(")" * len(pending.pop()))
        elif ch == "|" and pending[-1]:
            # In RE2 the flag stays on in the next alternatives of its group: close the scoped
            # groups before the bar and open them again after it.
            opened = pending[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{f}:" for f in opened))
            i += 1
            continue
        out.append(ch)
        i += 1
    out.append(")" * len(pending[0]))
    return "".join(out)


def shannon_entropy(data: str) -> float:
    """Shannon entropy of ``data`` in bits per character (gitleaks' ``shannonEntropy``)."""
    if not data:
        return 0.0
    inv = 1.0 / len(data)
    return -sum(c * inv * math.log2(c * inv) for c in Counter(data).values())


def _allowlist(raw: dict[str, Any]) -> Allowlist | None:
    if (
        raw.get("paths")
        and raw.get("condition", "OR").upper() != "AND"
        and not (raw.get("regexes") or raw.get("stopwords"))
    ):
        return None  # path-only: cannot apply without a path
    if raw.get("paths") and raw.get("condition", "OR").upper() == "AND":
        return None  # needs the path to hold as well: never holds here
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(re.compile(go_to_python(r), re.ASCII) for r in raw.get("regexes", [])),
        stopwords=tuple(w.lower() for w in raw.get("stopwords", [])),
        require_all=raw.get("condition", "OR").upper() == "AND",
    )


def _rule(raw: dict[str, Any]) -> Rule:
    pattern = raw["regex"]
    context_prefix = False
    for flags in ("(?i)", ""):
        if pattern.startswith(flags + _LAZY_CONTEXT):
            pattern = flags + pattern[len(flags + _LAZY_CONTEXT) :]
            context_prefix = True
            break
    allowlists = tuple(
        a for a in (_allowlist(x) for x in raw.get("allowlists", [])) if a is not None
    )
    return Rule(
        id=raw["id"],
        regex=re.compile(go_to_python(pattern), re.ASCII),
        keywords=tuple(k.lower() for k in raw.get("keywords", [])),
        entropy=float(raw.get("entropy", 0.0)),
        secret_group=int(raw.get("secretGroup", 0)),
        allowlists=allowlists,
        context_prefix=context_prefix,
    )


@dataclass(frozen=True)
class RuleSet:
    """The compiled rules, their global allowlist and the keyword prefilter."""

    rules: tuple[Rule, ...]
    global_allowlists: tuple[Allowlist, ...]
    #: One regex that finds any keyword (a trie, so that it costs one pass per text).
    keyword_finder: re.Pattern[str]
    #: keyword found -> indexes of the rules to run: those with that keyword or with a keyword
    #: contained in it (found with it, since the finder's matches do not overlap).
    rules_by_keyword: dict[str, frozenset[int]]
    #: Rules without keywords: always run.
    always: frozenset[int]


@cache
def load_rules(exclude: frozenset[str] = frozenset(SKIPPED)) -> RuleSet:
    """Parse and compile the vendored rules once per process (about 0.1 s, on first use)."""
    text = resources.files("judge.safety").joinpath("rules", RULES_FILE).read_text("utf-8")
    data = tomllib.loads(text)
    rules = tuple(_rule(r) for r in data["rules"] if "regex" in r and r["id"] not in exclude)
    global_allow = _allowlist(data.get("allowlist", {}))
    keywords = sorted({k for r in rules for k in r.keywords})
    by_keyword = {
        k: frozenset(i for i, r in enumerate(rules) if any(o in k for o in r.keywords))
        for k in keywords
    }
    return RuleSet(
        rules=rules,
        global_allowlists=(global_allow,) if global_allow else (),
        keyword_finder=re.compile(trie_regex(keywords)),
        rules_by_keyword=by_keyword,
        always=frozenset(i for i, r in enumerate(rules) if not r.keywords),
    )


def _line_of(text: str, start: int, end: int) -> str:
    begin = text.rfind("\n", 0, start) + 1
    stop = text.find("\n", end)
    return text[begin : stop if stop >= 0 else len(text)]


def _secret_span(rule: Rule, m: re.Match[str]) -> tuple[int, int]:
    """Where the secret is in the match (gitleaks' choice of group)."""
    if m.re.groups == 0:
        return m.span()
    if rule.secret_group:
        return m.span(rule.secret_group)
    for g in range(1, m.re.groups + 1):
        if m.group(g):
            return m.span(g)
    return m.span()


def candidates(lowered: str, ruleset: RuleSet) -> list[int]:
    """Indexes of the rules whose keywords occur in ``lowered`` (``text.lower()``), in order."""
    found = set(ruleset.always)
    for word in set(ruleset.keyword_finder.findall(lowered)):
        found |= ruleset.rules_by_keyword[word]
    return sorted(found)  # in the file's order, so that results are stable


def find(text: str, ruleset: RuleSet, rule_indexes: Sequence[int]) -> list[tuple[int, int, str]]:
    """Spans of secrets found by the rules ``rule_indexes`` (see :func:`candidates`): (start,
    end, rule id). Spans may overlap; the caller keeps the first of overlapping ones."""
    found: list[tuple[int, int, str]] = []
    for index in rule_indexes:
        rule = ruleset.rules[index]
        for m in rule.regex.finditer(text):
            start, end = _secret_span(rule, m)
            secret = text[start:end]
            if rule.entropy and shannon_entropy(secret) <= rule.entropy:
                continue
            if not _allowed(rule, ruleset, text, m, secret):
                found.append((start, end, rule.id))
    return found


def _allowed(rule: Rule, ruleset: RuleSet, text: str, m: re.Match[str], secret: str) -> bool:
    """Whether an allowlist (global, then the rule's) says this finding is not a secret."""
    lists = (*ruleset.global_allowlists, *rule.allowlists)
    if not lists:
        return False
    match_start = m.start()
    if rule.context_prefix:
        # gitleaks' match starts up to 50 identifier characters before the keyword.
        before = _CONTEXT_CHARS.search(text, max(0, match_start - 50), match_start)
        match_start = before.start() if before else match_start
    match = text[match_start : m.end()]
    line = _line_of(text, m.start(), m.end())
    return any(a.allows(secret, match, line) for a in lists)
