"""Model calls: litellm for every provider, instructor for structured output, tenacity for retries.

Failures are typed. A provider that keeps failing (rate limits, timeouts, 5xx, dropped
connections) after the retry budget raises ``InfraError``; a model that answers but never with a
valid structured verdict after the re-asks raises ``ParseError``. Neither is ever a verdict.

An answer can also be checked beyond its schema (``call_model(check=...)``: the judge's
citations, see ``judge.judging``): an answer the check refuses is re-asked like an invalid one,
with the check's words, within the same re-ask budget; the answer of the last try is kept even
when the check still refuses it (it is valid JSON of the right shape: what it lacks is recorded
by the caller, not turned into a parse error).

litellm is imported here, inside functions, and nowhere on paths that do not call a model: its
import takes seconds, and without LITELLM_LOCAL_MODEL_COST_MAP it would fetch a cost map over the
network.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import math
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from judge.defaults import DEFAULT_MAX_TOKENS, is_local
from judge.errors import InfraError, InputError, ParseError, first_error
from judge.local import register as register_local
from judge.types import Strict

#: Labels are read at the position where the value of this key begins in the JSON answer.
VERDICT_KEY = "verdict"

#: The key sent to an ``api_base`` server when no key is configured: llama.cpp server and vLLM
#: accept any key unless started with one, but the OpenAI client refuses to send no key at all.
KEYLESS_API_KEY = "no-key"


@dataclass(frozen=True)
class ModelParams:
    """How to call a model. Everything that changes the answer is part of the cache key."""

    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int | None = 0
    #: Ask for token log-probabilities (the source of the judge's confidence). None: ask when
    #: the model is known to return them (the embedded model always does).
    logprobs: bool | None = None
    top_logprobs: int = 5
    # Budgets: they shape cost and latency, not the answer, so they are not in the cache key.
    timeout_s: float = 600.0
    max_attempts: int = 5
    max_reasks: int = 1
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    #: Where to send the call (litellm's api_base) and with which key, for self-hosted or test
    #: servers; hosted providers read their keys from litellm's usual environment variables.
    api_base: str | None = None
    api_key: str | None = None
    #: A litellm Router configuration (canonical JSON, from :func:`read_router_config`): the
    #: model name is one of its ``model_name`` groups, spread over its deployments. Where the
    #: call goes, not what it answers: not in the cache key.
    router: str | None = None

    def cache_params(self) -> dict[str, Any]:
        """The parameters that change what the model answers."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }


@dataclass
class CallResult:
    """A structured answer with what it cost."""

    answer: BaseModel
    raw_output: str
    label_probs: dict[str, float] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 1
    #: What the answer check still found wrong with the answer of the last try (kept as it
    #: is: the re-asks were spent); None when the check passed or there was none.
    unmet: str | None = None


#: A check of a valid answer beyond its schema: None when it is fine, else what to fix (sent
#: back to the model as a re-ask).
AnswerCheck = Callable[[BaseModel], str | None]


@dataclass
class _CheckState:
    """One instructor call's answer check: how many answers came back so far, after how many
    the last try is, and what the check found on that last one."""

    check: AnswerCheck
    last_try: int
    tries: int = 0
    unmet: str | None = None

    def counted(self, *_: Any, **__: Any) -> None:
        self.tries += 1


#: The answer check of the call in progress (in this task), read by the answer model's
#: validator: an answer model is built once per rubric, a check belongs to one call.
_CHECK: contextvars.ContextVar[_CheckState | None] = contextvars.ContextVar(
    "judge_answer_check", default=None
)


def _run_check(answer: BaseModel) -> BaseModel:
    state = _CHECK.get()
    if state is None:
        return answer
    problem = state.check(answer)
    if problem is None:
        state.unmet = None
        return answer
    if state.tries < state.last_try:
        raise ValueError(problem)  # instructor re-asks with these words
    state.unmet = problem  # the last try: kept, the caller records what it lacks
    return answer


@cache
def _checked(answer_model: type[BaseModel]) -> type[BaseModel]:
    """``answer_model`` with the call's answer check as a validator: the same name, fields and
    description, so the JSON schema the provider gets is unchanged."""
    # pydantic's stubs type __validators__ as plain callables; a decorated validator is a
    # descriptor proxy, which create_model accepts.
    validators: dict[str, Any] = {"answer_check": model_validator(mode="after")(_run_check)}
    model: type[BaseModel] = create_model(
        answer_model.__name__,
        __base__=answer_model,
        __doc__=answer_model.__doc__,
        __module__=answer_model.__module__,
        __validators__=validators,
    )
    return model


