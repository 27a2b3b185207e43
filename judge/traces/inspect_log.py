"""``inspect``: Inspect AI eval logs (``.eval`` and ``.json``), one case per sample and epoch.

Formats read (and detected from the content, never from the extension alone):

* ``.eval`` (a zip: :mod:`judge.traces.inspect_zip`, :mod:`judge.traces.inspect_eval`):
  detected by the zip magic and a ``header.json`` or ``_journal/start.json`` member; members
  compressed with zstd (inspect_ai >= 0.3.206) or deflate (older logs); samples as one JSON
  member each or in the chunked layout (``samples/{id}_epoch_{n}/...``); a log whose eval is
  still running or was killed (no ``header.json``: the journal's start record is the header);
  a file cut short (the members before the cut are read, and an error says where it stopped);
* ``.json`` (:mod:`judge.traces.inspect_json`): detected by its first keys (``version``, then
  ``status`` or ``eval``); read one sample at a time.

How a sample becomes a case is :mod:`judge.traces.inspect_cases` (shared with judge's Inspect
scorer). The official outcome of a sample (its headline scorer's C / I or 1 / 0) goes to
:attr:`ImportResult.gold`, so ``judge import`` writes it as the record's ``gold`` and
``judge runset`` makes it the run's ``official`` label.

Log schema versions: 1, 2 and 3 are known (3 is a ``.eval`` of inspect_ai 0.3.135 whose
samples read like version 2's). Another version is read leniently the same way, with a note;
if its samples do not read, an error names the version and the versions tried. A log with no
sample (``--no-log-samples``, or an eval that ended before any sample finished) is an error. A
sample that failed is kept (see :mod:`judge.traces.inspect_cases`) with a note.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._common import read_head
from judge.traces.inspect_cases import KNOWN_VERSIONS, EvalInfo, SampleReader
from judge.traces.inspect_eval import (
    is_eval_log,
    read_header,
    read_sample,
    resolve_attachments,
    sample_members,
)
from judge.traces.inspect_json import JsonLogError, is_json_log_head, open_json_log
from judge.traces.inspect_zip import ZipError, ZipReader, is_zip

NO_SAMPLES_HINT = (
    "was it written with --no-log-samples, or did the eval end before any sample finished?"
)


def log_kind(path: Path) -> str | None:
    """``eval`` or ``json`` when ``path`` is an Inspect log of that kind, else None."""
    if is_zip(path):
        try:
            with ZipReader(path) as log:
                return "eval" if is_eval_log(log.names()) else None
        except (ZipError, OSError):
            return None
    return "json" if is_json_log_head(read_head(path, 4096)) else None


class InspectImporter(BaseImporter):
    """Inspect AI logs read by judge's own reader (standard library + zstandard)."""

    description = (
        "Inspect AI eval logs: .eval (zstd or deflate; monolith or chunked samples) and .json, "
        "one case per sample and epoch"
    )

    def sniff(self, path: Path) -> bool:
        """A zip with Inspect's members, or a JSON object whose first key is ``version``."""
        return log_kind(path) is not None

    def load(self, path: Path) -> ImportResult:
        """Every sample of the log as a case; an error for each bad sample or member."""
        collector = Collector(str(path))
        # Asked for by name, a JSON object is read as a .json log even in another key order.
        kind = log_kind(path) or ("json" if read_head(path, 64).lstrip()[:1] == "{" else None)
        if kind == "eval":
            _read_eval(path, collector)
        elif kind == "json":
            _read_json(path, collector)
        else:
            collector.out.errors.append(
                InputError(
                    "not an Inspect log (neither a .eval zip with header.json or "
                    '_journal/start.json, nor a .json log starting with "version")',
                    file=str(path),
                )
            )
            return collector.out
        return collector.finish()


