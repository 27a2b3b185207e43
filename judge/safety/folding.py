"""What the injection detectors read: text folded to what a reader sees, and hidden text decoded.

An attacker hides instructions from a pattern list in ways a language model still reads:
fullwidth or mathematical letters, small capitals, letters with combining marks or variation
selectors after them, zero-width characters inside words, look-alike Cyrillic letters, letters
spaced out, words joined by ``-`` or ``_`` as in a branch or file name, or the whole instruction
encoded in base64, hex, rot13 or percent-encoding. :func:`fold` undoes the disguises;
:func:`decoded_views` returns the decoded text of every encoded run, so that the rules and the
learned detector read what the model would read after decoding.

Everything here is deterministic and linear in the text; ASCII text without encoded runs takes
the fast path (a few ``str`` methods).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from urllib.parse import unquote_plus

from judge.safety.scan import Spec, scanner
from judge.safety.unescape import base64_runs

#: Cyrillic and Greek letters that render like Latin ones (lower-case forms, after NFKC and
#: case-folding), from Unicode's confusables.txt. Mapped only inside words that also hold Latin
#: letters, so that Russian or Greek text stays itself.
CONFUSABLES: Mapping[str, str] = MappingProxyType(
    {
        # Cyrillic
        "\u0430": "a",
        "\u0432": "b",
        "\u0435": "e",
        "\u0451": "e",
        "\u043a": "k",
        "\u043c": "m",
        "\u043d": "h",
        "\u043e": "o",
        "\u0440": "p",
        "\u0441": "c",
        "\u0442": "t",
        "\u0443": "y",
        "\u0445": "x",
        "\u0456": "i",
        "\u0457": "i",
        "\u0458": "j",
        "\u0455": "s",
        "\u04bb": "h",
        "\u0501": "d",
        "\u051b": "q",
        "\u051d": "w",
        "\u0491": "r",
        "\u04cf": "l",
        # Greek
        "\u03b1": "a",
        "\u03b2": "b",
        "\u03b5": "e",
        "\u03b7": "n",
        "\u03b9": "i",
        "\u03ba": "k",
        "\u03bd": "v",
        "\u03bf": "o",
        "\u03c1": "p",
        "\u03c4": "t",
        "\u03c5": "u",
        "\u03c7": "x",
        "\u03c9": "w",
        "\u03b3": "y",
        "\u03c3": "o",
        "\u03c2": "c",
        "\u03af": "i",
        "\u03cc": "o",
    }
)
_CONFUSABLE_TABLE = str.maketrans(dict(CONFUSABLES))


@lru_cache(maxsize=1)
def _letter_table() -> dict[int, str]:
    """Letters NFKC leaves alone that render as plain Latin ones: small capitals
    (``ᴀ`` U+1D00, ``ɪ`` U+026A, ``ꜱ`` U+A731...), from their Unicode names."""
    table: dict[int, str] = {}
    for start, end in ((0x0250, 0x02B0), (0x1D00, 0x1D80), (0xA720, 0xA800)):
        for code in range(start, end):
            name = unicodedata.name(chr(code), "")
            for prefix in ("LATIN LETTER SMALL CAPITAL ", "LATIN SMALL LETTER SMALL CAPITAL "):
                if name.startswith(prefix) and len(name) == len(prefix) + 1:
                    table[code] = name[-1].lower()
    return table


#: Combining marks that decorate any letter (accents, overlays, strike-through, underline) and
#: variation selectors: removed. Other marks (kana voicing, Indic vowel signs and viramas,
#: Arabic and Hebrew points) are part of their words and kept.
_DECORATION = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE00, 0xFE0F),
    (0xFE20, 0xFE2F),
    (0xE0100, 0xE01EF),
)


def _is_hidden(char: str) -> bool:
    """Characters that render as nothing or only decorate the letter before them: format
    characters (zero-width, soft hyphen, bidi, BOM), enclosing marks, and the combining marks
    and variation selectors of :data:`_DECORATION`."""
    category = unicodedata.category(char)
    if category in ("Cf", "Me"):
        return True
    code = ord(char)
    return category == "Mn" and any(lo <= code <= hi for lo, hi in _DECORATION)


def _untag(char: str) -> str:
    """Unicode tag characters (U+E0020..U+E007E) spell ASCII invisibly ("ASCII smuggling"):
    decode them to the letters they hide rather than drop them."""
    code = ord(char)
    return chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else char


def _unhide(text: str) -> str:
    """``text`` without its hidden characters (:func:`_is_hidden`), tag characters decoded
    (:func:`_untag`): each distinct character is looked at once, and the text is rewritten only
    when one of them is hidden (one ``translate``, not a Python step per character)."""
    table: dict[int, str | None] = {}
    for char in set(text):
        code = ord(char)
        if 0xE0020 <= code <= 0xE007E:
            table[code] = _untag(char)
        elif _is_hidden(char):
            table[code] = None
    return text.translate(table) if table else text


_WORD = re.compile(r"[^\W\d_]+")
_ASCII_LETTER = re.compile(r"[a-z]")
# Single letters separated by one space or dot ("i g n o r e"), at least 3 of them; the gaps
# between words are then two or more spaces (or a dot and a space).
_SPACED = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][ .*]){2,}[^\W\d_](?![^\W\d_])")
#: The same on ASCII text, where a letter (``[^\W\d_]``) is an ASCII letter: about twice as fast.
_SPACED_ASCII = re.compile(r"(?<![A-Za-z])(?:[A-Za-z][ .*]){2,}[A-Za-z](?![A-Za-z])")
# Words joined by - or _ into one token, as in branch and file names
# ("ignore-previous-instructions", "NOTE_TO_GRADER"); test names (test_...) describe
# behaviour and stay joined, and so do chat-template tokens (<|start_header_id|>, <start_of_turn>).
_SLUG = re.compile(r"(?<![<|])\b(?!test)[^\W\d_]+(?:[-_][^\W\d_]+){2,}\b(?![|>])")
#: The same on casefolded ASCII text, where a letter is ``[a-z]`` (about 1.3 times as fast).
_SLUG_ASCII = re.compile(r"\b(?<![<|])(?!test)[a-z]+(?:[-_][a-z]+){2,}\b(?![|>])")


def _unmix(match: re.Match[str]) -> str:
    word = match.group(0)
    if _ASCII_LETTER.search(word) and any(c in CONFUSABLES for c in word):
        return word.translate(_CONFUSABLE_TABLE)
    return word


def _unspace(match: re.Match[str]) -> str:
    return match.group(0)[::2]


def _unslug(match: re.Match[str]) -> str:
    return match.group(0).replace("-", " ").replace("_", " ")


_BLANKS = re.compile(r"[ \t\u00a0]+")
#: ASCII forms of _SPACED and _SLUG for the one-pass scan of casefolded ASCII text (a regex
#: that cannot match there is not run).
FOLD_RULES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?:[a-z][ .*]){2,}[a-z]"),
    re.compile(r"[a-z]+(?:[-_][a-z]+){2,}"),
)


def _fold_scan(text: str) -> frozenset[int] | None:
    """Which of :data:`FOLD_RULES` may match casefolded ASCII ``text`` (None: not known)."""
    return scanner("fold", _fold_spec).scan(text, lowered=text).maybe


def _fold_spec() -> Spec:
    return Spec(literals=(), rules=FOLD_RULES)


def fold(text: str) -> str:
    """The text as a reader (or a model) sees it, for matching: NFKC (fullwidth, maths and
    circled letters), tag characters decoded, format characters, combining marks and variation
    selectors removed (accents too: "é" reads as "e"), small capitals mapped, look-alike
    letters mapped inside Latin words, case-folded, spaced-out letters joined, slug words split,
    runs of spaces and tabs collapsed (newlines kept)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = _unhide(text)
        text = unicodedata.normalize("NFKC", text).translate(_letter_table())
        text = text.casefold()
        text = _WORD.sub(_unmix, text)
    else:
        text = text.casefold()
    maybe = _fold_scan(text) if text.isascii() else None
    if " " in text and (maybe is None or 0 in maybe):
        text = (_SPACED_ASCII if text.isascii() else _SPACED).sub(_unspace, text)
    if ("-" in text or "_" in text) and (maybe is None or 1 in maybe):
        text = (_SLUG_ASCII if text.isascii() else _SLUG).sub(_unslug, text)
    if "  " not in text and "\t" not in text and "\u00a0" not in text:
        return text  # nothing to collapse
    return _BLANKS.sub(" ", text)


