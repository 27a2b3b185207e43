"""Secrets written in pieces (judge.safety.joins): a chain of quoted pieces in any language's
concatenation is judged joined, under the name it is assigned to; lists, URLs and messages
built from pieces are kept."""

from __future__ import annotations

import time

import pytest

from judge.safety import joins
from judge.safety.redact import _core, redact

A, B, C = "Qm7vT2xKp9Lr", "4sWn8bYc3dHf", "6jZa1eGu2Vx0"  # invented pieces of one key


@pytest.mark.parametrize(
    "text",
    [
        f'api_key = "{A}" "{B}" "{C}"',  # adjacent literals (C, Python)
        f"my $secret = '{A}' . '{B}' . '{C}';",  # Perl, PHP
        f'local token = "{A}" .. "{B}" .. "{C}"',  # Lua
        f'secret_key = "{A}" <> "{B}" <> "{C}"',  # Elixir
        f'$apiKey = "{A}" + `\n    "{B}" + "{C}"'.replace("`", ""),  # over two lines
        f'+API_TOKEN = ("{A}" +\n+    "{B}" +\n+    "{C}")',  # a diff, operators at line ends
        f'key = "".join(["{A}", "{B}", "{C}"])',  # commas inside a join call
        f'pub const SIGNING_KEY: &str = concat!(\n    "{A}",\n    "{B}{C}",\n);',  # Rust
        f"TOKEN=$(printf '%s%s' '{A}{B}' '{C}') ./deploy.sh",  # a command's arguments
    ],
)
def test_a_key_in_pieces_is_redacted_whole(text: str) -> None:
    out, n = redact(text)
    assert n >= 1
    assert not any(piece in out for piece in (A, B, C)), out


@pytest.mark.parametrize(
    "text",
    [
        'names = ["alpha-one", "beta-two", "gamma-three", "delta-four"]',
        f'keys = ["{A}", "{B}"]',  # a list of values, not pieces of one (each too short)
        'url = "https://example.com/" + "api/v1/" + "orders"',
        'msg = "Something went " + "wrong with the " + "request"',
        'sha = "c41f8e07a9d35b62" + "e1f04a7c98d2b356"',  # a digest in two halves, no name
        'echo "build" "c41f8e07a9d35b62e1f04a7c98d2b356"',
        'log.info("user=" + "alice" + " action=" + "login")',
    ],
)
def test_pieces_that_make_no_secret_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


def test_the_gate_opens_wherever_a_chain_is_redacted() -> None:
    """:data:`joins.GATE` (a rule of the one-pass scan) lets the joins be skipped: it must
    match every text in which a chain is joined and redacted."""
    texts = [
        f'api_key = "{A}" "{B}" "{C}"',
        f"my $secret = '{A}' . '{B}' . '{C}';",
        f'key = "".join(["{A}", "{B}", "{C}"])',
        f'pub const SIGNING_KEY: &str = concat!(\n    "{A}",\n    "{B}{C}",\n);',
    ]
    for text in texts:
        assert joins._chains(text, _core)[1] >= 1
        assert joins.GATE.search(text) and joins.gate(text)


def test_a_long_line_of_pieces_costs_linear_time() -> None:
    """Sixteen pieces a chain at most, and a name looked for in the 240 characters before it:
    a line of 260 KB of joined words (no secret) is read in well under the bound."""
    text = ('"abcdefgh" + ' * 20000) + '"end"'
    assert all(m.group(0).count('"') <= 32 for m in joins._CHAIN.finditer(text))
    started = time.perf_counter()
    assert joins.joined_pieces(text, _core) == (text, 0)
    assert time.perf_counter() - started < 20


def test_two_values_on_two_lines_are_not_joined() -> None:
    """A connection string on one line of a diff and a key on the next are two values: the
    secret inside the first is redacted in place and nothing between them is lost."""
    key = "Zq8Xw2Lp0Rt5Yu1Io9PaZq8Xw2Lp0Rt5Yu1Io9PaZq8Xw2Lp0Rt5Yu1Io9PaZq8Xw2Lp0Rt5Yu1Io9Pa1234=="
    text = (
        "@@ -1,3 +1,3 @@\n {\n"
        f'-  "Storage": "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={key};'
        'EndpointSuffix=core.windows.net"\n'
        '+  "Storage": "@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/st)"\n }\n'
    )
    out, n = redact(text)
    assert n == 1 and key not in out
    assert 'core.windows.net"\n+  "Storage": "@Microsoft.KeyVault(' in out
    assert joins._chains(text, _core) == (text, 0)


def test_a_secret_inside_one_piece_is_left_to_the_rules() -> None:
    text = f'label = "ghp_{A}{B}{C}abcdefghij" + "-suffix"'
    assert joins._chains(text, _core) == (text, 0)
