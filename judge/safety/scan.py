"""One pass over the bytes: the safety layer's literals and rule prefilters in one database.

Redaction runs ~260 secret rules over every text of a case (gitleaks' rules and this package's
own), and each rule is only possible where some literal occurs (a gitleaks keyword, a needle
such as ``-----begin`` or ``://``). Looking for each literal, then running each possible rule
over the whole text, costs one pass per literal and per rule. Here every literal and a
*prefilter* of every rule are compiled once into one multi-pattern database, and a text is
scanned once: the scan says which literals occur and which rules might match. Only those rules
are then run, exactly as before, over the text; their results are the same.

**Exactness.** A literal hit means ``literal in text.lower()``, the test the rules were written
against. A prefilter is a superset of its rule: Hyperscan's prefilter mode (``HS_FLAG_PREFILTER``
drops look-arounds and back-references) of the rule with every bounded repetition widened
(``{1,20}`` -> ``{1,}``) and every anchor inside it dropped; so when the prefilter does not
match, the rule cannot, and skipping it changes nothing. Prefilters are compiled for ASCII text
(Python's ``\\s`` also holds the ASCII separators ``\\x1c-\\x1f``, written out), and applied only
to ASCII text (``str.isascii`` costs nothing): a text with other characters runs every rule its
literals allow, as before. A rule whose prefilter cannot be written (or compiled) always runs.

**Two backends, one answer.** Hyperscan (the optional ``fast`` extra: ``pip install
'calibrated-judge[fast]'``; its wheels hold the library) where it imports; otherwise a
pure-Python scan that finds the same literals (``in`` on the lower-cased text) and reports
every rule as possible. The redactions and flags are the same on both
(``tests/judge/safety/test_scan.py`` checks it on every gold set and corpus); the fallback is
only slower. ``JUDGE_SCAN=python`` forces the fallback (tests, and a machine where the library
misbehaves).

The compiled database is cached under ``$JUDGE_CACHE_DIR`` (default ``~/.cache/judge``), keyed
by a digest of the patterns and the Hyperscan version, so a new process (a pool worker, a Ray
worker, the next ``judge run``) loads it in milliseconds instead of compiling it (seconds).
"""

from __future__ import annotations

import os
import platform
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from judge.defaults import user_cache
from judge.digests import sha256_hex

#: Environment variable choosing the backend: "hyperscan" (the default where it imports) or
#: "python".
BACKEND_ENV = "JUDGE_SCAN"
CACHE_ENV = "JUDGE_CACHE_DIR"


class Hits(NamedTuple):
    """What one scan found: the literals that occur (ids), and the rules that might match
    (ids; None when not checked: every rule might)."""

    literals: frozenset[int]
    maybe: frozenset[int] | None


@dataclass(frozen=True)
class Spec:
    """What to compile: lower-case literals (a hit: ``literal in text.lower()``) and, per rule,
    a compiled Python regex to derive a prefilter from (None: no prefilter, always possible)."""

    literals: tuple[str, ...]
    rules: tuple[re.Pattern[str] | None, ...]


# --- translating a Python regex into a superset for Hyperscan's prefilter mode -------------------

_SEP = r"\x1c-\x1f"  # ASCII characters Python's \s matches beyond [\t\n\v\f\r ]
_BOUNDED = re.compile(r"\{(\d+),(\d+)\}")


