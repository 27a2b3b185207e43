"""Secrets hidden by an encoding or split over lines: find them in a decoded view, redact them
where they stand in the text.

A secret is still a secret when it is written ``\\u0067hp_...`` (a JSON escape), ``&#103;hp_``
(an HTML entity), ``ghp%5F...`` (percent-encoded), with zero-width characters inside or in
full-width letters, base64-encoded, or cut over two lines (``"sk-proj-abc" +\\n "def..."``). The
rules of :mod:`judge.safety.redact` read the text as written, so each of these is decoded into a
*view* that remembers, for every character, where it came from; the rules run on the view, and
each span they replace is replaced in the text itself (the whole encoded stretch it came from).

Only texts that hold such an encoding are decoded (a literal test on the text), and each view is
decoded one level deep, as a reader would; base64 runs are decoded only when they read as text.
Where the alignment of a replaced span is ambiguous, the wider span is redacted: a decoded
secret is never left in the text because its position was unclear.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

#: The redaction of a text: (redacted text, count).
Redactor = Callable[[str], tuple[str, int]]

_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")

# Character escapes, each decoded to what it stands for: JSON/JavaScript \uXXXX (and \xXX, \/),
# HTML entities, percent-escapes, zero-width and other format characters (removed), full-width
# ASCII (folded).
_ESCAPE = re.compile(
    r"\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\/"
    r"|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};|&[A-Za-z][A-Za-z0-9]{1,30};"
    r"|(?:%[0-9A-Fa-f]{2})+"
    r"|[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
    r"|[\uff01-\uff5e\u3000]"
)
#: The branches of _ESCAPE that can match ASCII text: the same matches there, found faster. Also a
#: rule of the secrets scan (:mod:`judge.safety.redact`): an ASCII text where its prefilter does
#: not match has no escaped view.
ESCAPE_ASCII = re.compile(
    r"\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\/"
    r"|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};|&[A-Za-z][A-Za-z0-9]{1,30};"
    r"|(?:%[0-9A-Fa-f]{2})+"
)
#: Texts without one of these hold no escape of _ESCAPE (a quick test before the regex).
_ESCAPE_HINTS = ("\\u", "\\x", "\\/", "&", "%")


class View(NamedTuple):
    """A decoded text, and for each of its characters the span of the text it came from."""

    text: str
    starts: list[int]
    ends: list[int]


def _decode_escape(token: str) -> str:
    if token.startswith(("\\u", "\\x")):
        return chr(int(token[2:], 16))
    if token == "\\/":
        return "/"
    if token.startswith("&"):
        decoded = html.unescape(token)
        return token if decoded == token else decoded
    if token.startswith("%"):
        raw = bytes(int(token[i + 1 : i + 3], 16) for i in range(0, len(token), 3))
        return raw.decode("utf-8", "replace")
    if "\uff01" <= token <= "\uff5e":
        return chr(ord(token) - 0xFEE0)
    if token == "\u3000":
        return " "
    return ""  # a format character: it renders as nothing


def escaped_view(text: str) -> View | None:
    """The text with its character escapes decoded, or None when it has none."""
    if text.isascii():
        if not any(hint in text for hint in _ESCAPE_HINTS):
            return None
        escapes = ESCAPE_ASCII
    else:
        escapes = _ESCAPE
    # Decoded first, the view built only when something decodes (an ``&`` or ``%`` in code is
    # mostly no escape, or one such as ``&foo;`` that decodes to itself).
    found = [(match.span(), match.group(0)) for match in escapes.finditer(text)]
    decoded_tokens = [_decode_escape(token) for _, token in found]
    if all(d == token for d, (_, token) in zip(decoded_tokens, found, strict=True)):
        return None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    last = 0
    for ((start, end), _), decoded in zip(found, decoded_tokens, strict=True):
        if start > last:
            parts.append(text[last:start])
            starts.extend(range(last, start))
            ends.extend(range(last + 1, start + 1))
        parts.append(decoded)
        starts.extend([start] * len(decoded))
        ends.extend([end] * len(decoded))
        last = end
    parts.append(text[last:])
    starts.extend(range(last, len(text)))
    ends.extend(range(last + 1, len(text) + 1))
    return View("".join(parts), starts, ends)


# A token cut at the end of a line and continued on the next: the head ends a line (a quoted
# string concatenated with "+", a backslash continuation, or nothing), the tail starts the next.
_TOKEN_CHARS = r"A-Za-z0-9_\-+/=.~"
#: The head starts where its run starts: tried inside a run, each start re-read the run to its end
#: (quadratic in the run's length, 3 s per MB of `SECRET_TOKEN=xxx...x(` lines); the run's end,
#: and so the match, is the same from any start. The head is possessive (``{8,}+``): a shorter
#: head is followed by a token character, of which only a ``+`` may follow a head, and then only
#: before blanks and the line break, where the whole run (ending in that ``+``) matches too; so
#: giving characters back never finds a match the whole run missed (the same matches, and no
#: step back per character of every run that ends a line: 40% of the regex's time).
_SPLIT = re.compile(
    rf"(?<![{_TOKEN_CHARS}])(?P<head>[{_TOKEN_CHARS}]{{8,}}+)[\"']?[ \t]*[+\\]?[ \t]*\r?\n"
    rf"[ \t>#*+\-]*[\"']?(?P<tail>[{_TOKEN_CHARS}]{{4,}})"
)


def _replaced_spans(view: str, redacted: str) -> list[tuple[int, int, str]]:
    """Where the markers of ``redacted`` stand in ``view`` (its unredacted form): (start, end,
    marker) in view coordinates. The kept pieces between markers appear in ``view`` in order;
    a piece found more than once is not trusted to split, and the markers around it are joined
    into one wider span."""
    pieces = _MARKER.split(redacted)
    markers = _MARKER.findall(redacted)
    if not markers:
        return []
    spans: list[tuple[int, int, str]] = []
    position = len(pieces[0])  # the first piece is the view's prefix
    end_of_all = len(view) - len(pieces[-1])  # the last piece is its suffix
    pending_start = position
    pending: list[str] = []
    for n, marker in enumerate(markers):
        pending.append(marker)
        piece = pieces[n + 1]
        if n + 1 == len(markers):
            break  # the last piece: the span runs to the suffix
        found = view.find(piece, position) if piece else -1
        unique = bool(piece) and found >= 0 and view.find(piece, found + 1) < 0
        if unique and found <= end_of_all:
            spans.append((pending_start, found, "".join(pending)))
            pending = []
            position = found + len(piece)
            pending_start = position
    if pending:
        spans.append((pending_start, max(end_of_all, pending_start), "".join(pending)))
    return spans


def redact_view(text: str, view: View, redact: Redactor) -> tuple[str, int]:
    """Redact ``view`` and replace, in ``text``, what its redactions came from."""
    redacted, count = redact(view.text)
    if not count:
        return text, 0
    spans = []
    for start, end, marker in _replaced_spans(view.text, redacted):
        if end <= start:
            continue
        spans.append((view.starts[start], view.ends[end - 1], marker))
    return _replace(text, spans), count


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each span replaced (overlapping spans merged)."""
    out: list[str] = []
    last = 0
    for start, end, marker in sorted(spans):
        if start < last:
            if end > last:
                out.append(marker)
                last = end
            continue
        out.append(text[last:start])
        out.append(marker)
        last = end
    out.append(text[last:])
    return "".join(out)


