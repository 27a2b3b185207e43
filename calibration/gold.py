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
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from judge.digests import bytes_digest
from judge.errors import InputError
from judge.kinds import SCORING
from judge.types import Case, TraceTurn

#: A gold record's kind is the kind of case it labels (this order is gold/schema.json's).
GoldKind = Literal["pairwise", "agent_run"]

#: The gold labels each kind of record may carry (case kind -> ``judge.kinds`` gold labels).
GOLD_LABELS: Mapping[str, tuple[str, ...]] = {
    spec.case_kind: spec.gold_labels for spec in SCORING.values()
}

#: Slices that name the agent's model, in order of preference (to_case -> Case.agent_model).
AGENT_MODEL_SLICES = ("model", "agent_model")

_HINT = "see gold/README.md for the gold-set format (gold/schema.json is its JSON schema)"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GoldTurn(_Strict):
    """One turn of an agent's trace as stored in a gold record."""

    id: str = Field(min_length=1)
    role: str
    content: str
    step: int | None = None


class Lineage(_Strict):
    """Where a gold label came from, so that every label can be traced back."""

    #: The data set or process the item came from (e.g. "SWE-bench Verified", "review queue").
    source: str | None = None
    #: Who or what assigned the label (annotator id, "official test harness", ...).
    labeller: str | None = None
    created_at: datetime | None = None
    #: Ids or references the label was derived from: judgment ids, card digests, repo@commit:path.
    derived_from: list[str] = Field(default_factory=list)


class GoldRecord(_Strict):
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
    #: A | B | tie for pairwise items, pass | fail for agent runs.
    gold: str
    #: How the label was obtained (test harness, expert annotators, ...).
    gold_source: str
    #: Reporting only (some are derived from the label): never shown to a judge.
    slices: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    lineage: Lineage | None = None

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

    def agent_model(self) -> str | None:
        """The agent's model named in the slices (``model`` or ``agent_model``), if any."""
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
            trace=[
                TraceTurn(id=t.id, role=t.role, content=t.content, step=t.step) for t in self.trace
            ],
            candidates=dict(self.candidates) if self.candidates is not None else None,
            agent_model=self.agent_model(),
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m calibration.gold schema`` prints the schema; ``check FILE...`` validates."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["schema"]:
        sys.stdout.write(schema_text())
        return 0
    if args[:1] == ["check"] and len(args) > 1:
        for f in args[1:]:
            try:
                gs = load_gold(f)
            except InputError as err:
                print(f"error: {err}", file=sys.stderr)
                return 1
            print(f"{f}: {gs.n} records, labels {gs.label_counts}, {gs.digest}")
        return 0
    print("usage: python -m calibration.gold schema | check FILE...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
