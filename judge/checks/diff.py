"""A unified-diff parser (git's and plain ``---``/``+++`` diffs): files added, deleted and
renamed, hunks, added and removed lines, binary files. A diff it cannot read raises
:class:`DiffError` with the line, so a check reports ``unknown`` with that reason."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from judge.cases import iter_jsonl
from judge.errors import InputError

#: A larger diff is not inspected (the checks answer ``unknown``): a diff of several
#: megabytes is a vendored tree or generated data, not a change a check can read line by line.
MAX_DIFF_CHARS = 2_000_000

FileStatus = Literal["added", "deleted", "renamed", "modified"]

#: A hunk's header (``@@ -a,b +c,d @@``; any section heading follows the match).
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
#: A file's ``diff --git a/OLD b/NEW`` line.
GIT_HEADER = re.compile(r'^diff --git "?a/(.*?)"? "?b/(.*?)"?$')
#: Header lines of a file's section that carry nothing the checks need.
_QUIET = (
    "index ",
    "old mode ",
    "new mode ",
    "similarity index ",
    "dissimilarity index ",
    "copy from ",
    "copy to ",
)


class DiffError(ValueError):
    """The diff does not parse (or is too large to inspect)."""


@dataclass
class Hunk:
    """One ``@@ -a,b +c,d @@`` hunk: its lines as (tag, text), tag one of ``" "``, ``"+"``,
    ``"-"``, with the old and new line number of each."""

    path: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ref(self) -> str:
        """The evidence id of this hunk: ``diff:<path>@@-a,b+c,d``."""
        return f"diff:{self.path}@@-{self.old_start},{self.old_len}+{self.new_start},{self.new_len}"

    @property
    def added(self) -> list[str]:
        return [text for tag, text in self.lines if tag == "+"]

    @property
    def removed(self) -> list[str]:
        return [text for tag, text in self.lines if tag == "-"]


@dataclass
class FileDiff:
    """One file's part of a diff. ``path`` is the new path (the old one when deleted)."""

    old_path: str | None
    new_path: str | None
    status: FileStatus = "modified"
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    #: A ``---`` line was read for this file (the next one starts another file).
    headed: bool = field(default=False, repr=False)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def ref(self) -> str:
        """The evidence id of the file as a whole (a deletion, a rename, a binary file)."""
        return f"diff:{self.path}"


