"""Tests for judge.safety.redact: every pattern, what must be kept, and linear time on large input.

Fake secrets are assembled from pieces so that no scanner mistakes this file for a leak.
"""

from __future__ import annotations

import re

import pytest

from judge.safety.gitleaks import go_to_python, load_rules, shannon_entropy
from judge.safety.redact import PATTERNS, marker, pattern_names, redact

# Fake keys of the real shape (AWS's documented ``...EXAMPLE`` keys are look-alikes, kept).
AWS_ID = "AKIA" + "VDBSFA6LPR1X9R8Q"
AWS_SECRET = "Tq3v/9LxR2mWz+8bK4nP0" + "sYc7HjDf1GeU6aZ5iOw"
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key id {AWS_ID} in config", "key id [REDACTED:aws-access-key-id] in config"),
        (
            f"aws_secret_access_key = {AWS_SECRET}",
            "aws_secret_access_key = [REDACTED:aws-secret-access-key]",
        ),
        (
            f'{{"AwsSecretKey": "{AWS_SECRET}"}}',
            '{"AwsSecretKey": "[REDACTED:aws-secret-access-key]"}',
        ),
        (f"token {GH}.", "token [REDACTED:github-token]."),
        ("gho_" + "Q7mR" * 9, "[REDACTED:github-token]"),
        ("ghs_" + "Z9" * 18, "[REDACTED:github-token]"),
        ("github_pat_" + "11ABCDEFG0" + "Kp3Tz" * 14, "[REDACTED:github-token]"),
        ("OPENAI=sk-" + "aB3" * 16, "OPENAI=[REDACTED:openai-api-key]"),
        ("k: sk-proj-" + "Ab_9-" * 10, "k: [REDACTED:openai-api-key]"),
        ("sk-ant-api03-" + "Zx8_" * 20, "[REDACTED:anthropic-api-key]"),
        ("slack xoxb-" + "1234567890-abcdefghij", "slack [REDACTED:slack-token]"),
        (
            "post to https://hooks.slack.com/services/T000/B000/" + "X" * 24,
            "post to [REDACTED:slack-webhook]",
        ),
        ("maps key AIza" + "SyD-" + "Xq4Lm" * 6 + "T", "maps key [REDACTED:google-api-key]"),
        (f"cookie={JWT};", "cookie=[REDACTED:jwt];"),
        (
            "curl -H 'Authorization: Bearer abcDEF123.456-789_xyz' https://api",
            "curl -H 'Authorization: Bearer [REDACTED:bearer-token]' https://api",
        ),
        (
            "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app",
            "DATABASE_URL=postgres://app:[REDACTED:url-password]@db.internal:5432/app",
        ),
        ("GITHUB_TOKEN=abc123def456", "GITHUB_TOKEN=[REDACTED:env-secret]"),
        ("export DB_PASSWORD='hunter2 horse'", "export DB_PASSWORD=[REDACTED:env-secret]"),
        (
            '+STRIPE_API_KEY="rk_live_51Habc"  # prod',
            "+STRIPE_API_KEY=[REDACTED:env-secret]  # prod",
        ),
        ("SECRET=xyz", "SECRET=[REDACTED:env-secret]"),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private-key]\nafter"),
    ],
)
def test_each_pattern_redacts_and_keeps_context(text: str, expected: str) -> None:
    out, n = redact(text)
    assert out == expected
    assert n == 1


def test_unterminated_pem_block_is_still_redacted() -> None:
    # A clipped trace may cut the END line off; header and base64 body must still go.
    text = PEM.rsplit("\n", 1)[0] + "\n[... 900 characters elided ...]\nnext line"
    out, n = redact(text)
    assert n == 1
    assert "MIIEow" not in out and "VTLw7" not in out
    assert out.startswith("[REDACTED:private-key]")
    assert out.endswith("[... 900 characters elided ...]\nnext line")


