"""Replace secrets in text with readable markers before any of it leaves the process.

Every piece of evidence goes through :func:`redact` before it is shown to a judge, stored or
logged. A secret becomes ``[REDACTED:<pattern name>]``; where a pattern has a non-secret part
(the user and host of a URL, the name in ``API_KEY=...``) that part is kept so the judge can
still read what happened.

Design notes:
- A registry of named patterns (:data:`PATTERNS`), applied in order: specific patterns first
  (a PEM block, a GitHub token) so that the marker names what was found; generic ones last
  (``Authorization: Bearer``, ``.env`` lines). A later pattern never re-matches a marker.
- Every pattern is precompiled and linear: repetitions are bounded or over character classes
  that cannot overlap with what follows, so a 50 MB input without a match costs one scan per
  pattern (tested in tests/test_redact.py). A literal ``needle`` lets a pattern skip the scan
  entirely when its anchor text is absent.
- No generic "high entropy" rule: git SHAs and digests in diffs (``index 92394a7eae..``) are
  evidence, not secrets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

Replacer = Callable[[re.Match[str]], str]


class SecretPattern(NamedTuple):
    """One named secret pattern: its regex and how a match is rewritten."""

    name: str
    regex: re.Pattern[str]
    #: Returns the replacement for a match; returning the match unchanged means "not a secret"
    #: (e.g. a ``$VARIABLE`` placeholder) and is not counted.
    replace: Replacer
    #: Lower-case literal texts of which at least one must occur (case-insensitively) for a
    #: match to be possible; lets :func:`redact` skip a whole scan. Empty means always scan.
    needles: tuple[str, ...] = ()


def marker(name: str) -> str:
    """The text that stands in for a secret found by pattern ``name``."""
    return f"[REDACTED:{name}]"


def _whole(name: str) -> Replacer:
    """Replace the entire match."""
    text = marker(name)
    return lambda m: text


def _keep_prefix(name: str, *, skip_placeholders: bool = False) -> Replacer:
    """Keep group ``keep`` (a label such as ``password=``), replace group ``secret``."""
    text = marker(name)

    def replace(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if skip_placeholders and _is_placeholder(secret):
            return m.group(0)
        suffix = m.groupdict().get("after") or ""
        return f"{m.group('keep')}{text}{suffix}"

    return replace


# Values that sit where a secret could, but are not one: shell/template variables, empty or
# null literals, references to code (``settings.TOKEN``), and earlier markers.
_PLACEHOLDER = re.compile(
    r"""\$\{?\w+\}?|\{\{[^}]*\}\}|<[^>]*>|\*+|x+|\.\.\.|"""
    r"""none|null|nil|true|false|changeme|your[-_a-z]*|"""
    r"""[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\[REDACTED:[a-z0-9-]+\]""",
    re.IGNORECASE,
)


def _is_placeholder(value: str) -> bool:
    stripped = value.strip().strip("\"'")
    return not stripped or _PLACEHOLDER.fullmatch(stripped) is not None


# Characters that may continue a token: used as a right boundary so that a pattern never
# matches the first part of a longer token.
_TOK = r"A-Za-z0-9_\-"

PATTERNS: tuple[SecretPattern, ...] = (
    # A whole PEM private key block. The body is bounded (real keys are < 10 kB) so an
    # unterminated BEGIN line cannot make the scan quadratic; a block whose END was cut off
    # (clipped traces) is caught by the next pattern, header plus base64 lines.
    SecretPattern(
        "private-key",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z0-9]{1,20}(?: [A-Z0-9]{1,20}){0,3} )?PRIVATE KEY-----"
            # One character at a time, never "-----": a BEGIN without an END stops at the next
            # armour line instead of scanning on, so many unterminated BEGINs stay linear.
            r"(?:[A-Za-z0-9+/=\s:,\\]|-(?!----)){0,20000}?"
            r"-----END (?P=kind)?PRIVATE KEY-----"
        ),
        _whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY-----"
            r"(?:[ \t]*(?:\r?\n|\\n)"
            r"(?:[A-Za-z\-]{1,30}:[^\n\\]{0,100}|[ \t]*[A-Za-z0-9+/=]{16,200})){0,400}"
        ),
        _whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "aws-access-key-id",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        _whole("aws-access-key-id"),
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
    ),
    # The secret access key is 40 base64 characters with nothing to recognise it by, so it is
    # only redacted where it is assigned to a name that says what it is.
    SecretPattern(
        "aws-secret-access-key",
        re.compile(
            r"(?P<keep>(?i:aws)?_?(?i:secret)_?(?i:access)?_?(?i:key)[\"']?\s{0,5}[:=]\s{0,5}"
            r"[\"']?)(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        _keep_prefix("aws-secret-access-key"),
        ("secret",),
    ),
    SecretPattern(
        "github-token",
        re.compile(
            rf"(?<![{_TOK}])(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_[A-Za-z0-9_]{{22,255}})"
            rf"(?![{_TOK}])"
        ),
        _whole("github-token"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern(
        "anthropic-api-key",
        re.compile(rf"(?<![{_TOK}])sk-ant-[{_TOK}]{{20,300}}(?![{_TOK}])"),
        _whole("anthropic-api-key"),
        ("sk-ant-",),
    ),
    SecretPattern(
        "openai-api-key",
        re.compile(
            rf"(?<![{_TOK}])sk-(?:(?:proj|svcacct|admin|None)-[{_TOK}]{{20,300}}"
            rf"|[A-Za-z0-9]{{20,200}}(?:T3BlbkFJ[A-Za-z0-9]{{10,100}})?)(?![{_TOK}])"
        ),
        _whole("openai-api-key"),
        ("sk-",),
    ),
    SecretPattern(
        "slack-token",
        re.compile(rf"(?<![{_TOK}])xox[abposre]-[A-Za-z0-9\-]{{10,250}}(?![{_TOK}])"),
        _whole("slack-token"),
        ("xox",),
    ),
    SecretPattern(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,200}"),
        _whole("slack-webhook"),
        ("hooks.slack.com",),
    ),
    SecretPattern(
        "google-api-key",
        re.compile(rf"(?<![{_TOK}])AIza[{_TOK}]{{35}}(?![{_TOK}])"),
        _whole("google-api-key"),
        ("aiza",),
    ),
    SecretPattern(
        "jwt",
        re.compile(
            rf"(?<![{_TOK}.])eyJ[A-Za-z0-9_\-]{{5,4000}}\.eyJ[A-Za-z0-9_\-]{{5,8000}}"
            rf"\.[A-Za-z0-9_\-]{{0,4000}}(?![{_TOK}])"
        ),
        _whole("jwt"),
        ("eyj",),
    ),
    # Generic rules last: whatever the specific rules left in these places.
    SecretPattern(
        "bearer-token",
        re.compile(
            r"(?P<keep>(?i:authorization)[\"']?\s{0,5}[:=]\s{0,5}[\"']?"
            r"(?i:bearer|token|basic)\s{1,5})(?P<secret>[A-Za-z0-9._~+/\-]{8,4000}=*)"
        ),
        _keep_prefix("bearer-token"),
        ("authorization",),
    ),
    SecretPattern(
        "url-password",
        re.compile(
            # The user may be empty: redis://:password@host.
            r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@?#\[\]]{0,256}:)"
            r"(?P<secret>[^\s:/@?#\[\]]{1,256})(?P<after>@)"
        ),
        _keep_prefix("url-password", skip_placeholders=True),
        ("://",),
    ),
    # ``.env``-style assignments (also inside diffs, YAML and shell exports) whose upper-case
    # name ends in a secret word. The value must be a quoted string or one bare word followed
    # only by a comment, so code such as ``PASSWORD = os.environ["X"]`` is left alone.
    SecretPattern(
        "env-secret",
        re.compile(
            r"(?m)^(?P<keep>[+\- ]?[ \t]{0,40}(?:export[ \t]{1,5})?"
            r"(?:[A-Z][A-Z0-9_]{0,80}?)?(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|API_KEY|APIKEY|"
            r"ACCESS_KEY|PRIVATE_KEY|SECRET_KEY|CREDENTIALS|AUTH)"
            r"[ \t]{0,5}[=:][ \t]{0,5})"
            r"(?P<secret>\"[^\"\n]{1,1000}\"|'[^'\n]{1,1000}'|[^\s\"'#()\[\]{},;]{1,1000})"
            r"(?=[ \t]*(?:#[^\n]*)?\r?$)"
        ),
        _keep_prefix("env-secret", skip_placeholders=True),
        ("secret", "token", "passw", "passphrase", "api_key", "apikey", "access_key",
         "private_key", "credentials", "auth"),
    ),
    # The same in lower or mixed case (YAML, JSON, INI, Python literals: ``password: "x"``,
    # ``"api_key": "x"``, ``db_password = 'x'``): a quoted value anywhere, or a bare value that
    # ends the line and is not a type name (``password: str`` is an annotation). Values shorter
    # than 8 characters are left alone: in code they are test data (``{'APP_TOKEN': 'abc'}``)
    # that a judge needs to read, not credentials. The match starts at the secret word (a
    # prefix such as ``db_`` stays in the text untouched), so the scan stays cheap.
    SecretPattern(
        "config-secret",
        re.compile(
            # password|passwd|passphrase|private_key|secret|secret_key|token|api_key|apikey|
            # access_key, factored by first letter: about 4x faster than the plain alternation.
            r"(?P<keep>(?i:p(?:ass(?:word|wd|phrase)|rivate_key)|secret(?:_key)?|token|"
            r"a(?:pi_?key|ccess_key))[\"']?[ \t]{0,5}[:=][ \t]{0,5})"
            r"(?P<secret>\"[^\"\n\\]{8,1000}\"|'[^'\n\\]{8,1000}'"
            r"|(?!(?i:str|bytes|int|bool|string|text|any|secretstr|optional)\b)"
            r"[^\s\"'#()\[\]{},;=]{8,1000}(?=[ \t]*(?:#[^\n]*)?\r?$))"
        ),
        _keep_prefix("config-secret", skip_placeholders=True),
        ("passw", "passphrase", "secret", "token", "api_key", "apikey", "access_key",
         "private_key"),
    ),
)


def redact(text: str, *, patterns: Sequence[SecretPattern] = PATTERNS) -> tuple[str, int]:
    """Replace every secret in ``text`` with a ``[REDACTED:<name>]`` marker.

    Returns the redacted text and how many secrets were replaced. Deterministic: the same text
    always gives the same output.
    """
    if not text:
        return text, 0
    lowered: str | None = None
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
    return text, total


def _apply(pattern: SecretPattern, text: str) -> tuple[str, int]:
    """Run one pattern, counting only the matches that were actually rewritten."""
    changed = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal changed
        new = pattern.replace(m)
        if new != m.group(0):
            changed += 1
        return new

    return pattern.regex.sub(replace, text), changed


def pattern_names(patterns: Sequence[SecretPattern] = PATTERNS) -> list[str]:
    """The distinct names of the registered patterns, in order."""
    return list(dict.fromkeys(p.name for p in patterns))
