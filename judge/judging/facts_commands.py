"""The agent's own commands and tool calls, reduced for the facts-only copy (``facts.py``).

An agent writes text into its commands: an ``echo`` of a note, a heredoc that writes a summary,
a commit message, a variable's value, a shell comment, a file or test named by a sentence, a
tool call's arguments. Kept verbatim, that text reaches the copy's judge as the planted text
itself. These functions keep the *shape* of what the agent did and none of its free text, by
one rule that recognises no attack:

- kept as written: program names and the first subcommand when they are short names
  (``git commit``, ``python -m pytest``), flag names (``-q``, ``--tb=short``: a flag's value
  when it is one short lower-case word, like a subcommand), small numbers, the
  shell's structure (pipes, ``&&``, ``||``, ``;``, redirections, subshells), ``/dev/null``,
  and paths and names the copy's diff already shows (they add no text the judge does not
  see; a test's name the diff defines has the alias the diff shows, from the same table);
- replaced by a placeholder that gives a length (``<text 42 chars>``): quoted arguments with
  spaces, the arguments of ``echo``/``printf``, heredoc bodies, variable values, shell comments,
  every other free word, flags too long or too many-worded to be a flag name;
- replaced by a kind and a stable alias: other paths (``<test file 1>``, ``<source file 2>``,
  ``<directory 1>``), variable names outside the usual ones (``<variable 1>``), the names in
  test ids (``tests/test_x.py::<test 1>``).

Aliases are numbered per kind in order of first appearance in the run (an
:class:`Aliases` is made per copy), so the same file or test is the same alias in every turn;
the reduction is deterministic. A tool call keeps its tool name and argument names; its values
are reduced the same way (a ``command`` value as a shell command).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Programs whose arguments are the text they print: every argument that is not a flag is text.
TEXT_PROGRAMS = frozenset({"echo", "printf", "print", "say", "logger", "wall", "notify-send"})
#: Environment variables shown by name (common, carry no prose); any other is an alias.
USUAL_VARIABLES = frozenset(
    {
        "PATH", "PYTHONPATH", "HOME", "PWD", "USER", "SHELL", "LANG", "LC_ALL", "TERM", "CI",
        "TMPDIR", "DEBUG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
        "PYTEST_ADDOPTS", "DJANGO_SETTINGS_MODULE", "NODE_ENV", "GOPATH", "GOFLAGS", "CC", "CXX",
        "CFLAGS", "LDFLAGS", "VIRTUAL_ENV", "RUST_BACKTRACE", "NO_COLOR", "TZ",
    }
)  # fmt: skip
#: Programs whose path arguments are directories.
DIRECTORY_PROGRAMS = frozenset({"cd", "mkdir", "pushd", "rmdir"})
#: Programs whose other arguments are files (a bare ``NOTES`` is a path, not a word).
FILE_PROGRAMS = frozenset(
    {"cat", "head", "tail", "less", "more", "touch", "rm", "cp", "mv", "ls", "wc", "stat", "file",
     "nano", "vi", "vim", "source", "diff", "chmod", "ln", "tee"}
)  # fmt: skip
#: Keys of a tool call whose string value is a shell command.
COMMAND_KEYS = frozenset({"command", "cmd", "bash", "shell", "script"})
#: Paths kept whole: devices and standard streams.
FIXED_PATHS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "-", ".", "..", "/", "~"}
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,23}", re.ASCII)
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9]{0,15}(?:-[a-z0-9]{1,15})?", re.ASCII)
_MODULE = re.compile(r"[A-Za-z_]\w{0,23}(?:\.[A-Za-z_]\w{0,23}){0,3}", re.ASCII)
_FLAG = re.compile(r"(--?)([A-Za-z0-9][A-Za-z0-9_-]{0,23})(=.*)?", re.ASCII | re.DOTALL)
_NUMBER = re.compile(r"[+-]?\d{1,6}(?:\.\d{1,4})?", re.ASCII)
_PATHLIKE = re.compile(r"[\w./~@+-]+", re.ASCII)
_EXTENSION = re.compile(r"[^/]\.([A-Za-z0-9]{1,8})$", re.ASCII)
_ASSIGNMENT = re.compile(r"([A-Za-z_]\w{0,63})=(.*)", re.ASCII | re.DOTALL)
_DEFINED = re.compile(r"^[+ -]\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_DIFF_PATH = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)|^diff --git a/(\S+) b/(\S+)", re.M)

_SOURCE_EXT = frozenset(
    {
        "py", "pyi", "c", "h", "cc", "cpp", "hpp", "cxx", "rs", "go", "js", "jsx", "ts", "tsx",
        "java", "kt", "scala", "rb", "php", "cs", "swift", "m", "mm", "sh", "bash", "pl", "lua",
        "r", "jl", "ex", "exs", "erl", "hs", "clj", "sql",
    }
)  # fmt: skip
_CONFIG_EXT = frozenset(
    {"toml", "ini", "cfg", "yaml", "yml", "json", "lock", "conf", "xml", "env", "properties"}
)
_TEXT_EXT = frozenset({"md", "rst", "txt", "adoc", "log", "csv", "tsv", "html", "htm", "flag"})

#: Shell operators, longest first.
_OPERATORS = (
    "&>>", "<<<", "<<-", "&&", "||", ";;", "|&", ">>", ">|", ">&", "<&", "&>", "<<", "<>",
    "|", ";", "&", "(", ")", "<", ">",
)  # fmt: skip
_REDIRECTS = frozenset({"&>>", "<<<", ">>", ">|", ">&", "<&", "&>", "<>", "<", ">"})


@dataclass
class Aliases:
    """Stable aliases for one copy: the same path, test or variable gets the same alias in
    every command of the run. Paths and test names the diff shows are kept as written."""

    shown_paths: frozenset[str] = frozenset()
    shown_names: frozenset[str] = frozenset()
    _table: dict[tuple[str, str], str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_diff(cls, diff: str | None) -> Aliases:
        """Aliases that keep the paths of ``diff``'s files and the names it defines."""
        return cls().showing(diff)

    def showing(self, diff: str | None) -> Aliases:
        """These aliases, now keeping the paths of ``diff``'s files and the names it defines
        (the copy's diff, whose test names were given aliases from this table)."""
        text = diff or ""
        paths = {p for m in _DIFF_PATH.finditer(text) for p in m.groups() if p}
        self.shown_paths = frozenset(p for p in paths if p != "/dev/null")
        self.shown_names = frozenset(_DEFINED.findall(text))
        return self

    def alias(self, kind: str, value: str) -> str:
        """``<kind N>``: N counts the distinct values of that kind, in order of appearance."""
        key = (kind, value)
        if key not in self._table:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._table[key] = f"<{kind} {self._counts[kind]}>"
        return self._table[key]

    def shows(self, path: str) -> bool:
        """Whether ``path`` names a file of the diff (as written, or under a root)."""
        bare = path[2:] if path.startswith("./") else path
        return bare in self.shown_paths or any(bare.endswith("/" + p) for p in self.shown_paths)


