"""One Inspect AI sample (an ``EvalSample`` as JSON) as a :class:`~judge.types.Case`.

Shared by the ``inspect`` importer (samples read from a log) and judge's Inspect scorer
(``judge/calibrated``, which builds the same JSON from a ``TaskState``), so that a sample is
judged the same way whichever way it comes in. The fields read (inspect_ai
``src/inspect_ai/log/_log.py`` ``EvalSample``, ``model/_chat_message.py``,
``_util/content.py``):

* ``id`` (int or string), ``epoch`` (from 1), ``uuid`` (unique per sample and epoch);
* ``input``: a string, or chat messages: the **task** is the string, or the text of the
  input's last user message (the earlier ones are few-shot examples or context);
* ``messages`` (the final conversation) make the **trace**: ``system`` messages are system
  turns; ``user`` messages are messages; an ``assistant`` message is one step: its
  ``reasoning`` content parts become ``note`` turns (``summary`` when redacted), its text a
  message, each ``tool_calls`` entry (``id``, ``function``, ``arguments``) a tool call
  (a ``parse_error`` adds an error turn), and a server-side ``tool_use`` part a call and its
  result; a ``tool`` message is the result of the call ``tool_call_id`` names: with
  ``error: {type, message}`` it is an error turn (its text says the type and message).
  Images, audio, video, documents and data parts are shown as ``[image]`` etc.
  The agent's last message is the final answer;
* the **diff**: a scorer's ``metadata.model_patch`` (inspect_evals' SWE-bench scorers keep
  the agent's patch there), else the output of the last ``git diff`` a tool printed;
  ``meta.diff_source`` says which;
* ``scores`` (``{scorer: {value, answer, explanation, reason, metadata}}``; the legacy
  single ``score``) are kept in ``meta.scores`` (an unscored ``NaN`` value as null, with
  ``unscored: true``). The **official outcome** is the value of the log's headline scorer
  (``results.headline``, else the first scorer): ``C``, ``yes``, ``true``, ``True`` or the
  number 1 is ``pass``; ``I``, ``N`` (no answer), ``no``, ``false``, ``False`` or 0 is
  ``fail`` (as inspect's ``value_to_float`` counts them); anything else (``P``, 0.5, NaN,
  a dict) gives no outcome;
* ``error`` (the sample failed; ``{message, traceback}``): the case is kept, with
  ``meta.error`` and ``slices.infra_error`` true, and no outcome unless a scorer scored it
  anyway (``score_on_error``): ``judge runset`` makes it an ``infra_error`` run, left out of
  pass@k as Inspect leaves it out of its metrics. ``limit`` (a sample that hit a message,
  token or time limit: scored as usual by Inspect) goes to ``meta.limit``.

Case: id ``<sample id>/epoch<n>/<uuid>`` (the uuid keeps runs of several evals apart; old
logs without one use the eval id), ``agent_model`` and ``slices.agent_model`` the eval's
model, ``slices.task_id`` the sample id, ``slices.trial`` the epoch, ``slices.eval_task`` the
task's name; the eval id, run id, task id and version, the target, the sample's metadata and
timing go to ``meta``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from judge.errors import InputError
from judge.traces._common import Loose, TraceBuilder, maybe_json, schema_error, to_text
from judge.types import Case

#: Log schema versions this reader knows: 1 and 2 (``LOG_SCHEMA_VERSION = 2`` in
#: ``src/inspect_ai/_util/constants.py``) and 3 (seen in ``.eval`` logs of inspect_ai
#: 0.3.135, whose samples read like version 2's).
KNOWN_VERSIONS = (1, 2, 3)
_PASS = frozenset({"c", "yes", "true"})
_FAIL = frozenset({"i", "n", "no", "false"})
_DIFF_KEYS = ("model_patch", "patch", "diff")


class _Dataset(Loose):
    name: str | None = None


class _Spec(Loose):
    task: str | None = None
    model: str | None = None
    eval_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    task_version: int | str | None = None
    created: str | None = None
    dataset: _Dataset | None = None
    packages: dict[str, str] | None = None
    scorers: list[dict[str, Any]] | None = None


class _Header(Loose):
    version: int | None = None
    status: str | None = None
    eval: _Spec
    results: dict[str, Any] | None = None


@dataclass(frozen=True)
class EvalInfo:
    """What the cases of a log take from its header (the ``EvalSpec`` and the results)."""

    file: str
    task: str | None = None
    model: str | None = None
    eval_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    task_version: int | str | None = None
    version: int | None = None
    status: str | None = None
    inspect_version: str | None = None
    #: The score whose value is the official outcome (the headline scorer's).
    headline: str | None = None

    @classmethod
    def of(cls, header: Any, file: str, errors: list[InputError], where: str = "") -> EvalInfo:
        """The info of a header (a JSON object; ``where``: the ``.eval`` member it came from).
        A header that does not validate adds an error and gives an empty info: the samples
        are still read."""
        parsed = checked(_Header, header, errors, file, where=where)
        if parsed is None:
            return cls(file=file)
        spec = parsed.eval
        return cls(
            file=file,
            task=spec.task,
            model=spec.model,
            eval_id=spec.eval_id,
            run_id=spec.run_id,
            task_id=spec.task_id,
            task_version=spec.task_version,
            version=parsed.version,
            status=parsed.status,
            inspect_version=(spec.packages or {}).get("inspect_ai"),
            headline=_headline(parsed.results, spec.scorers),
        )


def _headline(results: dict[str, Any] | None, scorers: list[dict[str, Any]] | None) -> str | None:
    """The name of the headline score: ``results.headline.score``, else the first result's
    name, else the first scorer's (inspect's own default headline)."""
    if isinstance(results, dict):
        headline = results.get("headline")
        if isinstance(headline, dict) and isinstance(headline.get("score"), str):
            return str(headline["score"])
        scores = results.get("scores")
        if isinstance(scores, list) and scores and isinstance(scores[0], dict):
            name = scores[0].get("name")
            if isinstance(name, str):
                return name
    if scorers and isinstance(scorers[0], dict) and isinstance(scorers[0].get("name"), str):
        return str(scorers[0]["name"])
    return None


class _ToolCall(Loose):
    id: str | None = None
    function: str
    arguments: Any = None
    parse_error: str | None = None


class _ToolError(Loose):
    type: str = "unknown"
    message: str = ""


class _Message(Loose):
    role: str
    content: str | list[Any] = ""
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    function: str | None = None
    error: _ToolError | None = None


class _Sample(Loose):
    id: int | str
    epoch: int = 1
    input: str | list[Any] = ""
    target: str | list[str] | None = None
    messages: list[Any] | None = None
    scores: dict[str, Any] | None = None
    score: dict[str, Any] | None = None  # logs before scores were keyed by scorer
    metadata: dict[str, Any] | None = None
    error: dict[str, Any] | str | None = None
    uuid: str | None = None
    limit: dict[str, Any] | None = None
    total_time: float | None = None
    working_time: float | None = None


@dataclass
class SampleCase:
    """The case of a sample and its official outcome (``pass``, ``fail`` or None)."""

    case: Case
    official: str | None = None
    notes: list[str] = field(default_factory=list)


def field_at(where: str, path: str) -> str | None:
    """A field named from the file: ``samples[3].messages[2]`` in a ``.json`` log,
    ``samples/add_epoch_1.json:messages[2]`` for a member of a ``.eval``."""
    if not path or not where:
        return (path or where) or None
    return f"{where}:{path}" if where.endswith(".json") else f"{where}.{path}"


def checked(
    model: type[BaseModel],
    data: Any,
    errors: list[InputError],
    file: str,
    *,
    where: str = "",
    line: int | None = None,
    label: str = "",
) -> Any:
    """``model`` validated from ``data``, or None with an InputError naming the field from
    the file (:func:`field_at`), prefixed with ``label`` (the sample) when given."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = schema_error(exc, file, line=line)
        reason = f"{label}: {first.reason}" if label else first.reason
        errors.append(
            InputError(reason, file=file, line=line, field=field_at(where, first.field or ""))
        )
        return None


