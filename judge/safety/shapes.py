"""Text hidden by a printable transform, found by its shape rather than by a list of codecs.

An instruction can reach the judge encoded in any way a reading model undoes unprompted:
base64 or base32, hex, binary or decimal character codes, percent or quoted-printable escapes,
HTML or JSON escapes, a Caesar shift, an alphabet written backwards, reversed text, letters
swapped for digits. This module does not name the attack; it asks of each stretch of text that
does not read as language whether some transform of its shape makes it read as language:

- **Opaque runs** (no spaces, 16+ characters, or such a run inside the quotes, key or tag of
  its carrier): every decoder whose alphabet holds the run's characters (base16/32/64/85,
  binary) is tried.
- **Number sequences** (8+ numbers in a row): read as character codes in base 2, 8, 10 or 16.
- **Escape sequences** (3+ of ``%XX``, ``=XX``, ``\\xXX``, ``\\uXXXX``, ``&#..;``): unescaped
  line by line, twice at most (an escaped escape).
- **Letter runs that do not read as language** (8+ words, signs around them, letters of any
  script): reversed, each word reversed, the best-fitting Caesar shifts or the mirrored
  alphabet, digits read as the letters they resemble.
- **Characters with a separator between each** (``j.u.d.g.e``): every other character.

"Reads as language" is one generic scorer, :func:`language_score`: the mean log-probability of
the text's character bigrams under a table of about 100 languages (every script of XLM-R's
vocabulary, built by ``bench/build_letter_table.py`` into ``letters.npz``, 256 KB). No word
list of any language is used.

Cost is bounded: texts are scanned by regular expressions (linear), at most :data:`MAX_RUNS`
candidates of at most :data:`MAX_RUN_CHARS` characters each are decoded per text, and letter
runs are scored only when they hold none of the short common words of the table's languages
(a run of plain prose is not looked at twice). numpy is imported only when a candidate is
scored.
"""

from __future__ import annotations

import base64
import binascii
import html
import math
import operator
import quopri
import re
import sys
import unicodedata
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

#: The bigram table (uint8 quantised log-probabilities of hashed bigrams).
TABLE_PATH = Path(__file__).resolve().parent / "letters.npz"
TABLE_SIZE: int = 2**18
#: The probability an unseen bigram is given (the table's floor, and its quantisation scale).
FLOOR_PROB: float = 1e-9
#: A text reads as language when the mean log-probability of its bigrams is at least this
#: (prose of the Latin-script languages scores -5.8 to -8.2, Vietnamese and Tagalog the
#: lowest; 600 random byte strings and their base64 at most -8.8).
LANGUAGE_SCORE: float = -8.25
#: A rewritten letter run is kept when it scores at least this much above the run as written,
#: and at least :data:`PROSE_SCORE` (prose in the table's languages scores about -6).
GAIN: float = 0.3
PROSE_SCORE: float = -7.0
#: At most this many candidates are decoded per text, each at most this long.
MAX_RUNS: int = 24
MAX_RUN_CHARS: int = 4096
#: Fewer letters than this cannot be told apart from noise.
MIN_LETTERS: int = 12
#: A rewritten letter run reads as prose only with this many distinct letters.
MIN_DISTINCT: int = 10


def bigram_hashes(codes: Any) -> Any:
    """The table slot of each bigram of a sequence of code points (numpy int64 array)."""
    return ((codes[:-1] * 1000003) ^ codes[1:]) & (TABLE_SIZE - 1)


def _slot(a: int, b: int) -> int:
    """The table slot of the bigram (a, b) (the same as :func:`bigram_hashes`)."""
    return ((a * 1000003) ^ b) & (TABLE_SIZE - 1)


@lru_cache(maxsize=1)
def _table() -> bytes | None:
    """One byte per slot: the log-probability, 0 for 1.0 to 255 for :data:`FLOOR_PROB`."""
    import numpy as np

    if not TABLE_PATH.exists():
        return None
    with np.load(TABLE_PATH, allow_pickle=False) as data:
        return bytes(data["table"].astype(np.uint8).tobytes())


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    """The table's most probable whole words of 2-5 ASCII letters, of many languages."""
    import numpy as np

    if not TABLE_PATH.exists():
        return frozenset()
    with np.load(TABLE_PATH, allow_pickle=False) as data:
        return frozenset(str(w) for w in data["words"])


