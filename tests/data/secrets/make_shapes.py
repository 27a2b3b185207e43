# ruff: noqa: E501 -- the texts are fixtures: realistic lines, kept whole so that they read as such
"""Write the third part of the planted-secrets corpus, secrets by shape (issue "a safety layer
that is fast and precise", step 3): ``shapes_cases.jsonl`` and ``shapes_planted.jsonl`` (run
``python tests/data/secrets/make_shapes.py``).

Written by the developer of the rules, at the same time as the rules: development data, not a
held-out set. Every value is fake (seeded random characters in the real shape). Each planted
row gives the value as it is written in the case (``secret``: encoded, split or disguised as
the attacker would write it), and where the written form hides it, the plain value
(``plain``); neither may reach the provider, the store or an output. Look-alikes
(``marker`` null) must reach the judge unchanged. Values are split by ``«»`` (removed on load).
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).parent
J = "\u00ab\u00bb"
_RNG = random.Random(25)
ALNUM = string.ascii_letters + string.digits
CASES: list[dict[str, Any]] = []
PLANTED: list[dict[str, Any]] = []


def fake(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def split(value: str) -> str:
    half = len(value) // 2
    return value[:half] + J + value[half:]


def case(case_id: str, task: str, trace: list[tuple[str, str]], rows: list[dict[str, Any]]) -> None:
    """A case whose texts use {0}, {1}... for the rows' written values (split by «»)."""
    values = [split(r["secret"]) for r in rows]
    CASES.append(
        {
            "id": case_id,
            "kind": "agent_run",
            "task": task.format(*values),
            "trace": [
                {"id": f"t{i}", "role": role, "content": text.format(*values)}
                for i, (role, text) in enumerate(trace)
            ],
        }
    )
    for row, value in zip(rows, values, strict=True):
        PLANTED.append({"case": case_id, "where": "trace", **row, "secret": value})


GH = "ghp_" + fake(36)
OPENAI = "sk-proj-" + fake(48)
case(
    "shape-01-split-lines",
    "The CI token check fails; see the agent's notes.",
    [
        ("agent", f'token = "{{0}}" +\n    "{{1}}"\nprint(len(token))'),
        ("observation", "export OPENAI_API_KEY={2}\\\n{3}\nok"),
    ],
    [
        {"kind": "key split over lines (head)", "secret": GH[:20], "marker": "github-token", "context": "token = "},
        {"kind": "key split over lines (tail)", "secret": GH[20:], "marker": "github-token", "context": "print(len(token))"},
        {"kind": "key split with a backslash (head)", "secret": OPENAI[:30], "marker": "openai-api-key", "context": "export OPENAI_API_KEY="},
        {"kind": "key split with a backslash (tail)", "secret": OPENAI[30:], "marker": "openai-api-key", "context": "ok"},
    ],
)

PEM_LINES = [fake(64, ALNUM + "+/") for _ in range(4)]
case(
    "shape-02-pem-list-items",
    "Deploy fails: the TLS key in values.yaml looks malformed.",
    [
        (
            "observation",
            "tls:\n  private_key:\n    - {0}\n    - {1}\n  cert: see vault\n",
        ),
        (
            "agent",
            "The key as a Markdown list:\n\n-----BEGIN RSA PRIVATE KEY-----\n* {2}\n* {3}\n-----END RSA PRIVATE KEY-----\n",
        ),
    ],
    [
        {"kind": "PEM body as YAML list items", "secret": PEM_LINES[0], "marker": "private-key", "context": "private_key:"},
        {"kind": "PEM body as YAML list items", "secret": PEM_LINES[1], "marker": "private-key", "context": "cert: see vault"},
        {"kind": "PEM body as Markdown list items", "secret": PEM_LINES[2], "marker": "private-key", "context": "The key as a Markdown list"},
        {"kind": "PEM body as Markdown list items", "secret": PEM_LINES[3], "marker": "private-key", "context": "-----END RSA PRIVATE KEY-----"},
    ],
)

