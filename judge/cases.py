"""Read cases from JSONL: the gold-set record format (../shared/gold, gold/) or plain Case records.

A bad record never stops the batch: it becomes an ``InputError`` naming the file, the line and
the field, and every valid record is still returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.types import Case

#: Fields of the gold-set format that are labels or provenance, not part of what is judged.
GOLD_ONLY_FIELDS = ("source", "license", "gold", "gold_source", "lineage")


@dataclass
class LoadedCases:
    """The valid cases of a file, the errors of the invalid ones, and the gold labels found."""

    cases: list[Case] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    gold: dict[str, str] = field(default_factory=dict)


def record_to_case(record: dict[str, Any]) -> tuple[Case, str | None]:
    """Validate one record (gold format or Case format) into a Case and its gold label."""
    data = {k: v for k, v in record.items() if k not in GOLD_ONLY_FIELDS}
    if "agent_model" not in data:
        slices = data.get("slices")
        model = (slices.get("agent_model") or slices.get("model")
                 if isinstance(slices, dict) else None)
        if model is not None:
            data["agent_model"] = str(model)
    gold = record.get("gold")
    return Case.model_validate(data), (str(gold) if gold is not None else None)


def validation_error(exc: ValidationError, file: str, line: int) -> InputError:
    """The first problem of a ValidationError as an InputError naming file, line and field."""
    first = exc.errors()[0]
    loc = ".".join(str(part) for part in first["loc"]) or None
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown field (check the spelling; see gold/README.md for the format)"
    elif first["type"] == "missing":
        message = "required field is missing"
    return InputError(message, file=file, line=line, field=loc)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line number, object or InputError) for every non-blank line of a JSONL file."""
    name = str(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, InputError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
                                         file=name, line=number)
                continue
            if "\x00" in text:
                yield number, InputError("contains a NUL byte", file=name, line=number)
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, InputError(f"not valid JSON ({exc.msg}, column {exc.colno})",
                                         file=name, line=number)
                continue
            except RecursionError:
                yield number, InputError("JSON nested too deeply", file=name, line=number)
                continue
            if not isinstance(obj, dict):
                yield number, InputError("each line must be a JSON object", file=name,
                                         line=number)
                continue
            yield number, obj


def load_cases(path: str | Path, *, limit: int | None = None) -> LoadedCases:
    """Every valid case of ``path`` (up to ``limit``), and an error for each invalid record."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", file=str(path))
    out = LoadedCases()
    seen: dict[str, int] = {}
    for number, obj in iter_jsonl(path):
        if limit is not None and len(out.cases) >= limit:
            break
        if isinstance(obj, InputError):
            out.errors.append(obj)
            continue
        try:
            case, gold = record_to_case(obj)
        except ValidationError as exc:
            out.errors.append(validation_error(exc, str(path), number))
            continue
        if case.id in seen:
            out.errors.append(InputError(f"duplicate id (first on line {seen[case.id]})",
                                         file=str(path), line=number, field="id"))
            continue
        seen[case.id] = number
        out.cases.append(case)
        if gold is not None:
            out.gold[case.id] = gold
    return out