# Base64 runs: decoded when they read as text, redacted whole when the text holds a secret.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
#: At most this many runs of one text are decoded (a log of hashes has thousands); a run that
#: is not decoded is still read by every rule as it is.
MAX_RUNS = 64
_BASE64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
#: ASCII bytes -> "a" for a base64 character, "=" for itself, " " for anything else.
_RUN_TABLE = bytes(
    ord("a") if c in _BASE64_CHARS else ord("=") if c == ord("=") else ord(" ") for c in range(256)
)
_NOT_RUN = re.compile(rb"[^a]")


def base64_runs(text: str, minimum: int, regex: re.Pattern[str]) -> Iterator[tuple[int, int]]:
    """The spans of the matches of ``regex`` in ``text``, in order: ``regex`` is
    ``(?<![B])[B]{minimum,}={0,2}(?![B=])`` with ``B`` the base64 characters ``A-Za-z0-9+/_-``,
    i.e. every maximal run of at least ``minimum`` of them, with the one or two ``=`` after it,
    that no other base64 character or ``=`` follows.

    In ASCII text the runs are found with bytes methods (the text mapped to ``a`` for a run
    character in one ``translate``, runs found with ``find``), not the regex, whose look-behind
    at every position costs more than a microsecond per 30 characters; other texts use the
    regex."""
    if not text.isascii():
        for match in regex.finditer(text):
            yield match.span()
        return
    data = text.encode("ascii").translate(_RUN_TABLE)
    needle = b"a" * minimum
    position = 0
    while True:
        # The first run of ``minimum`` from a position that ends a run (or 0) starts a run.
        start = data.find(needle, position)
        if start < 0:
            return
        stop = _NOT_RUN.search(data, start + minimum)
        end = len(data) if stop is None else stop.start()
        padding = 0
        while padding < 3 and data[end + padding : end + padding + 1] == b"=":
            padding += 1
        after = data[end + padding : end + padding + 1]
        # Up to two "=" taken, and then no run character (nor a third "=").
        if padding <= 2 and after != b"a":
            yield start, end + padding
        position = end