@dataclass
class AttemptLog:
    """What each provider attempt did, for the store's call log."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(self, outcome: str, error: str | None = None, **usage: Any) -> None:
        """Record one attempt."""
        self.entries.append({"outcome": outcome, "error": error, **usage})


def prepare_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


@cache
def _client(model_prefix: str) -> Any:
    """An instructor client over litellm.acompletion (one per provider prefix)."""
    litellm = prepare_litellm()
    if model_prefix == "local":
        register_local()
    import instructor

    return instructor.from_litellm(litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA)


class RouterDeployment(BaseModel):
    """One deployment of a litellm Router's ``model_list``."""

    model_config = ConfigDict(extra="allow")

    model_name: str = Field(min_length=1)
    litellm_params: dict[str, Any]


class RouterConfig(Strict):
    """A litellm Router configuration: deployments, and optionally Router settings."""

    model_list: list[RouterDeployment] = Field(min_length=1)
    #: Passed to ``litellm.Router`` as they are (e.g. routing_strategy).
    router_settings: dict[str, Any] = Field(default_factory=dict)


def read_router_config(path: str | Path) -> str:
    """Validate a Router file (YAML or JSON: ``model_list`` of ``{model_name,
    litellm_params}``, optional ``router_settings``) and return it as canonical JSON, the form
    :attr:`ModelParams.router` carries to every worker."""
    import yaml

    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the router file: {exc.strerror}", file=str(file)) from exc
    except yaml.YAMLError as exc:
        raise InputError(
            f"not YAML or JSON: {exc}",
            file=str(file),
            hint="write a model_list as in litellm's Router docs",
        ) from exc
    try:
        config = RouterConfig.model_validate(data)
    except ValidationError as exc:
        raise first_error(
            exc,
            file=str(file),
            hint="model_list: [{model_name: ..., litellm_params: {model: ...}}]",
        ) from exc
    for n, deployment in enumerate(config.model_list):
        if not isinstance(deployment.litellm_params.get("model"), str):
            raise InputError(
                "every deployment needs litellm_params.model",
                file=str(file),
                field=f"model_list.{n}.litellm_params.model",
            )
    return json.dumps(config.model_dump(), sort_keys=True, separators=(",", ":"))


@cache
def _router_client(router: str) -> Any:
    """An instructor client over a litellm Router built from ``router`` (once per process)."""
    litellm = prepare_litellm()
    import instructor

    config = json.loads(router)
    built = litellm.Router(model_list=config["model_list"], **config["router_settings"])
    return instructor.from_litellm(built.acompletion, mode=instructor.Mode.JSON_SCHEMA)


