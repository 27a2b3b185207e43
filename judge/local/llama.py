"""The ``local/`` litellm provider: the embedded judge model, in-process, through llama.cpp.

``litellm.completion(model="local/qwen2.5-coder-1.5b", ...)`` (or ``local/gguf:/abs/x.gguf``)
runs here once :func:`register_provider` has been called. Honoured request parameters:
``messages``, ``max_tokens`` (default 384), ``temperature`` (default 0: greedy), ``seed``,
``stop``, ``response_format`` (OpenAI ``json_schema`` or ``json_object`` [+ ``schema``], mapped
to llama.cpp's grammar-constrained ``{"type": "json_object", "schema": ...}``), ``tools`` with
``tool_choice`` (a named or the only function is grammar-constrained; instructor's Mode.TOOLS),
``logprobs`` and ``top_logprobs``. Other parameters are ignored. Cost is always 0.

Log-probabilities (``logprobs=True``) are read without ``logits_all`` (which doubles the time of
a call) by a logits processor that sees the next-token scores at each generation step, before
any penalty, grammar mask or sampling: they are the model's raw distribution at temperature 1.
``choices[0].logprobs`` is OpenAI's format::

    {"content": [
        {"token": "{\\"", "logprob": -0.01, "bytes": [123, 34],
         "top_logprobs": [{"token": "{\\"", "logprob": -0.01, "bytes": [123, 34]}, ...]},
        ...]}

one entry per generated token of the message text (or of the tool call's arguments), the EOS
token excluded, ``top_logprobs`` sorted by decreasing logprob (``top_logprobs`` of them, 0 when
not given). Verdict positions get more: when the response schema (or the chosen tool's
parameters) has a ``verdict`` property with an ``enum`` (through ``$ref``/``anyOf`` too), then
at every step where the generated text ends with the opening quote of that property's value
(``"verdict": "`` or ``"verdict":"``), ``top_logprobs`` also holds the first token of every enum
value, whatever its rank, so that ``P(label)`` can be read for all labels in one position. One
step earlier (text ending ``"verdict":`` or ``"verdict": ``) tokens that would merge the opening
quote with a label (the Qwen vocabulary has ``"A`` and ``"B``) are masked, after their raw
scores are recorded: the value therefore always begins with a quote token and every label
competes at the same position. Everything else is sampled from the unchanged distribution.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from judge.defaults import DEFAULT_MAX_TOKENS, env_positive
from judge.digests import full_digest
from judge.errors import JudgeError
from judge.local.weights import (
    PROVIDER,
    ResolvedModel,
    cached_sha256,
    known_models,
    resolve_model,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

#: The JSON property whose value is the verdict label (the same key judge.providers reads).
VERDICT_KEY = "verdict"
DEFAULT_N_CTX = 4096
DEFAULT_TEMPERATURE = 0.0


class LocalRequestError(JudgeError):
    """A request the local provider cannot serve as asked (maps to HTTP 400)."""


# --- request mapping (pure) ---------------------------------------------------------------------
def map_response_format(response_format: Any) -> dict[str, Any] | None:
    """OpenAI ``response_format`` -> llama.cpp's (``{"type": "json_object", "schema": ...}``)."""
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise LocalRequestError(
            f"response_format must be a JSON object, got {type(response_format).__name__}"
        )
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
        return {"type": "json_object", **({"schema": dict(schema)} if schema else {})}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if not isinstance(schema, Mapping):
            raise LocalRequestError("response_format json_schema has no 'json_schema.schema'")
        return {"type": "json_object", "schema": dict(schema)}
    raise LocalRequestError(
        f"unsupported response_format type {kind!r}: use json_schema, json_object or text"
    )


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    node: Any = root
    if not ref.startswith("#/"):
        return None
    for part in ref[2:].split("/"):
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~"))
            if isinstance(node, Mapping)
            else None
        )
    return node