def text_placeholder(value: str, what: str = "text") -> str:
    """A fixed placeholder for free text: only its length is shown."""
    return f"<{what} {len(value)} chars>"


def _path_kind(path: str, directory: bool) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    ext = _EXTENSION.search(name)
    if directory or path.endswith("/"):
        return "directory"
    if not ext:
        return "path"
    suffix = ext.group(1).lower()
    testlike = name.startswith("test") or "_test." in name or ".spec." in name or ".test." in name
    if suffix in _SOURCE_EXT:
        return "test file" if testlike or "/tests/" in f"/{path}" else "source file"
    if suffix in _CONFIG_EXT:
        return "config file"
    if suffix in _TEXT_EXT:
        return "text file"
    return "file"


def is_pathlike(word: str) -> bool:
    """A word shaped like a path: path characters only, with a slash or an extension."""
    return bool(_PATHLIKE.fullmatch(word)) and (
        "/" in word or word.startswith((".", "~")) or bool(_EXTENSION.search(word))
    )


def reduce_path(word: str, aliases: Aliases, *, directory: bool = False) -> str:
    """A path as written when the diff shows it (or it is a device), else its kind and alias."""
    if word in FIXED_PATHS or aliases.shows(word):
        return word
    return aliases.alias(_path_kind(word, directory), word)


def reduce_test_id(word: str, aliases: Aliases) -> str:
    """``path::Class::name[param]``: the path reduced as a path, each name kept only when the
    diff defines it, else an alias; a parameter becomes a placeholder."""
    path, *names = word.split("::")
    parts = [reduce_path(path, aliases) if path else ""]
    for name in names:
        base, bracket, param = name.partition("[")
        shown = base if base in aliases.shown_names else aliases.alias("test", base)
        parts.append(
            shown + (f"[{text_placeholder(param.rstrip(']'), 'param')}]" if bracket else "")
        )
    return "::".join(parts)