GH2 = "ghp_" + fake(36)
SLACK = "xoxb-" + fake(12, string.digits) + "-" + fake(24)
AWS_ID = "AKIA" + fake(16, string.ascii_uppercase + string.digits)
AWS_ID2 = "AKIA" + fake(16, string.ascii_uppercase + string.digits)
STRIPE = "sk_live_" + fake(40)
case(
    "shape-03-encoded",
    "Why does the deploy script print credentials?",
    [
        ("agent", "```bash\necho {0} | base64 -d > ~/.gh_token\n```"),
        ("observation", 'GET /hook?next=%2Fhome&token={1} HTTP/1.1\n{{"note": "{2}"}}'),
        ("observation", "<pre>stripe_key = &#115;&#107;{3}</pre>"),
        ("observation", "id: {4}\nregion: eu-west-1"),
        ("observation", "full width: {5} end"),
    ],
    [
        {"kind": "base64-encoded token", "secret": base64.b64encode(GH2.encode()).decode(), "plain": GH2, "marker": "base64-github-token", "context": "| base64 -d"},
        {"kind": "URL-encoded token", "secret": quote(SLACK, safe=""), "plain": SLACK, "marker": "slack-token", "context": "GET /hook?next=%2Fhome&token="},
        {"kind": "JSON-escaped token", "secret": "\\u0067hp\\u005f" + GH[4:], "plain": GH, "marker": "github-token", "context": '{"note": "'},
        {"kind": "HTML-escaped token", "secret": "&#95;" + STRIPE[3:], "plain": STRIPE, "marker": "stripe-key", "context": "<pre>stripe_key = "},
        {"kind": "zero-width characters inside a key", "secret": AWS_ID[:8] + "\u200b" + AWS_ID[8:], "plain": AWS_ID, "marker": "aws-access-key-id", "context": "region: eu-west-1"},
        {"kind": "full-width key", "secret": "".join(chr(ord(c) + 0xFEE0) for c in AWS_ID2), "plain": AWS_ID2, "marker": "aws-access-key-id", "context": "full width: "},
    ],
)

SHA_CRYPT = "$6$" + fake(12, ALNUM + "./") + "$" + fake(86, ALNUM + "./")
YESCRYPT = "$y$j9T$" + fake(22, ALNUM + "./") + "$" + fake(43, ALNUM + "./")
APR1 = "$apr1$" + fake(8, ALNUM + "./") + "$" + fake(22, ALNUM + "./")
BCRYPT = "$2y$10$" + fake(53, ALNUM + "./")
HT_SHA = "{SHA}" + base64.b64encode(bytes(_RNG.randrange(256) for _ in range(20))).decode()
case(
    "shape-04-password-hashes",
    "Users cannot log in after the migration; compare the hashes.",
    [
        ("observation", "$ sudo cat /etc/shadow | head -2\nroot:{0}:19700:0:99999:7:::\ndeploy:{1}:19701:0:99999:7:::"),
        ("observation", "$ cat .htpasswd\nalice:{2}\nbob:{3}\ncarol:{4}"),
    ],
    [
        {"kind": "shadow SHA-512 crypt hash", "secret": SHA_CRYPT, "marker": "password-hash", "context": "root:"},
        {"kind": "shadow yescrypt hash", "secret": YESCRYPT, "marker": "password-hash", "context": "deploy:"},
        {"kind": "htpasswd apr1 hash", "secret": APR1, "marker": "password-hash", "context": "alice:"},
        {"kind": "htpasswd bcrypt hash", "secret": BCRYPT, "marker": "password-hash", "context": "bob:"},
        {"kind": "htpasswd SHA hash", "secret": HT_SHA, "marker": "password-hash", "context": "carol:"},
    ],
)

PUTTY_PRIV = [fake(64, ALNUM + "+/") for _ in range(3)]
PUTTY_MAC = fake(64, "0123456789abcdef")
case(
    "shape-05-putty",
    "The deploy bot's PuTTY key stopped working.",
    [
        (
            "observation",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy-bot\nPublic-Lines: 2\n"
            "AAAAC3NzaC1lZDI1NTE5AAAAIB3Yc9Dh0Fx7nW4rPq2sLm8kJv6tRz1uAe5iOp3gHyXb\nAAAAIB3Yc9Dh\n"
            "Private-Lines: 3\n{0}\n{1}\n{2}\nPrivate-MAC: {3}\n",
        )
    ],
    [
        {"kind": "PuTTY private lines", "secret": PUTTY_PRIV[0], "marker": "putty-private-key", "context": "PuTTY-User-Key-File-3: ssh-ed25519"},
        {"kind": "PuTTY private lines", "secret": PUTTY_PRIV[1], "marker": "putty-private-key", "context": "Comment: deploy-bot"},
        {"kind": "PuTTY private lines", "secret": PUTTY_PRIV[2], "marker": "putty-private-key", "context": "Public-Lines: 2"},
        {"kind": "PuTTY private MAC", "secret": PUTTY_MAC, "marker": "putty-private-key", "context": "Private-MAC: "},
    ],
)