def prefilter_source(pattern: str) -> str | None:
    """A Hyperscan expression that matches wherever the Python regex ``pattern`` matches (on
    ASCII text), or None when this translation cannot promise that.

    Named groups become plain groups, back-references any text, anchors inside the pattern
    (``\\A``, ``\\Z``, ``\\z``) nothing, bounded repetitions unbounded; ``\\s`` and ``\\S`` are
    written out to Python's meaning. Look-arounds are left to the prefilter mode, which drops
    them."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_items: list[str] = []
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            pair = pattern[i : i + 2]
            i += 2
            if in_class:
                class_items.append(pair)
                continue
            if pair == "\\s":
                out.append(f"[\\s{_SEP}]")
            elif pair == "\\S":
                out.append(f"[^\\s{_SEP}]")
            elif pair in ("\\A", "\\Z", "\\z", "\\G"):
                out.append("")
            else:
                out.append(pair)
            continue
        if in_class:
            if ch == "]" and class_items and class_items != ["^"]:
                translated = _class(class_items)
                if translated is None:
                    return None
                out.append(translated)
                in_class = False
                class_items = []
            else:
                class_items.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            class_items = []
            i += 1
            if pattern.startswith("^", i):
                class_items.append("^")
                i += 1
            if pattern.startswith("]", i):
                class_items.append("\\]")
                i += 1
            continue
        if pattern.startswith("(?P<", i):
            out.append("(?:")
            i = pattern.index(">", i) + 1
            continue
        if pattern.startswith("(?P=", i):
            out.append("[\\s\\S]*")
            i = pattern.index(")", i) + 1
            continue
        if pattern.startswith("(?(", i):
            return None  # a conditional group
        if ch == "{":
            bounded = _BOUNDED.match(pattern, i)
            if bounded:
                out.append("{" + bounded.group(1) + ",}")
                i = bounded.end()
                continue
        out.append(ch)
        i += 1
    return None if in_class else "".join(out)


def _class(items: list[str]) -> str | None:
    """A character class (its items, "^" first when negated) with ``\\s`` / ``\\S`` written
    out; None when that cannot be done exactly."""
    negated = bool(items) and items[0] == "^"
    body = items[1:] if negated else items
    has_s, has_not_s = "\\s" in body, "\\S" in body
    if has_not_s:
        if has_s:
            return "[^\\s\\S]" if negated else "[\\s\\S]"  # every character, or none
        if body == ["\\S"]:
            return f"[\\s{_SEP}]" if negated else f"[^\\s{_SEP}]"
        return None
    spelled = [f"\\s{_SEP}" if item == "\\s" else item for item in body]
    return "[" + ("^" if negated else "") + "".join(spelled) + "]"


# --- backends ---------------------------------------------------------------------------------


class PythonScanner:
    """The pure-Python scan: the same literal hits, every rule possible."""

    backend = "python"

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        ids = {literal: i for i, literal in enumerate(spec.literals)}
        # One regex finds, at every position, the longest literal starting there (a trie, in a
        # look-ahead so that overlapping literals are all found); a literal occurs exactly when
        # it is a prefix of one of those.
        self._finder = re.compile("(?=(" + trie_regex(spec.literals) + "))") if ids else None
        self._prefixes = {
            literal: frozenset(
                ids[literal[:k]] for k in range(1, len(literal) + 1) if literal[:k] in ids
            )
            for literal in ids
        }

    def scan(self, text: str, lowered: str | None = None) -> Hits:
        """Literals of ``text`` (``lowered``: ``text.lower()``, when the caller has it)."""
        if self._finder is None:
            return Hits(frozenset(), None)
        low = text.lower() if lowered is None else lowered
        found: set[int] = set()
        for literal in set(self._finder.findall(low)):
            found |= self._prefixes[literal]
        return Hits(frozenset(found), None)


def trie_regex(words: Sequence[str]) -> str:
    """A regex matching any of ``words`` (the longest where several start at one place),
    shaped as a trie so that it costs about one step per character."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alternatives = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


def _hs_flags(regex: re.Pattern[str]) -> int:
    import hyperscan

    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH
    flags |= hyperscan.HS_FLAG_ALLOWEMPTY
    if regex.flags & re.IGNORECASE:
        flags |= hyperscan.HS_FLAG_CASELESS
    if regex.flags & re.MULTILINE:
        flags |= hyperscan.HS_FLAG_MULTILINE
    if regex.flags & re.DOTALL:
        flags |= hyperscan.HS_FLAG_DOTALL
    return int(flags)


