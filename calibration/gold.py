"""Gold sets: the project's gold JSONL format, its validation, lineage and conversion to cases.

One record per line, the format of the public sets in ``../shared/gold`` plus an optional
``lineage`` block (who labelled it, when, from what). ``gold/README.md`` is the datasheet and
``gold/schema.json`` the JSON schema generated from :class:`GoldRecord` (``python -m
calibration.gold schema > gold/schema.json`` rewrites it; a test keeps the two equal).

Loading is strict: every error names the file, the line and the field and says what to do.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from judge.base import Strict
from judge.digests import bytes_digest
from judge.errors import InputError
from judge.kinds import SCORING
from judge.types import Case, TraceTurn, TurnKind

#: A gold record's kind is the kind of case it labels (this order is gold/schema.json's).
GoldKind = Literal["pairwise", "agent_run"]

#: The gold labels each kind of record may carry (case kind -> ``judge.kinds`` gold labels).
GOLD_LABELS: Mapping[str, tuple[str, ...]] = {
    spec.case_kind: spec.gold_labels for spec in SCORING.values()
}

#: Slices that name the agent's model, in order of preference (to_case -> Case.agent_model).
AGENT_MODEL_SLICES = ("model", "agent_model")

_HINT = "see gold/README.md for the gold-set format (gold/schema.json is its JSON schema)"


class GoldTurn(Strict):
    """One turn of an agent's trace as stored in a gold record (a case's trace turn: what
    ``judge import`` writes is a gold turn)."""

    id: str = Field(min_length=1)
    role: str
    content: str
    step: int | None = None
    #: What the turn is (tool_call, observation, final_answer...), as the importers record it.
    kind: TurnKind | None = None
    #: Where the turn came from in the source log (line, span id, JSON path), for audit.
    source: str | None = None


def _turn_fields(turn: GoldTurn | TraceTurn) -> dict[str, Any]:
    """A trace turn's fields, to copy it between a gold record and a case (the two hold the
    same six)."""
    return {
        "id": turn.id,
        "role": turn.role,
        "content": turn.content,
        "step": turn.step,
        "kind": turn.kind,
        "source": turn.source,
    }


class Lineage(Strict):
    """Where a gold label came from, so that every label can be traced back."""

    #: The data set or process the item came from (e.g. "SWE-bench Verified", "review queue").
    source: str | None = None
    #: Who or what assigned the label (annotator id, "official test harness", ...).
    labeller: str | None = None
    created_at: datetime | None = None
    #: Ids or references the label was derived from: judgment ids, card digests, repo@commit:path.
    derived_from: list[str] = Field(default_factory=list)


class GoldRecord(Strict):
    """One labelled item: a pair of candidate answers, or one agent run."""

    id: str = Field(min_length=1)
    source: str
    license: str
    kind: GoldKind
    task: str
    #: The two candidates {"A": ..., "B": ...} of a pairwise item; absent for agent runs.
    candidates: dict[str, str] | None = Field(default=None, validate_default=True)
    #: The agent's diff for code runs, else null.
    diff: str | None = None
    trace: list[GoldTurn] = Field(default_factory=list)
    #: The agent's model (else read from the ``model`` or ``agent_model`` slice).
    agent_model: str | None = None
    #: A | B | tie for pairwise items, pass | fail for agent runs.
    gold: str
    #: How the label was obtained (test harness, expert annotators, ...).
    gold_source: str
    #: Reporting only (some are derived from the label): never shown to a judge.
    slices: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    lineage: Lineage | None = None
    #: A failed run's first bad decision as people labelled it: the 0-based index of the step
    #: in ``trace``, and the agent that took it (multi-agent runs). Written only when set.
    critical_step: int | None = Field(default=None, ge=0)
    critical_agent: str | None = None

    @model_validator(mode="after")
    def _critical_step_is_a_step_of_a_failed_run(self) -> GoldRecord:
        if self.critical_step is None:
            return self
        if self.gold != "fail":
            raise ValueError(
                f"critical_step labels a failed run; this record's gold is {self.gold}"
            )
        if self.critical_step >= len(self.trace):
            raise ValueError(
                f"critical_step {self.critical_step} is out of range: the run has "
                f"{len(self.trace)} steps (0-{len(self.trace) - 1})"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_unset_critical(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in ("critical_step", "critical_agent"):
                if data.get(name, 0) is None:
                    del data[name]
        return data

    @field_validator("candidates")
    @classmethod
    def _candidates_match_kind(
        cls, value: dict[str, str] | None, info: ValidationInfo
    ) -> dict[str, str] | None:
        kind = info.data.get("kind")
        if kind == "pairwise" and (value is None or set(value) != {"A", "B"}):
            raise ValueError("a pairwise item needs candidates with exactly the keys A and B")
        if kind == "agent_run" and value is not None:
            raise ValueError("an agent_run item has no candidates (leave the field out)")
        return value

    @field_validator("gold")
    @classmethod
    def _gold_matches_kind(cls, value: str, info: ValidationInfo) -> str:
        kind = info.data.get("kind")
        allowed = GOLD_LABELS.get(kind) if isinstance(kind, str) else None
        if allowed is not None and value not in allowed:
            raise ValueError(f"must be {' or '.join(allowed)} for kind {kind}, not {value!r}")
        return value

    @classmethod
    def from_case(
        cls,
        case: Case,
        *,
        gold: str,
        gold_source: str,
        source: str,
        license: str,
        lineage: Lineage | None = None,
    ) -> GoldRecord:
        """A case with the label people gave it: everything the judge saw, kept as it was."""
        return cls(
            id=case.id,
            source=source,
            license=license,
            kind=case.kind,
            task=case.task,
            candidates=dict(case.candidates) if case.candidates else None,
            diff=case.diff,
            trace=[GoldTurn(**_turn_fields(t)) for t in case.trace],
            agent_model=case.agent_model,
            gold=gold,
            gold_source=gold_source,
            slices=dict(case.slices),
            meta=dict(case.meta),
            lineage=lineage,
        )

    def resolved_agent_model(self) -> str | None:
        """The agent's model: the field, else the slices' ``model`` or ``agent_model``."""
        if self.agent_model:
            return self.agent_model
        for key in AGENT_MODEL_SLICES:
            value = self.slices.get(key)
            if value is not None and value != "":
                return str(value)
        return None

    def to_case(self) -> Case:
        """The case a judge sees: the label, its source, licence and lineage are dropped."""
        return Case(
            id=self.id,
            kind=self.kind,
            task=self.task,
            diff=self.diff,
            trace=[TraceTurn(**_turn_fields(t)) for t in self.trace],
            candidates=dict(self.candidates) if self.candidates is not None else None,
            agent_model=self.resolved_agent_model(),
            slices=dict(self.slices),
            meta=dict(self.meta),
        )

    def with_derived_lineage(self) -> GoldRecord:
        """This record, with lineage derived from source/gold_source/meta when it has none."""
        if self.lineage is not None:
            return self
        return self.model_copy(update={"lineage": derive_lineage(self)})


def derive_lineage(record: GoldRecord) -> Lineage:
    """Lineage for a record that carries none: its source, label source and origin file."""
    meta = record.meta
    refs: list[str] = []
    repo, commit = meta.get("repo"), meta.get("commit")
    if repo:
        at = f"{repo}@{commit}" if commit else str(repo)
        paths = meta.get("paths")
        named = [str(p) for p in (paths if isinstance(paths, list) else [meta.get("path")]) if p]
        refs = [f"{at}:{p}" for p in named] if named else [at]
    return Lineage(source=record.source, labeller=record.gold_source, derived_from=refs)


@dataclass(frozen=True)
class GoldSet:
    """A loaded gold set: its records (in file order), name and content digest."""

    name: str
    path: Path | None
    #: "sha256:<hex>" over the file's bytes; a calibration card binds this digest.
    digest: str
    records: tuple[GoldRecord, ...]
    _by_id: Mapping[str, GoldRecord] = field(repr=False, compare=False, default_factory=dict)

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.records)

    @property
    def label_counts(self) -> dict[str, int]:
        """How many records carry each gold label."""
        return dict(Counter(r.gold for r in self.records))

    @property
    def kinds(self) -> dict[str, int]:
        """How many records of each kind (pairwise, agent_run)."""
        return dict(Counter(r.kind for r in self.records))

    def labels(self) -> dict[str, str]:
        """Item id -> gold label (what :func:`calibration.inputs.join_gold` needs)."""
        return {r.id: r.gold for r in self.records}

    def by_id(self) -> Mapping[str, GoldRecord]:
        """Item id -> record."""
        return self._by_id

    def get(self, item_id: str) -> GoldRecord | None:
        """The record with this id, or None."""
        return self._by_id.get(item_id)

    def __iter__(self) -> Iterator[GoldRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def cases(self) -> list[Case]:
        """Every record as a judge's case (labels removed)."""
        return [r.to_case() for r in self.records]


