"""The progress display of long judging: a live bar on a terminal, one line per judgment
otherwise (CI logs, nohup), nothing with ``--quiet``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from judge.judging import Outcome, Step


@dataclass
class JudgingProgress:
    """Callbacks for :func:`judge.judging.judge_cases`: ``on_start`` sizes the bar, ``on_done``
    moves it."""

    progress: Progress
    plain: bool
    total: int = 0
    finished: int = 0
    task: TaskID | None = field(default=None)

    def on_start(self, steps: list[Step]) -> None:
        """Size the bar to the planned judgments; a second call (the masked checks of cases with
        suspect evidence) adds to it."""
        self.total += len(steps)
        if self.task is None:
            self.task = self.progress.add_task("judging", total=self.total, last="")
        else:
            self.progress.update(self.task, total=self.total)

    def on_done(self, outcome: Outcome) -> None:
        """Show a finished judgment."""
        self.finished += 1
        j = outcome.judgment
        label = j.verdict.label if j.verdict else j.status
        tag = "cached" if outcome.cached else f"{j.usage.latency_s:.1f}s"
        last = f"{j.case_id[-40:]}: {label} ({tag})"
        if self.plain:
            print(f"[{self.finished}/{self.total}] {last}", file=sys.stderr, flush=True)
        elif self.task is not None:
            self.progress.update(self.task, advance=1, last=last)


@contextmanager
def _display(label: str, *, last: bool, quiet: bool) -> Iterator[tuple[Progress, bool]]:
    """A progress bar of ``label`` (with the last finished item when ``last``) for the duration
    of the block, and whether to print one line per step instead (no terminal)."""
    progress = Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        *([TextColumn("{task.fields[last]}")] if last else []),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=quiet or not sys.stderr.isatty(),
        transient=False,
    )
    # Without a terminal a live bar draws nothing until the end: print one line per finished
    # step instead, so long runs still show progress.
    plain = not quiet and not progress.console.is_terminal
    with progress:
        yield progress, plain


@contextmanager
def judging_progress(*, quiet: bool) -> Iterator[JudgingProgress]:
    """A progress display of judging for the duration of the block."""
    with _display("judging", last=True, quiet=quiet) as (progress, plain):
        yield JudgingProgress(progress, plain)


@dataclass
class CountProgress:
    """Callbacks for a count of items (verdicts exported): ``on_start`` sizes the bar,
    ``on_progress`` sets how many are done."""

    progress: Progress
    plain: bool
    label: str
    total: int = 0
    task: TaskID | None = field(default=None)

    def on_start(self, total: int) -> None:
        """Size the bar."""
        self.total = total
        self.task = self.progress.add_task(self.label, total=total, last="")

    def on_progress(self, done: int) -> None:
        """Show how many are done."""
        if self.plain:
            print(f"[{done}/{self.total}] {self.label}", file=sys.stderr, flush=True)
        elif self.task is not None:
            self.progress.update(self.task, completed=done)


@contextmanager
def count_progress(label: str, *, quiet: bool) -> Iterator[CountProgress]:
    """A progress bar of ``label`` for the duration of the block (one line per step without a
    terminal, nothing with ``quiet``)."""
    with _display(label, last=False, quiet=quiet) as (progress, plain):
        yield CountProgress(progress, plain, label)