def _enum_values(node: Any, root: Mapping[str, Any], seen: set[str]) -> list[str]:
    """String enum/const values of a property schema, following $ref, anyOf/oneOf/allOf."""
    if not isinstance(node, Mapping):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return []
        return _enum_values(_resolve_ref(ref, root), root, seen | {ref})
    values = [v for v in node.get("enum", []) if isinstance(v, str)]
    if isinstance(node.get("const"), str):
        values.append(node["const"])
    for combinator in ("anyOf", "oneOf", "allOf"):
        for member in node.get(combinator, []) or []:
            values.extend(_enum_values(member, root, seen))
    return values


def schema_labels(schema: Any, key: str = VERDICT_KEY) -> list[str]:
    """The enum values of every ``key`` property anywhere in ``schema`` (in order, unique)."""
    if not isinstance(schema, Mapping):
        return []
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            properties = node.get("properties")
            if isinstance(properties, Mapping) and key in properties:
                found.extend(_enum_values(properties[key], schema, set()))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return list(dict.fromkeys(found))


def chosen_tool(tools: Any, tool_choice: Any) -> Mapping[str, Any] | None:
    """The tool a request forces (a named one, or the only one when 'required'), if any."""
    if not tools:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
        raise LocalRequestError("tools must be a list of OpenAI tool objects")
    if isinstance(tool_choice, Mapping):
        name = (tool_choice.get("function") or {}).get("name")
        for tool in tools:
            if (tool.get("function") or {}).get("name") == name:
                return tool
        raise LocalRequestError(f"tool_choice names '{name}', which is not among the tools")
    if tool_choice == "required" and len(tools) == 1:
        return tools[0]
    return None


@dataclass(frozen=True)
class GenerationParams:
    """What the provider takes from litellm's optional_params, checked."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    seed: int | None = None
    stop: tuple[str, ...] = ()
    response_format: dict[str, Any] | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    logprobs: bool = False
    top_logprobs: int = 0
    labels: tuple[str, ...] = ()

    @classmethod
    def from_optional_params(cls, params: Mapping[str, Any]) -> GenerationParams:
        """Validate and normalise litellm's optional_params for a local call."""
        max_tokens = params.get("max_tokens")
        if max_tokens is None:
            max_tokens = params.get("max_completion_tokens")
        max_tokens = DEFAULT_MAX_TOKENS if max_tokens is None else _int(max_tokens, "max_tokens")
        if max_tokens < 1:
            raise LocalRequestError(f"max_tokens must be at least 1, got {max_tokens}")
        temperature = params.get("temperature")
        temperature = DEFAULT_TEMPERATURE if temperature is None else float(temperature)
        if temperature < 0:
            raise LocalRequestError(f"temperature must be >= 0, got {temperature}")
        seed = params.get("seed")
        stop = params.get("stop") or ()
        stop = (stop,) if isinstance(stop, str) else tuple(str(s) for s in stop)
        response_format = map_response_format(params.get("response_format"))
        tools = params.get("tools") or None
        tool_choice = params.get("tool_choice")
        if tool_choice == "none":
            tools, tool_choice = None, None
        tool = chosen_tool(tools, tool_choice)
        if tool is not None:
            tool_choice = {"type": "function", "function": {"name": tool["function"]["name"]}}
        schema = (
            tool["function"].get("parameters")
            if tool is not None
            else (response_format or {}).get("schema")
        )
        logprobs = bool(params.get("logprobs"))
        top = params.get("top_logprobs")
        top_logprobs = 0 if top is None else _int(top, "top_logprobs")
        if top_logprobs < 0:
            raise LocalRequestError(f"top_logprobs must be >= 0, got {top_logprobs}")
        return cls(
            max_tokens=max_tokens,
            temperature=temperature,
            seed=None if seed is None else _int(seed, "seed"),
            stop=stop,
            response_format=response_format,
            tools=tools,
            tool_choice=tool_choice,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            labels=tuple(schema_labels(schema)) if logprobs else (),
        )


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise LocalRequestError(f"{name} must be an integer, got {value!r}")
    return int(value)