def outcome(value: Any) -> str | None:
    """``pass`` / ``fail`` for a score value Inspect counts as 1 / 0, else None."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, int | float):
        return "pass" if value == 1 else "fail" if value == 0 else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _PASS:
            return "pass"
        if text in _FAIL:
            return "fail"
        try:
            return outcome(float(text))
        except ValueError:
            return None
    return None


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite number replaced by None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    return value


class SampleReader:
    """Builds the case of one sample; errors name the file, the sample's place (``where``:
    a ``.eval`` member or ``samples[i]``), its line in a ``.json`` log, and the field."""

    def __init__(
        self, info: EvalInfo, where: str, errors: list[InputError], line: int | None = None
    ) -> None:
        self.info, self.where, self.errors, self.line = info, where, errors, line
        self.builder = TraceBuilder()
        self.step = 0
        self.label = ""

    def at(self, path: str) -> str:
        """The field ``path`` of this sample, named from the file (:func:`field_at`)."""
        return field_at(self.where, path) or ""

    def error(self, message: str, path: str = "", hint: str | None = None) -> None:
        """Add an error about this sample."""
        self.errors.append(
            InputError(message, file=self.info.file, line=self.line, field=self.at(path), hint=hint)
        )

    def read(self, raw: Any) -> SampleCase | None:
        """The case of sample ``raw`` (a JSON object), or None with an error."""
        sample = self.sample(raw)
        if sample is None:
            return None
        for index, message in enumerate(sample.messages or []):
            self.message(message, f"messages[{index}]")
        turns = self.builder.finish()
        scores = dict(sample.scores or {})
        if not scores and isinstance(sample.score, dict):
            scores[self.info.headline or "score"] = sample.score
        official, scored_by = self.official(scores)
        diff, diff_source = self.diff(scores)
        error = _error_text(sample.error)
        meta = self.meta(sample, scores, official, scored_by, diff_source, error)
        task = _task_text(sample.input)
        if not task.strip():
            meta["task_missing"] = True
        unique = sample.uuid or self.info.eval_id or self.info.run_id
        case = Case(
            id=f"{sample.id}/epoch{sample.epoch}" + (f"/{unique}" if unique else ""),
            kind="agent_run",
            task=task,
            diff=diff,
            trace=turns,
            agent_model=self.info.model,
            slices={
                "agent": "inspect",
                "eval_task": self.info.task,
                "task_id": str(sample.id),
                "trial": sample.epoch,
                "agent_model": self.info.model,
                "infra_error": error is not None and official is None,
            },
            meta={k: v for k, v in meta.items() if v is not None},
        )
        notes = [f"{self.label} failed: {error[:200]}"] if error is not None else []
        return SampleCase(case, official, notes)

    def sample(self, raw: Any) -> _Sample | None:
        """Sample ``raw`` validated, with messages to judge; None with an error otherwise."""
        if not isinstance(raw, dict):
            self.error(f"a sample is a JSON object, not {type(raw).__name__}")
            return None
        sample = checked(
            _Sample, raw, self.errors, self.info.file, where=self.where, line=self.line
        )
        if sample is None:
            return None
        label = self.label = f"sample {sample.id!r} epoch {sample.epoch}"
        if not sample.messages:
            failed = _error_text(sample.error)
            if failed is None:
                self.error(f"{label} has no messages: nothing to judge", "messages")
            else:
                self.error(
                    f"{label} failed before any message ({failed[:200]}): nothing to judge",
                    "messages",
                    hint="a harness failure is not a judged run (in a run set, status infra_error)",
                )
            return None
        return sample

    def meta(
        self,
        sample: _Sample,
        scores: dict[str, Any],
        official: str | None,
        scored_by: str | None,
        diff_source: str | None,
        error: str | None,
    ) -> dict[str, Any]:
        """The case's meta: where the sample comes from (eval, run, task, log, place in the
        file), its scores and official outcome, its error, limit and timing (None values are
        dropped by the caller)."""
        return {
            "format": "inspect",
            "eval_task": self.info.task,
            "eval_id": self.info.eval_id,
            "run_id": self.info.run_id,
            "eval_task_id": self.info.task_id,
            "eval_task_version": self.info.task_version,
            "log_version": self.info.version,
            "log_status": self.info.status,
            "inspect_version": self.info.inspect_version,
            "sample_id": sample.id,
            "epoch": sample.epoch,
            "uuid": sample.uuid,
            "where": self.where,
            "line": self.line,
            "target": sample.target,
            "scores": finite(_kept_scores(scores)) or None,
            "official": {"scorer": scored_by, "label": official} if scored_by else None,
            "diff_source": diff_source,
            "error": error,
            "limit": sample.limit,
            "total_time": sample.total_time,
            "working_time": sample.working_time,
            "sample_metadata": finite(sample.metadata) or None,
        }

    # --- messages --------------------------------------------------------------------------

    def message(self, raw: Any, path: str) -> None:
        """Add one message's turns; an error (and nothing else) when it is malformed."""
        message = checked(
            _Message,
            raw,
            self.errors,
            self.info.file,
            where=self.at(path),
            line=self.line,
            label=self.label,
        )
        if message is None:
            return
        source = self.at(path)
        role = message.role
        if role == "system":
            self.builder.add("system", self.text(message.content, source), "system", source)
        elif role == "user":
            self.builder.add("user", self.text(message.content, source), "message", source)
        elif role == "assistant":
            self.assistant(message, source)
        elif role == "tool":
            self.tool(message, source)
        else:
            self.builder.add(role, self.text(message.content, source), "note", source)

    def assistant(self, message: _Message, source: str) -> None:
        self.step += 1
        self.text(message.content, source, step=self.step)
        for j, call in enumerate(message.tool_calls or []):
            where = f"{source}.tool_calls[{j}]"
            self.builder.call(call.id, call.function, call.arguments, where, self.step)
            if call.parse_error:
                text = f"the arguments of {call.function} could not be parsed: {call.parse_error}"
                self.builder.add("assistant", text, "error", where, self.step)

    def tool(self, message: _Message, source: str) -> None:
        text = self.text(message.content, source, emit=False)
        error = message.error
        if error is not None:
            said = f"tool error ({error.type}): {error.message}"
            text = f"{said}\n{text}" if text.strip() else said
        self.builder.result(
            message.tool_call_id, text, source, is_error=error is not None, tool=message.function
        )

    def text(
        self, content: str | list[Any], source: str, *, step: int | None = None, emit: bool = True
    ) -> str:
        """The text of a message's content. For an assistant (``emit``, with its ``step``),
        add its turns: reasoning as notes, text as messages, server-side tool use as calls
        and results, in the order of the parts."""
        if isinstance(content, str):
            if emit and step is not None and content.strip():
                self.builder.add("assistant", content, "message", source, step)
            return content
        texts: list[str] = []
        pending: list[str] = []

        def flush() -> None:
            if pending and emit and step is not None and "\n".join(pending).strip():
                self.builder.add("assistant", "\n".join(pending), "message", source, step)
            pending.clear()

        for index, part in enumerate(content):
            where = f"{source}.content[{index}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(part, str):
                texts.append(part)
                pending.append(part)
            elif kind == "text":
                value = to_text(part.get("text"))
                texts.append(value)
                pending.append(value)
            elif kind == "reasoning" and step is not None and emit:
                flush()
                thought = part.get("reasoning")
                if part.get("redacted") or not isinstance(thought, str):
                    thought = part.get("summary") or "[reasoning redacted]"
                self.builder.add("assistant", to_text(thought), "note", where, step)
            elif kind == "tool_use" and step is not None and emit:
                flush()
                self.server_tool(part, where, step)
            elif kind == "reasoning":
                continue  # reasoning of a user or tool message: not the agent's
            else:
                shown = f"[{to_text(kind) if kind else 'part'}]"
                texts.append(shown)
                pending.append(shown)
        flush()
        return "\n".join(texts)

    def server_tool(self, part: dict[str, Any], where: str, step: int) -> None:
        """A provider-side tool use (web search, MCP, code execution): a call and its result."""
        call_id = to_text(part.get("id")) or None
        name = to_text(part.get("name")) or to_text(part.get("tool_type")) or "tool"
        self.builder.call(call_id, name, maybe_json(part.get("arguments")), where, step)
        error = part.get("error")
        result = to_text(part.get("result"))
        if error:
            result = f"tool error: {to_text(error)}\n{result}".rstrip()
        self.builder.result(call_id, result, where, is_error=bool(error), tool=name)

    # --- outcome and diff --------------------------------------------------------------------

    def official(self, scores: dict[str, Any]) -> tuple[str | None, str | None]:
        """(outcome, scorer) from the headline score (else the only or first score)."""
        name = self.info.headline if self.info.headline in scores else None
        if name is None and scores:
            name = next(iter(scores))
        if name is None:
            return None, None
        score = scores[name]
        value = score.get("value") if isinstance(score, dict) else None
        return outcome(value), name

    def diff(self, scores: dict[str, Any]) -> tuple[str | None, str | None]:
        """The agent's patch from a scorer's metadata, else the last printed git diff."""
        for name, score in scores.items():
            metadata = score.get("metadata") if isinstance(score, dict) else None
            if not isinstance(metadata, dict):
                continue
            for key in _DIFF_KEYS:
                value = metadata.get(key)
                if isinstance(value, str) and value.strip():
                    return value, f"scores.{name}.metadata.{key}"
        printed = self.builder.printed_diff()
        return (printed[1], printed[0]) if printed else (None, None)