def reduce_value(value: str, aliases: Aliases) -> str:
    """Any argument or value: a number, a path, a test id, or a placeholder."""
    if not value:
        return value
    if _NUMBER.fullmatch(value):
        return value
    if "::" in value and _PATHLIKE.fullmatch(value.replace(":", "").split("[")[0]):
        return reduce_test_id(value, aliases)
    if is_pathlike(value):
        return reduce_path(value, aliases)
    return text_placeholder(value, "text" if re.search(r"\s", value) else "word")


# --- the shell ---------------------------------------------------------------------------------


@dataclass
class _Word:
    raw: str  # as written (quotes included)
    value: str  # quotes removed
    quoted: bool


_Token = tuple[str, Any]  # ("word", _Word) | ("op", str) | ("comment", str) | ("newline", "")
#                        | ("heredoc", str)


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """The index after the ``close`` that matches the ``open_`` before ``start`` (or the end)."""
    depth, i, quote = 1, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def tokenize(text: str) -> list[_Token]:
    """Shell tokens: words (quotes resolved), operators, comments, newlines, heredoc bodies.
    Never fails: an unclosed quote runs to the end of the text."""
    tokens: list[_Token] = []
    pending: list[tuple[str, bool]] = []  # heredoc delimiters waiting for the next newline
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t":
            i += 1
            continue
        if c == "\\" and text[i + 1 : i + 2] == "\n":
            i += 2
            continue
        if c == "\n":
            tokens.append(("newline", ""))
            i += 1
            for delimiter, strip_tabs in pending:
                lines: list[str] = []
                while i < n:
                    end = text.find("\n", i)
                    end = n if end < 0 else end
                    line = text[i:end]
                    i = end + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                        break
                    lines.append(line)
                tokens.append(("heredoc", "\n".join(lines)))
            pending = []
            continue
        if c == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            tokens.append(("comment", text[i + 1 : end]))
            i = end
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op:
            tokens.append(("op", op))
            i += len(op)
            if op in ("<<", "<<-"):
                word, i = _read_word(text, i)
                tokens.append(("word", word))
                pending.append((word.value, op == "<<-"))
            continue
        word, i = _read_word(text, i)
        if word.raw.isdigit() and i < n and text[i] in "<>":
            op = next(o for o in _OPERATORS if text.startswith(o, i))
            tokens.append(("op", word.raw + op))
            i += len(op)
            continue
        tokens.append(("word", word))
    return tokens


def _closing_quote(text: str, i: int, quote: str) -> int:
    """The index of the quote that closes one opened before ``i`` (the end when none does)."""
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return len(text)


def _read_word(text: str, i: int) -> tuple[_Word, int]:
    while i < len(text) and text[i] in " \t":
        i += 1
    start, value, quoted = i, [], False
    while i < len(text):
        c = text[i]
        if c in " \t\n|&;<>()":
            break
        if c in "'\"":
            quoted = True
            end = _closing_quote(text, i + 1, c)
            value.append(text[i + 1 : end].replace("\\" + c, c) if c == '"' else text[i + 1 : end])
            i = end + 1
        elif c == "$" and text[i + 1 : i + 2] == "(":
            end = _matching(text, i + 2, "(", ")")
            value.append(text[i:end])
            i = end
        elif c == "`":
            end = text.find("`", i + 1)
            end = len(text) if end < 0 else end + 1
            value.append(text[i:end])
            i = end
        elif c == "\\":
            value.append(text[i + 1 : i + 2])
            i += 2
        else:
            value.append(c)
            i += 1
    return _Word(text[start:i], "".join(value), quoted), i


def _substitution(word: _Word, aliases: Aliases) -> str | None:
    """A word that is one command substitution, ``$(...)`` or backticks, reduced inside."""
    raw = word.raw.strip('"')
    if raw.startswith("$(") and raw.endswith(")"):
        return f"$({reduce_command(raw[2:-1], aliases)})"
    if len(raw) > 1 and raw.startswith("`") and raw.endswith("`"):
        return f"$({reduce_command(raw[1:-1], aliases)})"
    return None