def _field_name(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: Mapping[str, Any]) -> str:
    kind = error.get("type")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field of this record (misspelt? extra fields are refused)"
    msg = str(error.get("msg", "is invalid"))
    return msg.removeprefix("Value error, ")


def validation_to_input_error(err: ValidationError, file: str, line: int | None) -> InputError:
    """Turn pydantic's error into ours: file, line, field, and what to do."""
    errors = err.errors()
    first = errors[0]
    msg = _message(first)
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem(s) in this record)"
    field = _field_name(first["loc"]) or None
    return InputError(msg, file=file, line=line, field=field, hint=_HINT)


def parse_record(data: Any, *, file: str = "<gold>", line: int | None = None) -> GoldRecord:
    """Validate one decoded JSON object as a gold record; errors name file, line and field."""
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object, got {type(data).__name__}", file=file, line=line, hint=_HINT
        )
    if "gold" not in data and "id" in data and "kind" in data:
        raise InputError(
            "no gold label: this record is a case (what `judge import` writes), not yet gold",
            file=file,
            line=line,
            field="gold",
            hint="add gold, gold_source, source and license (gold/README.md), or label it in "
            "the review queue and `judge gold export`",
        )
    try:
        return GoldRecord.model_validate(data)
    except ValidationError as err:
        raise validation_to_input_error(err, file, line) from err