def normalise_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Chat messages as the GGUF chat template expects: text content as one string."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise LocalRequestError(f"messages[{index}] is not a chat message with a role")
        item = dict(message)
        content = item.get("content")
        if isinstance(content, list):
            texts = []
            for part in content:
                if not isinstance(part, Mapping) or part.get("type") != "text":
                    raise LocalRequestError(
                        f"messages[{index}]: the local model reads text parts only"
                    )
                texts.append(str(part.get("text", "")))
            item["content"] = "\n".join(texts)
        out.append(item)
    return out


# --- log-probabilities from a logits processor ------------------------------------------------
class Vocab(Protocol):
    """What the recorder needs to know about the tokenizer."""

    def piece(self, token: int) -> bytes:
        """The bytes of one token."""
        ...

    def first_token(self, text: bytes) -> int | None:
        """The first token of ``text`` tokenized alone (no BOS), or None if it is empty."""
        ...

    def quote_led(self) -> Sequence[tuple[int, str]]:
        """Every token that is (whitespace and) a quote followed by more: (token, the rest)."""
        ...


@dataclass
class _Step:
    lse: float  # log-sum-exp of the raw scores at this step
    candidates: list[tuple[int, float]]  # (token, logprob): top-k and any label tokens
    chosen: int | None = None
    chosen_logprob: float | None = None


_QUOTE_LED = re.compile(rb'^[ \t\r\n]*"')