def _readable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return text if len(text) >= 8 and printable >= 0.9 * len(text) else None


def _b64(run: str) -> str | None:
    body = run.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def base64_secrets(text: str, redact: Redactor) -> tuple[str, int]:
    """Each base64 run of ``text`` that decodes to text holding a secret, redacted whole
    (``[REDACTED:base64-<marker of the secret>]``)."""
    spans: list[tuple[int, int, str]] = []
    total = 0
    tried = 0
    for start, end in base64_runs(text, 20, _BASE64):
        run = text[start:end]
        if run.isalpha() or run.islower() or run.isupper() or run.isdigit():
            continue  # words, identifiers, lower-case hex: not base64 of text
        tried += 1
        if tried > MAX_RUNS:
            break
        decoded = _b64(run)
        if decoded is None:
            continue
        redacted, count = redact(decoded)
        if count:
            names = "+".join(dict.fromkeys(m[10:-1] for m in _MARKER.findall(redacted)))
            spans.append((start, end, f"[REDACTED:base64-{names}]"))
            total += count
    return (_replace(text, spans), total) if spans else (text, 0)


#: Prefixes of provider tokens: a line that ends in one of these (and more token characters)
#: may hold the head of a key whose tail is on the next line.
_PROVIDER_HEAD = re.compile(
    r"(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|sk-|sk_live_|sk_test_|rk_live_|rk_test_|"
    r"xox[abposre]-|xapp-|AKIA|ASIA|AIza|eyJ|glpat-|hf_|npm_|SG\.|dop_v1_|shpat_|pypi-|key-)"
)
#: Joined windows reach this far before and after the line break.
JOIN_REACH = 240