# ---------------------------------------------------------------------------------------------
# Encoded runs.

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]?){10,}(?![0-9A-Fa-f])")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
#: English words a rot13-encoded instruction decodes to; their rot13 forms are rare words.
_COMMON_WORDS = (
    "the and to of you your this that is are for all any with as be it run task verdict judge "
    "grader evaluator reviewer ignore previous instructions pass passed output answer grade "
    "mark rubric tests test must should please now not"
)
_COMMON = frozenset(_COMMON_WORDS.split())
_ROT13_TOKEN = re.compile(r"[A-Za-z]+")
_ROT13_WORDS = "|".join(sorted(codecs.encode(word, "rot13") for word in _COMMON))
#: The rot13 forms of those words as whole tokens: a line reads as rot13 only with 3 of them, so
#: a text with fewer than 3 is not looked at line by line.
_ROT13_COMMON = re.compile(
    rf"(?<![A-Za-z])(?:{_ROT13_WORDS})(?![A-Za-z])", re.IGNORECASE | re.ASCII
)
#: A superset of "3 of them on one line", for the one-pass scan of the folded text
#: (judge.safety.injection): on ASCII text, folding never takes a token away.
ROT13_LINE = re.compile(
    rf"(?:{_ROT13_WORDS})[^\n]*(?:{_ROT13_WORDS})[^\n]*(?:{_ROT13_WORDS})", re.IGNORECASE
)
#: At most this many encoded runs are decoded per text (a log of hashes has thousands).
MAX_RUNS = 24