@dataclass
class LogprobRecorder:
    """A llama.cpp logits processor that records OpenAI-format logprobs as it generates.

    Called once per generated token with (input_ids, scores): input_ids are the tokens evaluated
    so far (the prompt on the first call, then one more generated token per call) and scores
    the raw next-token logits. It returns the scores unchanged, except that quote-merged label
    tokens are masked one step before a verdict value (see the module docstring).
    """

    vocab: Vocab
    top_k: int = 0
    labels: Sequence[str] = ()
    key: str = VERDICT_KEY
    steps: list[_Step] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    prompt_len: int | None = None
    seconds: float = 0.0  # time spent in this processor, to measure its overhead
    _last_logits: Any = None
    _accepted: int = 0  # steps whose sampled token is known
    _label_tokens: list[int] = field(default_factory=list)
    _merged_tokens: list[int] | None = None

    def __post_init__(self) -> None:
        key = re.escape(self.key.encode())
        self._at_value = re.compile(rb'"' + key + rb'"\s*:\s*"$')
        self._before_value = re.compile(rb'"' + key + rb'"\s*:\s*$')
        firsts: dict[int, str] = {}
        for label in self.labels:
            token = self.vocab.first_token(label.encode())
            if token is None:
                continue
            if token in firsts:
                log.warning(
                    "verdict labels %r and %r start with the same token %r: their "
                    "probabilities cannot be told apart at the verdict position",
                    firsts[token],
                    label,
                    self.vocab.piece(token),
                )
            firsts.setdefault(token, label)
        self._label_tokens = list(firsts)

    def __call__(
        self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]
    ) -> npt.NDArray[np.single]:
        """Record this step; return the scores (masked only before a verdict value)."""
        import numpy as np

        started = time.perf_counter()
        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
        for token in input_ids[self.prompt_len + self._accepted :]:
            self._accept(int(token))
        logits = np.array(scores, dtype=np.float32)  # contiguous copy of a strided view
        peak = float(logits.max())
        lse = peak + float(np.log(np.sum(np.exp(logits - peak), dtype=np.float64)))
        ids: list[int] = []
        if self.top_k > 0:
            ids = _top_k(logits, min(self.top_k, logits.size), peak)
        mask: list[int] = []
        if self.labels and self._at_value.search(bytes(self.text[-64:])):
            ids.extend(t for t in self._label_tokens if t not in ids)
        elif self.labels and self._before_value.search(bytes(self.text[-64:])):
            mask = self._merged_label_tokens()
            ids.extend(t for t in mask if t not in ids)
        candidates = sorted(((t, float(logits[t]) - lse) for t in ids), key=lambda pair: -pair[1])
        self.steps.append(_Step(lse=lse, candidates=candidates))
        self._last_logits = logits
        if mask:
            scores[mask] = -np.inf
        self.seconds += time.perf_counter() - started
        return scores

    def _accept(self, token: int) -> None:
        """The token sampled at the oldest step without one is now known."""
        step = self.steps[self._accepted]
        self._accepted += 1
        step.chosen = token
        if step is self.steps[-1] and self._last_logits is not None:
            step.chosen_logprob = float(self._last_logits[token]) - step.lse
        self.text.extend(self.vocab.piece(token))

    def _merged_label_tokens(self) -> list[int]:
        """Tokens that are (whitespace,) a quote and then the start of a label, e.g. ``"A``."""
        if self._merged_tokens is None:
            self._merged_tokens = [
                token
                for token, rest in self.vocab.quote_led()
                if any(label.startswith(rest) or rest.startswith(label) for label in self.labels)
            ]
        return self._merged_tokens

    def content(self, text: str) -> list[dict[str, Any]]:
        """OpenAI ``logprobs.content`` for the generated ``text`` (call after generation).

        The token sampled at the last step is not in input_ids (it ended the generation): it is
        the rest of ``text`` when that is exactly one token, else EOS (and left out).
        """
        encoded = text.encode("utf-8")
        known = bytes(self.text)
        last = self.steps[-1] if self.steps else None
        if last is not None and last.chosen is None and encoded.startswith(known):
            rest = encoded[len(known) :]
            token = self.vocab.first_token(rest) if rest else None
            if token is not None and self.vocab.piece(token) == rest:
                last.chosen = token
                if self._last_logits is not None:
                    last.chosen_logprob = float(self._last_logits[token]) - last.lse
        entries: list[dict[str, Any]] = []
        used = 0
        for step in self.steps:
            if step.chosen is None or step.chosen_logprob is None:
                break
            piece = self.vocab.piece(step.chosen)
            used += len(piece)
            if used > len(encoded):  # cut by a stop sequence
                break
            entries.append(
                {
                    **_token_fields(piece),
                    "logprob": step.chosen_logprob,
                    "top_logprobs": [
                        {**_token_fields(self.vocab.piece(t)), "logprob": lp}
                        for t, lp in step.candidates
                    ],
                }
            )
        return entries


def _top_k(logits: npt.NDArray[np.float32], k: int, peak: float) -> list[int]:
    """Ids of the k largest logits (in no order). A cheap threshold first leaves a few hundred
    candidates for the partial sort; the full partition (4 ms on 152k) is the fallback."""
    import numpy as np

    near = np.flatnonzero(logits > peak - 16.0)
    if near.size >= k:
        best = near[np.argpartition(logits[near], near.size - k)[near.size - k :]]
    else:
        best = np.argpartition(logits, logits.size - k)[logits.size - k :]
    return [int(i) for i in best]


def _token_fields(piece: bytes) -> dict[str, Any]:
    return {"token": piece.decode("utf-8", "replace"), "bytes": list(piece)}