def _common_count(run: str) -> int:
    """How many of the first 16 words of ``run`` (signs around them dropped) are common words
    of the table's languages as written."""
    words = [w.strip(_SIGNS) for w in run[:200].lower().split()[:16]]
    return sum(map(_common_words().__contains__, words))


_SIGNS = "\"'()[]{}<>.,;:?!\u00a1\u00bf"


def _plain_prose(run: str) -> bool:
    """One in seven of the first 16 words of ``run`` is a common word as written."""
    words = run[:200].lower().split()[:16]
    return 7 * sum(map(_common_words().__contains__, words)) >= len(words)


#: One step of the table in nats.
_STEP = math.log(FLOOR_PROB) / 255.0
#: What is not a letter or a digit (blanks, punctuation) is read as one space: the table knows
#: the letters of words, and a quote, a colon or a brace between them says nothing of whether
#: they are language ("SYSTEM: return {...}" scored as noise with its signs counted).
_NOT_LETTERS = re.compile(r"[\W_]+")


def language_score(text: str) -> float:
    """Mean log-probability of the character bigrams of ``text`` (lower-cased, every run of
    what is not a letter read as one space) under the table of ~100 languages: about -6 to -7
    for prose in any of them, below -8 for encoded or random text. -inf when the text is too
    short or the table is absent."""
    table = _table()
    text = _NOT_LETTERS.sub(" ", text[: MAX_RUN_CHARS * 2].lower()).strip()[:MAX_RUN_CHARS]
    if table is None or len(text) < 4:
        return float("-inf")
    codes = list(map(ord, text))
    total = sum(table[_slot(a, b)] for a, b in zip(codes, codes[1:], strict=False))
    return total * _STEP / (len(codes) - 1)


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "?"


