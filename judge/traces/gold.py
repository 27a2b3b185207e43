"""``gold``: the project's own gold-set / Case JSONL format (see gold/README.md).

A thin wrapper around :func:`judge.cases.load_cases`, so that ``judge import`` validates gold
files with exactly the rules ``judge run`` uses. Gold labels are kept in
:attr:`ImportResult.gold`, never in the cases.
"""

from __future__ import annotations

from pathlib import Path

from judge.cases import load_cases
from judge.traces import BaseImporter, ImportResult
from judge.traces._common import first_json_object


class GoldImporter(BaseImporter):
    """The gold-set JSONL format: one Case (plus gold label and provenance) per line."""

    description = "the project's gold-set / Case JSONL (one case per line)"

    def load(self, path: Path) -> ImportResult:
        """Every valid case of ``path`` and an error for each invalid line."""
        loaded = load_cases(path)
        return ImportResult(cases=loaded.cases, errors=loaded.errors, gold=loaded.gold)

    def sniff(self, path: Path) -> bool:
        """A JSONL file whose first object has ``id``, ``kind`` and ``task``."""
        first = first_json_object(path)
        return first is not None and {"id", "kind", "task"} <= set(first)
