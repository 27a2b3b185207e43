"""Model families, so that a judge never grades runs of its own family (self-preference bias).

A model id such as ``openai/gpt-4o-2024-08-06``, ``bedrock/anthropic.claude-3-5-sonnet`` or
``local/qwen2.5-coder-1.5b`` is reduced to its last path segment (after ``/``, and after a
vendor prefix with ``.`` as Bedrock writes it), lower-cased, and matched against
:data:`FAMILY_PREFIXES`, longest prefix first. When the name says nothing (``openai/loopback``,
a fine-tune with a custom name) the provider prefix is tried (:data:`PROVIDER_FAMILIES`); if
that says nothing either, the family is unknown and the caller must say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Model-name prefix -> family. A registry: add a line for a new family.
FAMILY_PREFIXES: Mapping[str, str] = MappingProxyType(
    {
        "gpt": "openai",
        "chatgpt": "openai",
        "o1": "openai",
        "o3": "openai",
        "o4": "openai",
        "codex": "openai",
        "text-davinci": "openai",
        "claude": "anthropic",
        "gemini": "google",
        "gemma": "google",
        "palm": "google",
        "qwen": "qwen",
        "qwq": "qwen",
        "llama": "meta",
        "meta-llama": "meta",
        "codellama": "meta",
        "mistral": "mistral",
        "mixtral": "mistral",
        "codestral": "mistral",
        "devstral": "mistral",
        "magistral": "mistral",
        "ministral": "mistral",
        "deepseek": "deepseek",
        "grok": "xai",
        "command": "cohere",
        "phi": "microsoft",
        "glm": "zhipu",
        "kimi": "moonshot",
        "moonshot": "moonshot",
        "nova": "amazon",
        "titan": "amazon",
    }
)

#: Provider prefix of a litellm model id -> family, used only when the name says nothing.
#: Providers that host many families (bedrock, openrouter, together, ollama, ...) are absent.
PROVIDER_FAMILIES: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "anthropic",
        "gemini": "google",
        "vertex_ai": "google",
        "mistral": "mistral",
        "deepseek": "deepseek",
        "xai": "xai",
        "cohere": "cohere",
    }
)


def model_family(model: str | None) -> str | None:
    """The family of a model id, or None when it cannot be told from the name."""
    if not model:
        return None
    parts = [p for p in model.strip().lower().split("/") if p]
    if not parts:
        return None
    name = parts[-1]
    # Bedrock writes "anthropic.claude-3-5-sonnet-...", "meta.llama3-..."; keep the model part.
    candidates = [name] + ([name.split(".", 1)[1]] if "." in name.split("-", 1)[0] else [])
    for candidate in candidates:
        for prefix in sorted(FAMILY_PREFIXES, key=len, reverse=True):
            if candidate.startswith(prefix):
                return FAMILY_PREFIXES[prefix]
    for part in parts[:-1]:
        if part in PROVIDER_FAMILIES:
            return PROVIDER_FAMILIES[part]
    return None


def same_family(judge_model: str, agent_model: str | None) -> bool:
    """True when both families are known and equal (unknown never matches)."""
    judge = model_family(judge_model)
    return judge is not None and judge == model_family(agent_model)