# --- the engine: one llama.cpp context per model file ------------------------------------------
class _LlamaVocab:
    """Vocab over a loaded Llama (pieces are computed once, lazily)."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._quote_led: list[tuple[int, str]] | None = None

    def piece(self, token: int) -> bytes:
        return bytes(self._llama.detokenize([token]))

    def first_token(self, text: bytes) -> int | None:
        tokens = self._llama.tokenize(text, add_bos=False, special=False)
        return int(tokens[0]) if tokens else None

    def quote_led(self) -> Sequence[tuple[int, str]]:
        if self._quote_led is None:
            # One pass over the vocabulary (~0.5 s for Qwen's 151,936 tokens), once per engine.
            found = []
            for token in range(self._llama.n_vocab()):
                piece = self.piece(token)
                match = _QUOTE_LED.match(piece)
                if match and len(piece) > match.end():
                    found.append((token, piece[match.end() :].decode("utf-8", "ignore")))
            self._quote_led = found
        return self._quote_led


class Engine:
    """A llama.cpp model with its context, used by one thread at a time."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise JudgeError(
                "the embedded model needs llama-cpp-python: in the clone, pip install -e "
                "'.[embedded]' "
                "(or `make setup`, which builds it portably)"
            ) from exc
        self.path = path
        self.lock = threading.Lock()
        self.llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            verbose=False,
            logits_all=False,
        )
        self.vocab = _LlamaVocab(self.llama)
        self.sha256 = cached_sha256(path)

    def close(self) -> None:
        """Free the context and the model (called at interpreter exit)."""
        # A call still running in another thread at exit keeps its context: freeing it under
        # that thread would crash; the process is ending anyway.
        if not self.lock.acquire(timeout=10):
            return
        try:
            self.llama.close()
        finally:
            self.lock.release()


# Guards engine creation: loading a model twice at once would double the memory.
_ENGINES_LOCK = threading.Lock()


@cache
def _engine_cached(path: str, n_ctx: int, n_threads: int) -> Engine:
    engine = Engine(Path(path), n_ctx, n_threads)
    atexit.register(engine.close)
    return engine


def get_engine(path: Path, n_ctx: int | None = None, n_threads: int | None = None) -> Engine:
    """The one Engine for a model file (created on first use, closed at exit)."""
    with _ENGINES_LOCK:
        return _engine_cached(
            str(path),
            n_ctx or _env_int("JUDGE_LOCAL_N_CTX", DEFAULT_N_CTX),
            n_threads or _env_int("JUDGE_LOCAL_THREADS", os.cpu_count() or 1),
        )


def _env_int(name: str, default: int) -> int:
    return env_positive(
        name,
        default,
        int,
        lambda raw: JudgeError(f"environment variable {name}={raw!r} must be a positive integer"),
    )


# --- one completion ------------------------------------------------------------------------------
@dataclass
class LocalResult:
    """A finished local completion in OpenAI's shape, plus what it took."""

    message: dict[str, Any]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[dict[str, Any]] | None
    sha256: str
    seconds: float
    processor_seconds: float = 0.0


def run_completion(
    engine: Engine, messages: Sequence[Any], params: GenerationParams
) -> LocalResult:
    """Generate one chat completion on ``engine`` (blocking; holds the engine's lock)."""
    recorder = (
        LogprobRecorder(engine.vocab, top_k=params.top_logprobs, labels=params.labels)
        if params.logprobs
        else None
    )
    kwargs: dict[str, Any] = {
        "messages": normalise_messages(messages),
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,
        "stop": list(params.stop),
        "response_format": params.response_format,
        "tools": params.tools,
        "tool_choice": params.tool_choice,
        # The handler's default repeat penalty (1.1) would penalise JSON's repeated quotes.
        "repeat_penalty": 1.0,
    }
    if params.seed is not None:
        kwargs["seed"] = params.seed
    if recorder is not None:
        from llama_cpp import LogitsProcessorList

        kwargs["logits_processor"] = LogitsProcessorList([recorder])
    started = time.perf_counter()
    with engine.lock:
        try:
            raw: Any = engine.llama.create_chat_completion(**kwargs)
        except ValueError as exc:
            # llama-cpp-python reports an over-long prompt as ValueError("Requested tokens ...").
            raise LocalRequestError(
                f"{exc}: shorten the prompt (fewer evidence items) or raise JUDGE_LOCAL_N_CTX"
            ) from exc
    seconds = time.perf_counter() - started
    choice = raw["choices"][0]
    message = dict(choice["message"])
    text = message.get("content")
    if text is None and message.get("tool_calls"):
        text = message["tool_calls"][0]["function"]["arguments"]
    usage = raw.get("usage") or {}
    return LocalResult(
        message=message,
        finish_reason=str(choice.get("finish_reason") or "stop"),
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        logprobs=recorder.content(text or "") if recorder is not None else None,
        sha256=engine.sha256,
        seconds=seconds,
        processor_seconds=recorder.seconds if recorder is not None else 0.0,
    )