class Collector:
    """Turns a log's header and samples into an :class:`ImportResult` (shared by the two
    readers, judge's and inspect_ai's)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.out = ImportResult()
        self.info = EvalInfo(file=file)
        self.samples = 0
        self.failed = 0
        self.ids: Counter[str] = Counter()

    def header(self, raw: Any, where: str = "") -> EvalInfo:
        """Read the header (``where``: the member it came from in a ``.eval``)."""
        if not isinstance(raw, dict):
            self.out.errors.append(
                InputError("the log header is not a JSON object", file=self.file, field=where)
            )
            return self.info
        self.info = EvalInfo.of(raw, self.file, self.out.errors, where)
        version = self.info.version
        if version is not None and version not in KNOWN_VERSIONS:
            self.out.notes.append(
                f"{self.file}: log version {version} is not one this reader knows "
                f"({_versions()}); its samples were read as those versions' samples"
            )
        status = self.info.status
        if status is not None and status != "success":
            said = {
                "started": "the eval had not finished (running, or killed): the samples "
                "written so far are read",
                "cancelled": "the eval was cancelled: the samples it finished are read",
                "error": "the eval ended with an error: the samples it finished are read",
            }.get(status, "the samples it holds are read")
            self.out.notes.append(f"{self.file}: log status {status!r}: {said}")
        return self.info

    def sample(self, raw: Any, where: str, line: int | None = None) -> None:
        """Add the case of one sample (or the errors that say why not)."""
        self.samples += 1
        before = len(self.out.errors)
        read = SampleReader(self.info, where, self.out.errors, line).read(raw)
        if read is None:
            self.failed += len(self.out.errors) > before
            return
        case = read.case
        self.ids[case.id] += 1
        if self.ids[case.id] > 1:
            case = case.model_copy(update={"id": f"{case.id}#{self.ids[case.id]}"})
        self.out.cases.append(case)
        if read.official is not None:
            self.out.gold[case.id] = read.official
        self.out.notes.extend(f"{self.file}: {where}: {note}" for note in read.notes)

    def error(
        self,
        message: str,
        field: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        """Add an error about the file."""
        self.out.errors.append(
            InputError(message, file=self.file, field=field, line=line, hint=hint)
        )

    def finish(self) -> ImportResult:
        """The result, with an error for a log without samples (unless an error already says
        why) or of an unknown version whose samples did not read."""
        if self.samples == 0 and not self.out.errors:
            self.error(
                "the log holds no samples: nothing to judge", "samples", hint=NO_SAMPLES_HINT
            )
        version = self.info.version
        if version is not None and version not in KNOWN_VERSIONS and self.failed:
            self.error(
                f"log version {version} is unknown; {self.failed} of {self.samples} sample(s) "
                f"did not read as a sample of the versions tried ({_versions()})"
            )
        return self.out


def _versions() -> str:
    return ", ".join(str(v) for v in KNOWN_VERSIONS)


def _read_eval(path: Path, collector: Collector) -> None:
    try:
        log = ZipReader(path)
    except (ZipError, OSError) as exc:
        collector.error(f"cannot read the .eval log: {exc}")
        return
    with log:
        if log.damage is not None:
            collector.error(
                f"the log is damaged ({log.damage}); every whole member before the damage is read",
                hint="was it copied while Inspect was still writing it?",
            )
        try:
            header, where = read_header(log)
            collector.header(header, where)
        except ZipError as exc:
            collector.error(f"no usable header: {exc}; the samples are read without it")
        for name in sample_members(log.names()):
            try:
                raw = read_sample(log, name)
            except ZipError as exc:
                collector.samples += 1
                collector.error(str(exc), field=name)
                continue
            collector.sample(raw, name)


def _read_json(path: Path, collector: Collector) -> None:
    try:
        handle, stream = open_json_log(path)
    except OSError as exc:
        collector.error(f"cannot read the file ({exc.strerror})")
        return
    header: dict[str, Any] = {}
    read_header_yet = False
    with handle:
        try:
            for item in stream.items():
                if item.key == "samples" and item.index is None:
                    if item.value is not None:
                        collector.error("'samples' is not an array", "samples", item.line)
                    continue
                if item.key != "samples":
                    header[item.key] = item.value
                    continue
                if not read_header_yet:
                    if "eval" not in header:  # not inspect's key order: read the rest first
                        header.update(_header_after_samples(path))
                    collector.header(header)
                    read_header_yet = True
                collector.sample(
                    resolve_attachments(item.value), f"samples[{item.index}]", item.line
                )
        except JsonLogError as exc:
            where = stream.where
            collector.error(
                f"not valid JSON: {exc}; the samples before it are read",
                field=where,
                line=exc.line,
            )
    if not read_header_yet:
        collector.header(header)


def _header_after_samples(path: Path) -> dict[str, Any]:
    """The top-level keys other than ``samples`` (a second pass, for a log whose ``eval``
    comes after its samples)."""
    found: dict[str, Any] = {}
    handle, stream = open_json_log(path)
    with handle:
        try:
            for item in stream.items(skip=frozenset({"samples"})):
                found[item.key] = item.value
        except JsonLogError:
            pass  # the first pass reports it
    return found
