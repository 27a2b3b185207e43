"""The shared reading loop of importers whose input is a JSONL stream of events."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from judge.cases import iter_jsonl
from judge.errors import InputError
from judge.traces import ImportResult
from judge.traces._common import missing_field


class StreamReader:
    """Reads the lines of one JSONL event stream into cases; subclasses say how.

    Bad lines become errors naming the line and the batch goes on; event kinds the importer
    passes over are counted (``skip``) and reported once per kind as notes.
    """

    def __init__(self, file: str) -> None:
        self.file = file
        self.out = ImportResult()
        self.skipped: dict[str, tuple[int, int]] = {}
        self.ids: Counter[str] = Counter()

    def skip(self, what: str, number: int) -> None:
        """Count one line passed over (``what`` says which kind and why)."""
        first, count = self.skipped.get(what, (number, 0))
        self.skipped[what] = (first, count + 1)

    def missing(self, number: int, field: str, expected: str) -> None:
        """Add the error of line ``number``, whose required ``field`` is absent or not
        ``expected`` (:func:`~judge.traces._common.missing_field`)."""
        self.out.errors.append(missing_field(self.file, number, field, expected))

    def unique_id(self, base: str) -> str:
        """``base``, or ``base#N`` when the file already produced a case with that id."""
        self.ids[base] += 1
        return base if self.ids[base] == 1 else f"{base}#{self.ids[base]}"

    def line(self, number: int, obj: dict[str, Any]) -> None:
        """Take one event (a JSON object on line ``number``)."""
        raise NotImplementedError

    def close(self) -> None:
        """Finish the case being read at the end of the file."""
        raise NotImplementedError

    @classmethod
    def read(cls, path: Path) -> ImportResult:
        """Every case of ``path``; an error for each bad line; a note for each skipped kind."""
        reader = cls(str(path))
        for number, obj in iter_jsonl(path):
            if isinstance(obj, InputError):
                reader.out.errors.append(obj)
            else:
                reader.line(number, obj)
        reader.close()
        for what, (first, count) in reader.skipped.items():
            reader.out.notes.append(f"{path}: skipped {count} {what} (first on line {first})")
        return reader.out