def iter_lines(raw: bytes, file: str) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON) for each non-blank line; bad UTF-8 or JSON is an InputError."""
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(
                f"not valid UTF-8 (byte {err.start})",
                file=file,
                line=number,
                hint="save the file as UTF-8",
            ) from err
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(
                f"not valid JSON: {err.msg} (column {err.colno})",
                file=file,
                line=number,
                hint="one JSON object per line (JSONL)",
            ) from err


def load_gold(path: str | Path, *, name: str | None = None) -> GoldSet:
    """Load and validate a gold JSONL file.

    Records without ``lineage`` get one derived from ``source``, ``gold_source`` and ``meta``.
    Duplicate ids are refused. Raises InputError naming the file, line and field.
    """
    p = Path(path)
    file = str(path)
    try:
        raw = p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the gold set: {err.strerror}", file=file) from err
    records: list[GoldRecord] = []
    first_line: dict[str, int] = {}
    for number, data in iter_lines(raw, file):
        record = parse_record(data, file=file, line=number).with_derived_lineage()
        if record.id in first_line:
            raise InputError(
                f"duplicate id {record.id!r} (first on line {first_line[record.id]})",
                file=file,
                line=number,
                field="id",
                hint="ids must be unique within a gold set",
            )
        first_line[record.id] = number
        records.append(record)
    if not records:
        raise InputError("the gold set has no records", file=file, hint=_HINT)
    return GoldSet(
        name=name or p.stem,
        path=p,
        digest=bytes_digest(raw),
        records=tuple(records),
        _by_id={r.id: r for r in records},
    )


def dumps_record(record: GoldRecord) -> str:
    """One record as its JSONL line (without the newline)."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False)