@dataclass
class ParsedDiff:
    files: list[FileDiff]

    @property
    def binary_files(self) -> list[FileDiff]:
        return [f for f in self.files if f.binary]

    def render(self) -> str:
        """The diff as text again (git's format; hunk headers recounted from their lines)."""
        out: list[str] = []
        for f in self.files:
            old, new = f.old_path or f.path, f.new_path or f.path
            out.append(f"diff --git a/{old} b/{new}")
            if f.status == "added":
                out.append("new file mode 100644")
            elif f.status == "deleted":
                out.append("deleted file mode 100644")
            elif f.status == "renamed":
                out += [f"rename from {old}", f"rename to {new}"]
            if f.binary:
                out.append(f"Binary files a/{old} and b/{new} differ")
                continue
            if not f.hunks:
                continue
            out.append(f"--- a/{f.old_path}" if f.old_path else "--- /dev/null")
            out.append(f"+++ b/{f.new_path}" if f.new_path else "+++ /dev/null")
            for h in f.hunks:
                h.old_len = sum(1 for tag, _ in h.lines if tag != "+")
                h.new_len = sum(1 for tag, _ in h.lines if tag != "-")
                out.append(f"@@ -{h.old_start},{h.old_len} +{h.new_start},{h.new_len} @@")
                out += [tag + text for tag, text in h.lines]
        return "\n".join(out) + "\n"


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def parse_diff(text: str) -> ParsedDiff:
    """Parse a unified diff. Raises :class:`DiffError` (with the line number) on anything it
    cannot read: a hunk whose line counts do not match its header, text outside any file, a
    diff larger than :data:`MAX_DIFF_CHARS`."""
    if len(text) > MAX_DIFF_CHARS:
        raise DiffError(f"diff of {len(text):,} characters is larger than {MAX_DIFF_CHARS:,}")
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk: Hunk | None = None
    old_left = new_left = 0
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if hunk is not None and (old_left > 0 or new_left > 0):
            tag = line[:1] if line else " "
            if tag == "\\":
                continue
            if line.startswith(("diff --git ", "@@ -")):
                # A hand-made diff whose hunk header overcounts: the next file or hunk starts
                # here, so nothing was lost (a diff cut short ends mid-hunk, and fails below).
                old_left = new_left = 0
            elif tag not in (" ", "+", "-"):
                raise DiffError(f"line {number}: hunk {hunk.ref} ends early")
            else:
                old_left -= tag in (" ", "-")
                new_left -= tag in (" ", "+")
                if old_left < 0 or new_left < 0:
                    raise DiffError(f"line {number}: hunk {hunk.ref} is longer than its header")
                hunk.lines.append((tag, line[1:]))
                continue
        if line.startswith("\\"):  # "\ No newline at end of file" after a hunk's last line
            continue
        git = GIT_HEADER.match(line)
        if git:
            current = FileDiff(old_path=git.group(1), new_path=git.group(2))
            files.append(current)
            hunk = None
            continue
        if line.startswith("--- "):
            if current is None or current.hunks or current.headed:
                current = FileDiff(old_path=None, new_path=None)
                files.append(current)
            hunk = None
            current.headed = True
            current.old_path = _strip_prefix(line[4:])
            if current.old_path is None:
                current.status = "added"
            continue
        if line.startswith("+++ ") and current is not None and hunk is None:
            current.new_path = _strip_prefix(line[4:])
            if current.new_path is None:
                current.status = "deleted"
            continue
        match = HUNK_HEADER.match(line)
        if match:
            if current is None:
                raise DiffError(f"line {number}: hunk outside any file")
            old_start, old_len, new_start, new_len = (
                int(match.group(1)),
                int(match.group(2) or 1),
                int(match.group(3)),
                int(match.group(4) or 1),
            )
            hunk = Hunk(current.path, old_start, old_len, new_start, new_len)
            current.hunks.append(hunk)
            old_left, new_left = old_len, new_len
            continue
        if current is not None and hunk is None:
            if line.startswith("new file mode"):
                current.status = "added"
                current.old_path = None
                continue
            if line.startswith("deleted file mode"):
                current.status = "deleted"
                current.new_path = None
                continue
            if line.startswith("rename from "):
                current.old_path = line[len("rename from ") :]
                current.status = "renamed"
                continue
            if line.startswith("rename to "):
                current.new_path = line[len("rename to ") :]
                current.status = "renamed"
                continue
            if line.startswith(("Binary files ", "GIT binary patch")):
                current.binary = True
                continue
            if line.startswith(_QUIET):
                continue
        if current is None:
            continue  # text before the first file (a commit message, a mail header)
        if current.binary or not line.strip():
            continue  # the literal/delta lines of a GIT binary patch; blank lines between files
        raise DiffError(f"line {number}: cannot read {line[:60]!r}")
    if hunk is not None and (old_left > 0 or new_left > 0):
        raise DiffError(f"hunk {hunk.ref} is shorter than its header")
    if not files:
        raise DiffError("no file in the diff")
    for f in files:
        if f.status == "modified" and f.old_path and f.new_path and f.old_path != f.new_path:
            f.status = "renamed"
    return ParsedDiff(files)


def unreadable_diffs(path: str | Path) -> list[InputError]:
    """A warning for every record of a case or gold JSONL file whose ``diff`` does not parse:
    the diff checks would answer ``unknown`` on it. Records that are not JSON objects are left
    to the validator that reports them."""
    found = []
    for line, obj in iter_jsonl(Path(path)):
        diff = obj.get("diff") if isinstance(obj, dict) else None
        if not isinstance(diff, str) or not diff.strip():
            continue
        try:
            parse_diff(diff)
        except DiffError as err:
            found.append(
                InputError(
                    f"the diff does not parse, so its checks answer unknown: {err}",
                    file=str(path),
                    line=line,
                    field="diff",
                    hint="write it with git diff, or recount its hunk headers: "
                    "git apply --recount reads such a diff",
                )
            )
    return found
