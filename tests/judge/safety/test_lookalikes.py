"""Issue 36: look-alikes kept, passwords found by where they stand, two-piece tokens joined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.safety.config_secrets import generated, value_is_secret
from judge.safety.lookalikes import is_lookalike, masked
from judge.safety.redact import redact

REPO = Path(__file__).resolve().parents[3]
SET = REPO / "bench" / "data" / "secrets"
JOIN = "\u00ab\u00bb"


@pytest.mark.parametrize(
    "text",
    [
        "const stripe = Stripe('pk_live_" + "51Hx9aQ2bC3dE4fG5hI6jK7lM8nO9pQ0rS');",
        "NEXT_PUBLIC_STRIPE_KEY=pk_test_" + "51Hx9aQ2bC3dE4fG5hI6jK7lM8nO9pQ0rS",
        'const firebaseConfig = {\n  apiKey: "AIza' + 'SyDk3x9Q2bC3dE4fG5hI6jK7lM8nO9pQ0r",\n'
        '  authDomain: "acme.firebaseapp.com",\n};',
        '<div class="g-recaptcha" data-sitekey="6Lc'
        + 'Xk3x9Q2bC3dE4fG5hI6jK7lM8nO9pQ0rStUvW"></div>',
        "OPENAI_API_KEY=sk-...your-key-here",
        "api_key: your-key-here",
        "curl -H 'Authorization: Bearer <TOKEN>' https://api.example.com",
        "password: ${DB_PASSWORD}",
        "ADMIN_PASSWORD=changeme",
        "SECRET_KEY = 'fake-key'",
        "JWT_SECRET=test-secret",
        "SLACK_BOT_TOKEN=xoxb-your-bot-token",
        "# jwt.io: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6"
        "IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "password = os.environ['DB_PASSWORD']",
        "password = getpass.getpass()",
        "PASSWORD_MIN_LENGTH = 12",
        "SELECT id, password_hash FROM users",
        "user = User.objects.create_user('alice', password='password')",
        'x = "hello_world" + "again"',
    ],
)
def test_lookalikes_reach_the_judge_unchanged(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("database:\n  user: app\n  password: Maplecopper2024!\n", "Maplecopper2024!"),
        ('[database]\npassword = "Tangoviolet77#"\n', "Tangoviolet77#"),
        ("[client]\npassword=Falconharbor12&\n", "Falconharbor12&"),
        ("DB_PASS=Rocketmaple991*", "Rocketmaple991*"),
        ('{"db": {"password": "Coppertango4@"}}', "Coppertango4@"),
        ("<password>Violetfalcon88$</password>", "Violetfalcon88$"),
        ('<add user="m" password="Harborrocket7!" />', "Harborrocket7!"),
        ("spring.datasource.password=Maplemaple55%", "Maplemaple55%"),
        ('dataSource.setPassword("Tangotango31!");', "Tangotango31!"),
        ("define('DB_PASSWORD', 'Summerviolet6#');", "Summerviolet6#"),
        ('dsn := "shop:Falconmaple9!@tcp(127.0.0.1:3306)/shop"', "Falconmaple9!"),
        ("db.internal:5432:orders:orders:Coppercopper12&", "Coppercopper12&"),
        ("      - MYSQL_ROOT_PASSWORD=Rockettango3$", "Rockettango3$"),
        ("wget --user=ci --password=Harborsummer44! https://x", "Harborsummer44!"),
    ],
)
def test_passwords_in_configuration_formats_are_redacted(text: str, secret: str) -> None:
    out, n = redact(text)
    assert n >= 1 and secret not in out and "[REDACTED:" in out


def test_two_piece_tokens_are_joined() -> None:
    token = "ghp_" + "Rt4Wz1Nc5Kd3Jf6Hg0Ps8Ua2Ee4Io7Uy1Tq3L"
    out, _ = redact(f'token = "{token[:20]}" + "{token[20:]}"')
    assert out == 'token = "[REDACTED:github-token]"'
    slack = "xoxb-" + "97360302267-6482186506992-G318aQuui3UGSS9m6gW1F2fy"
    out, _ = redact(f'curl -H "Authorization: Bearer {slack[:35]}\\\n{slack[35:]}" https://x')
    assert slack[35:] not in out and slack[:35] not in out


def test_code_and_placeholders_are_not_password_values() -> None:
    for value in ("password", "settings.DB_PASSWORD", "${X}", "null", "'a b c'", "'{}'", "12"):
        assert not value_is_secret(value), value
    assert value_is_secret("Maplecopper2024!") and value_is_secret("'Tango77#x'")
    assert is_lookalike("AIza" + "SyDk3x9Q2bC3dE4fG5hI6jK7lM8nO9pQ0r") is False


def test_the_held_out_set_is_what_its_script_writes(tmp_path: Path) -> None:
    before = {name: (SET / name).read_bytes() for name in ("cases.jsonl", "planted.jsonl")}
    subprocess.run([sys.executable, str(SET / "make_set.py")], check=True, capture_output=True)
    for name, data in before.items():
        assert (SET / name).read_bytes() == data, name
    planted = [
        json.loads(line)
        for line in (SET / "planted.jsonl").read_text("utf-8").replace(JOIN, "").splitlines()
    ]
    assert sum(not p["benign"] for p in planted) == 108
    assert sum(p["benign"] for p in planted) == 55


@pytest.mark.parametrize(
    "text",
    [
        # Masks inside real prefixes: the rest is one character repeated, or a mask.
        "GITHUB_TOKEN=ghp_" + "X" * 36,
        'openai.api_key = "sk-' + "x" * 48 + '"',
        "SLACK_BOT_TOKEN=xoxb-" + "x" * 9 + "-" + "x" * 10 + "-" + "x" * 12,
        "PERPLEXITY_API_KEY=pplx-" + "x" * 48,
        "key = AKIA" + "X" * 16,
        'API_KEY="glc_' + "1" * 42 + '="',
        '"token4": "xoxp-572370529330-573807301142-572331691188-' + "#" * 15 + '"',
        "oc login --token=sha256~_xxxxxx_" + "x" * 22 + "-" + "x" * 10 + "-X",
        # AWS's documentation examples, alone and in an aws config block.
        "[default]\naws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\n"
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY\n",
        '"AccessKeyId": "ASIA' + 'IOSFODNN7EXAMPLE",',
        # Manifests that name where a secret is kept.
        "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nspec:\n"
        "  secretStoreRef:\n    name: vault\n    kind: SecretStore\n",
        "apiVersion: 'kubernetes-client.io/v1'\nkind: ExternalSecret\n",
        # Anti-forgery tokens and names that say the value is no secret.
        '<input type="hidden" name="authenticity_token" value="7SWa-Fo1_hsC6oovQz8pLm2Rt5Vy" />',
        '"X-API-Name": "NRG0-Hermes-INTERNAL-API",',
        '  "credentialId": "B9mTcFSck2LzJO2S3ols63",',
        'public_key = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        # A model name and a digest passed to a client, a non-secret env default, a path flag.
        "client.chat.completions.create(model='gpt-4o-mini-2024-07-18', messages=m)",
        "client.get_commit('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b')",
        "level = os.getenv('LOG_LEVEL', 'info')",
        "mode = os.getenv('AUTH_MODE', 'basic')",
        "aws s3 ls --credentials ~/.aws/credentials",
        "see https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks",
        "password: settings.DB_PASSWORD",
        # A BEGIN line with no key material; a command's output standing for a token.
        "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
        'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x',
        '<add key="ApiKey" value="${API_KEY}" />',
    ],
)
def test_masks_examples_and_manifests_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


def test_a_real_token_in_a_prefix_is_not_a_mask() -> None:
    assert not masked("ghp_" + "B8TIbNywFkIK8UqfgPDnoSUw9jXi6YlIOfE5")
    assert not masked("abcdefghijkx")  # the last run is too short to be a mask
    assert masked("pplx-" + "x" * 40) and masked("bP88Q~" + "x" * 34)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # The literal default of an environment read under a secret name.
        ("password: <%= ENV.fetch('X', 'Violetharbor89%') %>", "Violetharbor89%"),
        ("password = os.environ.get('DB_PASSWORD', 'Violetharbor89%')", "Violetharbor89%"),
        ("token = os.getenv('API_TOKEN', 'q8Zr2LmN0vT5xW9yB3cD')", "q8Zr2LmN0vT5xW9yB3cD"),
        ("password: process.env.DB_PASSWORD || 'Violetharbor89%'", "Violetharbor89%"),
        (
            "const k = process.env['STRIPE_SECRET'] ?? 'q8Zr2LmN0vT5xW9yB3cD'",
            "q8Zr2LmN0vT5xW9yB3cD",
        ),
        # XML settings, a flag of any service, a generated key passed to a client.
        ('<add key="ApiKey" value="q8Zr2LmN0vT5xW9yB3cD4e" />', "q8Zr2LmN0vT5xW9yB3cD4e"),
        ('<property name="password" value="Violetfalcon88$"/>', "Violetfalcon88$"),
        ("deploy --auth nfp_hfpnpa7bRoq2ZYCGcsqe2B5RdtYM", "nfp_hfpnpa7bRoq2ZYCGcsqe2B5RdtYM"),
        ('co = cohere.Client("S8peA7OcDh8w8zDlYi5nEj9w6IOQd")', "S8peA7OcDh8w8zDlYi5nEj9w6IOQd"),
        (
            "c = SearchClient.create('0XYFO9KG21', '57e704153cb56450d868057ee8d7405c')",
            "57e704153cb56450d868057ee8d7405c",
        ),
        # Where no code can stand, a bare name is a value: .pgpass, an XML element, a DSN.
        ("db-prod.internal:5432:*:backup:LwiPntv3UmlVBhwGls", "LwiPntv3UmlVBhwGls"),
        ("<password>LwiPntv3UmlVBhwGls</password>", "LwiPntv3UmlVBhwGls"),
        # A webhook URL of any service, from its first generated part on.
        (
            "https://acme.webhook.office.com/webhookb2/IncomingWebhook/"
            "V2kwKdhmi93TwU52DQGY5GHcAY-wsdM6IsXOqrkePncyR6",
            "V2kwKdhmi93TwU52DQGY5GHcAY",
        ),
        # A private key's lines as quoted list items added in a diff.
        (
            '+tls_key_lines:\n+  - "-----BEGIN EC PRIVATE KEY-----"\n'
            '+  - "MHcCAQEEIOSv0BGLdAQhZJ1/t8Pdlz2dPtSQhfM3USbY9tZcOPW3eY+yqyzS+CjX"\n',
            "MHcCAQEEIOSv0BGLdAQhZJ1",
        ),
        (
            "client.run('MgQtgGfAdjrbHon3v715jUf9.JucWz9.-jbhmVHQycBGrZ3F0r')",
            "MgQtgGfAdjrbHon3v715jUf9.JucWz9.-jbhmVHQycBGrZ3F0r",
        ),
    ],
)
def test_values_under_secret_names_of_any_service_are_redacted(text: str, secret: str) -> None:
    out, n = redact(text)
    assert n >= 1 and secret not in out and "[REDACTED:" in out


def test_a_client_keeps_its_account_id_and_loses_its_key() -> None:
    sid, key = "AC886ae96d0cd99af856807a193ae0e236", "527d4e796772a2995780e9b785995ba3"
    out, _ = redact(f"client = Client('{sid}', '{key}')")
    assert out == f"client = Client('{sid}', '[REDACTED:client-secret]')"
    assert generated(key) and not generated(sid) and not generated("gpt-4o-mini-2024-07-18")


def test_a_key_cut_after_its_body_is_still_redacted() -> None:
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    assert redact("-----BEGIN RSA PRIVATE KEY-----\n" + body)[0] == "[REDACTED:private-key]\n"
