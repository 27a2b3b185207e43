"""The diff of the facts-only copy: the code's meaning without its prose, by comment syntax.

The facts-only copy (:mod:`judge.judging.facts`) keeps the diff, since the diff is what is
judged; but a diff also carries prose that no program executes, and text planted there reaches
the copy's judge as it reaches the first. :func:`facts_diff` rewrites a unified diff by rules
about *syntax*, none about any attack, in any language or encoding:

- **Comments** in every line of every hunk (added, context and removed alike) are replaced by a
  fixed marker with their size, ``# [comment withheld: 42 chars]``, kept at their place after
  their opener (and before their closer): ``#`` for Python, shell, YAML, TOML, Ruby, R, Perl,
  Makefiles and Dockerfiles (for shell, YAML and Perl only at the start of a word); ``//`` and
  ``/* */`` for the C family, JavaScript/TypeScript, Go, Rust, Java, Kotlin, Swift, C#, PHP,
  Scala, Dart, SCSS and Less; ``/* */`` for CSS; ``<!-- -->`` for HTML, XML, SVG and Vue;
  ``--`` and ``/* */`` for SQL, ``--`` and ``--[[ ]]`` for Lua, ``--`` and ``{- -}`` for
  Haskell. The language is the file's, from its path (extension or well-known name).
- **The text of markup** (HTML, XML, SVG, Vue...): the text between tags (a paragraph, a
  title, a ``<style>`` or ``<script>`` body, entities and all) becomes its length,
  ``<p>[text withheld: 97 chars]</p>``, and a quoted attribute value becomes its length like a
  string literal; the tags, their names and name-like values (``<version>1.2.3</version>``,
  ``class="nav"``) stay. Markup's text is what a page shows, as free as a comment's.
- **Python docstrings**: a string literal that is a whole statement (at the start of a line,
  outside brackets, nothing after it but a comment) is an expression the interpreter discards;
  its text is replaced like a comment's, its quotes kept.
- **Prose files** (Markdown, reStructuredText, AsciiDoc, Org, LaTeX, plain ``.txt`` other than
  requirement lists, and README, LICENSE, CHANGELOG... without an extension) and **data files**
  (JSON, JSON lines, CSV, TSV, logs, lock files: read by programs as values, never run; a
  handful of JSON manifests that tools read as their configuration, such as ``package.json``
  and ``tsconfig.json``, are kept like code) keep their file header and lose their hunks: one
  empty hunk whose heading is a fact written by code (the lines added and removed).
- Text outside any file section (a mail header, a commit message before the first file), text
  between a file's header and its hunks that is no git header line, and the data of a binary
  patch are replaced by a marker with their size.

What stays: every file's path and git header lines (paths, modes, renames), every hunk header
(line numbers; the function heading git prints after it is reduced like a line of the file),
every line's prefix and its code, identifiers other than a test's name, name-like string
literals (``"utf-8"``, ``'id'``), and the lines of a changed file whose language is unknown.

**String literals and test names** (every line of every hunk, as comments): a literal becomes
its length inside its quotes (``"<str 37 chars>"``) unless it is name-like, and a test's name
(``def test_x``, ``func TestX``, ``it('...')``) becomes an alias, ``<test 1>``, shared with the
agent's commands (:mod:`judge.judging.facts_names` gives the rules and the argument). A file
the diff *creates* whose type is unknown (``COMMIT_MSG``, ``x.orig``) is withheld like a prose
file, unless its ``#!`` line names a known language: it was in no repository, and the module
cannot tell its prose from its code.

Removed lines are rewritten like the others. They were the repository's text before the run,
not the agent's, but the repository is among the things an agent reads (a planted comment in a
file is the classic carrier), and a run's diff is supplied with the run: nothing proves a
removed line was ever in a repository. Their code stays, so what the change removed is seen.

How lines are lexed: each hunk's new side (context and added lines) and old side (context and
removed lines) is lexed as one text, so that a block comment or a docstring over several lines
is recognised; context lines are shown as the new side reads them. A hunk may start inside a
block comment or a long string opened above it: the module then lexes it from inside that
construct when, and only when, lexing it from code leaves the construct open at the hunk's end
or meets its closer (``*/``, ``-->``) in code. Quoted strings of one line are strings only when
they close on their line (an unmatched quote, like a Rust lifetime, is code).

Limits: a hunk that lies wholly inside a long comment or docstring opened above it, with no
closer in it, is read as code; prose in identifiers other than test names, in name-like
literals (24 characters at most, no blank) and in a YAML or shell word that is not quoted
stays; so does every line of a changed file of unknown
type. Deterministic:
the same diff gives the same copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from judge.checks.diff import GIT_HEADER, HUNK_HEADER
from judge.judging.facts_commands import Aliases
from judge.judging.facts_names import (
    STRING_MARK,
    TEST_KIND,
    AliasFn,
    alias_definitions,
    name_like,
    names_a_test,
)

#: The marker's words: a comment's text, a docstring's, a prose or data file's, other text.
COMMENT_MARK = "[comment withheld: {n} chars]"
DOCSTRING_MARK = "[docstring withheld: {n} chars]"
TEXT_MARK = "[text withheld: {n} chars]"
FILE_FACT = "[{what} file: its text is withheld; lines added: {added}, removed: {removed}]"
OTHER_MARK = "[{n} characters outside any hunk withheld]"
BINARY_MARK = "[{n} characters of binary patch data withheld]"


@dataclass(frozen=True)
class Syntax:
    """The comment and string syntax of a language family."""

    #: Line-comment openers.
    line: tuple[str, ...] = ()
    #: Block comments as (opener, closer).
    blocks: tuple[tuple[str, str], ...] = ()
    #: Quotes of strings that end on their line.
    quotes: tuple[str, ...] = ('"', "'")
    #: Delimiters of strings that may span lines (the same opener and closer).
    long_quotes: tuple[str, ...] = ()
    #: A line comment starts only at the start of a word (shell's ``${#x}`` is code).
    word_start: bool = False
    #: Python's docstrings (string statements) are withheld.
    docstrings: bool = False
    #: Markup: the text between tags and quoted attribute values are withheld.
    markup: bool = False


PYTHON = Syntax(line=("#",), long_quotes=('"""', "'''"), docstrings=True)
HASH = Syntax(line=("#",))
HASH_WORD = Syntax(line=("#",), word_start=True)
C_FAMILY = Syntax(line=("//",), blocks=(("/*", "*/"),), long_quotes=("`",))
CSS = Syntax(blocks=(("/*", "*/"),))
MARKUP = Syntax(blocks=(("<!--", "-->"),), quotes=(), markup=True)
SQL = Syntax(line=("--",), blocks=(("/*", "*/"),))
LUA = Syntax(line=("--",), blocks=(("--[[", "]]"),))
HASKELL = Syntax(line=("--",), blocks=(("{-", "-}"),), quotes=('"',))