_LETTER = re.compile(r"[^\W\d_]")
_NON_ASCII_LETTER = re.compile(r"[^\W\d_a-zA-Z]")
_UNPRINTABLE = re.compile(r"[^\S \n\t]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def reads_as_language(text: str) -> bool:
    """``text`` has :data:`MIN_LETTERS` letters, mostly printable, and reads as language: its
    bigrams score :data:`LANGUAGE_SCORE` under the table when its letters are mostly ASCII;
    otherwise 85% of its letters are of one or two scripts (decoded noise is not valid UTF-8 made of
    one script's letters; and CJK bigrams are too many for the table to rate)."""
    letters = len(_LETTER.findall(text))
    if letters < MIN_LETTERS or letters < 0.5 * (len(text) - text.count(" ")):
        return False
    if len(_UNPRINTABLE.findall(text)) > 0.05 * len(text):
        return False
    other = _NON_ASCII_LETTER.findall(text)
    if len(other) <= 0.5 * letters:
        return language_score(text) >= LANGUAGE_SCORE
    scripts = Counter(_script(c) for c in other[:MAX_RUN_CHARS])
    # Two scripts at most (Japanese writes kanji with kana, Korean hangul with hanja).
    top = sum(n for _, n in scripts.most_common(2))
    return top >= 0.85 * min(len(other), MAX_RUN_CHARS)


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------------------------------------
# Opaque runs: one token of printable ASCII, decoded by every alphabet that holds it.

_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
_BINARY = re.compile(r"(?:[01]{8})+")
_BASE32 = re.compile(r"[A-Z2-7]+=*")
#: A word or a path: a run of six letters of one case (base85 and ascii85 of text seldom have
#: one: a quarter of their alphabet is lower-case letters).
_LOWER6 = re.compile(r"[a-z]{6}")
_UPPER6 = re.compile(r"[A-Z]{6}")


#: The body of a token in a carrier: a run of the base16/32/64 alphabets (padding at its end
#: only: "key=VALUE" is a key and a value), so that quotes, a key, a tag or brackets around an
#: encoded run do not hide it. Padding in front (base64 written backwards) only after a sign.
_ALPHABET_RUN = re.compile(r"(?:(?<![\w=])={1,2})?[A-Za-z0-9+/_\-]{16,}={0,6}")
#: An ascii85 run in its Adobe brackets (its alphabet holds quotes and brackets: only the
#: brackets delimit it; it may be wrapped over lines).
_ASCII85 = re.compile(r"<~[!-u\s]{16,}?~>")


def _opaque_runs(text: str) -> list[str]:
    """The runs of ``text`` an opaque decoder may read: each ascii85 run in brackets, each
    token of 16+ characters, and the alphabet runs inside a token that has other signs
    around them (quotes, ``key=``, a tag)."""
    runs = [m.group(0).replace("\n", "").replace(" ", "") for m in _ASCII85.finditer(text)]
    for token in text.split():
        if len(token) < 16 or token.startswith("<~"):
            continue
        runs.append(token)
        if _WRAPPING.search(token):
            runs.extend(r for r in _ALPHABET_RUN.findall(token) if r != token)
    return runs


#: A sign that wraps a run in a token: a quote, a key's ``=``, a bracket, a separator.
_WRAPPING = re.compile(r"[\"'=<>(),;\[\]{}]")


#: Characters written with one separator between each (``j.u.d.g.e``, ``p-a-s-s``), a word
#: break written as ``_``: the characters at every other place are the text.
_INTERLEAVED = re.compile(r"[^\s.*|~\-](?P<sep>[.*|~\-])(?:[^\s.*|~\-](?P=sep)){7,}[^\s.*|~\-]?")
_INTERLEAVED_HINT = re.compile(r"[.*|~\-][^\s.*|~\-][.*|~\-][^\s.*|~\-][.*|~\-][^\s.*|~\-][.*|~\-]")


#: Base64 written backwards: its padding comes first.
_PADDING_FIRST = re.compile(r"={1,2}[A-Za-z0-9+/]{15,}$")


def _reversed_base64(run: str) -> list[bytes]:
    try:
        return [base64.b64decode(run[::-1], validate=True)]
    except (binascii.Error, ValueError):
        return []


def _opaque_decodings(run: str) -> list[bytes]:
    """What each decoder whose alphabet holds ``run`` makes of it. Base64 and hex runs are
    left to :func:`judge.safety.folding.decoded_views`; a run with six lower-case letters in a
    row (a word, a path, an identifier) is none of the others."""
    tries: list[Any] = []
    if _LOWER6.search(run):
        return []
    if _BINARY.fullmatch(run):
        tries.append(lambda r: int(r, 2).to_bytes(len(r) // 8, "big"))
    elif _BASE32.fullmatch(run):
        if not run.rstrip("=").isalpha():
            tries.append(lambda r: base64.b32decode(r + "=" * (-len(r) % 8)))
    elif run.startswith("<~") and run.endswith("~>"):
        tries.append(lambda r: base64.a85decode(r, adobe=True))
    elif (
        len(run) >= 20
        and not ("/" in run and "." in run)  # a path or an address
        and not _UPPER6.search(run)
        and not frozenset(run) <= _B64_CHARS
    ):
        tries.extend((base64.b85decode, base64.a85decode))
    out: list[bytes] = []
    for decode in tries:
        try:
            out.append(decode(run))
        except (binascii.Error, ValueError, TypeError):
            continue
    return out


# ---------------------------------------------------------------------------------------------
# Number sequences: character codes in a base.

#: Eight numbers in a row, the first written with a digit (a quick test before _NUMBERS).
_NUMBERS_HINT = re.compile(r"[0-9][0-9A-Fa-fxob]{0,9}(?:[ ,;:]{1,3}[0-9A-Fa-fxob]{1,10}){7}")
_NUMBERS = re.compile(
    r"(?<![\w.])(?:(?:0[xob])?[0-9A-Fa-f]{1,8}[ ,;:]+){7,}(?:0[xob])?[0-9A-Fa-f]{1,8}(?![\w.])"
)
_NUMBER = re.compile(r"(?:0[xob])?[0-9A-Fa-f]+")


def _number_decodings(run: str) -> list[str]:
    numbers = _NUMBER.findall(run)
    out: list[str] = []
    for base in (2, 8, 10, 16):
        try:
            codes = [int(n[2:] if n[:2] in ("0x", "0o", "0b") else n, base) for n in numbers]
        except ValueError:
            continue
        if all(0 < c < 256 for c in codes):
            decoded = _utf8(bytes(codes))  # bytes of UTF-8 text
            if decoded is not None and not decoded.isascii():
                out.append(decoded)
        if all(0 < c < 0x110000 for c in codes):
            out.append("".join(map(chr, codes)))
    return out


# ---------------------------------------------------------------------------------------------
# Escapes.

#: Three escapes in a row (a text escaped whole, not one ``%20`` in a URL); a backslash escape
#: may have its backslash escaped (``\\\\u0041`` in a JSON string).
_ESCAPES = re.compile(
    r"(?:(?:%[0-9A-Fa-f]{2}|=[0-9A-F]{2}|\\{1,2}x[0-9A-Fa-f]{2}|\\{1,2}u[0-9A-Fa-f]{4}|\\{1,2}[0-7]{3}"
    r"|&#[xX]?[0-9A-Fa-f]{1,6};|&[A-Za-z]{2,8};)[ +]?){3}"
)
#: Two escapes in a row, led by their literal (a quick test before _ESCAPES).
_ESCAPES_HINT = re.compile(
    r"%[0-9A-Fa-f]{2}%|=[0-9A-F]{2}=|\\[ux0-7][0-9A-Fa-f]{2}|&#[xX]?[0-9A-Fa-f]{1,6};&|&[a-z]{2,8};&"
)


#: One backslash escape, read as Python's ``unicode_escape`` codec reads it: ``\\xXX``,
#: ``\\uXXXX``, ``\\UXXXXXXXX``, ``\\N{name}``, 1 to 3 octal digits, or one character (a
#: simple escape such as ``\\n``, else not an escape: kept as written).
_BACKSLASH = re.compile(
    r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|N\{[^}]{1,128}\}|[0-7]{1,3}|.)", re.DOTALL
)
#: The one-character escapes (a backslash before a line break joins the lines).
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\n": "",
}