class HyperscanScanner:
    """The scan with Hyperscan: one database of every literal (caseless) and prefilter."""

    backend = "hyperscan"

    def __init__(self, spec: Spec, cache_dir: Path | None = None) -> None:
        import hyperscan

        self.spec = spec
        n_literals = len(spec.literals)
        expressions: list[bytes] = []
        flags: list[int] = []
        ids: list[int] = []
        literal_flags = int(hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH)
        for i, literal in enumerate(spec.literals):
            expressions.append(re.escape(literal).encode("utf-8", "surrogatepass"))
            flags.append(literal_flags)
            ids.append(i)
        rules: list[tuple[int, bytes, int]] = []
        for r, regex in enumerate(spec.rules):
            source = None if regex is None else prefilter_source(regex.pattern)
            if regex is not None and source is not None:
                rules.append((r, source.encode("utf-8", "surrogatepass"), _hs_flags(regex)))
        self._n_literals = n_literals
        self.database, compiled = _database(expressions, flags, ids, rules, n_literals, cache_dir)
        #: Rule ids with a prefilter in the database (the others are always possible).
        self.prefiltered: frozenset[int] = frozenset(compiled)
        self._unfiltered = frozenset(range(len(spec.rules))) - self.prefiltered
        #: What a scan of ASCII text that matched nothing finds (shared: Hits are immutable).
        self._nothing = Hits(frozenset(), self._unfiltered)
        self._local = threading.local()

    def _scratch(self) -> Any:
        import hyperscan

        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.database)
        return scratch

    def scan(self, text: str, lowered: str | None = None) -> Hits:
        """Literals of ``text`` and, when it is ASCII, the rules that might match it."""
        found: list[int] = []
        n = self._n_literals
        if text.isascii():
            self.database.scan(
                text.encode("ascii"),
                match_event_handler=_collect,
                context=found,
                scratch=self._scratch(),
            )
            if not found:
                return self._nothing
            return Hits(
                frozenset([i for i in found if i < n]),
                frozenset([i - n for i in found if i >= n]) | self._unfiltered,
            )
        low = text.lower() if lowered is None else lowered
        data = low.encode("utf-8", "surrogatepass")
        self.database.scan(
            data, match_event_handler=_collect, context=found, scratch=self._scratch()
        )
        return Hits(frozenset([i for i in found if i < n]), None)