def test_pem_inside_json_string_is_redacted() -> None:
    body = PEM.replace("\n", "\\n")
    out, n = redact(f'{{"private_key": "{body}\\n", "x": 1}}')
    assert n == 1
    assert out == '{"private_key": "[REDACTED:private-key]\\n", "x": 1}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Found by the secrets corpus (tests/judge/safety/test_secrets.py): an empty URL user, and
        # secrets under lower-case keys in YAML, JSON and code.
        (
            "CACHE_URL = 'redis://:r3d1sPa55@cache:6379/0'",
            "CACHE_URL = 'redis://:[REDACTED:url-password]@cache:6379/0'",
        ),
        ('      password: "Pr0d-Yaml!"', "      password: [REDACTED:config-secret]"),
        ("db_password: hunter2hunter2", "db_password: [REDACTED:config-secret]"),
        (
            '{"user": "app", "password": "s3cr3t-99"}, next',
            '{"user": "app", "password": [REDACTED:config-secret]}, next',
        ),
        (
            "create_user(username='u', password='pw-12345')",
            "create_user(username='u', password=[REDACTED:config-secret])",
        ),
        ("client_secret = 'c-81f.9x'", "client_secret = [REDACTED:config-secret]"),
    ],
)
def test_lower_case_config_secrets_and_empty_url_user(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    "text",
    [
        "password: str",  # an annotation, not a value
        "    token: Optional[str] = None",
        'if password == "x":',
        "password = get_password()",
        'api_key = f"{prefix}-{suffix}"',
        '"max_tokens": 384',
        '"token_type": "bearer"',
        "secret_key: ${SECRET_KEY}",
        "assert load({'token': None}, {'APP_TOKEN': 'abc'})['token'] == 'abc'",  # test data
    ],
)
def test_lower_case_keys_without_a_literal_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "text",
    [
        # git object ids in a diff header and full SHAs are evidence, not secrets
        "diff --git a/x.py b/x.py\nindex 92394a7eae..c1c9cd1c87 100644\n",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        # placeholders and code, not values
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
        "PASSWORD = os.environ['PASSWORD']",
        "API_TOKEN = settings.API_TOKEN",
        "USE_AUTH=true",
        "GITHUB_TOKEN=",
        "MAX_TOKENS=512",
        'curl -H "Authorization: Bearer $TOKEN" https://api',
        "password = request.form['password']",
        "http://localhost:8000/path?q=1",
        "the task-runner and disk-usage scripts",
        "pip install scikit-learn sk-video",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


def test_counts_every_secret_and_is_deterministic() -> None:
    text = f"{AWS_ID}\n{GH}\nAuthorization: Bearer {JWT}\n{PEM}\n"
    first = redact(text)
    assert first == redact(text)
    out, n = first
    # The JWT is matched by its own pattern first; the bearer rule then sees only the marker
    # and must not count it again.
    assert n == 4
    assert "Authorization: Bearer [REDACTED:jwt]" in out
    assert redact(out) == (out, 0), "redacting redacted text changes nothing"


def test_registry_names_and_marker() -> None:
    names = pattern_names()
    assert names[0] == "private-key"
    assert len(names) == len(set(names))
    assert {"aws-access-key-id", "github-token", "jwt", "env-secret"} <= set(names)
    assert marker("jwt") == "[REDACTED:jwt]"
    # needles are compared against lower-cased text, so they must be lower case themselves
    for pattern in PATTERNS:
        assert all(n == n.lower() for n in pattern.needles), pattern.name


def test_custom_pattern_list() -> None:
    only_github = [p for p in PATTERNS if p.name == "github-token"]
    assert redact(f"{AWS_ID} {GH}", patterns=only_github) == (
        f"{AWS_ID} [REDACTED:github-token]",
        1,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "chunk",
    [
        "ordinary log line with some words and numbers 12345 and a path /usr/lib/x.py\n",
        "-----BEGIN RSA PRIVATE KEY-----\n",  # many BEGINs, no END
        "https://user:pass" * 3,  # URL-ish without @
        "sk-" + "a" * 19 + " ",  # just short of a key, again and again
        "eyJ" + "a" * 50 + ".",  # JWT-like heads without the rest
        "SECRET_TOKEN=" + "x" * 50 + "(\n",  # env lines that fail at the end
        'db_password: "' + "x" * 50 + "\n",  # quoted config values never closed
        "A" * 1000,  # one huge token
    ],
)
@pytest.mark.timeout(600)
def test_large_input_is_linear(chunk: str) -> None:
    # 50 MB of text that almost matches must redact at all: a quadratic pattern would take
    # hours and trip the hang guard above. Its speed is measured in bench/, not asserted here.
    text = chunk * (50_000_000 // len(chunk))
    redacted, _ = redact(text)
    assert len(redacted) >= len(text) // 2


# --- issue 16: the kinds that reached the provider, and the general shapes -----------------------
# Values are assembled from pieces, like the ones above.
HEX32 = "3f9a1c7e5b2d4f6a" + "8c0e1b3d5f7a9c2e"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key = rk_live_" + "51NqXgLm2Vx9Rt4Wz7Yb1Nc5", "key = [REDACTED:stripe-key]"),
        (
            "AccountName=a;AccountKey=" + "Xk9Lm2Vb7Rt4Wz1N==" + ";EndpointSuffix=core",
            "AccountName=a;AccountKey=[REDACTED:connection-string];EndpointSuffix=core",
        ),
        (
            "https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=" + "q8Lm2Vx9Rt%2B4Wz%3D",
            "https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=[REDACTED:connection-string]",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQVYBGVxQ2kBDADK"
            "q3Lm9Xv2Rb8Tz4Wc1Nk5\n=Xk9L\n-----END PGP PRIVATE KEY BLOCK-----",
            "[REDACTED:private-key]",
        ),
        (
            "//registry.npmjs.org/:_authToken=npm_" + "Xq7Lm2Vb9Rt4Wz1Nc5Kd3Jf6Hg0Ps8Ua2Ee4",
            "//registry.npmjs.org/:_authToken=[REDACTED:npm-access-token]",
        ),
        (
            "login(token='hf_" + "XqLmVbRtWzNcKdJfHgPsUaEeIoUyTqZxCv')",
            "login(token='[REDACTED:huggingface-access-token]')",
        ),
        (
            "machine pypi.internal\n  login ci\n  password " + "Tq3-Wm8Zr5Yx2",
            "machine pypi.internal\n  login ci\n  password [REDACTED:netrc-password]",
        ),
        (
            "curl -u admin:" + "Zq8mP2vLx9Kt4 https://x",
            "curl -u admin:[REDACTED:cli-password] https://x",
        ),
        # gitleaks wants exactly 22 + 43 characters; this module's rule (same name) any length.
        (
            "sg = Client('SG."
            + "Xq7Lm2Vb9Rt4Wz1Nc5Kd3J."
            + "f6Hg0Ps8Ua2Ee4Io7Uy1Tq3Zx5Cv8Bn6Mm4Ll2Kk0Jj')",
            "sg = Client('[REDACTED:sendgrid-api-token]')",
        ),
        (
            "SG." + "Xq7Lm2Vb9Rt4Wz1Nc5K.f6Hg0Ps8Ua2Ee4Io7Uy1Tq3Zx5Cv8Bn6",
            "[REDACTED:sendgrid-api-token]",
        ),
        (
            '{"auths": {"ghcr.io": {"auth": "Y2ktYm90Om' + 'doc9YcTdMbTJWYjlS"}}}',
            '{"auths": {"ghcr.io": {"auth": "[REDACTED:docker-auth]"}}}',
        ),
        (
            "mysql -h db -u app -p" + "Tr0ub4dor-x7 app",
            "mysql -h db -u app -p[REDACTED:cli-password] app",
        ),
        (
            "kind: Secret\ndata:\n  username: YXBw\n  password: " + "UzNjcjN0LVBy",
            "kind: Secret\ndata:\n  username: [REDACTED:kubernetes-secret]\n"
            "  password: [REDACTED:kubernetes-secret]",
        ),
        ("api_key: key-" + HEX32, "api_key: [REDACTED:mailgun-api-key]"),
        ('-H "DD-API-KEY: ' + HEX32 + '"', '-H "DD-API-KEY: [REDACTED:api-key-header]"'),
        ("TWILIO_AUTH_TOKEN=" + HEX32, "TWILIO_AUTH_TOKEN=[REDACTED:env-secret]"),
        (
            "Authorization: Digest " + "username=u, response=6629fae4939",
            "Authorization: Digest [REDACTED:auth-header] response=6629fae4939",
        ),
        (
            "./sync --db-password=" + "v9Rt4-Wz7Y --api-token " + "Wz7Yb1Nc5Kd3",
            "./sync --db-password=[REDACTED:cli-password] --api-token [REDACTED:cli-password]",
        ),
    ],
)
def test_issue_16_kinds_are_redacted(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "4c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
        "tests/auth/test_tokens.py::TestRefresh::test_password_reset_token[expired-1]",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
        "django-4.2.11-py3-none-any.whl and /home/runner/.ssh/id_ed25519.pub",
        'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
        "docker run -u 1000:1000 --rm app && mkdir -p build/secrets && pip install -U pip",
        "kind: ConfigMap\ndata:\n  LOG_LEVEL: info",
        "pg_dump --no-password app; psql --password-file=/run/pw",
        "curl -u user:pass https://example.com",  # a dummy, in the rules added for issue 16
        # (Not here: "Sec-WebSocket-Key: <base64 nonce>", which gitleaks' generic-api-key
        # redacts; harmless, and not a secret either.)
        "Authorization: Bearer $TOKEN",
        'cfg = {"auth": "none", "token": None}',
    ],
)
def test_issue_16_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