def _task_text(value: str | list[Any]) -> str:
    """The task: the input string, or the text of the input's last user message."""
    if isinstance(value, str):
        return value
    for message in reversed(value):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "\n".join(
                    to_text(p.get("text"))
                    if isinstance(p, dict) and p.get("type") == "text"
                    else f"[{to_text(p.get('type')) if isinstance(p, dict) else 'part'}]"
                    for p in content
                )
    return ""


def _error_text(error: dict[str, Any] | str | None) -> str | None:
    if error is None:
        return None
    if isinstance(error, str):
        return error or "the sample failed"
    message = error.get("message")
    return to_text(message) if message else "the sample failed"


def _kept_scores(scores: dict[str, Any]) -> dict[str, Any]:
    """The scores as kept in ``meta.scores``: value, answer, explanation, reason, metadata;
    an unscored (NaN) value as null with ``unscored: true``."""
    kept: dict[str, Any] = {}
    for name, score in scores.items():
        if not isinstance(score, dict):
            continue
        entry = {
            k: score[k]
            for k in ("value", "answer", "explanation", "reason", "metadata")
            if score.get(k) is not None
        }
        value = score.get("value")
        if isinstance(value, float) and math.isnan(value):
            entry["unscored"] = True
        kept[name] = entry
    return kept


def inspect_case(
    sample: Mapping[str, Any],
    *,
    model: str | None = None,
    task: str | None = None,
    file: str = "Inspect sample",
    where: str = "sample",
) -> tuple[Case | None, list[InputError]]:
    """The case of one sample given as ``EvalSample`` JSON (judge's Inspect scorer builds it
    from a ``TaskState``), and the errors met; ``model`` is the eval's model."""
    errors: list[InputError] = []
    info = EvalInfo(file=file, model=model, task=task)
    read = SampleReader(info, where, errors).read(dict(sample))
    return (read.case if read is not None else None), errors