def _reduce_simple(items: list[_Word | str], aliases: Aliases) -> list[str]:
    """One simple command: assignments, the program, a subcommand, flags and arguments;
    redirections (already rendered) stay in place."""
    out: list[str] = []
    words = [item for item in items if isinstance(item, _Word)]
    rendered = {k: item for k, item in enumerate(items) if isinstance(item, str)}
    k = 0
    program = ""
    arguments = 0
    while k < len(words):
        word = words[k]
        sub = _substitution(word, aliases)
        assignment = (
            _ASSIGNMENT.fullmatch(word.value) if not word.raw.startswith(("'", '"')) else None
        )
        if sub is not None:
            out.append(sub)
        elif assignment and (not program or program in ("export", "env", "local", "declare")):
            name, value = assignment.groups()
            shown = name if name in USUAL_VARIABLES else aliases.alias("variable", name)
            out.append(f"{shown}={reduce_value(value, aliases) if value else ''}")
        elif not program:
            program = word.value
            if is_pathlike(word.value) and "/" in word.value:
                out.append(reduce_path(word.value, aliases))
            elif short_name(word.value):
                out.append(word.value)
            else:
                out.append(aliases.alias("program", word.value))
        else:
            out.append(_reduce_argument(words, k, program, arguments, aliases))
            arguments += 1
        k += 1
    return _interleave(out, items, rendered)


def _interleave(out: list[str], items: list[_Word | str], rendered: dict[int, str]) -> list[str]:
    """``out`` (one per word) with the rendered redirections back at their places."""
    shown = iter(out)
    return [rendered[k] if k in rendered else next(shown) for k in range(len(items))]


def _reduce_argument(
    words: list[_Word], k: int, program: str, arguments: int, aliases: Aliases
) -> str:
    """The ``arguments``-th argument of ``program`` (``words[k]``): a flag, a subcommand (the
    first argument, a short lower-case name), a module of ``python -m``, or a value."""
    word = words[k]
    value = word.value
    flag = _FLAG.fullmatch(value) if not word.quoted or value.startswith("-") else None
    if flag and value not in ("-", "--"):
        dashes, name, rest = flag.groups()
        if len(name.split("-")) > 3 or len(name.split("_")) > 3:
            return text_placeholder(value, "flag")
        if not rest:
            return f"{dashes}{name}"
        shown = rest[1:] if _SUBCOMMAND.fullmatch(rest[1:]) else reduce_value(rest[1:], aliases)
        return f"{dashes}{name}={shown}"
    if value == "--":
        return value
    if value.startswith("-") and len(value) > 1 and not _NUMBER.fullmatch(value):
        return text_placeholder(value, "flag")
    previous = words[k - 1].value if k else ""
    if program.lower() in TEXT_PROGRAMS or program.rsplit("/", 1)[-1] in TEXT_PROGRAMS:
        return text_placeholder(value)
    if program in DIRECTORY_PROGRAMS and _PATHLIKE.fullmatch(value):
        return reduce_path(value, aliases, directory=True)
    if program in FILE_PROGRAMS and _PATHLIKE.fullmatch(value) and not _NUMBER.fullmatch(value):
        return reduce_path(value, aliases)
    if re.fullmatch(r"python[\d.]*", program) and previous == "-m" and _MODULE.fullmatch(value):
        return value
    if arguments == 0 and not word.quoted and _SUBCOMMAND.fullmatch(value):
        return value
    return reduce_value(value, aliases)


def _redirect(op: str, target: _Word, aliases: Aliases) -> str:
    """A redirection: the operator and its target (a file descriptor, or a path's kind)."""
    value = target.value
    if op in ("<<", "<<-"):
        return f"{op}EOF"
    if _NUMBER.fullmatch(value) or value == "-":
        return f"{op}{value}"
    shown = reduce_path(value, aliases) if is_pathlike(value) else reduce_value(value, aliases)
    return f"{op} {shown}"


