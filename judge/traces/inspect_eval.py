"""The members of an Inspect ``.eval`` log: its header and its samples, one at a time.

Layout written by inspect_ai (``src/inspect_ai/log/_recorders/eval.py``, ``EvalRecorder``),
in write order::

    _journal/start.json          {version, eval, plan}: written when the eval starts
    samples/{id}_epoch_{n}.json  one EvalSample each, as samples finish (completion order)
    _journal/summaries/{k}.json  sample summaries, per flush
    summaries.json, reductions.json, header.json     when the eval ends (header last)

A log whose eval did not finish (running, killed) has no ``header.json``: its header is
``_journal/start.json`` and its status "started". The sample's id and epoch are read from
its JSON, never from the member's name (``str(id)`` makes the int 2 and the string "2" one
name).

**Chunked samples** (``src/inspect_ai/log/_recorders/chunked/format.py`` and ``convert.py``;
``design/large-samples.md``, "Chunked on-disk layout"): a sample may instead be a folder
``samples/{id}_epoch_{n}/`` of ``sample.json`` (the sample without ``messages``, ``events``,
``attachments``, ``events_data`` and ``metadata``, plus ``message_refs``: ``[start, end)``
ranges into the message pool), ``metadata.json`` (when not empty), ``messages/{start}.json``,
``events/{start}.json``, ``calls/{start}.json`` and ``attachments/{start}.json`` (JSON arrays,
one chunk per file, named by the index of their first item, not zero-padded). The messages are
``concat(pool[a:b] for a, b in message_refs)``; attachment references become
``attachment://<index>`` into the concatenated attachments. Events and calls are not read
(no case uses them). inspect_ai 0.3.285 writes this layout (``inspect log convert-chunked``)
but cannot read it back.

Attachments (``src/inspect_ai/log/_condense.py``): a string value ``attachment://<key>`` (or
the legacy ``tc://<key>``) stands for ``attachments[key]``; they are resolved in the parts of a
sample a case is built from (input, messages, scores, metadata, target, error).
"""

from __future__ import annotations

import json
import re
from typing import Any

from judge.traces.inspect_zip import ZipError, ZipReader

HEADER = "header.json"
START = "_journal/start.json"
_MONOLITH = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_CHUNKED = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)/sample\.json$")
_INSIDE_CHUNKED = re.compile(r"_epoch_\d+/")
_PROTOCOLS = ("attachment://", "tc://")
#: The parts of a sample a case is built from: the only ones whose attachments are resolved.
RESOLVED = ("input", "messages", "scores", "score", "metadata", "target", "error")


def is_eval_log(names: list[str]) -> bool:
    """True when the member names are those of an Inspect ``.eval`` log."""
    return HEADER in names or START in names


def sample_members(names: list[str]) -> list[str]:
    """The members that hold a sample (a monolith ``.json`` or a chunked ``sample.json``), in
    the order written."""
    return [
        name
        for name in names
        if _CHUNKED.match(name) or (_MONOLITH.match(name) and not _INSIDE_CHUNKED.search(name))
    ]


def read_member_json(log: ZipReader, name: str) -> Any:
    """Member ``name`` parsed as JSON; ZipError saying what is wrong."""
    data = log.read(name)
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise ZipError(f"member {name!r} is not valid UTF-8 ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise ZipError(
            f"member {name!r} is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise ZipError(f"member {name!r}: JSON nested too deeply") from exc


def read_header(log: ZipReader) -> tuple[dict[str, Any], str]:
    """The log's header and the member it came from (``header.json``, else the journal's
    ``start.json``, whose status is then "started")."""
    for name in (HEADER, START):
        if name in log.members:
            header = read_member_json(log, name)
            if not isinstance(header, dict):
                raise ZipError(f"member {name!r} is not a JSON object")
            if name == START:
                header = {"status": "started", **header}
            return header, name
    raise ZipError(f"neither {HEADER!r} nor {START!r} is in the log")


def read_sample(log: ZipReader, name: str) -> Any:
    """The sample stored at member ``name`` (monolith, or the ``sample.json`` of a chunked
    sample, reassembled), its attachments resolved."""
    if not name.endswith("/sample.json"):
        return resolve_attachments(read_member_json(log, name))
    prefix = name.removesuffix("/sample.json")
    sample = read_member_json(log, name)
    if not isinstance(sample, dict):
        raise ZipError(f"member {name!r} is not a JSON object")
    meta = f"{prefix}/metadata.json"
    sample["metadata"] = read_member_json(log, meta) if meta in log.members else {}
    pool = _sequence(log, prefix, "messages")
    refs = sample.pop("message_refs", None) or []
    messages: list[Any] = []
    for ref in refs:
        if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(i, int) for i in ref)):
            raise ZipError(f"member {name!r}: message_refs holds {ref!r}, not a [start, end]")
        messages.extend(pool[ref[0] : ref[1]])
    sample["messages"] = messages
    sample["attachments"] = {
        str(i): text for i, text in enumerate(_sequence(log, prefix, "attachments"))
    }
    return resolve_attachments(sample)


def _sequence(log: ZipReader, prefix: str, kind: str) -> list[Any]:
    """The chunks ``{prefix}/{kind}/{start}.json`` concatenated in the order of ``start``."""
    folder = f"{prefix}/{kind}/"
    starts = sorted(
        int(stem)
        for name in log.members
        if name.startswith(folder) and (stem := name[len(folder) : -len(".json")]).isdigit()
    )
    items: list[Any] = []
    for start in starts:
        chunk = read_member_json(log, f"{folder}{start}.json")
        if not isinstance(chunk, list):
            raise ZipError(f"member {folder}{start}.json is not a JSON array")
        items.extend(chunk)
    return items


def resolve_attachments(sample: Any) -> Any:
    """``sample`` with every ``attachment://<key>`` (or ``tc://<key>``) string in the parts a
    case is built from replaced by its attachment (in place); unknown keys are left as they
    are."""
    if not isinstance(sample, dict):
        return sample
    attachments = sample.get("attachments")
    if not isinstance(attachments, dict) or not attachments:
        return sample
    for key in RESOLVED:
        if key in sample:
            sample[key] = _resolve(sample[key], attachments)
    return sample


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """``value`` with its attachment references replaced, changing lists and dicts in place."""
    if isinstance(value, str):
        if value.startswith(_PROTOCOLS):
            protocol = next(p for p in _PROTOCOLS if value.startswith(p))
            return attachments.get(value[len(protocol) :], value)
        return value
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str | list | dict):
                value[index] = _resolve(item, attachments)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str | list | dict):
                value[key] = _resolve(item, attachments)
    return value
