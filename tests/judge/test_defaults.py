"""judge/defaults.py: the default judge names rubrics that exist, of the kind it is used for."""

from __future__ import annotations

from judge.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MODEL, DEFAULT_PROTOCOLS, is_local
from judge.rubrics import load_rubric

#: Case kind of the default protocols -> the rubric kind it needs.
RUBRIC_KIND = {"agent_run": "binary", "pairwise": "pairwise"}


def test_default_protocols_pin_existing_rubric_versions_of_the_right_kind() -> None:
    assert set(DEFAULT_PROTOCOLS) == set(RUBRIC_KIND)
    for kind, protocol in DEFAULT_PROTOCOLS.items():
        assert "@" in protocol.rubric, f"{kind}: pin a version, not 'latest'"
        rubric = load_rubric(protocol.rubric)
        assert rubric.spec.kind == RUBRIC_KIND[kind]
        assert protocol.variants is None or 1 <= protocol.variants <= rubric.n_variants
    assert DEFAULT_PROTOCOLS["pairwise"].orders == "both"


def test_the_commands_default_to_the_configured_model() -> None:
    from judge.commands.demo import DEMO_MODEL, DEMO_RUBRIC
    from judge.commands.run import run
    from judge.commands.serve import serve

    assert is_local(DEFAULT_MODEL)
    assert DEMO_MODEL == DEFAULT_MODEL
    assert DEFAULT_PROTOCOLS["agent_run"].rubric == DEMO_RUBRIC
    for command in (run, serve):
        (option,) = [p for p in command.params if p.name == "models"]
        assert option.default == [DEFAULT_MODEL]


def test_is_local_tells_the_embedded_runtime_from_hosted_providers() -> None:
    assert is_local("local/qwen2.5-coder-1.5b")
    assert is_local("local/gguf:/models/x.gguf")
    assert not is_local("openai/gpt-4o-mini")
    assert not is_local("ollama/local/x")  # a hosted provider whose model id says "local"


def test_the_commands_share_one_max_tokens_default() -> None:
    from judge.api.schemas import JobRequest
    from judge.commands.run import run
    from judge.commands.score import score
    from judge.providers import ModelParams

    for command in (run, score):
        (option,) = [p for p in command.params if p.name == "max_tokens"]
        assert option.default == DEFAULT_MAX_TOKENS
    assert ModelParams().max_tokens == DEFAULT_MAX_TOKENS
    assert JobRequest.model_fields["max_tokens"].default == DEFAULT_MAX_TOKENS
    assert all(p.max_tokens == DEFAULT_MAX_TOKENS for p in DEFAULT_PROTOCOLS.values())