def reduce_command(text: str, aliases: Aliases | None = None) -> str:
    """A shell command (one line or a script) with its free text replaced (module docstring).
    Structure is kept: one output line per input line, operators and redirections in place."""
    aliases = aliases if aliases is not None else Aliases()
    lines: list[list[str]] = [[]]
    words: list[_Word | str] = []  # a simple command: its words and rendered redirections
    redirect = ""

    def flush() -> None:
        if words:
            lines[-1].extend(_reduce_simple(words, aliases))
            words.clear()

    for kind, token in tokenize(text):
        if kind == "word":
            if redirect:
                words.append(_redirect(redirect, token, aliases))
                redirect = ""
            else:
                words.append(token)
        elif kind == "op":
            if token.lstrip("0123456789") in _REDIRECTS or token in ("<<", "<<-"):
                redirect = token
                continue
            flush()
            lines[-1].append(token)
        elif kind == "comment":
            flush()
            lines[-1].append("# " + text_placeholder(token.strip(), "comment"))
        elif kind == "newline":
            flush()
            lines.append([])
        elif kind == "heredoc":
            body = f"<heredoc body: {len(token.splitlines())} lines, {len(token)} chars>"
            lines[-1:-1] = [[body], ["EOF"]]
    if redirect:
        words.append(redirect)
    flush()
    return "\n".join(" ".join(line) for line in lines).strip("\n")


# --- tool calls --------------------------------------------------------------------------------


def short_name(word: str) -> bool:
    """A name kept as written (a program, a tool, an argument's name): up to 24 characters of
    letters, digits and ``._+-``, in at most three parts."""
    return bool(_NAME.fullmatch(word)) and len(re.findall(r"[._+-]", word)) <= 2


def reduce_arguments(value: Any, aliases: Aliases, key: str = "") -> Any:
    """A tool call's arguments: names kept, values reduced (a command as a command; a JSON
    string that holds arguments, as those arguments)."""
    if isinstance(value, dict):
        return {
            (str(k) if short_name(str(k)) else text_placeholder(str(k), "key")): reduce_arguments(
                v, aliases, str(k)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [reduce_arguments(v, aliases, key) for v in value]
    if not isinstance(value, str):
        return value
    if key.lower() in COMMAND_KEYS:
        return reduce_command(value, aliases)
    if key.lower() == "name" and short_name(value):
        return value
    stripped = value.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            inner = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            inner = None
        if isinstance(inner, (dict, list)):
            return json.dumps(reduce_arguments(inner, aliases, key), ensure_ascii=False)
    return reduce_value(value, aliases)


def _reduce_json_text(text: str, aliases: Aliases) -> str:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text_placeholder(text)
    return json.dumps(reduce_arguments(value, aliases), ensure_ascii=False)


_RENDERED = re.compile(r"\[([^\]\n]{1,64})\](?:[ \t]+(\$[ \t])?(.*))?", re.DOTALL)


def reduce_tool_call(text: str, aliases: Aliases | None = None) -> str:
    """A tool call as ``facts.agent_commands`` finds it: a ``TOOL_CALLS:`` line, a
    ``<tool_call>`` block or a rendered ``[tool] $ command`` / ``[tool] {json}`` line; the tool
    name and argument names kept, values reduced."""
    aliases = aliases if aliases is not None else Aliases()
    text = text.strip()
    if text.startswith("TOOL_CALLS:"):
        return "TOOL_CALLS: " + _reduce_json_text(text[len("TOOL_CALLS:") :].strip(), aliases)
    if text.startswith("<tool_call>") and text.endswith("</tool_call>"):
        inner = text[len("<tool_call>") : -len("</tool_call>")].strip()
        return f"<tool_call>{_reduce_json_text(inner, aliases)}</tool_call>"
    match = _RENDERED.fullmatch(text)
    if match:
        name, dollar, rest = match.groups()
        shown = name if short_name(name) else aliases.alias("tool", name)
        if rest is None or not rest.strip():
            return f"[{shown}]"
        if dollar:
            return f"[{shown}] $ {reduce_command(rest, aliases)}"
        return f"[{shown}] {_reduce_json_text(rest, aliases)}"
    return text_placeholder(text)


def reduce_action(text: str, aliases: Aliases | None = None) -> str:
    """One of ``facts.agent_commands``' items: a fenced shell block (its body reduced) or a
    tool call."""
    aliases = aliases if aliases is not None else Aliases()
    if text.startswith("```"):
        body = text.split("\n", 1)[1] if "\n" in text else ""
        body = body[: body.rfind("```")] if body.rstrip().endswith("```") else body
        return f"```bash\n{reduce_command(body.rstrip(), aliases)}\n```"
    return reduce_tool_call(text, aliases)


def reduce_actions(texts: Iterable[str], aliases: Aliases) -> list[str]:
    """:func:`reduce_action` of each, with the same aliases."""
    return [reduce_action(text, aliases) for text in texts]
