# ruff: noqa: E501 -- the texts are fixtures: realistic lines, kept whole so that they read as such
"""Write the second part of the planted-secrets corpus: ``more_cases.jsonl`` and
``more_planted.jsonl`` (run from anywhere: ``python tests/data/secrets/make_more.py``).

Every value is fake: shaped like the real thing (prefix, alphabet, length) so that detectors
that look at shapes are tested, but made of arbitrary characters. Each secret is written split
by ``«»`` (removed by the tests on load) so that secret scanners do not flag the files.

A planted row names the ``kind`` of secret (the attacker's list in issue 16, then the general
shapes), where it is (task | diff | trace), the ``marker`` expected in its place (null for a
benign look-alike that must be left alone) and ``context``, text beside it that must stay.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
J = "\u00ab\u00bb"  # the split marker


def split(value: str) -> str:
    """The value with the split marker in its middle."""
    half = len(value) // 2
    return value[:half] + J + value[half:]


_RNG = random.Random(16)  # fixed: the files are the same on every run
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def fake(n: int, alphabet: str = ALNUM) -> str:
    """``n`` arbitrary characters of ``alphabet`` (distinct values never share a long piece)."""
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def b64(text: str) -> str:
    """Base64 of ``text``, as Kubernetes and Docker store credentials."""
    return base64.b64encode(text.encode()).decode()


CASES: list[dict[str, Any]] = []
PLANTED: list[dict[str, Any]] = []


def case(
    case_id: str,
    task: str,
    diff: str | None,
    trace: list[tuple[str, str]],
    planted: list[tuple[str, str, str, str | None, str]],
) -> None:
    """Add a case; ``planted`` rows are (kind, where, secret, marker, context).

    Texts use ``{0}``, ``{1}``... for the planted values, in the order of ``planted``.
    """
    values = [split(p[2]) for p in planted]
    CASES.append(
        {
            "id": case_id,
            "kind": "agent_run",
            "task": task.format(*values),
            "diff": diff.format(*values) if diff is not None else None,
            "trace": [
                {"id": f"t{i}", "role": role, "content": text.format(*values)}
                for i, (role, text) in enumerate(trace)
            ],
        }
    )
    for (kind, where, _secret, marker, context), value in zip(planted, values, strict=True):
        PLANTED.append(
            {
                "case": case_id,
                "kind": kind,
                "secret": value,
                "where": where,
                "marker": marker,
                "context": context,
            }
        )


# --- the kinds that reached the provider in issue 16 -------------------------------------------

STRIPE_RK = "rk_live_51" + fake(97)
STRIPE_SK = "sk_live_51" + fake(97)
case(
    "sec-12-stripe",
    "Refunds fail with 'Invalid API Key provided'. Our billing worker sets "
    "stripe.api_key = '{0}' at start-up; make it read the key from the vault instead.",
    "diff --git a/billing/worker.py b/billing/worker.py\n--- a/billing/worker.py\n"
    "+++ b/billing/worker.py\n@@ -3,2 +3,2 @@\n-stripe.api_key = '{0}'\n"
    "+stripe.api_key = vault.read('stripe/restricted')\n",
    [
        ("agent", "```bash\ngrep -rn 'rk_live\\|sk_live' billing/ config/\n```"),
        (
            "observation",
            "billing/worker.py:3:stripe.api_key = '{0}'\nconfig/legacy.ini:12:secret = {1}",
        ),
    ],
    [
        ("stripe-restricted-key", "task", STRIPE_RK, "stripe-key", "stripe.api_key = '"),
        ("stripe-secret-key", "trace", STRIPE_SK, "stripe-key", "config/legacy.ini:12:secret = "),
    ],
)

AZ_KEY = fake(86, ALNUM + "+/") + "=="
AZ_SIG = fake(20) + "%2B" + fake(20) + "%3D"
case(
    "sec-13-azure",
    "Nightly backup upload to blob storage fails with AuthenticationFailed.",
    "diff --git a/appsettings.json b/appsettings.json\n--- a/appsettings.json\n"
    '+++ b/appsettings.json\n@@ -1,3 +1,3 @@\n {{\n-  "Storage": "DefaultEndpointsProtocol=https;'
    'AccountName=acmeprodbackups;AccountKey={0};EndpointSuffix=core.windows.net"\n'
    '+  "Storage": "@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/st)"\n'
    " }}\n",
    [
        (
            "agent",
            "```bash\naz storage blob upload --container-name backups --file db.bak "
            '--connection-string "$AZURE_STORAGE_CONNECTION_STRING"\n```',
        ),
        (
            "observation",
            "ERROR: Server failed to authenticate the request.\n"
            "RequestUrl: https://acmeprodbackups.blob.core.windows.net/backups/db.bak"
            "?sv=2022-11-02&ss=b&srt=o&sp=rwc&se=2026-12-31T00:00:00Z"
            "&st=2026-01-01T00:00:00Z&spr=https&sig={1}\n"
            "ErrorCode: AuthenticationFailed",
        ),
    ],
    [
        (
            "azure-storage-account-key",
            "diff",
            AZ_KEY,
            "connection-string",
            "AccountName=acmeprodbackups;",
        ),
        ("azure-sas-signature", "trace", AZ_SIG, "connection-string", "&spr=https&sig="),
    ],
)

PGP_BODY = "\n".join(fake(64, ALNUM + "+/") for _ in range(3))
case(
    "sec-14-pgp",
    "Release signing broke after the CI image update; restore package signing.",
    None,
    [
        ("agent", "```bash\ncat ci/signing-key.asc | head -20\n```"),
        (
            "observation",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n"
            "{0}\n=Xk9L\n-----END PGP PRIVATE KEY BLOCK-----",
        ),
        ("agent", "The key is there; the problem is the missing gpg-agent in the new image."),
    ],
    [("pgp-private-key", "trace", PGP_BODY, "private-key", "cat ci/signing-key.asc")],
)

NPM = "npm_" + fake(36)
NPM_LEGACY = "-".join(fake(n, HEX) for n in (8, 4, 4, 4, 12))
case(
    "sec-15-npm",
    "npm publish fails with E401 in CI.",
    "diff --git a/.npmrc b/.npmrc\n--- a/.npmrc\n+++ b/.npmrc\n@@ -1,2 +1,2 @@\n"
    "-//registry.npmjs.org/:_authToken={0}\n+//registry.npmjs.org/:_authToken=${{NPM_TOKEN}}\n"
    " always-auth=true\n",
    [
        ("agent", "```bash\ncat ~/.npmrc; npm whoami\n```"),
        (
            "observation",
            "//npm.acme.internal/:_authToken={1}\n//registry.npmjs.org/:_authToken={0}\n"
            "npm ERR! code E401",
        ),
    ],
    [
        ("npm-token", "diff", NPM, "npm-access-token", "//registry.npmjs.org/:_authToken="),
        ("npm-legacy-token", "trace", NPM_LEGACY, "npmrc-auth", "//npm.acme.internal/:_authToken="),
    ],
)

HF = "hf_" + fake(34, string.ascii_letters)
case(
    "sec-16-huggingface",
    "Model download returns 401 for the private checkpoint.",
    "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1,1 +1,1 @@\n"
    '-login(token="{0}")\n+login(token=os.environ["HF_TOKEN"])\n',
    [
        ("agent", "```bash\nhuggingface-cli login --token {0} && python train.py\n```"),
        ("observation", "Token is valid (permission: read).\nOSError: 401 Client Error"),
    ],
    [
        ("huggingface-token", "diff", HF, "huggingface-access-token", 'login(token="'),
        ("huggingface-token", "trace", HF, "huggingface-access-token", "huggingface-cli login"),
    ],
)

NETRC_PW = fake(8) + "-" + fake(10)
NETRC_TOKEN = "ghp_" + fake(36)
case(
    "sec-17-netrc",
    "pip install from the private index asks for a password.",
    None,
    [
        ("agent", "```bash\ncat ~/.netrc\n```"),
        (
            "observation",
            "machine pypi.acme.internal\n  login ci-bot\n  password {0}\n"
            "machine api.github.com login octocat password {1}",
        ),
        ("agent", "The netrc entry exists; pip needs PIP_INDEX_URL to use it."),
    ],
    [
        ("netrc-password", "trace", NETRC_PW, "netrc-password", "login ci-bot"),
        ("netrc-password", "trace", NETRC_TOKEN, "github-token", "login octocat password "),
    ],
)

CURL_PW = fake(14)
BASIC = b64("admin:" + CURL_PW)
case(
    "sec-18-curl-user",
    "The health check script gets 401 from the admin API.",
    "diff --git a/check.sh b/check.sh\n--- a/check.sh\n+++ b/check.sh\n@@ -1,1 +1,1 @@\n"
    "-curl -fsS -u admin:{0} https://admin.acme.internal/health\n"
    '+curl -fsS -u "admin:$ADMIN_PASSWORD" https://admin.acme.internal/health\n',
    [
        ("agent", "```bash\ncurl -v --user admin:{0} https://admin.acme.internal/health\n```"),
        (
            "observation",
            "> GET /health HTTP/1.1\n> Host: admin.acme.internal\n"
            "> Authorization: Basic {1}\n< HTTP/1.1 401 Unauthorized",
        ),
    ],
    [
        ("curl-user-password", "diff", CURL_PW, "cli-password", "curl -fsS -u admin:"),
        ("curl-user-password", "trace", CURL_PW, "cli-password", "curl -v --user admin:"),
        ("basic-auth-header", "trace", BASIC, "bearer-token", "> Authorization: Basic "),
    ],
)

SENDGRID = "SG." + fake(22, ALNUM + "-_") + "." + fake(43, ALNUM + "-_")
case(
    "sec-19-sendgrid",
    "Password-reset emails are not sent; the mailer logs 403 Forbidden.",
    "diff --git a/mailer/settings.py b/mailer/settings.py\n--- a/mailer/settings.py\n"
    '+++ b/mailer/settings.py\n@@ -1,1 +1,1 @@\n-SENDGRID_KEY = "{0}"\n'
    '+SENDGRID_KEY = env("SENDGRID_KEY")\n',
    [
        (
            "observation",
            'Traceback (most recent call last):\n  File "mailer/send.py", line 14, in send\n'
            '    sg = SendGridAPIClient("{0}")\n'
            "python_http_client.exceptions.ForbiddenError: HTTP Error 403: Forbidden",
        )
    ],
    [
        ("sendgrid-key", "diff", SENDGRID, "sendgrid-api-token", "SENDGRID_KEY = "),
        ("sendgrid-key", "trace", SENDGRID, "sendgrid-api-token", "SendGridAPIClient("),
    ],
)

DOCKER_AUTH = b64("ci-bot:ghp_" + fake(36))
DOCKER_ID = fake(48)
case(
    "sec-20-docker-config",
    "docker push to ghcr.io says 'denied: permission_denied'.",
    None,
    [
        ("agent", "```bash\ncat ~/.docker/config.json\n```"),
        (
            "observation",
            '{{\n  "auths": {{\n    "ghcr.io": {{\n      "auth": "{0}"\n    }},\n'
            '    "registry.acme.internal": {{\n      "identitytoken": "{1}"\n'
            '    }}\n  }},\n  "credsStore": ""\n}}',
        ),
    ],
    [
        ("docker-config-auth", "trace", DOCKER_AUTH, "docker-auth", '"ghcr.io"'),
        ("docker-config-auth", "trace", DOCKER_ID, "docker-auth", '"identitytoken": "'),
    ],
)

MYSQL_PW = fake(6) + "-" + fake(8)
case(
    "sec-21-mysql",
    "The migration job cannot connect to MySQL after the password rotation.",
    "diff --git a/scripts/migrate.sh b/scripts/migrate.sh\n--- a/scripts/migrate.sh\n"
    "+++ b/scripts/migrate.sh\n@@ -1,1 +1,1 @@\n-mysql -h db.internal -u app -p{0} app < schema.sql\n"
    "+mysql --defaults-extra-file=/run/secrets/my.cnf app < schema.sql\n",
    [
        ("agent", "```bash\nmysqldump -uroot -p'{0}' --single-transaction app > /tmp/app.sql\n```"),
        (
            "observation",
            "mysqldump: [Warning] Using a password on the command line interface can be "
            "insecure.\nmysqldump: Got error: 1045: Access denied for user 'root'@'10.0.0.4'",
        ),
    ],
    [
        ("mysql-password-flag", "diff", MYSQL_PW, "cli-password", "mysql -h db.internal -u app -p"),
        ("mysql-password-flag", "trace", MYSQL_PW, "cli-password", "mysqldump -uroot -p"),
    ],
)

K8S_PW = b64(fake(20))
K8S_KEY = b64("sk-proj-" + fake(24))
case(
    "sec-22-kubernetes-secret",
    "The api pod crash-loops: 'FATAL: password authentication failed'.",
    "diff --git a/k8s/db-secret.yaml b/k8s/db-secret.yaml\n--- a/k8s/db-secret.yaml\n"
    "+++ b/k8s/db-secret.yaml\n@@ -0,0 +1,9 @@\n+apiVersion: v1\n+kind: Secret\n+metadata:\n"
    "+  name: db-credentials\n+type: Opaque\n+data:\n+  username: YXBw\n+  password: {0}\n"
    "+  api-key: {1}\n",
    [
        ("agent", "```bash\nkubectl get secret db-credentials -o json\n```"),
        (
            "observation",
            '{{\n    "apiVersion": "v1",\n    "data": {{\n        "password": "{0}",\n'
            '        "username": "YXBw"\n    }},\n    "kind": "Secret",\n'
            '    "type": "Opaque"\n}}',
        ),
    ],
    [
        ("kubernetes-secret-data", "diff", K8S_PW, "kubernetes-secret", "name: db-credentials"),
        ("kubernetes-secret-data", "diff", K8S_KEY, "kubernetes-secret", "api-key: "),
        ("kubernetes-secret-data", "trace", K8S_PW, "kubernetes-secret", '"kind": "Secret"'),
    ],
)

MAILGUN = "key-" + fake(32, HEX)
case(
    "sec-23-mailgun",
    "Invoices are not emailed since Friday.",
    None,
    [
        ("agent", "```bash\ngrep -n mailgun -A2 config/production.yml\n```"),
        ("observation", "14:mailgun:\n15-  domain: mg.acme.example\n16-  api_key: {0}"),
        (
            "agent",
            "```bash\ncurl -s --user 'api:{0}' https://api.mailgun.net/v3/mg.acme.example/log\n```",
        ),
        ("observation", "Forbidden"),
    ],
    [
        ("mailgun-key", "trace", MAILGUN, "mailgun-api-key", "15-  domain: mg.acme.example"),
        ("mailgun-key", "trace", MAILGUN, "mailgun-api-key", "https://api.mailgun.net/v3/"),
    ],
)

DD_API = fake(32, HEX)
DD_APP = fake(40, HEX)
case(
    "sec-24-datadog",
    "Custom metrics stopped showing up in Datadog.",
    None,
    [
        (
            "agent",
            '```bash\ncurl -X POST "https://api.datadoghq.com/api/v2/series" '
            '-H "Content-Type: application/json" -H "DD-API-KEY: {0}" '
            '-H "DD-APPLICATION-KEY: {1}" -d @payload.json\n```',
        ),
        ("observation", '{{"errors": ["Forbidden"]}}'),
    ],
    [
        ("datadog-api-key-header", "trace", DD_API, "api-key-header", '-H "DD-API-KEY: '),
        ("datadog-app-key-header", "trace", DD_APP, "api-key-header", "DD-APPLICATION-KEY: "),
    ],
)

TWILIO_TOKEN = fake(32, HEX)
TWILIO_SK = "SK" + fake(32, HEX)
case(
    "sec-25-twilio",
    "SMS alerts fail with 'Authenticate' (20003).",
    "diff --git a/alerts/sms.py b/alerts/sms.py\n--- a/alerts/sms.py\n+++ b/alerts/sms.py\n"
    '@@ -1,2 +1,2 @@\n-account_sid = "AC' + fake(32, HEX) + '"\n'
    '-auth_token = "{0}"\n+auth_token = os.environ["TWILIO_AUTH_TOKEN"]\n',
    [
        ("agent", "```bash\nenv | grep TWILIO\n```"),
        ("observation", "TWILIO_AUTH_TOKEN={1}\nTWILIO_API_KEY={2}"),
    ],
    [
        ("twilio-auth-token", "diff", TWILIO_TOKEN, "config-secret", "auth_token = "),
        ("twilio-auth-token", "trace", TWILIO_TOKEN, "env-secret", "TWILIO_AUTH_TOKEN="),
        ("twilio-api-key", "trace", TWILIO_SK, "twilio-api-key", "TWILIO_API_KEY="),
    ],
)

# --- the general shapes ------------------------------------------------------------------------

X_API = fake(32)
GITLAB = "glpat-" + fake(20, ALNUM + "-_")
PG_PW = fake(5) + "-" + fake(9)
CLI_TOKEN = fake(24)
case(
    "sec-26-headers-and-flags",
    "The sync job gets 401 from three services; find which credential is stale.",
    None,
    [
        (
            "agent",
            "```bash\ncurl -sS -H 'X-Api-Key: {0}' https://inventory.acme.internal/v1/items\n"
            'curl -sS --header "PRIVATE-TOKEN: {1}" https://gitlab.acme.internal/api/v4/user\n```',
        ),
        (
            "observation",
            "HTTP/1.1 401 Unauthorized\nX-Request-Id: 4c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
        ),
        (
            "agent",
            '```bash\npg_dump "host=db.internal dbname=app user=sync" --no-password; '
            "./sync --db-password={2} --api-token {3}\n```",
        ),
        ("observation", "sync: authenticated with --api-token; 0 rows changed"),
    ],
    [
        ("x-api-key-header", "trace", X_API, "api-key-header", "curl -sS -H 'X-Api-Key: "),
        ("gitlab-token-header", "trace", GITLAB, "gitlab-pat", "PRIVATE-TOKEN: "),
        ("password-flag", "trace", PG_PW, "cli-password", "./sync --db-password="),
        ("token-flag", "trace", CLI_TOKEN, "cli-password", "--api-token "),
    ],
)

ADO_PW = fake(9) + "-" + fake(6)
JSON_SECRET = fake(32)
CLIENT_KEY = b64("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI" + fake(40))
KUBE_TOKEN = fake(40)
case(
    "sec-27-config-files",
    "After the move to the new cluster the reporting service cannot reach its database.",
    "diff --git a/appsettings.Production.json b/appsettings.Production.json\n"
    "--- a/appsettings.Production.json\n+++ b/appsettings.Production.json\n@@ -1,4 +1,4 @@\n"
    ' {{\n-  "ConnectionStrings": {{ "Reports": "Server=sql01;Database=reports;User Id=rpt;'
    'Password={0};" }},\n+  "ConnectionStrings": {{ "Reports": "Server=sql02;Database=reports;'
    'Integrated Security=true" }},\n   "Oidc": {{ "clientSecret": "{1}" }}\n }}\n',
    [
        ("agent", "```bash\ncat ~/.kube/config\n```"),
        (
            "observation",
            "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n"
            "  name: prod\nusers:\n- name: reporting\n  user:\n"
            "    client-key-data: {2}\n    token: {3}\n",
        ),
    ],
    [
        ("connection-string-password", "diff", ADO_PW, "connection-string", "User Id=rpt;"),
        ("json-secret-value", "diff", JSON_SECRET, "config-secret", '"clientSecret": '),
        ("kubeconfig-client-key", "trace", CLIENT_KEY, "kubeconfig-key", "client-key-data: "),
        ("kubeconfig-token", "trace", KUBE_TOKEN, "config-secret", "- name: reporting"),
    ],
)

# --- benign look-alikes: every one must reach the judge unchanged --------------------------------

#: Benign look-alikes that are redacted all the same, with the marker that replaces them.
KNOWN_FALSE: dict[str, str] = {}  # known false redactions: none since issue 36
BENIGN = [
    ("git-sha", "3f786850e387550fdab836ed7e6dc881de23001b"),
    ("uuid", "4c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"),
    ("content-digest", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("md5", "d41d8cd98f00b204e9800998ecf8427e"),
    ("test-id", "tests/auth/test_tokens.py::TestRefresh::test_password_reset_token[expired-1]"),
    (
        "base64-image",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    ),
    ("version", "django-4.2.11-py3-none-any.whl"),
    ("path", "/home/runner/.ssh/id_ed25519.pub"),
    ("etag", 'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"'),
    ("uid-gid", "docker run -u 1000:1000 --rm app pytest"),
    ("mkdir-p", "mkdir -p build/secrets && pip install -U pip"),
    # Dummy values (once known false redactions, kept since issue 36's look-alike filter).
    ("dummy-password", "User.objects.create_user(username='alice', password='password')"),
    ("dummy-secret-key", "SECRET_KEY = 'fake-key'"),
    ("token-variable", "token = tokens[0]"),
    ("k8s-configmap", "kind: ConfigMap\ndata:\n  LOG_LEVEL: info\n  FEATURE_FLAGS: search,export"),
    ("publishable-key", "Stripe.setPublishableKey('pk_live_51" + fake(40) + "')"),
    ("placeholder-env", "export GITHUB_TOKEN=${GITHUB_TOKEN}"),
    ("env-read", "api_key = os.environ['API_KEY']"),
    ("annotation", "def login(username: str, password: str) -> Token:"),
    ("url-no-password", "https://user@github.com/acme/app.git"),
]
case(
    "sec-28-benign",
    "Check that the release wheel is reproducible and the auth tests pass.",
    "diff --git a/auth/tokens.py b/auth/tokens.py\n--- a/auth/tokens.py\n+++ b/auth/tokens.py\n"
    "@@ -1,3 +1,3 @@\n" + "".join(f"+{{{i}}}\n" for i in range(0, 10)),
    [
        ("agent", "```bash\n" + "\n".join(f"echo '{{{i}}}'" for i in range(10, 14)) + "\n```"),
        (
            "observation",
            "\n".join(f"{{{i}}}" for i in range(14, len(BENIGN))) + "\n== 12 passed in 0.31s ==",
        ),
    ],
    [
        (f"benign:{name}", "diff" if i < 10 else "trace", value, KNOWN_FALSE.get(name), "")
        for i, (name, value) in enumerate(BENIGN)
    ],
)
for row in PLANTED:
    if row["kind"].removeprefix("benign:") in KNOWN_FALSE:
        row["false_positive"] = True


def main() -> None:
    """Write the two files."""
    with open(HERE / "more_cases.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES)
    with open(HERE / "more_planted.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in PLANTED)
    print(f"{len(CASES)} cases, {len(PLANTED)} planted values")


if __name__ == "__main__":
    main()