def test_go_regex_syntax_is_translated() -> None:
    # RE2 lets "(?i)" stand mid-pattern, scoped to the rest of its group, also across "|".
    assert go_to_python(r"\b(SG\.(?i)[a-z]{3})\z") == r"\b(SG\.(?i:[a-z]{3}))\Z"
    assert go_to_python(r"a(?i)b|c") == r"a(?i:b)|(?i:c)"
    assert go_to_python(r"pat[[:alnum:]]{2}") == r"pat[0-9A-Za-z]{2}"
    assert go_to_python(r"[\]x](?i)y") == r"[\]x](?i:y)"


def test_gitleaks_rules_load_with_their_entropy_and_allowlists() -> None:
    rules = {r.id: r for r in load_rules().rules}
    assert len(rules) == 220 and "pkcs12-file" not in rules
    assert rules["generic-api-key"].entropy == 3.5 and rules["generic-api-key"].allowlists
    # 1 bit per character for two symbols in equal shares; 0 for one symbol repeated.
    assert shannon_entropy("abab") == pytest.approx(1.0)
    assert shannon_entropy("aaaa") == 0.0
    # Low entropy is skipped, high entropy under a secret name is a finding.
    assert redact("api_secret = 'aaaaaaaaaaaaaaaaaaaa'")[0].count("generic-api-key") == 0
    found = redact("widget_key = Xk9Lm2Vb7Rt4Wz1Nc5Kd3")[0]
    assert found == "widget_key = [REDACTED:generic-api-key]"