@cache
def _response_schema(answer_model: type[BaseModel]) -> type[BaseModel]:
    """instructor's wrapper class around ``answer_model``, built once per answer model.

    instructor wraps a plain model on every call (a new pydantic class each time, about 1 ms
    of CPU); given the wrapped class it uses it as it is.
    """
    import instructor

    wrapped: type[BaseModel] = instructor.openai_schema(_checked(answer_model))
    # instructor also asks the class for its JSON schema on every call (pydantic builds it
    # anew each time: about 1 ms of CPU per call); a class's schema never changes, so it is
    # built once here and each call gets its own copy (the request may be changed downstream).
    schema = wrapped.model_json_schema()
    build = BaseModel.model_json_schema.__func__  # type: ignore[attr-defined]

    def json_schema(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        if args or kwargs:
            return build(cls, *args, **kwargs)
        return copy.deepcopy(schema)

    wrapped.model_json_schema = classmethod(json_schema)  # type: ignore[method-assign,assignment]
    return wrapped


def _wants_logprobs(model: str, params: ModelParams) -> bool:
    if params.logprobs is not None:
        return params.logprobs
    return is_local(model)


def _api_key_for(model: str, params: ModelParams) -> str | None:
    """The key to send: the configured one; for an ``api_base`` server with no key in the
    environment, the placeholder (a keyless llama.cpp or vLLM server ignores it)."""
    if params.api_key:
        return params.api_key
    if not params.api_base or is_local(model):
        return None
    keys = tuple(sorted(name for name in os.environ if name.endswith("_API_KEY")))
    return KEYLESS_API_KEY if _needs_placeholder(model, params.api_base, keys) else None


@cache
def _needs_placeholder(model: str, api_base: str, keys: tuple[str, ...]) -> bool:
    """Whether litellm misses a key for ``model`` at ``api_base``, given the names of the key
    variables set (``keys``): asked once per such setting, not on every call."""
    litellm = prepare_litellm()
    try:
        report = litellm.validate_environment(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - unknown: let litellm find its own key
        return False
    missing = report.get("missing_keys") or []
    return any(str(n).endswith("_API_KEY") for n in missing)


# --- label probabilities -------------------------------------------------------------------
_VALUE_START = re.compile(r'"' + VERDICT_KEY + r'"\s*:\s*("?)\s*$')


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def label_probs_from_logprobs(
    content: Sequence[Any] | None, labels: Sequence[str]
) -> dict[str, float] | None:
    """P(label) for every label, read at the token where the verdict's value begins.

    ``content`` is OpenAI-format ``choices[0].logprobs.content``: generated tokens, each with its
    ``top_logprobs``. A candidate token counts for a label when it is a non-empty prefix of
    exactly one label (``"pass"`` for pass, ``"c"`` or ``"cannot"`` for cannot_determine). The
    probabilities are renormalised over the labels. None when the position is not found or no
    label is among the candidates there.
    """
    if not content:
        return None
    text = ""
    for entry in content:
        match = _VALUE_START.search(text)
        chosen = str(_get(entry, "token") or "")
        # Before the opening quote, a token that is only the quote or space is not the value.
        if match and (match.group(1) or chosen.strip().lstrip('"')):
            quote_seen = bool(match.group(1))
            mass = {label: 0.0 for label in labels}
            for top in _get(entry, "top_logprobs") or []:
                token = str(_get(top, "token") or "")
                candidate = token.lstrip() if quote_seen else token.lstrip().lstrip('"')
                if not candidate:
                    continue
                owners = [label for label in labels if label.startswith(candidate)]
                if len(owners) == 1:
                    mass[owners[0]] += math.exp(float(_get(top, "logprob")))
            total = sum(mass.values())
            if total <= 0.0:
                return None
            return {label: value / total for label, value in mass.items()}
        text += chosen
    return None


# --- retries --------------------------------------------------------------------------------
def _retry_after_s(exc: BaseException) -> float | None:
    """The provider's Retry-After, in seconds, when it sent one."""
    for holder in (exc, getattr(exc, "__cause__", None)):
        if holder is None:
            continue
        headers = getattr(holder, "litellm_response_headers", None)
        response = getattr(holder, "response", None)
        if headers is None and response is not None:
            headers = getattr(response, "headers", None)
        if headers is None:
            continue
        value = headers.get("retry-after") if hasattr(headers, "get") else None
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    return None


def _is_provider_error(exc: BaseException) -> bool:
    """A failure of the provider or the connection, not of the answer's content."""
    litellm = prepare_litellm()
    return (
        isinstance(
            exc,
            litellm.exceptions.APIError
            | litellm.exceptions.APIConnectionError
            | litellm.exceptions.Timeout
            | litellm.exceptions.AuthenticationError
            | litellm.exceptions.BadRequestError
            | litellm.exceptions.NotFoundError
            | litellm.exceptions.RateLimitError,
        )
        or _is_retryable(exc)
        or _is_auth_error(exc)
    )


#: What providers say when the key is missing or refused. litellm reports a missing OpenAI key
#: as an InternalServerError (status 500), which would otherwise look transient.
_AUTH_MESSAGE = re.compile(
    r"missing credentials|api_key client option must be set|no api key|invalid api key|"
    r"incorrect api key|invalid x-api-key|authentication|unauthori[sz]ed",
    re.IGNORECASE,
)


def _is_auth_error(exc: BaseException) -> bool:
    """A missing, invalid or refused credential: retrying cannot fix it."""
    litellm = prepare_litellm()
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return True
    if getattr(exc, "status_code", None) in (401, 403):
        return True
    return bool(_AUTH_MESSAGE.search(str(exc)))


def _is_retryable(exc: BaseException) -> bool:
    if _is_auth_error(exc):
        return False
    litellm = prepare_litellm()
    retryable = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )
    if isinstance(exc, retryable):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


class _Retryable(Exception):
    """A provider failure worth another attempt (carries the original as __cause__)."""


def _wait(params: ModelParams) -> Callable[[Any], float]:
    """tenacity wait: the provider's Retry-After when it sent one, else exponential backoff
    with full jitter, capped."""
    from tenacity import wait_random_exponential

    jitter = wait_random_exponential(multiplier=params.backoff_base_s, max=params.backoff_max_s)

    def wait(retry_state: Any) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = _retry_after_s(exc.__cause__) if exc is not None and exc.__cause__ else None
        if retry_after is not None:
            return min(retry_after, params.backoff_max_s)
        return float(jitter(retry_state))

    return wait


def _usage_of(completion: Any) -> tuple[int, int]:
    usage = _get(completion, "usage")
    if usage is None:
        return 0, 0
    return int(_get(usage, "prompt_tokens") or 0), int(_get(usage, "completion_tokens") or 0)


def _priceless(entry: object) -> bool:
    """Whether a litellm cost-map entry names no price: a Router registers every deployment
    whose model litellm does not know (an empty entry, later filled with None prices), which
    litellm then prices at $0. Tiered prices count as prices."""
    if not isinstance(entry, Mapping) or entry.get("tiered_pricing"):
        return False
    return not any(
        "cost_per" in str(key) and isinstance(value, int | float) and not isinstance(value, bool)
        for key, value in entry.items()
    )


def _cost_of(completion: Any, model: str) -> float | None:
    if is_local(model):
        return 0.0
    # litellm priced the response already while building it (the same completion_cost);
    # pricing it a second time cost about 1 ms of CPU per call.
    hidden = getattr(completion, "_hidden_params", None)
    litellm = prepare_litellm()
    known = hidden.get("response_cost") if isinstance(hidden, Mapping) else None
    if isinstance(known, int | float) and not isinstance(known, bool):
        cost: float | None = float(known)
    else:
        try:
            cost = float(litellm.completion_cost(completion_response=completion))
        except Exception:  # noqa: BLE001 - an unknown price is "unknown", never a failure
            return None
    if cost == 0.0:
        # $0 from a model litellm has no price for is "not priced", not "free".
        names = [
            model,
            *(
                (hidden.get("litellm_model_name"), hidden.get("model"))
                if isinstance(hidden, Mapping)
                else ()
            ),
        ]
        if any(_priceless(litellm.model_cost.get(n)) for n in names if isinstance(n, str)):
            return None
    return cost


def _raw_text(completion: Any) -> str:
    choices = _get(completion, "choices") or []
    if not choices:
        return ""
    message = _get(choices[0], "message")
    content = _get(message, "content") if message is not None else None
    return str(content or "")


async def call_model(
    model: str,
    messages: list[dict[str, str]],
    answer_model: type[BaseModel],
    labels: Sequence[str],
    params: ModelParams,
    *,
    log: AttemptLog | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    check: AnswerCheck | None = None,
) -> CallResult:
    """Ask ``model`` for an ``answer_model``; retry provider failures; re-ask invalid answers.

    Raises InfraError when the provider keeps failing, ParseError when the answers never
    validate. ``labels`` are the verdict labels whose probabilities are read from logprobs.
    ``check`` looks at each valid answer: one it refuses is re-asked with its words while the
    re-ask budget lasts; the last try's answer is returned with ``unmet`` saying what the
    check still found.
    """
    sleep = sleep or asyncio.sleep
    log = log or AttemptLog()
    client = _router_client(params.router) if params.router else _client(model.split("/", 1)[0])
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "response_model": _response_schema(answer_model),
        "max_retries": params.max_reasks,  # instructor: re-asks after the first try
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "timeout": params.timeout_s,
        "num_retries": 0,  # retries are ours (tenacity-style, below), not litellm's
    }
    if params.seed is not None:
        kwargs["seed"] = params.seed
    # With a Router each deployment has its own base URL and key.
    if params.api_base and not params.router:
        kwargs["api_base"] = params.api_base
    api_key = _api_key_for(model, params)
    if api_key and not params.router:
        kwargs["api_key"] = api_key
    if _wants_logprobs(model, params):
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = params.top_logprobs

    from tenacity import AsyncRetrying, RetryError, retry_if_exception_type, stop_after_attempt

    retrying = AsyncRetrying(
        stop=stop_after_attempt(params.max_attempts),
        wait=_wait(params),
        retry=retry_if_exception_type(_Retryable),
        sleep=sleep,
    )
    try:
        async for attempt in retrying:
            with attempt:
                number = attempt.retry_state.attempt_number
                return await _attempt(client, kwargs, model, labels, params, log, number, check)
    except RetryError as exc:
        last = exc.last_attempt.exception()
        cause = last.__cause__ if last is not None else None
        raise InfraError(
            f"provider failed {params.max_attempts} times; last error: "
            f"{type(cause).__name__}: {cause}",
            attempts=params.max_attempts,
        ) from cause
    raise AssertionError("unreachable: tenacity either returns or raises")


