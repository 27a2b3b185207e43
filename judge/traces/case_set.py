"""The cases of several imports as one set, as ``judge import`` writes them.

An import (:func:`judge.traces.import_traces`, or ``judge.import_traces`` for a platform URL)
keeps a case without a task and warns of it; a set of cases to judge keeps neither that case
(the judge would read an empty task) nor a second case under an id already taken (the store
keeps one case per id)::

    found = CaseSet()
    for path in paths:
        result = judge.import_traces(path)
        added = found.add(result, str(path))  # added.duplicates: errors, as result.errors
    found.records()  # the JSON records, gold labels included
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.errors import InputError
from judge.types import Case

if TYPE_CHECKING:
    from judge.traces import CriticalStep, ImportResult


@dataclass(frozen=True)
class Added:
    """What one import brought to a :class:`CaseSet`."""

    #: The import's cases that have a task, in order (those left out as duplicates included).
    read: list[Case]
    #: One error per case of ``read`` whose id an earlier case had: left out.
    duplicates: list[InputError]

    @property
    def added(self) -> int:
        """How many cases joined the set."""
        return len(self.read) - len(self.duplicates)


@dataclass
class CaseSet:
    """Cases to judge from several imports: each case id once (the first import that has it
    keeps it), no case without a task, and the gold labels the imports found."""

    cases: list[Case] = field(default_factory=list)
    #: Case id -> the gold label its import found.
    gold: dict[str, str] = field(default_factory=dict)
    #: Case id -> the import (file, or masked URL) it came from.
    origins: dict[str, str] = field(default_factory=dict)
    #: Case id -> people's critical step of the failed run, where its import labels one.
    critical: dict[str, CriticalStep] = field(default_factory=dict)

    def add(self, result: ImportResult, source: str) -> Added:
        """Add the cases of ``result``, the import of ``source``: those without a task are
        left out (the import warned of each), and so is a case whose id the set already has
        (an error naming where that id came from)."""
        untasked = {c.id for c in result.cases if not c.task.strip()}
        read = [c for c in result.cases if c.id not in untasked]
        duplicates = []
        for case in read:
            if case.id in self.origins:
                duplicates.append(
                    InputError(
                        f"case id {case.id!r} already imported from {self.origins[case.id]}; "
                        "skipped",
                        file=source,
                    )
                )
                continue
            self.origins[case.id] = source
            self.cases.append(case)
            if case.id in result.gold:
                self.gold[case.id] = result.gold[case.id]
            if case.id in result.critical:
                self.critical[case.id] = result.critical[case.id]
        return Added(read, duplicates)

    def records(self) -> list[dict[str, Any]]:
        """The cases as JSON records (the case schema), each with its ``gold`` label when its
        import found one, and its ``critical_step`` (and ``critical_agent``) when labelled."""
        records = []
        for case in self.cases:
            record = case.model_dump(mode="json")
            if case.id in self.gold:
                record["gold"] = self.gold[case.id]
            critical = self.critical.get(case.id)
            if critical is not None:
                record["critical_step"] = critical.step
                if critical.agent is not None:
                    record["critical_agent"] = critical.agent
            records.append(record)
        return records