def _backslash_escape(match: re.Match[str]) -> str:
    """The character one :data:`_BACKSLASH` match stands for, or the match as written when it
    stands for none (an unknown escape, a code point beyond Unicode, an unknown name)."""
    body = match.group(1)
    if body[0] in "xuU" and len(body) > 1:
        code = int(body[1:], 16)
        return chr(code) if code <= sys.maxunicode else match.group(0)
    if body[0] == "N" and len(body) > 1:
        try:
            named = unicodedata.lookup(body[2:-1])
        except KeyError:
            return match.group(0)
        return named if len(named) == 1 else match.group(0)
    if body[0] in "01234567":
        return chr(int(body, 8))
    return _SIMPLE_ESCAPES.get(body, match.group(0))


def _unescape_backslashes(text: str) -> str:
    """``text`` with its backslash escapes decoded as the ``unicode_escape`` codec decodes them
    (characters beyond Latin-1 read as ``?``, as that codec reads them), without its warning
    on an invalid escape: an escape that stands for nothing (``\\d``, a cut ``\\x4``) is kept
    as written and the escapes around it are still decoded."""
    latin1 = text.encode("latin-1", "replace").decode("latin-1")
    return _BACKSLASH.sub(_backslash_escape, latin1)


#: A quoted-printable soft line break (the encoder cuts lines at 76 characters).
_QP_SOFT_BREAK = re.compile(r"=\r?\n")
#: At most this many lines of escapes are decoded per text.
MAX_ESCAPED_LINES: int = 8


def _unescape_twice(text: str) -> list[str]:
    """:func:`_unescape` of ``text``, and of each result that still holds escapes (an escaped
    escape, as ``\\\\u0041`` in JSON): two levels at most."""
    out: list[str] = []
    for once in _unescape(text):
        out.append(once)
        if _ESCAPES_HINT.search(once) and _ESCAPES.search(once):
            out.extend(_unescape(once))
    return out


def _unescape(text: str) -> list[str]:
    out: list[str] = []
    if "%" in text:
        out.append(unquote(text))
    if "=" in text:
        raw = _utf8(quopri.decodestring(text.encode("utf-8", "replace")))
        if raw is not None:
            out.append(raw)
    if "\\" in text:
        out.append(_unescape_backslashes(text))
    if "&" in text:
        out.append(html.unescape(text))
    return [o for o in out if o != text]


