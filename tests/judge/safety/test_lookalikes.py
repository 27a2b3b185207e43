"""Issue 36: look-alikes kept, passwords found by where they stand, two-piece tokens joined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.safety.config_secrets import value_is_secret
from judge.safety.lookalikes import is_lookalike
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
    slack = "xoxb-" + "12345678901-1234567890123-abcdEfGhIjKlMnOpQrStUvWx"
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