_BREAK = rf"[\"']?[ \t]*[+\\]?[ \t]*\r?\n[ \t>#*+\-]*[\"']?[{_TOKEN_CHARS}]{{4}}"
_T = f"[{_TOKEN_CHARS}]*"
#: A superset of what :func:`joined_secrets` acts on (a head that qualifies, a line break, the
#: start of a continuation): a provider prefix, or a digit, an upper- and a lower-case letter
#: in any order, in a token run that ends a line. Given to the secrets scan
#: (:mod:`judge.safety.redact`) as a rule of its own: where its prefilter does not match, no
#: split key can be joined and the split regex (the dearest step of redacting a text) is not run.
SPLIT_GATE = re.compile(
    rf"{_PROVIDER_HEAD.pattern}{_T}{_BREAK}"
    rf"|{_T}(?:[0-9]{_T}[A-Z]{_T}[a-z]|[0-9]{_T}[a-z]{_T}[A-Z]|[A-Z]{_T}[0-9]{_T}[a-z]"
    rf"|[A-Z]{_T}[a-z]{_T}[0-9]|[a-z]{_T}[0-9]{_T}[A-Z]|[a-z]{_T}[A-Z]{_T}[0-9]){_T}{_BREAK}"
)


def _qualifies(head: str) -> bool:
    """A run at the end of a line that may be the head of a split key: a provider prefix, or a
    long run that reads as generated (digits among mixed-case letters)."""
    if _PROVIDER_HEAD.search(head):
        return True
    if len(head) < 16 or "/" in head or head.count(".") > 1:
        return False
    return (
        any(c.isdigit() for c in head)
        and any(c.isupper() for c in head)
        and any(c.islower() for c in head)
    )


#: A line that only continues a token: optional list or quote marks, the token run, closing
#: punctuation (a split key's tail, or the middle of a key cut over several lines).
_CONTINUATION = re.compile(
    r"[ \t>#*+\-]*[\"']?(?P<run>[A-Za-z0-9_\-+/.~]{4,}={0,2})[\"']?[ \t]*[,;)\]}+\\]*[ \t]*"
    r"(?:\r?\n|\Z)"
)


def _tail_like(run: str) -> bool:
    """A continuation run that may be the rest of a key: it holds a digit, or is 8+ characters
    of mixed case (a word such as "done" or "None" alone on a line is not)."""
    if any(c.isdigit() for c in run):
        return True
    return len(run) >= 8 and any(c.isupper() for c in run) and any(c.islower() for c in run)


#: The most continuation lines joined to one head.
MAX_CONTINUATIONS = 12


def joined_secrets(text: str, redact: Redactor) -> tuple[str, int]:
    """Keys split over lines: a line ending in a qualifying token run (a provider prefix, or a
    run that reads as generated) followed by lines that hold nothing but the rest of a token
    is joined (line breaks, quotes, ``+`` and ``\\`` removed) with the text before it on its
    line, and redacted; a secret that crosses a break is redacted on every line it spans.
    A following line that holds anything else is not a continuation and is never joined."""
    if "\n" not in text:
        return text, 0
    spans: list[tuple[int, int, str]] = []
    total = 0
    position = 0
    while True:
        match = _SPLIT.search(text, position)
        if match is None:
            break
        position = match.end("head")
        if not _qualifies(match.group("head")):
            continue
        line_start = text.rfind("\n", 0, match.start("head")) + 1
        left = max(line_start, match.start("head") - JOIN_REACH)
        parts = [text[left : match.end("head")]]
        starts = list(range(left, match.end("head")))
        junctions: list[int] = []
        cursor = text.find("\n", match.end("head")) + 1
        for _ in range(MAX_CONTINUATIONS):
            line = _CONTINUATION.match(text, cursor)
            if line is None or not _tail_like(line.group("run")):
                break
            junctions.append(sum(len(p) for p in parts))
            parts.append(line.group("run"))
            starts.extend(range(line.start("run"), line.end("run")))
            cursor = line.end()
            # Another line continues the key only after an explicit "+" or "\\".
            if not text[line.end("run") : cursor].rstrip().endswith(("+", "\\")):
                break
        if not junctions:
            continue
        joined = "".join(parts)
        redacted, count = redact(joined)
        if not count:
            continue
        for start, end, marker in _replaced_spans(joined, redacted):
            if end > start and any(start < j < end or start == j for j in junctions if j > 0):
                spans.append((starts[start], starts[end - 1] + 1, marker))
                total += 1
        position = max(position, cursor)
    return (_replace(text, spans), total) if spans else (text, 0)
