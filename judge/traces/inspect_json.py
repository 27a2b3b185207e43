"""Reading an Inspect ``.json`` log one sample at a time.

A ``.json`` log is one object (inspect_ai ``log/_recorders/json.py``, 2-space indent), its keys
in the order of ``EvalLog``'s fields: ``version, status, eval, plan, results, stats, error?,
invalidated, tags, metadata, samples, reductions``. The samples are what makes a log big
(each carries its events), so they are decoded one by one from a buffer that holds one sample
at a time: memory does not grow with the log.

Why not ``ijson``: inspect_ai writes a sample that a scorer left unscored as the bare token
``NaN`` (pydantic's ``ser_json_inf_nan="constants"``), which ijson's C backend refuses;
the standard library's decoder (``json.JSONDecoder.raw_decode``, used here on each value)
reads it, as inspect_ai's own reader does.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

_CHUNK = 1 << 16
_WHITESPACE = " \t\r\n"
#: The first keys of a ``.json`` log: ``version`` (a number), then ``status`` or ``eval``.
_HEAD = re.compile(r'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"(?:status|eval)"\s*:')


def is_json_log_head(text: str) -> bool:
    """True when ``text`` (the start of a file) opens an Inspect ``.json`` log."""
    return _HEAD.match(text) is not None


class JsonLogError(Exception):
    """The document is not a well-formed JSON object; ``line`` is where it went wrong."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Item:
    """A top-level key and its value, or one element of the ``samples`` array (``index``)."""

    key: str
    value: Any
    line: int
    index: int | None = None


class JsonStream:
    """Top-level keys of one JSON object, values decoded one at a time (``samples`` item by
    item). Raises :class:`JsonLogError` naming the line where the document breaks."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.json = json.JSONDecoder()
        self.buffer = ""
        self.pos = 0
        self.eof = False
        self.line = 1  # line of self.pos
        self._counted = 0  # index in buffer up to which newlines are counted into self.line
        #: What is being read: the top-level key, or ``samples[i]``.
        self.where: str | None = None

    # --- the buffer --------------------------------------------------------------------------

    def _more(self, at_least: int = _CHUNK) -> bool:
        """Read more text (at least ``at_least`` bytes unless the file ends); False at EOF."""
        if self.eof:
            return False
        raw = self.handle.read(max(at_least, _CHUNK))
        try:
            text = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise JsonLogError(f"not valid UTF-8 ({exc.reason})", self.line) from exc
        if not raw:
            self.eof = True
        # Drop what was consumed, keeping the line count.
        self._advance_lines()
        self.buffer = self.buffer[self.pos :] + text
        self._counted -= self.pos
        self.pos = 0
        return bool(raw) or bool(text)

    def _advance_lines(self) -> None:
        if self.pos > self._counted:
            self.line += self.buffer.count("\n", self._counted, self.pos)
            self._counted = self.pos

    def _skip_ws(self) -> str:
        """The next non-blank character (not consumed); '' at the end of the file."""
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        found = self._skip_ws()
        if not found or found not in chars:
            self._advance_lines()
            shown = repr(found) if found else "the end of the file"
            raise JsonLogError(f"expected {what}, found {shown}", self.line)
        self.pos += 1
        return found

    def _value(self) -> tuple[Any, int]:
        """The next JSON value and the line it starts on. A value is taken only when the
        text after it is in the buffer too (a number at the buffer's end may go on)."""
        self._skip_ws()
        self._advance_lines()
        start_line = self.line
        need = _CHUNK
        while True:
            try:
                value, end = self.json.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                if self._more(need):
                    need *= 2  # geometric: a big value is re-tried O(log n) times
                    continue
                line = start_line + self.buffer.count("\n", self.pos, exc.pos)
                cut = exc.pos >= len(self.buffer) or "Unterminated" in exc.msg
                reason = "the file ends inside this value (cut short?)" if cut else exc.msg
                raise JsonLogError(reason, line) from exc
            except RecursionError as exc:
                raise JsonLogError("JSON nested too deeply", start_line) from exc
            if end >= len(self.buffer) and self._more(need):
                continue
            self.pos = end
            return value, start_line

    # --- the document ------------------------------------------------------------------------

    def items(self, skip: frozenset[str] = frozenset()) -> Iterator[Item]:
        """Each top-level key with its value; the ``samples`` array one element at a time.
        Keys in ``skip`` are decoded and dropped (a header-only pass skips the samples)."""
        self._expect("{", "a JSON object")
        if self._skip_ws() == "}":
            return
        while True:
            key, line = self._value()
            if not isinstance(key, str):
                raise JsonLogError("expected a key (a string)", line)
            self.where = key
            self._expect(":", "':'")
            if key == "samples" and self._skip_ws() == "[":
                yield from self._samples(key in skip)
            else:
                value, line = self._value()
                if key not in skip:
                    yield Item(key, value, line)
            if self._expect(",}", "',' or '}'") == "}":
                return

    def _samples(self, skip: bool) -> Iterator[Item]:
        self.pos += 1  # the '['
        if self._skip_ws() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            self.where = f"samples[{index}]"
            value, line = self._value()
            if not skip:
                yield Item("samples", value, line, index)
            index += 1
            if self._expect(",]", "',' or ']'") == "]":
                return


def open_json_log(path: Path) -> tuple[BinaryIO, JsonStream]:
    """The open file and its stream of items (close the file when done)."""
    handle = path.open("rb")
    return handle, JsonStream(handle)