def complete(
    model: str, messages: Sequence[Any], optional_params: Mapping[str, Any]
) -> LocalResult:
    """Resolve ``model`` (assembling its weights if needed) and run one completion."""
    params = GenerationParams.from_optional_params(optional_params)
    resolved: ResolvedModel = resolve_model(model)
    return run_completion(get_engine(resolved.path), messages, params)


# --- litellm glue --------------------------------------------------------------------------------
def _to_model_response(model: str, result: LocalResult, model_response: Any) -> Any:
    """Fill litellm's ModelResponse with a LocalResult."""
    from litellm.types.utils import ChoiceLogprobs, Choices, Message, Usage

    message = result.message
    tool_calls = message.get("tool_calls")
    choice = Choices(
        index=0,
        finish_reason=result.finish_reason,
        message=Message(
            role="assistant",
            content=message.get("content"),
            tool_calls=tool_calls,
        ),
        logprobs=(
            ChoiceLogprobs.model_validate({"content": result.logprobs})
            if result.logprobs is not None
            else None
        ),
    )
    model_response.id = f"chatcmpl-local-{uuid.uuid4().hex}"
    model_response.choices = [choice]
    model_response.created = int(time.time())
    model_response.model = f"{PROVIDER}/{model}"
    # The weights' digest: what exactly answered, for the judgment's provenance.
    model_response.system_fingerprint = full_digest(result.sha256)
    model_response.usage = Usage(
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        total_tokens=result.prompt_tokens + result.completion_tokens,
    )
    model_response._hidden_params["response_cost"] = 0.0
    model_response._hidden_params["local_seconds"] = result.seconds
    model_response._hidden_params["logits_processor_seconds"] = result.processor_seconds
    return model_response


@lru_cache(maxsize=1)
def _handler() -> Any:
    """The one CustomLLM instance (the class needs litellm, so it is built on first use)."""
    from litellm import CustomLLM
    from litellm.llms.custom_llm import CustomLLMError

    def call(model: str, messages: list[Any], optional_params: dict[str, Any]) -> LocalResult:
        try:
            return complete(model, messages, optional_params)
        except LocalRequestError as exc:
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        except JudgeError as exc:
            # Missing weights or llama-cpp-python: not worth a retry, say what to do.
            raise CustomLLMError(status_code=400, message=str(exc)) from exc

    class LocalLLM(CustomLLM):
        """litellm provider ``local/``: the embedded llama.cpp models."""

        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            result = call(model, messages, kwargs.get("optional_params") or {})
            return _to_model_response(model, result, kwargs["model_response"])

        async def acompletion(
            self, model: str, messages: list[Any], *args: Any, **kwargs: Any
        ) -> Any:
            # llama.cpp blocks: run it in a worker thread; the engine's lock serialises calls.
            result = await asyncio.to_thread(
                call, model, messages, kwargs.get("optional_params") or {}
            )
            return _to_model_response(model, result, kwargs["model_response"])

    return LocalLLM()


def register_provider() -> None:
    """Register ``local/`` in litellm.custom_provider_map (idempotent, thread-safe)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    with _ENGINES_LOCK:
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _handler()})
        # Zero prices, so litellm's cost tracking reports 0 instead of "unknown model".
        litellm.register_model(
            {
                f"{PROVIDER}/{alias}": {
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_input_tokens": DEFAULT_N_CTX,
                }
                for alias in known_models()
            }
        )
