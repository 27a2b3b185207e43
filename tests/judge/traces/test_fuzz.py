"""Importers never crash: arbitrary bytes, arbitrary JSON, and mutated samples give cases and
InputErrors, nothing else. Each property runs at most 50 examples to keep the suite fast."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.errors import InputError
from judge.traces import ImportResult, importers
from judge.traces.inspect_zip import ZipReader
from judge.types import Case
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces"
FORMATS = sorted(importers())
EXAMPLES = settings(max_examples=50, deadline=None)

# Keys the importers look for, so that random objects reach past the first checks.
KEYS = st.sampled_from(
    [
        "type",
        "subtype",
        "message",
        "content",
        "role",
        "parts",
        "text",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "session_id",
        "model",
        "result",
        "item",
        "command",
        "aggregated_output",
        "exit_code",
        "status",
        "changes",
        "thread_id",
        "usage",
        "error",
        "resourceSpans",
        "scopeSpans",
        "spans",
        "traceId",
        "spanId",
        "attributes",
        "key",
        "value",
        "stringValue",
        "messages",
        "tool_calls",
        "function",
        "arguments",
        "tool_call_id",
        "info",
        "submission",
        "exit_status",
        "trajectory",
        "history",
        "action",
        "observation",
        "task_id",
        "traj",
        "reward",
        "trial",
        "kind",
        "task",
        "trace",
    ]
) | st.text(max_size=6)
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)
SMALL_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory reused by every example (each example overwrites its file)."""
    return tmp_path_factory.mktemp("fuzz")


def _check(result: Any, *, numbered: bool) -> None:
    """The importer's contract: an ImportResult of valid cases and InputErrors; turns
    numbered and classified by the importer (``numbered``; gold files keep their own)."""
    assert isinstance(result, ImportResult)
    assert all(isinstance(e, InputError) and e.file for e in result.errors)
    ids = [c.id for c in result.cases]
    assert len(ids) == len(set(ids))
    for case in result.cases:
        assert isinstance(case, Case)
        assert Case.model_validate(case.model_dump()) == case
        if not numbered:
            continue
        assert [t.id for t in case.trace] == [f"turn-{i}" for i in range(1, len(case.trace) + 1)]
        assert all(t.kind is not None and t.source for t in case.trace)
        json.dumps(case.model_dump(mode="json"))


def _load(fmt: str, path: Path) -> None:
    _check(importers()[fmt].load(path), numbered=fmt != "gold")
    importers()[fmt].sniff(path)  # sniffers must not crash either


@pytest.mark.parametrize("fmt", FORMATS)
@EXAMPLES
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes(fmt: str, data: bytes, scratch: Path) -> None:
    path = scratch / f"{fmt}-bytes.json"
    path.write_bytes(data)
    _load(fmt, path)


@pytest.mark.parametrize("fmt", FORMATS)
@EXAMPLES
@given(value=JSON)
def test_arbitrary_json_document(fmt: str, value: Any, scratch: Path) -> None:
    path = scratch / f"{fmt}-doc.json"
    path.write_text(json.dumps(value, indent=1))
    _load(fmt, path)


@pytest.mark.parametrize("fmt", FORMATS)
@EXAMPLES
@given(lines=st.lists(st.dictionaries(KEYS, SMALL_JSON, max_size=4), min_size=1, max_size=4))
def test_arbitrary_jsonl(fmt: str, lines: list[dict[str, Any]], scratch: Path) -> None:
    path = scratch / f"{fmt}-lines.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _load(fmt, path)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indexes)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def _samples(fmt: str) -> list[Path]:
    """The text samples of a format (the inspect-ai reader reads the inspect folder; binary
    .eval logs are mutated in tests/judge/traces/test_inspect.py)."""
    folder = DATA / ("inspect" if fmt == "inspect-ai" else fmt)
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix not in (".md", ".py", ".eval")
    )


@pytest.mark.parametrize("fmt", FORMATS)
@EXAMPLES
@given(data=st.data())
def test_mutated_samples(fmt: str, data: st.DataObject, scratch: Path) -> None:
    """One value anywhere in a real sample replaced by arbitrary JSON."""
    sample = data.draw(st.sampled_from(_samples(fmt)))
    text = sample.read_text()
    jsonl = sample.suffix == ".jsonl"
    records: list[Any] = []
    for line in text.splitlines() if jsonl else [text]:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the truncated lines of the malformed samples
    if not records:
        return
    index = data.draw(st.integers(0, len(records) - 1))
    path = data.draw(st.sampled_from(_paths(records[index])))
    records[index] = _replace(records[index], path, data.draw(JSON))
    target = scratch / f"{fmt}-mutated{sample.suffix}"
    target.write_text(
        "\n".join(json.dumps(r) for r in records) + "\n" if jsonl else json.dumps(records[0])
    )
    _load(fmt, target)


INSPECT_LOGS = sorted((DATA / "inspect").glob("*.eval"))


@EXAMPLES
@given(data=st.data())
def test_mutated_inspect_eval_logs(data: st.DataObject, scratch: Path) -> None:
    """One value of one member of a real .eval log replaced by arbitrary JSON (the log written
    again with deflate members), or some of its bytes changed."""
    source = data.draw(st.sampled_from(INSPECT_LOGS))
    target = scratch / "inspect-mutated.eval"
    if data.draw(st.booleans()):
        raw = bytearray(source.read_bytes())
        for _ in range(data.draw(st.integers(1, 8))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        target.write_bytes(bytes(raw))
    else:
        with ZipReader(source) as log:
            members = {name: log.read(name) for name in log.names()}
        name = data.draw(st.sampled_from(sorted(n for n in members if n.endswith(".json"))))
        value = json.loads(members[name])
        path = data.draw(st.sampled_from(_paths(value)))
        members[name] = json.dumps(_replace(value, path, data.draw(JSON))).encode()
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for member, content in members.items():
                out.writestr(member, content)
    _load("inspect", target)