_BY_SUFFIX: dict[str, Syntax] = {
    **dict.fromkeys((".py", ".pyi", ".pyw", ".pyx", ".pxd"), PYTHON),
    **dict.fromkeys((".sh", ".bash", ".zsh", ".ksh", ".yml", ".yaml", ".pl", ".pm"), HASH_WORD),
    **dict.fromkeys(
        (".toml", ".rb", ".rake", ".gemspec", ".r", ".cfg", ".ini", ".conf", ".cmake", ".mk"),
        HASH,
    ),
    **dict.fromkeys((".ps1", ".tf", ".nix", ".jl", ".ex", ".exs", ".coffee", ".cr"), HASH),
    **dict.fromkeys(
        (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm", ".java"), C_FAMILY
    ),
    **dict.fromkeys(
        (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".go", ".rs"), C_FAMILY
    ),
    **dict.fromkeys(
        (".kt", ".kts", ".swift", ".cs", ".php", ".scala", ".dart", ".groovy", ".gradle"),
        C_FAMILY,
    ),
    **dict.fromkeys((".proto", ".sol", ".zig", ".scss", ".less", ".jsonc", ".json5"), C_FAMILY),
    ".css": CSS,
    **dict.fromkeys((".html", ".htm", ".xhtml", ".xml", ".svg", ".xsl", ".vue"), MARKUP),
    **dict.fromkeys((".svelte", ".xaml", ".csproj", ".plist"), MARKUP),
    ".sql": SQL,
    ".lua": LUA,
    **dict.fromkeys((".hs", ".elm"), HASKELL),
}
_BY_NAME: dict[str, Syntax] = {
    **dict.fromkeys(("makefile", "gnumakefile", "dockerfile", "containerfile"), HASH),
    **dict.fromkeys(("gemfile", "rakefile", "vagrantfile", "procfile", "cmakelists.txt"), HASH),
    **dict.fromkeys((".gitignore", ".dockerignore", ".gitattributes", ".env"), HASH),
    **dict.fromkeys((".bashrc", ".profile", ".zshrc", ".envrc"), HASH_WORD),
}
#: Interpreters a ``#!`` line names, as the extension of their language.
_INTERPRETERS = {
    **dict.fromkeys(("python", "pypy"), "py"),
    **dict.fromkeys(("sh", "bash", "zsh", "ksh", "dash"), "sh"),
    **dict.fromkeys(("node", "deno", "bun"), "js"),
    **{"ruby": "rb", "perl": "pl", "lua": "lua"},
}
_PROSE_SUFFIXES = frozenset(
    (".md", ".markdown", ".mdx", ".rst", ".txt", ".text", ".adoc", ".asciidoc", ".org", ".tex")
)
_PROSE_NAMES = frozenset(
    (
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "changelog",
        "changes",
        "history",
        "news",
        "contributing",
        "todo",
        "notes",
    )
)
_DATA_SUFFIXES = frozenset((".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".log", ".lock"))
#: JSON files their tools read as configuration: kept like code (JSON has no comments).
_MANIFESTS = re.compile(
    r"^(package|composer|deno|angular|\.eslintrc|\.babelrc|(ts|js)config(\.[\w-]+)?)\.json$"
)
_REQUIREMENTS = re.compile(r"^(requirements|constraints)[\w.-]*\.txt$")
#: A script's first line, ``#!/bin/sh`` or ``#!/usr/bin/env -S python3 -u``: the interpreter.
_SHEBANG = re.compile(r"#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?([a-z]+)[\d.]*(?:\s|$)")


def file_kind(path: str) -> Syntax | str | None:
    """What a file is, from its path: its :class:`Syntax`, ``"prose"`` or ``"data"``, or None
    (a type the module does not know: its lines are kept)."""
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    if name in _BY_NAME or _REQUIREMENTS.match(name):
        return _BY_NAME.get(name, HASH)
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if suffix == ".json" and _MANIFESTS.match(name):
        return None
    if suffix in _PROSE_SUFFIXES or (not suffix and name in _PROSE_NAMES):
        return "prose"
    if PurePosixPath(name).stem in _PROSE_NAMES and suffix in ("", ".old", ".orig"):
        return "prose"
    if suffix in _DATA_SUFFIXES:
        return "data"
    return None


# --- lexing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    """A withheld stretch of a lexed text: [start, end), its opener's and closer's length."""

    start: int
    end: int
    opener: int
    closer: int
    mark: str
    #: A test's alias, shown in place of the literal's text (one line).
    name: str = ""


_STRING_PREFIX = re.compile(r"[rRbBuUfF]{0,2}$")
#: Markup's tokens after its comments: a tag (``<p ...>``, ``</p>``, ``<?xml ...?>``,
#: ``<!doctype ...>``; one left open at the end of a hunk too), and a run of text between tags.
_TAG = r"<[/?!]?[A-Za-z][^<>]*>?"
_TEXT = r"[^<>]+"
_ATTRIBUTE_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'")
_AFTER_STATEMENT = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")


class _Lexer:
    """The comments (and docstrings) of a text in one :class:`Syntax`."""

    def __init__(self, syntax: Syntax, alias: AliasFn) -> None:
        self.syntax = syntax
        self.alias = alias
        openers: list[str] = []
        for opener in sorted(
            [*syntax.long_quotes, *(o for o, _ in syntax.blocks), *syntax.line], key=len
        )[::-1]:
            escaped = re.escape(opener)
            if opener in syntax.line and syntax.word_start:
                escaped = r"(?<![^\s])" + escaped
            openers.append(escaped)
        for quote in syntax.quotes:
            q = re.escape(quote)
            openers.append(rf"{q}(?:\\.|[^{q}\\\n])*{q}")
        if syntax.markup:
            openers += [_TAG, _TEXT]
        self.token = re.compile("|".join(openers)) if openers else None
        self.closers = {o: c for o, c in syntax.blocks} | {q: q for q in syntax.long_quotes}

    def _close(self, text: str, start: int, opener: str) -> tuple[int, int]:
        """Where the construct opened at ``start`` ends (after its closer), and the closer's
        length (0 when it runs to the end of the text)."""
        closer = self.closers[opener]
        pos = start + len(opener)
        escapes = opener in self.syntax.long_quotes
        while True:
            found = text.find(closer, pos)
            if found < 0:
                return len(text), 0
            if escapes and _escaped(text, found):
                pos = found + 1
                continue
            return found + len(closer), len(closer)

    def spans(self, text: str, inside: str | None = None) -> tuple[list[_Span], str | None, bool]:
        """The withheld spans of ``text`` lexed from code (or from inside the construct opened
        by ``inside``), the construct left open at its end, and whether a block closer was met
        in code."""
        out: list[_Span] = []
        pos, depth, open_at_end, stray = 0, 0, None, False
        if inside is not None:
            end, closer = self._close(text, -len(inside), inside)
            mark = DOCSTRING_MARK if inside in self.syntax.long_quotes else COMMENT_MARK
            if inside in self.syntax.long_quotes and not self.syntax.docstrings:
                mark = STRING_MARK
            out.append(_Span(0, end, 0, closer, mark))
            if not closer:
                return out, inside, False
            pos = end
        while self.token is not None:
            match = self.token.search(text, pos)
            code = text[pos : match.start() if match else len(text)]
            depth = max(0, depth + sum(map(code.count, "([{")) - sum(map(code.count, ")]}")))
            stray = stray or any(c in code for o, c in self.syntax.blocks if c != o)
            if match is None:
                break
            token, start = match.group(0), match.start()
            if token in self.syntax.line and token not in self.closers:
                end = text.find("\n", start)
                end = len(text) if end < 0 else end
                out.append(_Span(start, end, len(token), 0, COMMENT_MARK))
            elif token in self.closers:
                end, closer = self._close(text, start, token)
                if not closer:
                    open_at_end = token
                if token in self.syntax.long_quotes:
                    if self._docstring(text, start, end, depth):
                        out.append(_Span(start, end, len(token), closer, DOCSTRING_MARK))
                    else:
                        out += self._literal(text, start, end, len(token), closer)
                else:
                    out.append(_Span(start, end, len(token), closer, COMMENT_MARK))
            elif self.syntax.markup:
                end = match.end()
                out += self._markup(text, start, end)
            else:
                end = match.end()
                if self._docstring(text, start, end, depth):
                    out.append(_Span(start, end, 1, 1, DOCSTRING_MARK))
                else:
                    out += self._literal(text, start, end, 1, 1)
            pos = end
        return out, open_at_end, stray

    def _literal(self, text: str, start: int, end: int, opener: int, closer: int) -> list[_Span]:
        """A string literal's span (none for a name-like one): a test's name becomes its
        alias, any other text its length (:mod:`judge.judging.facts_names`)."""
        body = text[start + opener : end - closer]
        line_start = text.rfind("\n", 0, start) + 1
        if closer and "\n" not in body and names_a_test(text[line_start:start]):
            name = self.alias(TEST_KIND, body)
            return [_Span(start, end, opener, closer, STRING_MARK, name)]
        if closer and name_like(body):
            return []
        return [_Span(start, end, opener, closer, STRING_MARK)]

    def _markup(self, text: str, start: int, end: int) -> list[_Span]:
        """A markup token's spans: a tag's quoted values as literals, a run of text (its
        blanks around it kept) unless it is blank or name-like."""
        if text.startswith("<", start):
            return [
                span
                for value in _ATTRIBUTE_VALUE.finditer(text, start, end)
                for span in self._literal(text, value.start(), value.end(), 1, 1)
            ]
        body = text[start:end]
        words = body.strip()
        if not words or name_like(words):
            return []
        lead = len(body) - len(body.lstrip())
        return [_Span(start + lead, start + lead + len(words), 0, 0, TEXT_MARK)]

    def _docstring(self, text: str, start: int, end: int, depth: int) -> bool:
        """A string at ``[start, end)`` that is a whole statement (Python only)."""
        if not self.syntax.docstrings or depth:
            return False
        line_start = text.rfind("\n", 0, start) + 1
        before = text[line_start:start]
        continued = line_start >= 2 and text[line_start - 2] == "\\"
        if continued or not _STRING_PREFIX.match(before.lstrip(" \t")):
            return False
        return _AFTER_STATEMENT.match(text, end) is not None

    def lex(self, text: str) -> list[_Span]:
        """The withheld spans of ``text``, a hunk's side; it may start inside a block comment
        or a long string opened above the hunk (see the module docstring)."""
        spans, open_at_end, stray = self.spans(text)
        if open_at_end is None and not stray:
            return spans
        for inside in self.closers:
            retry, still_open, retry_stray = self.spans(text, inside)
            if still_open is None and not retry_stray:
                return retry
        return spans


def _escaped(text: str, at: int) -> bool:
    """The character at ``at`` follows an odd number of backslashes."""
    n = 0
    while at - n - 1 >= 0 and text[at - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _render_piece(piece: str, opens: bool, closes: bool, span: _Span) -> str:
    """One line's part of a withheld span, as its marker (a string literal's with no blank
    between its quotes and its marker, and its length counted as written)."""
    opener = piece[: span.opener] if opens else ""
    closer = piece[len(piece) - span.closer :] if closes and span.closer else ""
    body = piece[len(opener) : len(piece) - len(closer)]
    if span.name:
        return opener + span.name + closer
    if not body.strip():
        return piece
    lead = body[: len(body) - len(body.lstrip())]
    if span.mark in (STRING_MARK, TEXT_MARK):
        return opener + lead + span.mark.format(n=len(body) - len(lead)) + closer
    mark = span.mark.format(n=len(body.strip()))
    return opener + (lead or " ") + mark + (" " + closer if closer else "")


def withhold(lines: list[str], syntax: Syntax, alias: AliasFn | None = None) -> list[str]:
    """``lines`` (one side of a hunk, without prefixes) with their comments and docstrings
    replaced by markers, their string literals by their length and the names of the tests
    they define by aliases (``alias``, or aliases of their own)."""
    alias = alias if alias is not None else Aliases().alias
    text = "\n".join(lines)
    spans = _Lexer(syntax, alias).lex(text)
    out: list[str] = []
    at = 0
    for line in lines:
        start, end = at, at + len(line)
        at = end + 1
        pieces: list[str] = []
        cursor = start
        for span in spans:
            if span.end <= start or span.start >= end or span.end == span.start:
                continue
            lo, hi = max(span.start, start), min(span.end, end)
            pieces.append(text[cursor:lo])
            piece = text[lo:hi]
            pieces.append(_render_piece(piece, lo == span.start, hi == span.end, span))
            cursor = hi
        pieces.append(text[cursor:end])
        out.append(alias_definitions("".join(pieces), alias))
    return out


# --- the diff ---------------------------------------------------------------------------------

_HEADERS = (
    "index ",
    "old mode ",
    "new mode ",
    "new file mode ",
    "deleted file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "Binary files ",
    "GIT binary patch",
)


@dataclass
class _Hunk:
    header: str
    heading: str
    lines: list[tuple[str, str]]


def _path_of(line: str) -> str:
    name = line[4:].split("\t", 1)[0].strip().strip('"')
    return name[2:] if name.startswith(("a/", "b/")) else name


def _rewrite_hunk(hunk: _Hunk, kind: Syntax | None, alias: AliasFn) -> list[str]:
    """A hunk's lines with the comments, literals and test names of its file's language
    withheld."""
    head = [hunk.header + hunk.heading] if hunk.header else []
    if kind is None:
        return head + [t + s for t, s in hunk.lines]
    new = [i for i, (t, _) in enumerate(hunk.lines) if t in " +"]
    old = [i for i, (t, _) in enumerate(hunk.lines) if t in " -"]
    shown = [s for _, s in hunk.lines]
    added = withhold([hunk.lines[i][1] for i in new], kind, alias)
    for index, text in zip(new, added, strict=True):
        shown[index] = text
    removed = withhold([hunk.lines[i][1] for i in old], kind, alias)
    for index, text in zip(old, removed, strict=True):
        if hunk.lines[index][0] == "-":
            shown[index] = text
    if head and hunk.heading.strip():
        head = [hunk.header + withhold([hunk.heading], kind, alias)[0]]
    return head + [t + s for (t, _), s in zip(hunk.lines, shown, strict=True)]


class _File:
    """One file's section: its header lines, its hunks, and its kind."""

    def __init__(self, path: str, header: list[str]) -> None:
        self.path = path
        self.header = header
        self.hunks: list[_Hunk] = []
        self.binary = False
        self.binary_chars = 0
        self.other = 0

    def render(self, alias: AliasFn) -> list[str]:
        kind = file_kind(self.path)
        if kind is None and self.created():
            kind = self.shebang_kind() or "unknown-type"
        out = list(self.header)
        if self.other:
            out.append(OTHER_MARK.format(n=self.other))
        if self.binary_chars:
            out.append(BINARY_MARK.format(n=self.binary_chars))
        if isinstance(kind, str):
            if self.hunks:
                added = sum(t == "+" for h in self.hunks for t, _ in h.lines)
                removed = sum(t == "-" for h in self.hunks for t, _ in h.lines)
                fact = FILE_FACT.format(what=kind, added=added, removed=removed)
                out.append(f"@@ -0,0 +0,0 @@ {fact}")
            return out
        for hunk in self.hunks:
            out += _rewrite_hunk(hunk, kind, alias)
        return out

    def created(self) -> bool:
        """The diff creates this file (it was in no repository before the run)."""
        return any(
            line.startswith("new file mode ") or line.rstrip() == "--- /dev/null"
            for line in self.header
        )

    def shebang_kind(self) -> Syntax | None:
        """The syntax its first line's ``#!`` names (a script without an extension)."""
        first = next((s for h in self.hunks for t, s in h.lines if t in " +"), "")
        match = _SHEBANG.match(first)
        return _BY_SUFFIX.get("." + _INTERPRETERS.get(match.group(1), "?")) if match else None

    def add(self, line: str) -> None:
        """A line of this file's section that is not in a counted hunk."""
        if self.binary:
            self.binary_chars += len(line) + 1
        elif line.startswith("\\") and self.hunks:
            self.hunks[-1].lines.append(("\\", line[1:]))
        elif not line.strip():
            return  # a blank line between files
        elif line[:1] in " +-":
            # A hand-made diff: bare lines without a hunk header, or more than it counted.
            if not self.hunks:
                self.hunks.append(_Hunk("", "", []))
            self.hunks[-1].lines.append((line[0], line[1:]))
        else:
            self.other += len(line) + 1


def facts_diff(diff: str, alias: AliasFn | None = None) -> str:
    """``diff`` with the prose withheld by syntax (see the module docstring); the same diff
    gives the same text. Test names get their aliases from ``alias`` (the copy's
    ``Aliases.alias``, shared with the agent's commands), else aliases of their own."""
    if not diff.strip():
        return diff
    lines = diff.split("\n")
    if diff.endswith("\n"):
        lines.pop()
    out: list[str | _File] = []
    outside = 0
    current: _File | None = None
    old_left = new_left = 0
    for raw in lines:
        line = raw[:-1] if raw.endswith("\r") else raw
        if current is not None and (old_left > 0 or new_left > 0):
            tag = line[:1] or " "
            if tag == "\\":
                current.hunks[-1].lines.append(("\\", line[1:]))
                continue
            if tag in " +-" and not line.startswith(("diff --git ", "@@ -")):
                old_left -= tag in " -"
                new_left -= tag in " +"
                current.hunks[-1].lines.append((tag, line[1:]))
                continue
            old_left = new_left = 0
        git = GIT_HEADER.match(line)
        if git or (line.startswith("--- ") and (current is None or current.hunks)):
            if outside:
                out.append(OTHER_MARK.format(n=outside))
                outside = 0
            current = _File(git.group(2) if git else _path_of(line), [line])
            out.append(current)
            continue
        if current is None:
            outside += len(line) + 1
            continue
        hunk = HUNK_HEADER.match(line)
        if hunk:
            old_left, new_left = int(hunk.group(2) or 1), int(hunk.group(4) or 1)
            current.hunks.append(_Hunk(line[: hunk.end()], line[hunk.end() :], []))
        elif line.startswith(("--- ", "+++ ", *_HEADERS)) and not current.hunks:
            current.header.append(line)
            if line.startswith("+++ ") and _path_of(line) != "/dev/null":
                current.path = _path_of(line)
            current.binary = current.binary or line.startswith("GIT binary patch")
        else:
            current.add(line)
    if outside:
        out.append(OTHER_MARK.format(n=outside))
    rendered: list[str] = []
    alias = alias if alias is not None else Aliases().alias
    for item in out:
        rendered += item.render(alias) if isinstance(item, _File) else [item]
    return "\n".join(rendered) + ("\n" if diff.endswith("\n") else "")
