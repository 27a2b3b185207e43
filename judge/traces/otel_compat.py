"""Other conventions for LLM spans, read into the GenAI semconv attributes :mod:`.otel` reads.

:func:`normalise` takes a span's attributes (and its events) and adds, where absent, the
``gen_ai.*`` attributes of the current conventions (messages in the *parts* form), so that one
reader builds the trace whatever instrumentation wrote the spans. It reads:

* **OpenLLMetry** (traceloop ``opentelemetry-instrumentation-*`` up to 0.54, and the packages
  that still use its "legacy attributes"): indexed flat attributes
  ``gen_ai.prompt.<i>.role`` / ``.content`` / ``.tool_call_id`` / ``.tool_calls.<j>.id|name|
  arguments`` and ``gen_ai.completion.<i>.role`` / ``.content`` / ``.finish_reason`` /
  ``.tool_calls.<j>.*`` / ``.function_call.name|arguments``; ``llm.request.type``
  (``chat`` / ``completion``) gives the operation. The traceloop SDK's ``traceloop.span.kind``
  ``tool`` / ``agent`` spans (``traceloop.entity.name`` / ``.input`` / ``.output``) become
  tool runs and agent runs.
* **GenAI semconv before 1.37** (role/content messages): ``gen_ai.prompt`` /
  ``gen_ai.completion`` as JSON strings of ``[{"role", "content"}]`` (v1.26-1.27, as span
  attributes or on ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events);
  span events ``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message``
  / ``gen_ai.tool.message`` / ``gen_ai.choice`` (v1.28-1.36) with the body fields (``content``,
  ``role``, ``tool_calls``, ``id``, ``message``) as event attributes; and message lists in
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` whose items have ``content`` (and
  OpenAI-style ``tool_calls`` / ``tool_call_id``) instead of ``parts`` (:func:`parts_message`).
* **OpenInference** (Arize Phoenix): ``openinference.span.kind`` ``LLM`` (``llm.input_messages.
  <i>.message.role|content|contents.<k>.message_content.*|tool_calls.<j>.tool_call.id|function.
  name|function.arguments|tool_call_id``, ``llm.output_messages.*``, ``llm.model_name``,
  ``llm.provider`` / ``llm.system``, ``llm.token_count.prompt|completion``), ``TOOL``
  (``tool.name``, ``tool_call.id`` / ``tool.id``, the arguments in ``input.value`` — else
  ``tool.parameters`` — and the result in ``output.value``), ``AGENT`` (``input.value`` as the
  user's message when it is plain text, ``output.value`` as the answer, ``agent.name``);
  ``session.id`` is the conversation id.
* **MLflow** (its tracing SDK and autologging, and what its server adds to OTLP spans):
  ``mlflow.spanType`` ``AGENT`` (an agent run), ``CHAT_MODEL`` / ``LLM`` (model calls),
  ``TOOL`` / ``RETRIEVER`` (tool runs: the span name is the tool, ``mlflow.spanInputs`` the
  arguments, ``mlflow.spanOutputs`` the result), with the messages read from
  ``mlflow.spanInputs`` / ``mlflow.spanOutputs`` (JSON values or JSON strings) in the shapes
  MLflow's autologging records: OpenAI chat (``{"messages"}`` in, ``{"choices": [{"message"}]}``
  out), the OpenAI Responses API (``{"input"}`` in, ``{"output": [items]}`` out), Anthropic
  (``system`` and content blocks ``text`` / ``tool_use`` / ``tool_result``), LangChain messages
  (``type`` human / ai / system / tool, ``tool_calls`` with ``args``; ``generations`` out), a
  single message, or plain text; an agent's input that is a JSON object with one text field
  (``query``, ``question``, ``input``, ...) is the user's message, any other output its JSON.
  ``mlflow.chat.messages`` (MLflow 2.x: the whole conversation) is read when the inputs hold no
  messages; ``mlflow.llm.model`` (else the request's ``model``), ``mlflow.llm.provider`` and
  ``mlflow.chat.tokenUsage`` give the model, provider and token counts. Spans of the other
  types (``CHAIN``, ``PARSER``, ``EMBEDDING``, ...) carry no turns. The MLflow reader only adds
  what the span lacks: spans that also carry another convention (MLflow keeps an OTLP span's own
  attributes and adds its ``mlflow.*`` ones) are read from that one first.

Unsure, stated: no public sample of the v1.28-1.36 events *as span events* was found (the
conventions define them as log events with a body); the attribute names above follow the body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from judge.traces._common import maybe_json

#: The conventions :func:`normalise` recognises (recorded in ``Case.meta["conventions"]``).
OPENLLMETRY = "openllmetry"
OPENINFERENCE = "openinference"
MLFLOW = "mlflow"
SEMCONV_ROLE_CONTENT = "gen_ai role/content (semconv < 1.37)"

_LEGACY_INPUT_EVENTS = (
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
)


def normalise(
    attrs: dict[str, Any], events: Iterable[tuple[str, Mapping[str, Any]]] = ()
) -> tuple[dict[str, Any], str | None]:
    """``attrs`` with the current GenAI attributes added from another convention, and the
    name of that convention (None when the span uses none of them)."""
    out = dict(attrs)
    found: str | None = None
    if _openllmetry(attrs, out):
        found = OPENLLMETRY
    elif _role_content(attrs, list(events), out):
        found = SEMCONV_ROLE_CONTENT
    if _openinference(attrs, out):
        found = OPENINFERENCE
    if _traceloop_entity(attrs, out):
        found = found or OPENLLMETRY
    if _mlflow(attrs, out):
        found = found or MLFLOW
    return out, found


# ---------------------------------------------------------------------------------------------
# Chat messages (OpenAI style) to the parts form.


def parts_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """``{"role", "content", "tool_calls"?, "tool_call_id"?}`` (OpenAI chat style, as in the
    pre-1.37 conventions) as ``{"role", "parts"}``."""
    role = message.get("role")
    role = role if isinstance(role, str) and role else "user"
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        call_id = message.get("tool_call_id", message.get("id"))
        parts.append({"type": "tool_call_response", "id": call_id, "response": content})
    else:
        parts.extend(_content_parts(content))
    for call in _list(message.get("tool_calls")):
        if isinstance(call, Mapping):
            parts.append(_tool_call_part(call))
    function_call = message.get("function_call")
    if isinstance(function_call, Mapping):
        parts.append(
            {
                "type": "tool_call",
                "id": None,
                "name": function_call.get("name"),
                "arguments": function_call.get("arguments"),
            }
        )
    out: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(message.get("finish_reason"), str):
        out["finish_reason"] = message["finish_reason"]
    return out


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str):
                parts.append({"type": "text", "content": item})
            elif isinstance(item, Mapping) and isinstance(item.get("text"), str):
                parts.append({"type": "text", "content": item["text"]})
            elif (
                isinstance(item, Mapping)
                and "parts" not in item
                and isinstance(item.get("content"), str)
            ):
                parts.append({"type": str(item.get("type") or "text"), "content": item["content"]})
            elif isinstance(item, Mapping):
                parts.append({"type": str(item.get("type") or "part")})
        return parts
    return [{"type": "text", "content": json.dumps(content, ensure_ascii=False, default=str)}]


def _tool_call_part(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call in any of the shapes seen: OpenAI ``{id, function: {name, arguments}}``,
    flat ``{id, name, arguments}``, OpenInference ``{tool_call: {id, function: {...}}}``."""
    inner = call.get("tool_call")
    if isinstance(inner, Mapping):
        call = inner
    function = call.get("function")
    source: Mapping[str, Any] = function if isinstance(function, Mapping) else call
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": source.get("name"),
        "arguments": source.get("arguments"),
    }


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# Flat indexed attributes to trees.


