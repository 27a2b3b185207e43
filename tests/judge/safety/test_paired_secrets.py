"""Secrets whose name and value a format keeps apart (judge.safety.paired_secrets), through the
whole of ``redact``: each form found, and the look-alikes beside it kept."""

from __future__ import annotations

import time

import pytest

from judge.safety.paired_secrets import secret_name, secret_under
from judge.safety.redact import redact

PAIRED = "[REDACTED:paired-secret]"
KEY = "Qm7vT2xKp9Lr4sWn8bYc3dHf6jZa1eGu"  # invented, 32 characters, mixed
HEX = "c41f8e07a9d35b62e1f04a7c98d2b3561e0f7a4c2d9b8e35f61a07c4d2e9b318"  # invented


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # a CSV export: the header names the column once
            f"user_id,email,access_token,created_at\n9,bo@example.test,{KEY},2026-10-01\n",
            f"user_id,email,access_token,created_at\n9,bo@example.test,{PAIRED},2026-10-01\n",
        ),
        (  # tab-separated, a quoted header
            f'"name"\t"secret"\nbilling\t{KEY}',
            f'"name"\t"secret"\nbilling\t{PAIRED}',
        ),
        (  # SQL: columns, then rows of values (a comma inside a quoted value)
            f"INSERT INTO hooks (id, label, signing_key) VALUES (1, 'a, b', '{KEY}');",
            f"INSERT INTO hooks (id, label, signing_key) VALUES (1, 'a, b', '{PAIRED}');",
        ),
        (  # the second row of several
            f"INSERT INTO t (n, token) VALUES (1, 'x'), (2, '{KEY}');",
            f"INSERT INTO t (n, token) VALUES (1, 'x'), (2, '{PAIRED}');",
        ),
        (  # a HAR cookie: the name beside the value
            f'{{"name": "app_session", "value": "{KEY}", "path": "/"}}',
            f'{{"name": "app_session", "value": "{PAIRED}", "path": "/"}}',
        ),
        (  # Kubernetes env: name, then value on the next line
            "env:\n  - name: STRIPE_PASSWORD\n    value: Tulip-harbour-1987\n"
            "  - name: LOG_LEVEL\n    value: debug\n",
            f"env:\n  - name: STRIPE_PASSWORD\n    value: {PAIRED}\n"
            "  - name: LOG_LEVEL\n    value: debug\n",
        ),
        (  # a cookie jar: name in the sixth column, value in the seventh
            f"# Netscape HTTP Cookie File\n.app.test\tTRUE\t/\tTRUE\t1798761600\tsid\t{KEY}\n",
            f"# Netscape HTTP Cookie File\n.app.test\tTRUE\t/\tTRUE\t1798761600\tsid\t{PAIRED}\n",
        ),
        (  # a key passed to a signing call, hex included
            "h = crypto.createHmac('sha256', '" + HEX + "').update(b)",
            f"h = crypto.createHmac('sha256', '{PAIRED}').update(b)",
        ),
        (
            f'mac := hmac.New(sha512.New, []byte("{KEY}"))',
            f'mac := hmac.New(sha512.New, []byte("{PAIRED}"))',
        ),
        (  # wrappers between a secret name and its value
            f"kwargs={{'api_secret': b'{KEY}', 'port': 5432}}",
            f"kwargs={{'api_secret': b'{PAIRED}', 'port': 5432}}",
        ),
        (f"base:\n  token: &t {KEY}\n", f"base:\n  token: &t {PAIRED}\n"),
        (f"session({{ secret: ['{KEY}'] }})", f"session({{ secret: ['{PAIRED}'] }})"),
    ],
)
def test_a_secret_is_found_where_its_format_names_it(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        # a checksum column, an id column, words under a secret column
        "name,version,sha256\nrequests,2.31.0," + "942c5a758f98d790" * 4 + "\n",
        "id,keyword,count\n1,Qm7vT2xKp9Lr4sWn8bYc3dHf6jZa1eGu,3\n",
        "user,token_type,expires_in\nbo,bearer,3600\n",
        "name,password\nbo,${DB_PASSWORD}\n",
        # a numbered file listing is no table, though a line says "signal"
        "   753\t        checks and signal sending.\n   754\t        yet need " + KEY + "\n",
        # prose with commas
        "Keys, tokens, secrets\nare words, not values, here\n",
        # a name/value pair whose name says nothing secret, an analytics cookie
        f'{{"name": "build_id", "value": "{KEY}"}}',
        '{"name": "_ga", "value": "GA1.2.1234567890.1733389200"}',
        # SQL without a secret column
        f"INSERT INTO runs (id, commit_sha) VALUES (1, '{KEY}');",
        # a signing call with the algorithm and a variable only
        "crypto.createHmac('sha256', process.env.HOOK_KEY)",
        'jwt.encode(claims, "your-256-bit-secret", algorithm="HS256")',
        # an anchor's alias, a short value
        "prod:\n  token: *tok\n  secret: ['short']\n",
    ],
)
def test_what_is_no_secret_is_kept(text: str) -> None:
    assert redact(text) == (text, 0)


def test_secret_names_are_whole_words() -> None:
    assert secret_name("apiKey") and secret_name("dsn_secret") and secret_name("__Host-session")
    assert not secret_name("keyword") and not secret_name("signal") and not secret_name("monkey")
    assert secret_under("DB_PASSWORD", "Tulip-harbour-1987")
    assert not secret_under("DB_PASSWORD", "two words")
    assert not secret_under("token_type", KEY)


@pytest.mark.parametrize(
    "line",
    [
        # (0.1 s a line for the first version of the table rule: five minutes a megabyte)
        "SELECT "
        + ", ".join(f"run_line.column_{i}" for i in range(14))
        + ", run_line.token FROM run_line WHERE run_line.id IN ('a1');",
        "a b, c d, e f, g h, i j, k l, m n, o p, q r, s t, u v, w x, y z (token)",
        "id,keyword,count",
        '{"name": "session", "value": "x"}, ',
        "token: &anchor ",
    ],
)
def test_a_megabyte_of_near_misses_is_read_in_linear_time(line: str) -> None:
    """Lines that almost open a table or a pair, repeated to a megabyte (the first version of
    the table rule took minutes on one SWE-bench task, trying every split of a line's blanks
    between its fields)."""
    text = (line + "\n") * (1_000_000 // (len(line) + 1))
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 30