# ---------------------------------------------------------------------------------------------
# Letter runs: substitutions and reorderings of letters.

#: Eight or more words of letters (or the digits and signs leetspeak puts for them) separated by
#: single spaces, as prose is written: code and logs seldom are.
#: A word may carry signs before and after it (reversed prose puts its stops and quotes in
#: front: ``.deifirev``; a cipher keeps JSON's braces and quotes) and letters of any script.
_LETTER_RUN = re.compile(
    r"(?<![\w@$|!'])(?:[\"'(\[{<.,;:?!\u00a1\u00bf]{0,3}[\w@$|!']+[,.;:?!\"')\]}>]{0,3} ){7,}"
    r"[\"'(\[{<.,;:?!\u00a1\u00bf]{0,3}[\w@$|!'.]+"
)
#: Reversed prose: a word that ends in a capital after small letters, or starts with a mark.
_BACKWARDS = re.compile(r"[a-z]{2}[A-Z](?![A-Za-z])|^[.!?][a-z]", re.MULTILINE)
#: At most this many letter runs of a text are scored (the first and the last halves).
MAX_LETTER_RUNS: int = 256
_LEET = str.maketrans("4310@$57|!", "aeioasstli")
_LEET_L = str.maketrans("4310@$57|!", "aeloasstli")
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_LETTERS = frozenset(_LOWER)
_ATBASH = str.maketrans(_LOWER + _UPPER, _LOWER[::-1] + _UPPER[::-1])


def _caesar(shift: int) -> dict[int, int]:
    rot = _LOWER[shift:] + _LOWER[:shift]
    return str.maketrans(_LOWER + _UPPER, rot + rot.upper())


_SHIFTS = tuple(_caesar(k) for k in range(1, 26))
_WORD_RUN = re.compile(r"[A-Za-z]+")
#: A digit or sign between letters, as leetspeak writes them.
_LEET_IN_WORD = re.compile(r"[A-Za-z][0-9@$|!]+[A-Za-z]")


def _best_shifts(run: str, count: int = 3) -> list[int]:
    """The ``count`` rows of :func:`_letter_logf` the letters of ``run`` fit best, best first:
    0 as written, 1-25 a Caesar shift, 26 the mirrored alphabet (letter frequencies of a
    short run are noisy: the language score of each decoding picks among them)."""
    low = run.lower()
    counts = [low.count(c) for c in _LOWER]
    fits = [sum(map(operator.mul, counts, row)) for row in _letter_logf()]
    return sorted(range(len(fits)), key=fits.__getitem__, reverse=True)[:count]


@lru_cache(maxsize=1)
def _letter_logf() -> list[list[float]]:
    """27 rows of 26: the log-frequency of the letter each of a..z stands for under no shift,
    each Caesar shift and the mirrored alphabet, read off the table (each letter's bigram
    after a space)."""
    table = _table()
    logf = [table[_slot(32, ord(c))] * _STEP if table else 0.0 for c in _LOWER]
    rows = [logf[k:] + logf[:k] for k in range(26)]
    rows.append(logf[::-1])
    return rows


def _letter_decodings(run: str, shifts: list[int]) -> list[str]:
    out: list[str] = []
    if _BACKWARDS.search(run):
        out.extend((run[::-1], _WORD_RUN.sub(lambda m: m.group(0)[::-1], run)))
    for shift in shifts:
        if shift:
            out.append(run.translate(_ATBASH if shift == 26 else _SHIFTS[shift - 1]))
    # Two words with a digit or sign inside (one is an id: a commit hash, ``c11c0a4``).
    if len(_LEET_IN_WORD.findall(run)) >= 2:
        out.extend((run.translate(_LEET), run.translate(_LEET_L)))
    return out


# ---------------------------------------------------------------------------------------------


def _better(decoded: str | None, source: str, source_score: float | None) -> tuple[bool, float]:
    if decoded is None or not reads_as_language(decoded):
        return False, source_score if source_score is not None else 0.0
    before = language_score(source) if source_score is None else source_score
    return language_score(decoded) >= before + GAIN, before


