"""Read cases from JSONL: the gold-set record format (../shared/gold, gold/) or plain Case records.

A bad record never stops the batch: it becomes an ``InputError`` naming the file, the line and
the field, and every valid record is still returned.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.safety.redact import with_safe_id
from judge.types import Case

#: Fields of the gold-set format that are labels or provenance, not part of what is judged.
GOLD_ONLY_FIELDS = (
    "source",
    "license",
    "gold",
    "gold_source",
    "lineage",
    "critical_step",
    "critical_agent",
)
#: Records nested deeper than this are refused: no case needs it, and storing or sending one
#: would fail later, in the middle of a batch (tests/test_bad_input.py).
MAX_DEPTH = 100
_SURROGATE = re.compile("[\ud800-\udfff]")
#: In JSON text, the only ways to spell a NUL or a surrogate once the text is valid UTF-8 with
#: no raw NUL: a \u0000 escape, or a \uD800-\uDFFF escape (pairs included: a false alarm is
#: only a slower check).
_ESCAPED_BAD = re.compile(r"\\u0000|\\u[dD][89a-fA-F]")
#: In JSON text, the only ways to get a number that is not finite: Python's json reads the
#: non-standard NaN, Infinity and -Infinity, and an exponent of 309 or more overflows to
#: infinity (1e999). A false alarm (the word in a string) is only a slower check.
_NONFINITE_TEXT = re.compile(r"NaN|Infinity|[eE][+]?0*[1-9]\d{2,}|\d{300,}")
_BOM = b"\xef\xbb\xbf"


@dataclass
class LoadedCases:
    """The valid cases of a file, the errors of the invalid ones, and the gold labels found."""

    cases: list[Case] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    gold: dict[str, str] = field(default_factory=dict)
    #: People's critical step of a failed run (0-based step of its trace), where labelled.
    critical: dict[str, int] = field(default_factory=dict)


def case_data(record: dict[str, Any]) -> dict[str, Any]:
    """The Case fields of a record in the gold format or the Case format: the label and
    provenance fields dropped, the agent model taken from the slices when not given. What
    ``judge run`` judges of a line, and what the API judges of a case it is sent."""
    data = {k: v for k, v in record.items() if k not in GOLD_ONLY_FIELDS}
    if "agent_model" not in data:
        slices = data.get("slices")
        model = (
            slices.get("agent_model") or slices.get("model") if isinstance(slices, dict) else None
        )
        if model is not None:
            data["agent_model"] = str(model)
    return data


def record_to_case(record: dict[str, Any]) -> tuple[Case, str | None]:
    """Validate one record (gold format or Case format) into a Case and its gold label."""
    data = case_data(record)
    gold = record.get("gold")
    # A secret in the id is redacted here, where every case read from a file starts.
    return with_safe_id(Case.model_validate(data)), (str(gold) if gold is not None else None)


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


def bad_value(
    obj: Any, *, check_strings: bool = True, check_numbers: bool | None = None
) -> tuple[str | None, str] | None:
    """(field path, problem) for the first value, in document order, that cannot be stored or
    sent: a string with a NUL or a lone UTF-16 surrogate (JSON allows ``"\\ud800"``; UTF-8
    does not), a number that is NaN or infinite (Python's json reads ``NaN`` and ``Infinity``,
    which JSON does not have; stored, they would silently become null), or nesting deeper than
    :data:`MAX_DEPTH`. None when every value is fine.

    ``check_strings=False`` checks the nesting only: for an object parsed from JSON text that
    ``_ESCAPED_BAD`` found clean, no string or key can hold a NUL or a surrogate.
    ``check_numbers`` (default: as ``check_strings``) likewise for text ``_NONFINITE_TEXT``
    found clean.
    """
    numbers = check_strings if check_numbers is None else check_numbers
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            head = ".".join(path.split(".")[:4])  # the field, not a hundred list indexes
            return head + "...", f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, str):
            if check_strings and "\x00" in value:
                return path or None, "contains a NUL character"
            if check_strings and _SURROGATE.search(value):
                return path or None, "contains a lone UTF-16 surrogate (not valid Unicode)"
            continue
        if isinstance(value, float):
            if numbers and not math.isfinite(value):
                what = "NaN" if math.isnan(value) else "infinite"
                return path or None, (
                    f"is {what} ({value!r}): JSON has no such number; write null, or the value "
                    "as a string"
                )
            continue
        children: Iterable[tuple[Any, Any]]
        if isinstance(value, dict):
            for key in map(str, value) if check_strings else ():
                if "\x00" in key or _SURROGATE.search(key):
                    return path or None, f"has an invalid key {key!r}"
            children = reversed(value.items())
        elif isinstance(value, list):
            children = reversed(list(enumerate(value)))
        else:
            continue
        # Without string or number checks a scalar needs no visit, unless its depth is the error.
        every = check_strings or numbers or depth >= MAX_DEPTH
        stack.extend(
            (v, f"{path}.{k}" if path else str(k), depth + 1)
            for k, v in children
            if every or isinstance(v, dict | list)
        )
    return None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line number, object or InputError) for every non-blank line of a JSONL file."""
    name = str(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]  # files saved "UTF-8 with BOM" are still UTF-8
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    number,
                    InputError(
                        f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
                        file=name,
                        line=number,
                    ),
                )
                continue
            if "\x00" in text:
                yield number, InputError("contains a NUL byte", file=name, line=number)
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield (
                    number,
                    InputError(
                        f"not valid JSON ({exc.msg}, column {exc.colno})", file=name, line=number
                    ),
                )
                continue
            except RecursionError:
                yield number, InputError("JSON nested too deeply", file=name, line=number)
                continue
            if not isinstance(obj, dict):
                yield number, InputError("each line must be a JSON object", file=name, line=number)
                continue
            problem = bad_value(
                obj,
                check_strings=_ESCAPED_BAD.search(text) is not None,
                check_numbers=_NONFINITE_TEXT.search(text) is not None,
            )
            if problem is not None:
                yield number, InputError(problem[1], file=name, line=number, field=problem[0])
                continue
            yield number, obj


def jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL file; the first bad line's
    InputError (not JSON, not an object) is raised."""
    for number, record in iter_jsonl(Path(path)):
        if isinstance(record, InputError):
            raise record
        yield number, record


def repeated(
    seen: Mapping[str, int], key: str, what: str, *, file: str, line: int, field: str
) -> InputError | None:
    """The error of a record on ``line`` whose ``what`` (``key``, in ``field``) an earlier
    record has (``seen``: key -> the line it was first on), else None: the first one is kept."""
    if key not in seen:
        return None
    return InputError(
        f"duplicate {what} (first on line {seen[key]})", file=file, line=line, field=field
    )


def load_cases(path: str | Path, *, limit: int | None = None) -> LoadedCases:
    """Every valid case of ``path`` (up to ``limit``), and an error for each invalid record."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", file=str(path))
    if _looks_like_diff(path):
        raise InputError(
            "a unified diff, not a case file",
            file=str(path),
            hint='a case file holds one JSON case per line: put the diff in a case\'s "diff" '
            f"field, or check the diff alone with: judge check --diff {path}",
        )
    out = LoadedCases()
    seen: dict[str, int] = {}
    records = 0
    for number, obj in iter_jsonl(path):
        records += 1
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
        again = repeated(seen, case.id, "id", file=str(path), line=number, field="id")
        if again is not None:
            out.errors.append(again)
            continue
        step = obj.get("critical_step")
        if step is not None and not (
            isinstance(step, int) and not isinstance(step, bool) and 0 <= step < len(case.trace)
        ):
            out.errors.append(
                InputError(
                    f"critical_step {step!r} is not a step of this run: a 0-based index below "
                    f"its {len(case.trace)} trace turns",
                    file=str(path),
                    line=number,
                    field="critical_step",
                )
            )
            continue
        seen[case.id] = number
        out.cases.append(case)
        if gold is not None:
            out.gold[case.id] = gold
        if step is not None:
            out.critical[case.id] = step
    if records == 0:
        out.errors.append(
            InputError(
                "no records: the file is empty or has only blank lines",
                file=str(path),
                hint="one JSON object per line",
            )
        )
    return out


_DIFF_START = ("diff --git ", "--- a/", "--- /dev/null", "Index: ")


def _looks_like_diff(path: Path) -> bool:
    """Whether the first line of ``path`` that is not blank starts a unified diff."""
    with path.open("rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                return line.startswith(_DIFF_START)
    return False


def diff_case(path: str | Path) -> Case:
    """A case holding only the unified diff of ``path`` (id: the file's name), for the checks
    that read a diff."""
    where = Path(path)
    try:
        text = where.read_text("utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=str(where)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=str(where)) from None
    if not text.strip():
        raise InputError("the diff is empty", file=str(where))
    return Case(id=where.name, kind="agent_run", task="", diff=text)


def read_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """Every record of a JSONL file with its line number; the first bad line raises its
    InputError (naming the file, line and what is wrong)."""
    where = Path(path)
    if not where.is_file():
        raise InputError("no such file", file=str(path))
    records = []
    for line, obj in iter_jsonl(where):
        if isinstance(obj, InputError):
            raise obj
        records.append((line, obj))
    return records