def _readable(raw: bytes) -> str | None:
    """``raw`` as text when it reads as words: valid UTF-8, printable, with letters and spaces
    (or, for a script written without spaces such as Chinese or Thai, with half its characters
    letters outside ASCII: random bytes are seldom valid UTF-8 of that shape)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    if " " not in text and 2 * sum(1 for c in text if c.isalpha() and not c.isascii()) < len(text):
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t")
    letters = sum(1 for c in text if c.isalpha())
    if printable < 0.95 * len(text) or letters < 0.5 * len(text.replace(" ", "")):
        return None
    return text


def _b64(run: str) -> str | None:
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = (
            base64.urlsafe_b64decode(padded)
            if ("-" in run or "_" in run)
            else base64.b64decode(padded, validate=True)
        )
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def _rot13_hits(tokens: list[str]) -> int:
    return sum(1 for t in tokens if t.lower() in _COMMON)


def _looks_rot13(line: str) -> bool:
    """The line reads as more common English words once rot13-decoded than as it is."""
    tokens = _ROT13_TOKEN.findall(line)
    if len(tokens) < 4:
        return False
    rot_hits = _rot13_hits(_ROT13_TOKEN.findall(codecs.decode(line, "rot13")))
    return rot_hits >= 3 and rot_hits > 2 * _rot13_hits(tokens)


def _at_least(regex: re.Pattern[str], text: str, count: int) -> bool:
    """``regex`` matches ``text`` at least ``count`` times."""
    return any(n >= count for n, _ in enumerate(regex.finditer(text), start=1))


#: ASCII bytes -> "h" for a hex digit, "s" for a separator of _HEX (space, colon), "." else.
_HEX_TABLE = bytes(
    ord("h") if chr(c) in "0123456789ABCDEFabcdef" else ord("s") if chr(c) in " :" else ord(".")
    for c in range(256)
)
_SEPARATOR_TO_HEX = bytes.maketrans(b"s", b"h")


def _may_hold_hex(text: str) -> bool:
    """False when ``text`` holds no match of :data:`_HEX` for sure: a match is 20 hex digits or
    more with at most one separator between pairs, so once every pair of separators is blanked
    and the remaining separators count as digits it leaves a run of 20 (its last separator
    may be blanked with the one after it, but then it is 21 long or more). A few bytes methods
    instead of the regex, whose look-behind at every position is most of its cost."""
    if not text.isascii():
        return True
    data = text.encode("ascii").translate(_HEX_TABLE).replace(b"ss", b"..")
    return b"h" * 20 in data.translate(_SEPARATOR_TO_HEX)


def decoded_views(text: str, rot13: bool | None = None) -> list[str]:
    """Text hidden in ``text`` by encoding: each base64 or hex run that decodes to readable
    UTF-8, the text with percent-escapes decoded (when it has at least three), and the text
    rot13-decoded when that turns it into more common English words. [] when nothing is
    hidden. Decoding is one level deep, which is what a reading model does unprompted.
    ``rot13=False``: the caller's scan found no line that could read as rot13."""
    views: list[str] = []
    if len(text) >= 16:
        for n, (start, end) in enumerate(base64_runs(text, 16, _BASE64)):
            if n >= MAX_RUNS:
                break
            run = text[start:end]
            # Identifiers, paths and words are not base64 of text: a run of only letters or
            # with no upper-case letter is a word or a hash in lower-case hex.
            if run.isalpha() or run.islower() or run.isupper():
                continue
            decoded = _b64(run)
            if decoded:
                views.append(decoded)
        for n, match in enumerate(_HEX.finditer(text) if _may_hold_hex(text) else ()):
            if n >= MAX_RUNS:
                break
            digits = match.group(0).replace(" ", "").replace(":", "")
            if len(digits) % 2 == 0:
                decoded = _readable(bytes.fromhex(digits))
                if decoded:
                    views.append(decoded)
    if text.count("%") >= 3 and len(_PERCENT.findall(text)) >= 3:
        unquoted = unquote_plus(text)
        if unquoted != text:
            views.append(unquoted)
    if len(text) >= 16 and rot13 is not False and _at_least(_ROT13_COMMON, text, 3):
        rot = [line for line in text.splitlines() if len(line) >= 16 and _looks_rot13(line)]
        if rot:
            views.append(codecs.decode("\n".join(rot), "rot13"))
    return views