async def _attempt(
    client: Any,
    kwargs: dict[str, Any],
    model: str,
    labels: Sequence[str],
    params: ModelParams,
    log: AttemptLog,
    attempt: int,
    check: AnswerCheck | None = None,
) -> CallResult:
    """One provider attempt (with instructor's re-asks inside). Raises _Retryable for a
    failure worth retrying, InfraError or ParseError for final ones."""
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    call, state = _checked_call(kwargs, check, params)
    token = _CHECK.set(state)
    started = time.perf_counter()
    try:
        answer, completion = await client.chat.completions.create_with_completion(**call)
    except (InstructorRetryException, IncompleteOutputException) as exc:
        latency = time.perf_counter() - started
        cause = exc.__cause__
        if cause is not None and _is_provider_error(cause):
            _infra_failure(cause, latency, log, attempt)
        _parse_failure(exc, latency, log, attempt, params)
    except Exception as exc:  # noqa: BLE001 - classified here, re-raised typed
        _infra_failure(exc, time.perf_counter() - started, log, attempt)
    finally:
        _CHECK.reset(token)
    latency = time.perf_counter() - started
    p_tok, c_tok = _usage_of(completion)
    choices = _get(completion, "choices") or []
    logprobs = _get(choices[0], "logprobs") if choices else None
    probs = label_probs_from_logprobs(_get(logprobs, "content") if logprobs else None, labels)
    cost = _cost_of(completion, model)
    log.add(
        "ok", None, latency_s=latency, prompt_tokens=p_tok, completion_tokens=c_tok, cost_usd=cost
    )
    return CallResult(
        answer=answer,
        raw_output=_raw_text(completion),
        label_probs=probs,
        prompt_tokens=p_tok,
        completion_tokens=c_tok,
        cost_usd=cost,
        latency_s=latency,
        attempts=attempt,
        unmet=state.unmet if state is not None else None,
    )