def _tree(attrs: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The attributes under ``prefix`` as a nested dict (``a.0.b`` -> ``{"0": {"b": v}}``)."""
    root: dict[str, Any] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        node = root
        parts = key[len(prefix) :].split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node.setdefault(parts[-1], value)
    return root


def _indexed(node: Any) -> list[Any]:
    """The children of a tree node keyed 0, 1, 2, ... in index order."""
    if not isinstance(node, dict):
        return []
    keys = sorted((int(k), k) for k in node if k.isdigit())
    return [node[k] for _, k in keys]


def _get(node: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


# ---------------------------------------------------------------------------------------------
# OpenLLMetry.


def _openllmetry(attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    prompts = _indexed(_tree(attrs, "gen_ai.prompt."))
    completions = _indexed(_tree(attrs, "gen_ai.completion."))
    if not prompts and not completions:
        return False
    if prompts:
        out.setdefault("gen_ai.input.messages", [_openllmetry_message(m) for m in prompts])
    if completions:
        out.setdefault(
            "gen_ai.output.messages", [_openllmetry_message(m, "assistant") for m in completions]
        )
    kind = attrs.get("llm.request.type")
    op = {"chat": "chat", "completion": "text_completion"}.get(str(kind), "chat")
    out.setdefault("gen_ai.operation.name", op)
    _rename(
        attrs,
        out,
        ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"),
        ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens"),
    )
    return True


def _rename(attrs: Mapping[str, Any], out: dict[str, Any], *names: tuple[str, str]) -> None:
    """Each (old, new) attribute name of ``names``: the value of ``old`` in ``attrs`` under
    ``new`` in ``out``, unless ``out`` already has one."""
    for old, new in names:
        if old in attrs:
            out.setdefault(new, attrs[old])


def _openllmetry_message(node: Any, default_role: str = "user") -> dict[str, Any]:
    node = node if isinstance(node, dict) else {}
    content = node.get("content")
    if isinstance(content, str) and content[:1] == "[":
        # OpenLLMetry writes list contents (text + image parts) as a JSON string.
        decoded = maybe_json(content)
        if isinstance(decoded, list) and all(isinstance(p, dict) for p in decoded):
            content = decoded
    message = {
        "role": node.get("role") or default_role,
        "content": content,
        "tool_call_id": node.get("tool_call_id"),
        "tool_calls": _indexed(node.get("tool_calls")),
        "finish_reason": node.get("finish_reason"),
    }
    function_call = node.get("function_call")
    if isinstance(function_call, dict):
        message["function_call"] = function_call
    return parts_message(message)


def _traceloop_entity(attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    kind = attrs.get("traceloop.span.kind")
    name = attrs.get("traceloop.entity.name")
    if kind == "tool":
        out.setdefault("gen_ai.operation.name", "execute_tool")
        out.setdefault("gen_ai.tool.name", name)
        arguments = maybe_json(attrs.get("traceloop.entity.input"))
        if (
            isinstance(arguments, dict)
            and "kwargs" in arguments
            and set(arguments) <= {"args", "kwargs"}
        ):
            arguments = arguments["kwargs"]  # the SDK records {"args": [...], "kwargs": {...}}
        out.setdefault("gen_ai.tool.call.arguments", arguments)
        if "traceloop.entity.output" in attrs:
            out.setdefault("gen_ai.tool.call.result", maybe_json(attrs["traceloop.entity.output"]))
        return True
    if kind == "agent":
        out.setdefault("gen_ai.operation.name", "invoke_agent")
        out.setdefault("gen_ai.agent.name", name)
        return True
    return False


# ---------------------------------------------------------------------------------------------
# GenAI semconv before 1.37.


def _role_content(
    attrs: Mapping[str, Any], events: list[tuple[str, Mapping[str, Any]]], out: dict[str, Any]
) -> bool:
    found = False
    sources = {
        "gen_ai.input.messages": attrs.get("gen_ai.prompt"),
        "gen_ai.output.messages": attrs.get("gen_ai.completion"),
    }
    for name, event_attrs in events:
        if name == "gen_ai.content.prompt":
            sources["gen_ai.input.messages"] = sources["gen_ai.input.messages"] or event_attrs.get(
                "gen_ai.prompt"
            )
        elif name == "gen_ai.content.completion":
            sources["gen_ai.output.messages"] = sources[
                "gen_ai.output.messages"
            ] or event_attrs.get("gen_ai.completion")
    for key, raw in sources.items():
        messages = maybe_json(raw)
        if isinstance(messages, list) and key not in out:
            out[key] = [parts_message(m) for m in messages if isinstance(m, Mapping)]
            found = True
    inputs, outputs = [], []
    for name, event_attrs in events:
        if name in _LEGACY_INPUT_EVENTS:
            role = name.split(".")[1]
            inputs.append(
                parts_message(
                    {
                        "role": event_attrs.get("role") or role,
                        "content": _decode_content(event_attrs.get("content")),
                        "tool_calls": maybe_json(event_attrs.get("tool_calls")),
                        "tool_call_id": event_attrs.get("id"),
                    }
                )
            )
        elif name == "gen_ai.choice":
            message = maybe_json(event_attrs.get("message"))
            message = dict(message) if isinstance(message, Mapping) else {}
            message.setdefault("role", "assistant")
            if "content" in event_attrs:
                message.setdefault("content", _decode_content(event_attrs.get("content")))
            message.setdefault("tool_calls", maybe_json(event_attrs.get("tool_calls")))
            message["finish_reason"] = event_attrs.get("finish_reason")
            outputs.append(parts_message(message))
    if inputs and "gen_ai.input.messages" not in out:
        out["gen_ai.input.messages"], found = inputs, True
    if outputs and "gen_ai.output.messages" not in out:
        out["gen_ai.output.messages"], found = outputs, True
    if found:
        out.setdefault("gen_ai.operation.name", "chat")
    return found


def _decode_content(value: Any) -> Any:
    """Content that is a JSON list of parts is decoded; plain text stays text."""
    decoded = maybe_json(value) if isinstance(value, str) and value[:1] == "[" else value
    return decoded


# ---------------------------------------------------------------------------------------------
# OpenInference.


def _openinference(attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    kind = attrs.get("openinference.span.kind")
    if not isinstance(kind, str):
        return False
    kind = kind.upper()
    if isinstance(attrs.get("session.id"), str):
        out.setdefault("gen_ai.conversation.id", attrs["session.id"])
    if kind == "LLM":
        inputs = _indexed(_tree(attrs, "llm.input_messages."))
        outputs = _indexed(_tree(attrs, "llm.output_messages."))
        if inputs:
            out.setdefault("gen_ai.input.messages", [_oi_message(m) for m in inputs])
        if outputs:
            out.setdefault("gen_ai.output.messages", [_oi_message(m, "assistant") for m in outputs])
        out.setdefault("gen_ai.operation.name", "chat")
        if isinstance(attrs.get("llm.model_name"), str):
            out.setdefault("gen_ai.response.model", attrs["llm.model_name"])
        provider = attrs.get("llm.provider") or attrs.get("llm.system")
        if isinstance(provider, str):
            out.setdefault("gen_ai.provider.name", provider)
        _rename(
            attrs,
            out,
            ("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
            ("llm.token_count.completion", "gen_ai.usage.output_tokens"),
        )
    elif kind == "TOOL":
        out.setdefault("gen_ai.operation.name", "execute_tool")
        out.setdefault("gen_ai.tool.name", attrs.get("tool.name"))
        call_id = attrs.get("tool_call.id") or attrs.get("tool.id")
        if isinstance(call_id, str):
            out.setdefault("gen_ai.tool.call.id", call_id)
        arguments = attrs.get("input.value", attrs.get("tool.parameters"))
        if arguments is not None:
            out.setdefault("gen_ai.tool.call.arguments", maybe_json(arguments))
        if "output.value" in attrs:
            out.setdefault("gen_ai.tool.call.result", attrs["output.value"])
    elif kind == "AGENT":
        out.setdefault("gen_ai.operation.name", "invoke_agent")
        if isinstance(attrs.get("agent.name"), str):
            out.setdefault("gen_ai.agent.name", attrs["agent.name"])
        task = _plain_text(attrs.get("input.value"), attrs.get("input.mime_type"))
        if task:
            out.setdefault(
                "gen_ai.input.messages", [parts_message({"role": "user", "content": task})]
            )
        answer = _plain_text(attrs.get("output.value"), attrs.get("output.mime_type"))
        if answer:
            out.setdefault(
                "gen_ai.output.messages", [parts_message({"role": "assistant", "content": answer})]
            )
    else:
        return False
    return True


def _oi_message(node: Any, default_role: str = "user") -> dict[str, Any]:
    message = _get(node, "message")
    message = message if isinstance(message, dict) else {}
    content: Any = message.get("content")
    contents = _indexed(message.get("contents"))
    if content is None and contents:
        content = [
            {
                "type": _get(c, "message_content.type") or "text",
                "text": _get(c, "message_content.text"),
            }
            for c in contents
            if _get(c, "message_content.type") in (None, "text")
        ]
    return parts_message(
        {
            "role": message.get("role") or default_role,
            "content": content,
            "tool_call_id": message.get("tool_call_id"),
            "tool_calls": [
                {"tool_call": _get(c, "tool_call")} for c in _indexed(message.get("tool_calls"))
            ],
        }
    )


def _plain_text(value: Any, mime: Any) -> str | None:
    """The text of an OpenInference ``input.value`` / ``output.value`` when it is text (a JSON
    value is the framework's raw payload, not the user's words)."""
    if not isinstance(value, str) or not value.strip():
        return None
    if mime == "application/json":
        return None
    if value.lstrip()[:1] in ("{", "[") and not isinstance(maybe_json(value), str):
        return None
    return value


# ---------------------------------------------------------------------------------------------
# MLflow.

#: MLflow span types -> the GenAI operation they are (the other types carry no turns).
_MLFLOW_OPS = {
    "AGENT": "invoke_agent",
    "CHAT_MODEL": "chat",
    "LLM": "chat",
    "TOOL": "execute_tool",
    "RETRIEVER": "execute_tool",
}
#: LangChain message types -> roles.
_LANGCHAIN_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
}
#: The fields of an agent's JSON input (output) that hold the user's words (the answer).
_INPUT_TEXT_KEYS = ("query", "question", "input", "prompt", "request", "message", "text")
_OUTPUT_TEXT_KEYS = ("output", "answer", "response", "result", "text", "content")


def _mlflow(attrs: Mapping[str, Any], out: dict[str, Any]) -> bool:
    """MLflow's span attributes as GenAI ones, where the span lacks them; True when it added
    any."""
    before = set(out)
    kind = maybe_json(attrs.get("mlflow.spanType"))
    op = out.get("gen_ai.operation.name")
    if not isinstance(op, str):
        op = _MLFLOW_OPS.get(kind.upper()) if isinstance(kind, str) else None
    if op is None:
        return False
    inputs = maybe_json(attrs.get("mlflow.spanInputs"))
    outputs = maybe_json(attrs.get("mlflow.spanOutputs"))
    if op in ("chat", "text_completion", "generate_content"):
        messages = _mlflow_inputs(inputs, agent=False)
        replies = _mlflow_outputs(outputs, agent=False)
        history = [
            m for m in _list(maybe_json(attrs.get("mlflow.chat.messages"))) if _is_message(m)
        ]
        if not messages and history:
            # MLflow 2.x: the whole conversation, the reply last.
            last = history[-1]
            if _role(last, "user") == "assistant":
                history, replies = history[:-1], replies or [_mlflow_message(last, "assistant")]
            messages = [_mlflow_message(m, "user") for m in history]
        if messages:
            out.setdefault("gen_ai.input.messages", messages)
        if replies:
            out.setdefault("gen_ai.output.messages", replies)
        model = maybe_json(attrs.get("mlflow.llm.model"))
        if not isinstance(model, str) and isinstance(inputs, Mapping):
            model = inputs.get("model")
        response_model = outputs.get("model") if isinstance(outputs, Mapping) else None
        if isinstance(model, str) and model:
            out.setdefault("gen_ai.request.model", model)
        if isinstance(response_model, str) and response_model:
            out.setdefault("gen_ai.response.model", response_model)
        provider = maybe_json(attrs.get("mlflow.llm.provider"))
        if isinstance(provider, str) and provider:
            out.setdefault("gen_ai.provider.name", provider)
        usage = maybe_json(attrs.get("mlflow.chat.tokenUsage"))
        if isinstance(usage, Mapping):
            for key in ("input_tokens", "output_tokens"):
                if isinstance(usage.get(key), int):
                    out.setdefault(f"gen_ai.usage.{key}", usage[key])
    elif op == "execute_tool":
        if inputs is not None:
            out.setdefault("gen_ai.tool.call.arguments", inputs)
        if outputs is not None:
            out.setdefault("gen_ai.tool.call.result", outputs)
    elif op == "invoke_agent":
        messages = _mlflow_inputs(inputs, agent=True)
        replies = _mlflow_outputs(outputs, agent=True)
        if messages:
            out.setdefault("gen_ai.input.messages", messages)
        if replies:
            out.setdefault("gen_ai.output.messages", replies)
    if isinstance(attrs.get("session.id"), str):
        out.setdefault("gen_ai.conversation.id", attrs["session.id"])
    out.setdefault("gen_ai.operation.name", op)
    return set(out) != before


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and (
        "role" in value
        or value.get("type") in _LANGCHAIN_ROLES
        or value.get("type") in ("message", "function_call", "function_call_output")
    )


def _role(message: Mapping[str, Any], default: str) -> str:
    role = message.get("role")
    if isinstance(role, str) and role:
        return role
    return _LANGCHAIN_ROLES.get(str(message.get("type")), default)


def _mlflow_inputs(value: Any, *, agent: bool) -> list[dict[str, Any]]:
    """The input messages of a model call or an agent run, from ``mlflow.spanInputs``."""
    if isinstance(value, str):
        return [parts_message({"role": "user", "content": value})] if value.strip() else []
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value):
            value = value[0]  # LangChain's batch of conversations
        return [_mlflow_message(m, "user") for m in value if _is_message(m)]
    if not isinstance(value, Mapping):
        return []
    if _is_message(value):
        return [_mlflow_message(value, "user")]
    messages = value.get("messages", value.get("input"))
    if isinstance(messages, list | str):
        found = _mlflow_inputs(messages, agent=agent)
        system = value.get("system", value.get("instructions"))
        if (isinstance(system, str) and system.strip()) or isinstance(system, list):
            found.insert(0, parts_message({"role": "system", "content": system}))
        return found
    if isinstance(value.get("prompt"), str):
        return [parts_message({"role": "user", "content": value["prompt"]})]
    if agent:
        texts = [value[k] for k in _INPUT_TEXT_KEYS if isinstance(value.get(k), str)]
        if len(texts) == 1 and texts[0].strip():
            return [parts_message({"role": "user", "content": texts[0]})]
    return []


def _mlflow_outputs(value: Any, *, agent: bool) -> list[dict[str, Any]]:
    """The output messages of a model call or an agent run, from ``mlflow.spanOutputs``."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [parts_message({"role": "assistant", "content": value})]
    if isinstance(value, list):
        return [_mlflow_message(m, "assistant") for m in value if _is_message(m)]
    if not isinstance(value, Mapping):
        return [parts_message({"role": "assistant", "content": value})] if agent else []
    if isinstance(value.get("choices"), list):  # OpenAI chat completions
        found = []
        for choice in value["choices"]:
            if not isinstance(choice, Mapping):
                continue
            message = choice.get("message")
            if isinstance(message, Mapping):
                reply = _mlflow_message(message, "assistant")
            elif isinstance(choice.get("text"), str):
                reply = parts_message({"role": "assistant", "content": choice["text"]})
            else:
                continue
            if isinstance(choice.get("finish_reason"), str):
                reply["finish_reason"] = choice["finish_reason"]
            found.append(reply)
        return found
    if isinstance(value.get("output"), list):  # the OpenAI Responses API, ResponsesAgent
        return [_mlflow_message(m, "assistant") for m in value["output"] if _is_message(m)]
    if isinstance(value.get("generations"), list):  # LangChain ChatResult / LLMResult
        found = []
        for generation in _list(value["generations"][0] if value["generations"] else None):
            if not isinstance(generation, Mapping):
                continue
            message = generation.get("message")
            if isinstance(message, Mapping):
                found.append(_mlflow_message(message, "assistant"))
            elif isinstance(generation.get("text"), str):
                found.append(parts_message({"role": "assistant", "content": generation["text"]}))
        return found
    if _is_message(value) or isinstance(value.get("content"), list):
        return [_mlflow_message(value, "assistant")]
    if isinstance(value.get("messages"), list):  # an agent's state (LangGraph, ChatAgent)
        return [_mlflow_message(m, "assistant") for m in value["messages"] if _is_message(m)]
    if not agent:
        return []
    texts = [value[k] for k in _OUTPUT_TEXT_KEYS if isinstance(value.get(k), str)]
    if len(texts) == 1:
        return [parts_message({"role": "assistant", "content": texts[0]})]
    return [parts_message({"role": "assistant", "content": value})]


def _mlflow_message(message: Mapping[str, Any], default_role: str) -> dict[str, Any]:
    """One message as MLflow's autologging records it (OpenAI, Responses API item, Anthropic,
    LangChain) in the parts form."""
    kind = message.get("type")
    if kind == "function_call":  # Responses API: the model calls a tool
        return {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": message.get("call_id", message.get("id")),
                    "name": message.get("name"),
                    "arguments": message.get("arguments"),
                }
            ],
        }
    if kind == "function_call_output":  # Responses API: the tool's result
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": message.get("call_id"),
                    "response": message.get("output"),
                }
            ],
        }
    role = _role(message, default_role)
    calls = []
    for call in _list(message.get("tool_calls")):
        if isinstance(call, Mapping) and "args" in call and "function" not in call:
            call = {"id": call.get("id"), "name": call.get("name"), "arguments": call["args"]}
        calls.append(call)
    content = message.get("content")
    blocks = _list(content)
    if any(isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in blocks):
        # Anthropic content blocks: the calls and results are in the content.
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                parts.append(
                    {
                        "type": "tool_call",
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "arguments": block.get("input"),
                    }
                )
            elif block.get("type") == "tool_result":
                result = block.get("content")
                if isinstance(result, list):
                    result = "\n".join(
                        str(r.get("text")) if isinstance(r, Mapping) else str(r) for r in result
                    )
                parts.append(
                    {
                        "type": "tool_call_response",
                        "id": block.get("tool_use_id"),
                        "response": result,
                    }
                )
            else:
                parts.extend(_content_parts([block]))
        parts.extend(parts_message({"role": role, "tool_calls": calls})["parts"])
        return {"role": role, "parts": parts}
    return parts_message(
        {
            "role": role,
            "content": content,
            "tool_calls": calls,
            "tool_call_id": message.get("tool_call_id"),
            "finish_reason": message.get("finish_reason"),
        }
    )