def shape_views(text: str) -> list[str]:
    """The readable text behind every stretch of ``text`` whose shape is an encoding of
    language (see the module's docstring); [] when nothing is hidden. One level deep (two:
    :func:`judge.safety.injection.hidden_views`)."""
    if len(text) < 16 or _table() is None:
        return []
    views: list[str] = []
    budget = MAX_RUNS
    for run in _opaque_runs(text):
        if budget <= 0:
            break
        decodings = _opaque_decodings(run[:MAX_RUN_CHARS])
        if not decodings and _PADDING_FIRST.match(run):
            decodings = _reversed_base64(run[:MAX_RUN_CHARS])
        budget -= 1 if decodings else 0
        for raw in decodings:
            decoded = _utf8(raw)
            if decoded and reads_as_language(decoded):
                views.append(decoded)
                break
    for match in _INTERLEAVED.finditer(text) if _INTERLEAVED_HINT.search(text) else ():
        if budget <= 0:
            break
        budget -= 1
        decoded = match.group(0)[: MAX_RUN_CHARS * 2 : 2].replace("_", " ")
        if reads_as_language(decoded):
            views.append(decoded)
    for match in _NUMBERS.finditer(text) if _NUMBERS_HINT.search(text) else ():
        if budget <= 0:
            break
        budget -= 1
        for decoded in _number_decodings(match.group(0)[:MAX_RUN_CHARS]):
            if reads_as_language(decoded):
                views.append(decoded)
                break
    if budget > 0 and _ESCAPES_HINT.search(text) and _ESCAPES.search(text):
        # Line by line (what reads as language is the escaped line, not the file around it),
        # quoted-printable soft breaks joined first.
        joined = _QP_SOFT_BREAK.sub("", text) if "=\n" in text or "=\r\n" in text else text
        escaped = [line for line in joined.split("\n") if _ESCAPES.search(line)]
        for line in escaped[:MAX_ESCAPED_LINES]:
            if budget <= 0:
                break
            budget -= 1
            for decoded in _unescape_twice(line[: MAX_RUN_CHARS * 4]):
                if reads_as_language(decoded) and not reads_as_language(line):
                    views.append(decoded)
                    break
    lines = [line for line in text.split("\n") if len(line) >= 32 and line.count(" ") >= 7]
    if len(lines) > MAX_LETTER_RUNS:
        lines = lines[: MAX_LETTER_RUNS // 2] + lines[-MAX_LETTER_RUNS // 2 :]
    # A line of prose (common words of the table's languages as written) is left alone:
    # reversed, shifted or leetspeak words are not common words. A run is then rewritten
    # when it reads backwards (a capital ends a word, or a mark starts the line: reversed
    # text keeps its letters and most of its bigrams), has leetspeak in its words, or its
    # letters fit a Caesar shift or the mirrored alphabet better than as written.
    # (Reversed prose keeps short words that are common words backwards too, "si", "era":
    # a line that reads backwards is looked at even when it holds a few.)
    runs = [
        m.group(0)[:MAX_RUN_CHARS]
        for line in lines
        if not _plain_prose(line) or _BACKWARDS.search(line, 0, 200)
        for m in _LETTER_RUN.finditer(line)
    ]
    for run in runs:
        if budget <= 0:
            break
        if len(run) < 32:
            continue
        before = language_score(run)
        shifts = _best_shifts(run) if before < PROSE_SCORE else []
        candidates = _letter_decodings(run, shifts)
        if not candidates:
            continue
        budget -= 1
        common = _common_count(run)
        best: tuple[float, str] | None = None
        for decoded in candidates:
            if len(set(decoded.lower()) & _LETTERS) < MIN_DISTINCT:
                continue  # "lolol oolo": too few letters to be prose
            score = language_score(decoded)
            # Better letters, or as good letters and many more common words (reversing keeps
            # most bigrams' letters: its gain is in the words).
            words = score >= PROSE_SCORE and _common_count(decoded) >= max(4, common + 2)
            if (score >= max(before + GAIN, PROSE_SCORE) or words) and (
                best is None or score > best[0]
            ):
                best = (score, decoded)
        if best is not None:
            views.append(best[1])
    return views