TEAMS = (
    fake(8, "0123456789abcdef") + "-1a2b-4c3d-8e9f-"
    + fake(12, "0123456789abcdef") + "@" + fake(8, "0123456789abcdef") + "/IncomingWebhook/" + fake(32, "0123456789abcdef")
    + "/" + fake(8, "0123456789abcdef")
)
ZAPIER = fake(7, string.digits) + "/" + fake(7, string.ascii_lowercase + string.digits) + "/"
SALT = fake(32)
SEED = fake(24, ALNUM + "-_")
case(
    "shape-06-webhooks-and-generic",
    "Alerts stopped reaching the on-call channel.",
    [
        (
            "observation",
            "notify.teams_url = https://acmecorp.webhook.office.com/webhookb2/{0}\n"
            "notify.zapier = https://hooks.zapier.com/hooks/catch/{1}",
        ),
        ("observation", 'settings.py:41: SESSION_SIGNING_SALT = "{2}"\nsettings.py:42: rng_seed: {3}'),
    ],
    [
        {"kind": "Teams webhook", "secret": TEAMS, "marker": "teams-webhook", "context": "notify.teams_url = "},
        {"kind": "Zapier webhook", "secret": ZAPIER, "marker": "zapier-webhook", "context": "notify.zapier = "},
        {"kind": "high-entropy value under a key-like name", "secret": SALT, "marker": "high-entropy-secret", "context": "SESSION_SIGNING_SALT = "},
        {"kind": "high-entropy value under a key-like name", "secret": SEED, "marker": "high-entropy-secret", "context": "rng_seed: "},
    ],
)

# --- look-alikes: evidence a judge needs, which must reach it unchanged --------------------------
LOOKALIKES = [
    ("commit hash", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)"),
    ("UUID request id", "request_id: 3f0c6e8a-2b7d-4c1e-9a5f-0d8e7b6c5a41"),
    ("sha256 digest", "checksum: sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"),
    ("npm integrity", 'integrity: "sha512-K3Xw9mQ2rL8vN4tP7yB1cD6fG0hJ5kS9aZ2xW8eR4tY7uI3oP6lK1jH5gF9dS2aQ=="'),
    ("shell positional", "awk -F: '{print $1, $6}' /etc/passwd | sort"),
    ("base64 of ordinary text", "echo " + base64.b64encode(b"hello from the build server, all tests green").decode() + " | base64 -d"),
    ("URL-encoded query", "GET /search?q=r%C3%A9sum%C3%A9%20builder&page=2 HTTP/1.1"),
    ("JSON-escaped prose", '{"msg": "caf\\u00e9 is open \\u2014 see you"}'),
    ("HTML entities", "<p>Tom &amp; Jerry &lt;3 &#169; 2024</p>"),
    ("full-width text", "ＡＢＣ株式会社 ２０２４年"),
    ("Teams meeting link", "join: https://teams.microsoft.com/l/meetup-join/19%3ameeting_abc/0?context=%7b%7d"),
    ("placeholder key", 'api_secret = "YOUR_API_SECRET_HERE_0123456789"'),
    ("cache key", 'cache_key = "user_profile_12345678"'),
    ("certificate body under cert", "cert:\n  - MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ"),
    ("test id", "tests/test_auth.py::TestTokenRefresh::test_refresh_rotates_token PASSED"),
    ("two lines of prose", "The server restarted at 09:14\nand recovered by 09:20 without data loss"),
]
CASES.append(
    {
        "id": "shape-07-lookalikes",
        "kind": "agent_run",
        "task": "Summarise what the logs below show.",
        "trace": [{"id": f"t{i}", "role": "observation", "content": text} for i, (_, text) in enumerate(LOOKALIKES)],
    }
)
#: Known false redactions among the look-alikes: the older config-secret rule redacts a quoted
#: value of 8+ characters under "secret" unless it is a bare placeholder ("your_api_secret");
#: one with digits is redacted (left as it was, so that no judged case changes).
FALSE_POSITIVES: dict[str, str] = {}  # known false redactions: none since issue 36
PLANTED.extend(
    {
        "case": "shape-07-lookalikes",
        "kind": f"benign:{kind}",
        "where": "trace",
        "secret": text,
        "marker": FALSE_POSITIVES.get(kind),
        "context": text[:12],
        **({"false_positive": True} if kind in FALSE_POSITIVES else {}),
    }
    for kind, text in LOOKALIKES
)


def write() -> None:
    """Write both files."""
    (HERE / "shapes_cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), "utf-8"
    )
    (HERE / "shapes_planted.jsonl").write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in PLANTED), "utf-8"
    )


if __name__ == "__main__":
    write()