def _checked_call(
    kwargs: dict[str, Any], check: AnswerCheck | None, params: ModelParams
) -> tuple[dict[str, Any], _CheckState | None]:
    """The call's keywords, with a hook that counts every answer when there is a ``check``
    (so that it knows which try is the last one of this attempt's re-ask budget)."""
    from instructor.core.hooks import Hooks

    call = dict(kwargs)
    if check is None:
        return call, None
    state = _CheckState(check, last_try=params.max_reasks + 1)
    hooks = Hooks()
    hooks.on("completion:response", state.counted)
    call["hooks"] = hooks
    return call, state


def _infra_failure(exc: BaseException, latency: float, log: AttemptLog, attempt: int) -> NoReturn:
    """Log a provider (or other) failure and raise it: _Retryable when retrying may help,
    else a final InfraError (bad request, auth)."""
    message = f"{type(exc).__name__}: {exc}"
    log.add("infra_error", message, latency_s=latency)
    if _is_retryable(exc):
        raise _Retryable(message) from exc
    raise InfraError(message, attempts=attempt) from exc


def _parse_failure(
    exc: Exception, latency: float, log: AttemptLog, attempt: int, params: ModelParams
) -> NoReturn:
    """Log and raise the ParseError of an attempt whose re-asks gave no valid answer, with the
    last output and the tokens spent."""
    last_completion = getattr(exc, "last_completion", None)
    last_output = _raw_text(last_completion) if last_completion is not None else None
    usage = getattr(exc, "total_usage", None)
    p_tok, c_tok = _usage_of({"usage": usage}) if usage is not None else (0, 0)
    detail = " ".join(str(exc.__cause__ or exc).split())[:500]
    message = f"no valid answer after {params.max_reasks + 1} tries: {detail}"
    log.add("parse_error", message, latency_s=latency, prompt_tokens=p_tok, completion_tokens=c_tok)
    raise ParseError(
        message,
        attempts=attempt,
        last_output=last_output,
        usage={"prompt_tokens": p_tok, "completion_tokens": c_tok},
    ) from exc
