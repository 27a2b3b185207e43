"""``openai-chat``: OpenAI-style chat message lists (Chat Completions ``messages``).

Accepted shapes (one case per conversation):

* a JSON file holding a list of messages (one case, id = the file's stem);
* a JSON file holding ``{"messages": [...], "id"?, "model"?, "metadata"?}`` (one case), or a
  list of such objects (one case each);
* a JSONL file with one such object per line (one case each).

Messages follow :mod:`judge.traces._chat`: ``system`` / ``developer`` / ``user`` /
``assistant`` (with ``tool_calls`` [{``id``, ``function``: {``name``, ``arguments``}}] or the
legacy ``function_call``) / ``tool`` (with ``tool_call_id``) / legacy ``function``. The task is
the first user message; ``agent_model`` is the object's ``model``; ``metadata`` goes to ``meta``.
``step`` counts assistant messages; a tool result shares the step of its call. There is no
diff field in this format: ``diff`` is the output of the last ``git diff`` / ``git show`` a tool
printed, if any. Messages with other roles become ``note`` turns (with a note); other top-level
keys are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.cases import iter_jsonl
from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._chat import ChatConverter
from judge.traces._common import Loose, TraceBuilder, looks_like_jsonl, read_head, read_json
from judge.traces._common import validate as check
from judge.traces.inspect_json import is_json_log_head


class _Conversation(Loose):
    messages: list[Any]
    id: str | int | None = None
    model: str | None = None
    metadata: dict[str, Any] | None = None


class OpenAIChatImporter(BaseImporter):
    """Chat message lists: a JSON list, a ``{"messages"}`` object, or JSONL of those."""

    description = 'OpenAI-style chat messages: JSON list, {"messages": [...]} or JSONL'

    def sniff(self, path: Path) -> bool:
        """Chat messages with roles, and none of the keys of the trajectory formats."""
        head = read_head(path)
        if any(
            key in head
            for key in ('"traj"', '"trajectory', '"submission"', '"exit_status"', '"resourceSpans"')
        ):
            return False
        if is_json_log_head(head):
            return False  # an Inspect AI .json log: its samples hold chat messages too
        start = head.lstrip()[:1]
        return start in ("[", "{") and '"role"' in head and (start == "[" or '"messages"' in head)

    def load(self, path: Path) -> ImportResult:
        """Every conversation of ``path`` as a case; an error for each bad record."""
        out = ImportResult()
        file = str(path)
        if looks_like_jsonl(path):
            for number, obj in iter_jsonl(path):
                if isinstance(obj, InputError):
                    out.errors.append(obj)
                    continue
                conversation = check(_Conversation, obj, out.errors, file, line=number)
                if conversation is not None:
                    _add_case(
                        out,
                        file,
                        conversation,
                        f"{path.stem}:line{number}",
                        line=number,
                        prefix="messages",
                    )
            return out
        data = read_json(path)
        if isinstance(data, InputError):
            out.errors.append(data)
        elif isinstance(data, list) and not any(
            isinstance(m, dict) and "messages" in m for m in data
        ):
            _add_case(out, file, _Conversation(messages=data), path.stem, prefix="")
        elif isinstance(data, list):
            for index, obj in enumerate(data):
                conversation = check(_Conversation, obj, out.errors, file, where=f"[{index}]")
                if conversation is not None:
                    _add_case(
                        out,
                        file,
                        conversation,
                        f"{path.stem}#{index}",
                        prefix=f"[{index}].messages",
                    )
        else:
            conversation = check(_Conversation, data, out.errors, file)
            if conversation is not None:
                _add_case(out, file, conversation, path.stem, prefix="messages")
        return out


def _add_case(
    out: ImportResult,
    file: str,
    conversation: _Conversation,
    default_id: str,
    *,
    prefix: str,
    line: int | None = None,
) -> None:
    """Append the case of one conversation (its bad messages become errors)."""
    builder = TraceBuilder()
    converter = ChatConverter(builder, out.errors, file, line=line)
    converter.add_all(conversation.messages, prefix)
    builder.finish()
    case_id = str(conversation.id) if conversation.id is not None else default_id
    if any(c.id == case_id for c in out.cases):
        out.errors.append(
            InputError(
                f"duplicate conversation id {case_id!r}; skipped", file=file, line=line, field="id"
            )
        )
        return
    out.notes.extend(converter.role_notes(f"{file}: {case_id}"))
    meta: dict[str, Any] = dict(conversation.metadata or {})
    diff = builder.noted_diff(meta)
    out.cases.append(converter.case(case_id, diff=diff, model=conversation.model, meta=meta))