#: Shapes an outside attacker got past redaction (1 Dec 2026), each with its secret.
ATTACK_SHAPES = [
    (
        '{"arguments":"{\\"user\\": \\"ops\\", \\"password\\": \\"' + "Zr8!mQ2vLx7p" + '\\"}"}',
        "Zr8!mQ2vLx7p",
    ),
    (
        "aws configure set aws_secret_access_key " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Vn2R",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Vn2R",
    ),
    ("echo 'Hunter2-Sup3r!x' | sudo -S apt-get install foo", "Hunter2-Sup3r!x"),
    ("Password=" + "Pa55w0rd!Zx91" + ";Server=db.internal;User Id=sa;", "Pa55w0rd!Zx91"),
    ("postgresql://app:" + "Ab9/x7Kq2Lm" + "@db.internal:5432/app", "Ab9/x7Kq2Lm"),
    ("Das Passwort lautet " + "Qz7kLm2vXp9D" + ".", "Qz7kLm2vXp9D"),
    ("La contraseña de producción es " + "Qz7kLm2vXp9E", "Qz7kLm2vXp9E"),
    (
        "https://discord.com/api/webhooks/123456789012345678/" + "AbCdEfGhIjKlMnOpQrSt" * 3,
        "AbCdEfGhIjKlMnOpQrSt",
    ),
    (
        "Set-Cookie: sessionid=" + "8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c" + "; Path=/; HttpOnly",
        "8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c",
    ),
]