def write_gold(records: Iterable[GoldRecord], path: str | Path) -> str:
    """Write records as gold JSONL (one object per line); return the file's digest."""
    lines = [dumps_record(r) for r in records]
    raw = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    Path(path).write_bytes(raw)
    return bytes_digest(raw)


def gold_schema() -> dict[str, Any]:
    """The JSON schema of one gold record (what gold/schema.json holds)."""
    schema = GoldRecord.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "judge gold record"
    schema["description"] = (
        "One line of a gold JSONL file. Also checked beyond this schema: the gold label must be "
        "A, B or tie for kind pairwise and pass or fail for kind agent_run; pairwise items need "
        "candidates with exactly the keys A and B; ids are unique within a file."
    )
    return schema


def schema_text() -> str:
    """gold/schema.json's exact text."""
    return json.dumps(gold_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def case_schema() -> dict[str, Any]:
    """The JSON schema of one case (what gold/case.schema.json holds): ``judge.types.Case``,
    the format ``judge import`` writes and ``judge run`` reads."""
    schema = Case.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "judge case"
    schema["description"] = (
        "One line of a case JSONL file: what a judge is asked about (an agent run, or a pair of "
        "candidate answers). Adding gold, gold_source, source and license makes it a gold "
        "record (gold/schema.json). Also checked beyond this schema: pairwise cases need "
        "candidates with exactly the keys A and B; a gold label must suit the kind; ids are "
        "unique within a file."
    )
    # The one field beyond Case: a label the input already carried (tau-bench rewards).
    schema["properties"]["gold"] = {
        "description": "A label found in the input (A, B or tie for pairwise; pass or fail for "
        "agent_run); never shown to a judge.",
        "title": "Gold",
        "type": "string",
    }
    return schema


def case_schema_text() -> str:
    """gold/case.schema.json's exact text."""
    return json.dumps(case_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


#: What makes a labelled case a gold record: where the item and its label come from, and the
#: licence it is used under.
PROVENANCE_FIELDS = ("source", "license", "gold_source")


@dataclass
class FileCheck:
    """What :func:`check_file` found: every record's problem (not only the first), and the
    records by kind: gold records, cases carrying a label without its provenance, and cases
    awaiting a label."""

    path: str
    digest: str = ""
    gold: Counter[str] = field(default_factory=Counter)
    labelled_cases: Counter[str] = field(default_factory=Counter)
    unlabelled: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    errors: list[InputError] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Valid records."""
        return sum((self.gold + self.labelled_cases + self.unlabelled).values())

    def summary(self) -> str:
        """One line: records, kinds, labels, what is not gold yet, digest."""
        kinds = self.gold + self.labelled_cases + self.unlabelled
        text = f"{self.n} records ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})"
        if self.labels:
            text += "; labels " + ", ".join(f"{k} {v}" for k, v in sorted(self.labels.items()))
        waiting = sum(self.unlabelled.values())
        if waiting:
            text += f"; {waiting} unlabelled"
        partial = sum(self.labelled_cases.values())
        if partial:
            text += (
                f"; {partial} labelled without {', '.join(PROVENANCE_FIELDS)} (add them "
                "before calibrating)"
            )
        return f"{text}; digest {self.digest}"


def check_file(path: str | Path, *, require_labels: bool = False) -> FileCheck:
    """Check every record of a case or gold JSONL file, going on after a bad one.

    A record is a gold record (:class:`GoldRecord`), or a case (``judge.types.Case``, what
    ``judge import`` writes) with or without a ``gold`` label: cases are accepted unless
    ``require_labels``, which asks for complete gold records (as calibration does). Ids must be
    unique. Never raises for a bad record: see ``errors``.
    """
    file = str(path)
    out = FileCheck(path=file)
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        out.errors.append(InputError(f"cannot read the file: {err.strerror}", file=file))
        return out
    out.digest = bytes_digest(raw)
    first_line: dict[str, int] = {}
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        try:
            data = json.loads(chunk.decode("utf-8"))
            record_id, kind, label, complete = _check_record(data, file, number, require_labels)
        except UnicodeDecodeError as err:
            out.errors.append(
                InputError(
                    f"not valid UTF-8 (byte {err.start})",
                    file=file,
                    line=number,
                    hint="save the file as UTF-8",
                )
            )
            continue
        except json.JSONDecodeError as err:
            out.errors.append(
                InputError(
                    f"not valid JSON: {err.msg} (column {err.colno})",
                    file=file,
                    line=number,
                    hint="one JSON object per line (JSONL)",
                )
            )
            continue
        except InputError as err:
            out.errors.append(err)
            continue
        if record_id in first_line:
            out.errors.append(
                InputError(
                    f"duplicate id {record_id!r} (first on line {first_line[record_id]})",
                    file=file,
                    line=number,
                    field="id",
                    hint="ids must be unique within a file",
                )
            )
            continue
        first_line[record_id] = number
        if label is None:
            out.unlabelled[kind] += 1
            continue
        (out.gold if complete else out.labelled_cases)[kind] += 1
        out.labels[label] += 1
    if not first_line and not out.errors:
        out.errors.append(InputError("the file has no records", file=file, hint=_HINT))
    return out


def _check_record(
    data: Any, file: str, line: int, require_labels: bool
) -> tuple[str, str, str | None, bool]:
    """(id, kind, gold label or None, complete gold record?) of one valid record; InputError
    naming the field otherwise."""
    if not isinstance(data, dict) or require_labels:
        record = parse_record(data, file=file, line=line)
        return record.id, record.kind, record.gold, True
    if "gold" in data:
        try:
            record = GoldRecord.model_validate(data)
            return record.id, record.kind, record.gold, True
        except ValidationError as err:
            # Provenance missing only: a labelled case (judge import keeps the labels it
            # finds). Any other problem is reported first, by its field.
            other = [
                p
                for p in err.errors()
                if not (
                    p["type"] == "missing"
                    and len(p["loc"]) == 1
                    and p["loc"][0] in PROVENANCE_FIELDS
                )
            ]
            if other:
                more = (
                    f" (and {len(other) - 1} more problem(s) in this record)"
                    if len(other) > 1
                    else ""
                )
                raise InputError(
                    _message(other[0]) + more,
                    file=file,
                    line=line,
                    field=_field_name(other[0]["loc"]) or None,
                    hint=_HINT,
                ) from err
    try:
        case = Case.model_validate({k: v for k, v in data.items() if k != "gold"})
    except ValidationError as err:
        raise validation_to_input_error(err, file, line) from err
    return case.id, case.kind, (str(data["gold"]) if "gold" in data else None), False


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m calibration.gold schema [case]`` prints the gold (or case) schema;
    ``check [--labelled] FILE...`` validates files (cases unlabelled unless --labelled)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["schema"]:
        sys.stdout.write(schema_text())
        return 0
    if args == ["schema", "case"]:
        sys.stdout.write(case_schema_text())
        return 0
    if args[:1] == ["check"]:
        require = "--labelled" in args
        files = [a for a in args[1:] if a != "--labelled"]
        status = 0 if files else 2
        for f in files:
            found = check_file(f, require_labels=require)
            for err in found.errors:
                print(f"error: {err}", file=sys.stderr)
            if found.errors:
                status = 1
            else:
                print(f"{f}: {found.summary()}")
        if status != 2:
            return status
    print(
        "usage: python -m calibration.gold schema [case] | check [--labelled] FILE...",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
