"""judge/defaults.py: the default judge names rubrics that exist, of the kind it is used for."""

from __future__ import annotations

from judge.defaults import DEFAULT_MODEL, DEFAULT_PROTOCOLS
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

    assert DEFAULT_MODEL.startswith("local/")
    assert DEMO_MODEL == DEFAULT_MODEL
    assert DEFAULT_PROTOCOLS["agent_run"].rubric == DEMO_RUBRIC
    for command in (run, serve):
        (option,) = [p for p in command.params if p.name == "models"]
        assert option.default == [DEFAULT_MODEL]