#: Look-alikes the new rules must leave alone (code and prose that name a password).
ATTACK_LOOKALIKES = [
    "password = models.CharField(max_length=100)",
    "def authenticate(self, request, username=None, password=None, **kwargs):",
    "The password is required and must be 12 characters long.",
    "see https://registry.npmjs.org:443/@babel/core and http://host:8080/a@b",
    "echo 'hello world' | grep hello",
    "Set-Cookie: theme=dark; Path=/",
    "if password1 and password2 and password1 != password2:",
]


@pytest.mark.parametrize(("text", "secret"), ATTACK_SHAPES)
def test_the_shapes_an_outside_attacker_found_are_redacted(text: str, secret: str) -> None:
    redacted, n = redact(text)
    assert n >= 1 and secret not in redacted, redacted


@pytest.mark.parametrize("text", ATTACK_LOOKALIKES)
def test_their_look_alikes_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "text",
    [
        "api_key = 'Zq8Xw2Lp0Rt5Yu1Io9Pa'",
        "x" * 119 + "key = 'Zq8Xw2Lp0Rt5Yu1Io9Pa'",
        "x" * 121 + "key = 'Zq8Xw2Lp0Rt5Yu1Io9Pa'",
        "DB.Session-Token: Zq8Xw2Lp0Rt5Yu1Io9Pa and SIGNATURE=Zq8Xw2Lp0Rt5Yu1Io9Pa_tail",
        "my_secretkey_secret_token='Zq8Xw2Lp0Rt5Yu1Io9Pa' token 'Zq8Xw2Lp0Rt5Yu1Io9Pa'",
        "\u212aey: Zq8Xw2Lp0Rt5Yu1Io9Pa \u017fecret= Zq8Xw2Lp0Rt5Yu1Io9Pa",  # Kelvin sign, long s
        "passphrase -> `Zq8Xw2Lp0Rt5Yu1Io9Pa`; apikey=>Zq8Xw2Lp0Rt5Yu1Io9Pa",
    ],
)
def test_high_entropy_rule_tried_at_its_starts_matches_as_everywhere(text: str) -> None:
    """The high-entropy rule runs only where its name can start (``starts``): the same
    replacements as its regex tried at every position."""
    from judge.safety.redact import SHAPES, _apply
    from judge.safety.secret_shapes import SECRET_HEADS, SECRET_WORDS

    words = re.sub(r"\(\?:or\)\?", "", SECRET_WORDS).split("|") + ["password"]
    assert all(any(word.startswith(head) for head in SECRET_HEADS) for word in words)

    (rule,) = [p for p in SHAPES if p.name == "high-entropy-secret"]
    assert rule.starts is not None
    for sample in (text, text + "\n" + text.upper(), text.lower()):
        assert _apply(rule, sample) == _apply(rule._replace(starts=None), sample)
    assert _apply(rule, text)[1] > 0 or "x" * 121 in text


def test_base64_runs_are_the_regex_matches() -> None:
    """unescape.base64_runs finds ASCII runs with bytes methods: the spans of the regex."""
    import random

    from judge.safety import folding, unescape

    rng = random.Random(25)
    texts = [
        "x" * 19 + " " + "Ab3+/_-" * 4 + "== tail",
        "Ab3" * 7 + "===",
        "Ab3" * 7 + "=Ab",
        "Ab3" * 7 + "=",
        "caf\u00e9 " + "Ab3" * 8,
        "",
    ]
    for _ in range(3000):
        alphabet = "aB3+/_-= .\n" + ("\u00e9" if rng.random() < 0.2 else "")
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90))))
    for text in texts:
        for minimum, regex in ((20, unescape._BASE64), (16, folding._BASE64)):
            expected = [m.span() for m in regex.finditer(text)]
            assert list(unescape.base64_runs(text, minimum, regex)) == expected, text