def _collect(pattern_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    """Hyperscan's match callback: keep the id (each is reported once: single-match mode)."""
    found.append(pattern_id)


def _database(
    expressions: list[bytes],
    flags: list[int],
    ids: list[int],
    rules: list[tuple[int, bytes, int]],
    offset: int,
    cache_dir: Path | None,
) -> tuple[Any, list[int]]:
    """The compiled database (loaded from the cache when there) and the rule ids it holds.
    A rule whose prefilter Hyperscan refuses is left out (it then always runs)."""
    import hyperscan

    # Not in hyperscan's stubs (and no stubs at all where the wheel is missing).
    version = hyperscan.__version__  # type: ignore[attr-defined, unused-ignore]
    parts = [f"{version}|{platform.machine()}|".encode()]
    for expression, flag, ident in zip(expressions, flags, ids, strict=True):
        parts.append(b"%d:%d:" % (ident, flag) + expression + b"\0")
    for rule, expression, flag in rules:
        parts.append(b"R%d:%d:" % (rule, flag) + expression + b"\0")
    key = sha256_hex(b"".join(parts))
    path = None if cache_dir is None else cache_dir / f"scan-{key[:24]}.hsdb"
    if path is not None and path.is_file():
        try:
            data = path.read_bytes()
            kept = [int(x) for x in data[: data.index(b"\n")].split()]
            return hyperscan.loadb(data[data.index(b"\n") + 1 :], hyperscan.HS_MODE_BLOCK), kept
        except (OSError, ValueError, hyperscan.error):
            pass
    kept = [rule for rule, _, _ in rules]
    while True:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        chosen = [r for r in rules if r[0] in set(kept)]
        try:
            database.compile(
                expressions=expressions + [e for _, e, _ in chosen],
                ids=ids + [offset + r for r, _, _ in chosen],
                elements=len(expressions) + len(chosen),
                flags=flags + [f for _, _, f in chosen],
            )
            break
        except hyperscan.error:
            # Find the prefilters Hyperscan refuses, one by one (only when one is refused).
            kept = [r for r, e, f in chosen if _compiles(e, f)]
    if path is not None:
        _save(path, " ".join(map(str, kept)).encode() + b"\n" + hyperscan.dumpb(database))
    return database, kept


def _compiles(expression: bytes, flag: int) -> bool:
    import hyperscan

    try:
        hyperscan.Database().compile(expressions=[expression], ids=[0], elements=1, flags=[flag])
    except hyperscan.error:
        return False
    return True


def _save(path: Path, data: bytes) -> None:
    """Write the cache file atomically; a cache that cannot be written is no error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(data)
        temporary.replace(path)
    except OSError:
        pass


def cache_dir() -> Path | None:
    """Where compiled databases are kept (None: ``JUDGE_CACHE_DIR`` is set empty)."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    return user_cache()


def hyperscan_available() -> bool:
    """Whether the Hyperscan library imports here."""
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


Scanner = PythonScanner | HyperscanScanner

#: Guards :data:`_KEY_LOCKS` (held only to look a lock up, never while building).
_LOCK = threading.Lock()
#: One lock per scanner key, held while that scanner is compiled from its spec, so that
#: threads asking for the same scanner at once compile it once.
_KEY_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_SCANNERS: dict[tuple[str, str], Scanner] = {}
#: The backend in use, decided on first use (``JUDGE_SCAN``, else Hyperscan where it imports).
_BACKEND: list[str] = []


def backend_name() -> str:
    """The backend scanners use: ``JUDGE_SCAN`` if set, else Hyperscan where it imports
    (decided once per process; :func:`use_backend` changes it)."""
    if not _BACKEND:
        chosen = os.environ.get(BACKEND_ENV, "").strip().lower()
        if chosen not in ("python", "hyperscan"):
            chosen = "hyperscan" if hyperscan_available() else "python"
        _BACKEND.append(chosen)
    return _BACKEND[0]


@contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Scan with backend ``name`` ("python" or "hyperscan") inside the block (tests)."""
    previous = backend_name()
    _BACKEND[0] = name
    try:
        yield
    finally:
        _BACKEND[0] = previous


def scanner(name: str, build: Callable[[], Spec]) -> Scanner:
    """The scanner named ``name`` for the current backend, built once per process from the
    spec ``build`` returns.

    ``build`` runs under no lock: a spec may itself need another scanner (the injection spec
    folds its words, and folding asks for the fold scanner), and threads building different
    scanners do not wait on each other. Only compiling the spec, which calls nothing back, is
    done under the scanner's own lock, so each scanner is compiled once; two threads that
    build one spec at once both build it (the same value: a spec is a pure function of the
    code), and the second waits for the first's compiled scanner."""
    key = (name, _BACKEND[0] if _BACKEND else backend_name())
    found = _SCANNERS.get(key)
    if found is not None:
        return found
    spec = build()
    with _LOCK:
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with key_lock:
        found = _SCANNERS.get(key)
        if found is None:
            if key[1] == "hyperscan":
                found = HyperscanScanner(spec, cache_dir())
            else:
                found = PythonScanner(spec)
            _SCANNERS[key] = found
    return found


def literal_ids(literals: Sequence[str]) -> dict[str, int]:
    """Literal -> id, first occurrence wins (helper for building a :class:`Spec`)."""
    ids: dict[str, int] = {}
    for literal in literals:
        ids.setdefault(literal, len(ids))
    return ids
