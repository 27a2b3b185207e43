"""Preflight: the model ids and their credentials, checked before anything is judged or stored
(:func:`check_models`), and why one model cannot be called (:func:`model_problem`)."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Sequence

from judge.defaults import LOCAL_PREFIX, is_local
from judge.errors import InputError, JudgeError
from judge.local.weights import get_spec, parse_model_id
from judge.providers.calls import RouterConfig, prepare_litellm
from judge.types import Judgment
from judge.urls import mask_url

#: Providers whose litellm client has a default local base URL (ollama: localhost:11434), so
#: that the base-URL variable validate_environment asks for is not needed.
_DEFAULT_LOCAL_BASE = frozenset({"ollama", "ollama_chat"})


def check_models(
    models: Sequence[str],
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    router: str | None = None,
) -> None:
    """Refuse, before anything is judged or stored, models that cannot be called.

    Each model id must name a provider litellm knows (or the embedded ``local/`` runtime, with
    a known alias or an existing GGUF file), and the provider's credentials must be in the
    environment (litellm's ``validate_environment``). With ``api_base`` (a self-hosted
    OpenAI-compatible server) a missing ``*_API_KEY`` is not a problem: the call sends
    :data:`KEYLESS_API_KEY`. With a Router configuration (``router``, as read by
    :func:`read_router_config`) a model is a Router alias: it must be one of the file's
    ``model_name`` values, and each of its deployments is checked in its place with its own
    api_base and key. Raises InputError (field ``model``) naming every unusable model and the
    missing variables.
    """
    if router is not None:
        problems = _router_problems(models, RouterConfig.model_validate_json(router))
    else:
        problems = [
            p
            for model in dict.fromkeys(models)
            if (p := model_problem(model, api_base=api_base, api_key=api_key))
        ]
    if not problems:
        return
    raise InputError("; ".join(problems), field="model", hint="nothing was judged or stored")


def _router_problems(models: Sequence[str], config: RouterConfig) -> list[str]:
    """Why the Router aliases ``models`` cannot be called: unknown aliases, and the problems of
    each of their deployments."""
    names = sorted({d.model_name for d in config.model_list})
    problems = []
    for model in dict.fromkeys(models):
        deployments = [d for d in config.model_list if d.model_name == model]
        if not deployments:
            problems.append(
                f"model {model!r} is not in the router file (its models: {', '.join(names)})"
            )
        for d in deployments:
            params = d.litellm_params
            found = model_problem(
                str(params["model"]), api_base=params.get("api_base"), api_key=params.get("api_key")
            )
            if found:
                problems.append(f"router model {model!r}: {found}")
    return problems


def model_problem(
    model: str, *, api_base: str | None = None, api_key: str | None = None
) -> str | None:
    """Why ``model`` cannot be called as configured (None: it can, as far as can be told
    without a call)."""
    if not model.strip():
        return "empty model id (name one as provider/model, e.g. openai/gpt-4o)"
    if is_local(model):
        return _local_problem(model)
    litellm = prepare_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm raises BadRequestError for an unknown provider
        return f"model {model!r}: litellm knows no provider for it ({_model_hint(model)})"
    missing = _missing_variables(model, str(provider), api_base=api_base, api_key=api_key)
    if not missing:
        return None
    names = ", ".join(missing)
    text = f"model {model!r} ({provider}) needs {names}, not set in the environment"
    if all(name.endswith("_API_KEY") for name in missing) and provider in (
        "openai",
        "openai_like",
        "hosted_vllm",
    ):
        text += (
            " (or, for a self-hosted OpenAI-compatible server such as llama.cpp server or "
            "vLLM, give its --api-base: no key is needed then)"
        )
    return text


def _missing_variables(
    model: str, provider: str, *, api_base: str | None, api_key: str | None
) -> list[str]:
    litellm = prepare_litellm()
    try:
        report = litellm.validate_environment(model=model, api_key=api_key, api_base=api_base)
    except Exception:  # noqa: BLE001 - a provider litellm cannot check is not refused here
        return []
    missing = [str(name) for name in report.get("missing_keys") or []]
    if api_base:
        # A self-hosted server: its key is optional (KEYLESS_API_KEY is sent instead).
        missing = [name for name in missing if not name.endswith("_API_KEY")]
    if provider in _DEFAULT_LOCAL_BASE:
        missing = [name for name in missing if not name.endswith("_API_BASE")]
    return missing


def _local_problem(model: str) -> str | None:
    try:
        kind, value = parse_model_id(model)
        if kind == "alias":
            get_spec(value)
        elif not os.path.isfile(os.path.expanduser(value)):
            return f"model {model!r}: no such GGUF file {value!r}"
    except JudgeError as exc:
        return f"model {model!r}: {exc}"
    return None


def _model_hint(model: str) -> str:
    """What to write instead: close known model ids or providers, and the general form."""
    litellm = prepare_litellm()
    prefix, _, rest = model.partition("/")
    providers = [str(getattr(p, "value", p)) for p in litellm.provider_list]
    guesses: list[str] = []
    if rest:
        guesses = [f"{p}/{rest}" for p in difflib.get_close_matches(prefix, providers, n=2)]
    else:
        guesses = difflib.get_close_matches(model, list(litellm.model_cost), n=3, cutoff=0.75)
    hint = f"did you mean {' or '.join(guesses)}? " if guesses else ""
    return (
        hint + "name it as provider/model, e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5, "
        f"{LOCAL_PREFIX}qwen2.5-coder-1.5b, or openai/<name> with --api-base for an "
        "OpenAI-compatible server; providers: https://docs.litellm.ai/docs/providers"
    )


#: The words of a call that never reached its server (litellm's and httpx's).
_NOT_CONNECTED = re.compile(
    r"Connection error|ConnectError|Connection refused|APIConnectionError|Name or service not "
    r"known|nodename nor servname"
)


def unreached_hint(judgments: Iterable[Judgment], api_base: str | None) -> str | None:
    """What to do when no call of a batch reached ``api_base`` (every judgment a provider
    failure that could not connect), or None."""
    seen = list(judgments)
    if not api_base or not seen:
        return None
    if not all(j.status == "infra_error" and _NOT_CONNECTED.search(j.error or "") for j in seen):
        return None
    return (
        f"no call reached {mask_url(api_base)} (connection error): is the server running "
        "there? Start it, or leave out --model and --api-base to judge on the embedded model"
    )
