"""Write the second fresh secrets set: ``cases.jsonl`` and ``planted.jsonl`` beside this file.

    python bench/data/secrets/fresh2/make_set.py

Stdlib only, seeded: the same bytes on every run. Every value is fake: seeded random characters
in a real shape, or a published documentation example / placeholder for the look-alikes. The
script refuses to write a set in which a 12-character piece of a secret stands anywhere but where
that secret is planted, or in which a turn or a run is longer than the evidence budget keeps.
"""

# ruff: noqa: E501
# (one value per line: the templates stay readable unwrapped)
from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 20261205
JOIN = "\u00ab\u00bb"
SIZE = 12
#: Kept under the evidence budget (1,400 estimated tokens, 3.5 characters each, a turn at most a
#: quarter of the trace's share): no turn is clipped and no turn is dropped.
MAX_TURN = 560
MAX_RUN = 2900
PER_RUN = 5

HEX = "0123456789abcdef"
B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
URL = B62 + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
LOWER = string.ascii_lowercase + string.digits
UPPER = string.ascii_uppercase + string.digits
CROCK = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
NIX = "0123456789abcdfghijklmnqrsvwxyz"
PUNCT = B62 + "!#%*+-.=?@^_~"
SECRET_FAMILIES = {
    "unlisted-vendor-token",
    "unprefixed-key",
    "session-cookie",
    "oauth-token",
    "infra-config",
    "data-export",
    "signing-key",
    "non-english-password",
    "split-or-encoded",
}

r = random.Random(SEED)


def rs(alphabet: str, n: int) -> str:
    """``n`` seeded characters of ``alphabet``."""
    return "".join(r.choice(alphabet) for _ in range(n))


WORDS = [
    "Kaffeetasse",
    "Lisbonne",
    "osito",
    "Regenbogen",
    "Papillon",
    "girasol",
    "Matrjoschka",
    "panda",
    "Sakura",
    "Tulpen",
    "Koala",
    "Brezel",
    "mariposa",
    "Tiramisu",
    "Fjord",
    "Lumikki",
    "Zorro",
    "Pierogi",
    "Kolibri",
    "nebbia",
    "Baklava",
    "Ananas",
    "Capybara",
    "Mistral",
]


def human() -> str:
    """A password a person chose: a word or two, a year or birthday, a symbol."""
    a, b = r.sample(WORDS, 2)
    shape = r.randrange(4)
    if shape == 0:
        return f"{a}{r.randrange(1960, 2024)}{r.choice('!#?*')}"
    if shape == 1:
        return f"{a.lower()}-{b.lower()}-{r.randrange(10, 99)}"
    if shape == 2:
        return f"{a}{r.choice('.@_')}{b}{r.randrange(1, 31):02d}{r.randrange(1, 12):02d}"
    return f"{a[0].upper()}{a[1:].replace('a', '4').replace('e', '3')}{r.choice('$!')}{r.randrange(100, 999)}"


def gen_pw() -> str:
    """A generated password."""
    return rs(PUNCT, r.choice([18, 20, 24, 28]))


def uuid4() -> str:
    h = rs(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


def b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


class Enc:
    """An encoded secret: the form written in the text and the decoded value."""

    def __init__(self, written: str, plain: str) -> None:
        self.written, self.plain = written, plain


class Split:
    """A secret written in pieces; the planted value is their concatenation."""

    def __init__(self, *pieces: str) -> None:
        self.pieces = pieces


def _escaped(plain: str) -> Enc:
    """``plain`` written as JavaScript ``\\uXXXX`` escapes."""
    return Enc("".join(f"\\u{ord(c):04x}" for c in plain), plain)


Gen = Callable[[], Any]
#: (turn kind, template, [(kind, family, generator)]); ``§0`` is the first value, ``§0.1`` the
#: second piece of a split one.
Entry = tuple[str, str, list[tuple[str, str, Gen]]]
E: list[Entry] = []


def add(tkind: str, template: str, *values: tuple[str, str, Gen]) -> None:
    E.append((tkind, template, list(values)))


def v(kind: str, family: str, gen: Gen) -> tuple[str, str, Gen]:
    return (kind, family, gen)


# ---- secrets: tokens of vendors no list names (invented prefixes) ---------------------------
F = "unlisted-vendor-token"
add(
    "tool_call",
    "quivex charges list --limit 5 --key §0",
    v("quivex-live-key", F, lambda: "qvx_live_" + rs(B62, 40)),
)
add(
    "tool_result",
    "$ lumora auth status\nLogged in to lumora.io as dev@example.test\nToken: §0 (scopes: read, deploy)",
    v("lumora-pat", F, lambda: "lmr_pat_" + rs(B62, 36)),
)
add(
    "tool_result",
    "# .tessel.yml\nproject: shop-api\nregion: eu-2\ndeploy_token: §0\n",
    v("tessel-deploy-token", F, lambda: "tsl1." + rs(HEX, 48)),
)
add(
    "diff",
    '--- a/app/search.py\n+++ b/app/search.py\n@@ -3,3 +3,3 @@\n-client = Orbit()\n+client = Orbit(api_key="§0")\n',
    v("orbit-cloud-key", F, lambda: "obk-" + rs(LOWER, 8) + "-" + rs(LOWER, 24)),
)
add(
    "tool_call",
    "curl -s https://in.kestrel.dev/v2/batch -H 'X-Kestrel-Ingest: §0' -d @events.json",
    v("kestrel-ingest", F, lambda: "ksi_" + rs(URL, 43)),
)
add(
    "tool_result",
    '{"type": "nimbus_service_account", "project": "shop", "key": "§0"}',
    v("nimbus-sa-key", F, lambda: "nbsa." + rs(B32, 52)),
)
add(
    "tool_result",
    "PALLAS_HOOK=https://hooks.pallas.dev/in/7f3a91c0/§0\nLOG_LEVEL=info",
    v("pallas-webhook-path", F, lambda: rs(B62, 32)),
)
add(
    "tool_call",
    "ferro login --registry crates.ferro.dev --token §0",
    v("ferro-registry-token", F, lambda: "frr_" + rs(B58, 44)),
)
add(
    "error",
    "HexlaneAuthError: key 'hxl-§0' lacks scope billing:write (request 4411)",
    v("hexlane-key", F, lambda: "-".join(rs(UPPER, 4) for _ in range(5))),
)
add(
    "tool_result",
    "ZEPHYR_MQ_CREDS=§0\nZEPHYR_MQ_HOST=mq.eu.zephyr.test",
    v("zephyr-mq-creds", F, lambda: "zmq:" + rs(string.ascii_lowercase, 12) + ":" + rs(B62, 30)),
)
add(
    "diff",
    "--- a/web/src/metrics.ts\n+++ b/web/src/metrics.ts\n@@ -1,2 +1,2 @@\n-glint.init({ site: 'shop' })\n+glint.init({ site: 'shop', server: '§0' })\n",
    v("glint-server-key", F, lambda: "gls_" + rs(HEX, 40)),
)
add(
    "tool_result",
    'provider "vantage" {\n  account = "shop"\n  token   = "§0"\n}',
    v("vantage-edge-token", F, lambda: "vte_" + rs(B62, 48)),
)
add(
    "tool_result",
    "bot: corvid\nendpoint: https://api.corvid.chat\nbot_auth: §0\n",
    v("corvid-bot", F, lambda: "cvd." + rs(string.digits, 12) + "." + rs(B62, 40)),
)
add(
    "tool_result",
    "ASTER_KEY_V2=§0\nASTER_REGION=ap-1",
    v("aster-key", F, lambda: "as2_" + rs(B62, 20) + "_" + rs(B62, 20)),
)
add(
    "tool_result",
    '$ cat ~/.config/moxie/credentials\n[default]\naccess = "§0"\nregion = "us"',
    v("moxie-access", F, lambda: "mx_" + rs(HEX, 32)),
)
add(
    "tool_call",
    "http GET https://api.trellis.io/v1/boards 'Authorization: Trellis §0'",
    v("trellis-auth", F, lambda: rs(B64, 42) + "=="),
)
add("tool_result", "$ quill auth token\n§0", v("quill-pat", F, lambda: "qpat_" + rs(LOWER, 52)))
add(
    "tool_call",
    "runway config:set RUNWAY_KEY=§0 --app shop-api",
    v("runway-key", F, lambda: "rwk_" + rs(B62, 40)),
)
add(
    "tool_result",
    "YARROW_DSN=yarrow://5e1f0a2b3c4d5e6f70819a2b3c4d5e6f:§0@ingest.yarrow.dev/42",
    v("yarrow-dsn-secret", F, lambda: rs(HEX, 32)),
)
add(
    "diff",
    '--- a/ios/App/AppDelegate.swift\n+++ b/ios/App/AppDelegate.swift\n@@ -9,1 +9,1 @@\n-        Plinth.configure()\n+        Plinth.configure(apiKey: "§0")\n',
    v("plinth-sdk-key", F, lambda: "plk_" + rs(B62, 44)),
)
add(
    "tool_result",
    "enroll URI: otpauth://totp/Cobalt:ops%40shop.test?secret=§0&issuer=Cobalt",
    v("cobalt-totp-seed", F, lambda: rs(B32, 32)),
)

# ---- secrets: unprefixed random keys of many lengths and alphabets -------------------------
F = "unprefixed-key"
add(
    "tool_result",
    "[upstream]\nurl = https://rates.internal.test\nauth = §0\ntimeout = 5",
    v("hex32-ini", F, lambda: rs(HEX, 32)),
)
add(
    "diff",
    '--- a/android/Config.kt\n+++ b/android/Config.kt\n@@ -1,1 +1,2 @@\n object Config {\n+    const val SERVICE_AUTH = "§0"\n',
    v("b62-40-kotlin", F, lambda: rs(B62, 40)),
)
add("tool_result", "SIGNER=§0\nSIGNER_ALG=ed25519", v("b64-88-env", F, lambda: rs(B64, 86) + "=="))
add(
    "diff",
    '--- a/src/client.rs\n+++ b/src/client.rs\n@@ -4,1 +4,2 @@\n const BASE: &str = "https://geo.internal.test";\n+const ACCESS: &str = "§0";\n',
    v("b32-26-rust", F, lambda: rs(B32, 26)),
)
add(
    "tool_result",
    "<?php\ndefine('LICENSE_ACTIVATION', '§0');\ndefine('SITE', 'shop');",
    v("lower-20-php", F, lambda: rs(LOWER, 20)),
)
add("tool_result", 'var signingMaterial = "§0"', v("hex64-go", F, lambda: rs(HEX, 64)))
add(
    "tool_result",
    "ACTIVATION=§0",
    v("grouped-25", F, lambda: "-".join(rs(UPPER, 5) for _ in range(5))),
)
add(
    "tool_result",
    '{"endpoint": "https://fx.internal.test", "credential": "§0"}',
    v("b64url-43-json", F, lambda: rs(URL, 43)),
)
add(
    "tool_result",
    'merchant:\n  id: 88120\n  terminal_auth: "§0"',
    v("digits-24", F, lambda: rs(string.digits, 24)),
)
add(
    "tool_result",
    "[r2]\ntype = s3\nprovider = Cloudflare\nsecret_access_key = §0\nendpoint = https://acct.r2.example.test",
    v("rclone-secret", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    '-- conf.lua\nreturn { host = "127.0.0.1", token = "§0" }',
    v("b62-16-lua", F, lambda: rs(B62, 16)),
)
add(
    "diff",
    '--- a/package.json\n+++ b/package.json\n@@ -6,1 +6,1 @@\n-    "sync": "sync-tool"\n+    "sync": "sync-tool --auth §0"\n',
    v("hex40-script", F, lambda: rs(HEX, 40)),
)
add(
    "tool_result",
    '{"session_secret": "§0", "ttl": 3600}',
    v("crockford-26", F, lambda: "01" + rs(CROCK, 24)),
)

# ---- secrets: session cookies ---------------------------------------------------------------
F = "session-cookie"
add(
    "tool_result",
    "HTTP/1.1 302 Found\nLocation: /dashboard\nSet-Cookie: sid=§0; Path=/; HttpOnly; Secure; SameSite=Lax",
    v("set-cookie-sid", F, lambda: rs(URL, 40)),
)
add(
    "tool_result",
    "HTTP/2 200\nset-cookie: _shop_session=§0; path=/; httponly",
    v("set-cookie-rails", F, lambda: rs(B64, 96) + "--" + rs(HEX, 40)),
)
add(
    "tool_call",
    "curl -s https://admin.shop.test/api/orders -b 'connect.sid=s%3A§0'",
    v("cookie-connect-sid", F, lambda: rs(URL, 32) + "." + rs(B62, 43)),
)
add(
    "tool_result",
    "GET /admin/ HTTP/1.1\nHost: shop.test\nCookie: sessionid=§0",
    v("cookie-sessionid", F, lambda: rs(string.ascii_lowercase + string.digits, 32)),
)
add(
    "tool_result",
    "# Netscape HTTP Cookie File\n.shop.test\tTRUE\t/\tTRUE\t1798761600\tauth_session\t§0",
    v("cookies-txt", F, lambda: rs(HEX, 48)),
)
add(
    "tool_result",
    '10.0.3.7 - - [05/Dec/2026:09:12:44 +0000] "GET /wp-admin/ HTTP/1.1" 200 cookie="PHPSESSID=§0"',
    v("phpsessid-log", F, lambda: rs(string.ascii_lowercase + string.digits, 26)),
)
add(
    "tool_result",
    "set-cookie: access_token=eyJhbGciOiJIUzI1NiJ9.eyJ1aWQiOjQyfQ.§0; Max-Age=900; HttpOnly",
    v("jwt-cookie-signature", F, lambda: rs(URL, 43)),
)
add(
    "tool_result",
    '"cookies": [{"name": "__Host-session", "value": "§0", "httpOnly": true}]',
    v("har-cookie", F, lambda: rs(B62, 48)),
)

# ---- secrets: OAuth responses ---------------------------------------------------------------
F = "oauth-token"
add(
    "tool_result",
    '{"access_token": "§0", "token_type": "Bearer", "expires_in": 3599, "refresh_token": "§1"}',
    v("oauth-access-json", F, lambda: rs(URL, 60)),
    v("oauth-refresh-json", F, lambda: rs(URL, 64)),
)
add(
    "tool_call",
    "curl -s https://id.shop.test/oauth/token -d grant_type=client_credentials -d client_id=reports -d client_secret=§0",
    v("client-secret-form", F, lambda: rs(B62, 40)),
)
add(
    "tool_result",
    '{"type": "authorized_user", "client_id": "cli", "refresh_token": "§0"}',
    v("authorized-user-refresh", F, lambda: "rt1." + rs(URL, 80)),
)
add(
    "tool_result",
    '{"access_token":"§0","scope":"repo,read:org","token_type":"bearer"}',
    v("device-flow-token", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    "id_token=eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiI5In0.§0",
    v("oidc-id-token-signature", F, lambda: rs(URL, 86)),
)
add(
    "diff",
    '--- a/jobs/export.py\n+++ b/jobs/export.py\n@@ -12,1 +12,1 @@\n-    r = session.post(TOKEN_URL, auth=(CLIENT_ID, os.environ["CS"]))\n+    r = session.post(TOKEN_URL, auth=(CLIENT_ID, "§0"))\n',
    v("python-auth-tuple", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    "$ bin/rails credentials:show\noauth:\n  forge_app_secret: §0\n",
    v("rails-credentials-oauth", F, lambda: rs(HEX, 40)),
)

# ---- secrets: infrastructure and registry configs -------------------------------------------
F = "infra-config"
add(
    "tool_result",
    "users:\n- name: ci\n  user:\n    token: eyJhbGciOiJSUzI1NiIsImtpZCI6ImNpIn0.eyJzYSI6ImNpIn0.§0\n    client-key-data: §1",
    v("kubeconfig-token-signature", F, lambda: rs(URL, 86)),
    v(
        "kubeconfig-client-key-data",
        F,
        lambda: Enc(
            b64(
                "-----BEGIN EC PRIVATE KEY-----\n"
                + (p := rs(B64, 64))
                + "\n-----END EC PRIVATE KEY-----\n"
            ),
            p,
        ),
    ),
)
add(
    "tool_result",
    '# terraform.tfvars\nregion      = "eu-west-3"\ndb_password = "§0"',
    v("tfvars-password", F, human),
)
add(
    "tool_result",
    '# prod.auto.tfvars\nprovider_tokens = {\n  linode = "§0"\n}',
    v("tfvars-map-token", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    "$ git remote -v\norigin\thttps://ci-bot:§0@forge.internal.test/team/app.git (fetch)",
    v("git-remote-userinfo", F, lambda: rs(URL, 30)),
)
add(
    "error",
    "fatal: unable to access 'https://x-access-token:§0@code.shop.test/shop/api.git/': SSL certificate problem",
    v("git-remote-error", F, lambda: rs(B62, 36)),
)
add(
    "tool_result",
    "# /etc/pip.conf\n[global]\nextra-index-url = https://__token__:§0@pypi.corp.test/simple/",
    v("pip-conf-index", F, lambda: rs(B62, 40)),
)
add(
    "tool_result",
    '# .yarnrc.yml\nnpmScopes:\n  corp:\n    npmRegistryServer: "https://npm.corp.test"\n    npmAuthToken: "§0"',
    v("yarnrc-auth", F, lambda: rs(B62, 40)),
)
add(
    "tool_result",
    '# ~/.cargo/credentials.toml\n[registries.corp]\ntoken = "§0"',
    v("cargo-credentials", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    "<server>\n  <id>corp-releases</id>\n  <username>ci</username>\n  <password>§0</password>\n</server>",
    v("maven-settings", F, human),
)
add(
    "tool_result",
    "# gradle.properties\norg.gradle.jvmargs=-Xmx2g\nartifactoryPassword=§0",
    v("gradle-properties", F, lambda: rs(B62, 64)),
)
add(
    "diff",
    "--- a/docker-compose.yml\n+++ b/docker-compose.yml\n@@ -8,1 +8,2 @@\n     environment:\n+      - MINIO_ROOT_PASSWORD=§0\n",
    v("compose-env-list", F, gen_pw),
)
add(
    "tool_result",
    '<packageSourceCredentials>\n  <corp>\n    <add key="Username" value="ci" />\n    <add key="ClearTextPassword" value="§0" />\n  </corp>\n</packageSourceCredentials>',
    v("nuget-config", F, gen_pw),
)
add(
    "tool_result",
    '{"http-basic": {"repo.corp.test": {"username": "ci", "password": "§0"}}}',
    v("composer-auth", F, lambda: rs(B62, 24)),
)
add(
    "tool_call",
    "helm repo add corp https://charts.corp.test --username ci --password §0",
    v("helm-repo-password", F, human),
)

# ---- secrets: data exports, queries and dumps -----------------------------------------------
F = "data-export"
add(
    "tool_result",
    "id,email,api_key,created\n17,ana@example.test,§0,2026-11-02",
    v("csv-key-column", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    "INSERT INTO integrations (id, name, secret) VALUES (4, 'billing', '§0');",
    v("sql-insert-row", F, lambda: rs(B64, 43) + "="),
)
add(
    "tool_call",
    '{"query": "mutation Connect($input: ConnectInput!) { connect(input: $input) { id } }", "variables": {"input": {"provider": "sendbolt", "apiKey": "§0"}}}',
    v("graphql-variables", F, lambda: rs(B62, 38)),
)
add(
    "tool_result",
    '# proto-file: creds.proto\ncredentials {\n  service_account: "ci"\n  secret: "§0"\n}',
    v("protobuf-text", F, lambda: rs(HEX, 48)),
)
add(
    "error",
    "Traceback (most recent call last):\n  File \"sync.py\", line 88, in push\n    client.put(cfg)\nValueError: bad config: {'host': 'db.internal', 'user': 'etl', 'pw': '§0', 'port': 5432}",
    v("python-repr-dict", F, human),
)
add(
    "error",
    "TypeError: connect() got an unexpected keyword argument 'sslmode'\n  locals: kwargs={'dsn_secret': b'§0', 'sslmode': 'require'}",
    v("python-repr-bytes", F, lambda: rs(B64, 32)),
)
add(
    "tool_result",
    'ts=2026-12-05T09:14:02Z level=debug msg="loaded upstream" upstream_key=§0 region=eu',
    v("logfmt-key", F, lambda: rs(B62, 36)),
)
add(
    "diff",
    "--- /dev/null\n+++ b/db/migrate/0042_seed_bot.sql\n@@ -0,0 +1 @@\n+UPDATE users SET api_token = '§0' WHERE id = 7;\n",
    v("sql-update-migration", F, lambda: rs(B62, 40)),
)
add(
    "tool_result",
    '1733389200.123456 [0 127.0.0.1:55120] "SET" "auth:tok:42" "§0"',
    v("redis-monitor", F, lambda: rs(HEX, 32)),
)
add(
    "tool_call",
    'mongosh shop --eval \'db.settings.insertOne({ smtp: { user: "mailer", pass: "§0" } })\'',
    v("mongo-insert", F, human),
)
add(
    "tool_result",
    '"_source": {"integration": "tracksy", "secret_value": "§0", "enabled": true}',
    v("es-document", F, lambda: rs(URL, 40)),
)

# ---- secrets: signing keys and signatures ---------------------------------------------------
F = "signing-key"
add(
    "tool_result",
    "https://shop-exports.s3.eu-west-3.amazonaws.com/q4.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261205T091500Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature=§0",
    v("s3-presigned-signature", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    "https://shopdata.blob.core.windows.net/exports/q4.csv?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&sig=§0",
    v("azure-sas-sig", F, lambda: rs(B62, 40) + "%2B" + rs(B62, 3) + "%3D"),
)
add(
    "diff",
    '--- a/hooks/verify.py\n+++ b/hooks/verify.py\n@@ -1,2 +1,2 @@\n-SIGNING = os.environ["HOOK_SIGNING"].encode()\n+SIGNING = b"§0"\n digest = hmac.new(SIGNING, body, hashlib.sha256).hexdigest()\n',
    v("hmac-key-python", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    "const sig = crypto.createHmac('sha256', '§0').update(raw).digest('hex');",
    v("hmac-key-node", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    'mac := hmac.New(sha256.New, []byte("§0"))\nmac.Write(payload)',
    v("hmac-key-go", F, lambda: rs(B64, 43) + "="),
)
add("tool_result", "JWT_HS512_MATERIAL=§0", v("jwt-material-env", F, lambda: rs(B64, 86) + "=="))
add(
    "tool_result",
    "https://d1x.cloudfront.net/v/intro.mp4?Expires=1798761600&Signature=§0&Key-Pair-Id=K2JCJMDEHXQW5F",
    v("cloudfront-signature", F, lambda: rs(URL + "~", 120)),
)
add(
    "tool_result",
    "expected = OpenSSL::HMAC.hexdigest('SHA256', '§0', request.raw_post)",
    v("hmac-key-ruby", F, lambda: rs(B62, 40)),
)
add(
    "diff",
    "--- a/server/app.js\n+++ b/server/app.js\n@@ -20,1 +20,1 @@\n-app.use(session({ secret: process.env.SESSION_KEYS.split(',') }))\n+app.use(session({ secret: ['§0'] }))\n",
    v("express-session-secret", F, lambda: rs(B62, 24)),
)
add("tool_result", "$ cat config/master.key\n§0", v("rails-master-key", F, lambda: rs(HEX, 32)))

# ---- secrets: passwords under non-English key names -----------------------------------------
F = "non-english-password"
add(
    "tool_result",
    "datenbank:\n  host: db.intern\n  benutzer: app\n  passwort: §0",
    v("passwort-yaml", F, human),
)
add(
    "tool_result",
    '{"utilisateur": "admin", "mot_de_passe": "§0"}',
    v("mot-de-passe-json", F, human),
)
add(
    "tool_result",
    "conexion.usuario=ventas\nconexion.contraseña=§0",
    v("contrasena-properties", F, human),
)
add("tool_result", "[база]\nпользователь = admin\nпароль = §0", v("parol-ini", F, human))
add("tool_result", "数据库:\n  用户: root\n  密码: §0", v("mima-yaml", F, gen_pw))
add("tool_result", '{"ユーザー": "kanri", "パスワード": "§0"}', v("pasuwado-json", F, human))
add(
    "tool_result",
    'config = {"usuario": "app", "senha": "§0", "porta": 5432}',
    v("senha-python", F, human),
)
add(
    "tool_result",
    '[verbinding]\ngebruiker = "beheer"\nwachtwoord = "§0"',
    v("wachtwoord-toml", F, gen_pw),
)
add(
    "error", "Błąd logowania: użytkownik=jan hasło=§0 (konto zablokowane)", v("haslo-log", F, human)
)
add(
    "tool_result",
    "<연결>\n  <사용자>admin</사용자>\n  <비밀번호>§0</비밀번호>\n</연결>",
    v("bimilbeonho-xml", F, human),
)
add("tool_result", '{"kullanıcı": "yonetici", "şifre": "§0"}', v("sifre-json", F, human))
add("tool_result", "tietokanta:\n  käyttäjä: app\n  salasana: §0", v("salasana-yaml", F, gen_pw))
add("tool_result", "NAMA_PENGGUNA=admin\nKATA_SANDI=§0", v("kata-sandi-env", F, human))

# ---- secrets: split, wrapped or encoded -----------------------------------------------------
F = "split-or-encoded"
add(
    "diff",
    '--- a/web/api.js\n+++ b/web/api.js\n@@ -2,1 +2,3 @@\n-const T = process.env.T\n+const T = "§0.0" +\n+  "§0.1" +\n+  "§0.2"\n',
    v("diff-split-concat", F, lambda: Split(rs(B62, 14), rs(B62, 14), rs(B62, 14))),
)
add(
    "tool_result",
    "x-db: &db\n  user: app\n  password: §0\nservices:\n  api:\n    <<: *db",
    v("yaml-anchor-map", F, human),
)
add(
    "tool_result",
    "defaults:\n  token: &tok §0\nprod:\n  token: *tok",
    v("yaml-anchor-scalar", F, lambda: rs(B62, 40)),
)
add(
    "tool_result",
    '{"type": "service", "private_key": "-----BEGIN PRIVATE KEY-----\\n§0\\n-----END PRIVATE KEY-----\\n"}',
    v("pem-in-json", F, lambda: rs(B64, 64) + "\\n" + rs(B64, 40)),
)
add(
    "tool_result",
    "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: §0",
    v(
        "base64-in-base64",
        F,
        lambda: Enc(
            b64(json.dumps({"auths": {"reg.corp.test": {"auth": b64("ci:" + (p := gen_pw()))}}})), p
        ),
    ),
)
add(
    "tool_result",
    "$ printf '%s' \"$TOKEN\" | xxd -p\n§0",
    v("hex-encoded-token", F, lambda: Enc((p := rs(B62, 28)).encode().hex(), p)),
)
add("tool_result", 'const k = "§0";', v("js-unicode-escaped", F, lambda: _escaped(rs(B62, 16))))
add(
    "tool_call",
    "TOKEN=$(printf '%s%s' '§0.0' '§0.1') ./deploy.sh",
    v("printf-split", F, lambda: Split(rs(URL, 16), rs(URL, 16))),
)
add(
    "tool_result",
    'key = "".join(["§0.0", "§0.1", "§0.2"])',
    v("python-join-split", F, lambda: Split(rs(HEX, 12), rs(HEX, 12), rs(HEX, 12))),
)
add(
    "diff",
    "--- a/config/prod.yml\n+++ b/config/prod.yml\n@@ -3,1 +3,1 @@\n-  password: §0\n+  password: §1\n",
    v("diff-old-password", F, human),
    v("diff-new-password", F, gen_pw),
)
add(
    "tool_result",
    "DEPLOY_AUTH := §0.0\\\n\t§0.1",
    v("makefile-continuation", F, lambda: Split(rs(B62, 20), rs(B62, 20))),
)
add(
    "tool_call",
    "echo §0 | base64 -d | jq .",
    v(
        "base64-json-creds",
        F,
        lambda: Enc(b64(json.dumps({"svc": "ledger", "k": (p := rs(B62, 32))})), p),
    ),
)

# ---- look-alikes: hashes and digests --------------------------------------------------------
F = "hash-digest"
add(
    "tool_result",
    "$ sha1sum dist/shop-1.4.2.tar.gz\n§0  dist/shop-1.4.2.tar.gz",
    v("sha1sum", F, lambda: rs(HEX, 40)),
)
add(
    "tool_result",
    "$ sha256sum build/app.bin\n§0  build/app.bin",
    v("sha256sum", F, lambda: rs(HEX, 64)),
)
add("tool_result", "$ b2sum wheel.whl\n§0  wheel.whl", v("blake2b", F, lambda: rs(HEX, 128)))
add(
    "tool_result",
    "  /left-pad@1.3.0:\n    resolution: {integrity: §0}",
    v("pnpm-integrity", F, lambda: "sha512-" + rs(B64, 86) + "=="),
)
add(
    "tool_result",
    '"left-pad@npm:^1.3.0":\n  version: 1.3.0\n  checksum: §0',
    v("yarn-berry-checksum", F, lambda: "10c0/" + rs(HEX, 128)),
)
add(
    "tool_result",
    "    imageID: docker-pullable://registry.corp.test/shop/api@§0",
    v("k8s-image-id", F, lambda: "sha256:" + rs(HEX, 64)),
)
add(
    "tool_result",
    "requests==2.32.3 \\\n    --hash=§0",
    v("pip-hash", F, lambda: "sha256:" + rs(HEX, 64)),
)
add(
    "tool_result",
    "HTTP/1.1 200 OK\nContent-MD5: §0\nContent-Length: 5120",
    v("content-md5", F, lambda: rs(B64, 22) + "=="),
)
add(
    "tool_result",
    "$ git ls-tree HEAD\n100644 blob §0\tREADME.md",
    v("git-blob", F, lambda: rs(HEX, 40)),
)
add(
    "tool_result",
    "pinned: ipfs://§0/index.html",
    v("ipfs-cid", F, lambda: "bafybei" + rs("abcdefghijklmnopqrstuvwxyz234567", 52)),
)
add(
    "tool_result",
    "/nix/store/§0-python3-3.12.4/bin/python3",
    v("nix-store-hash", F, lambda: rs(NIX, 32)),
)
add(
    "error",
    "checksum mismatch for vendor.tgz: expected §0, got §1",
    v("checksum-expected", F, lambda: rs(HEX, 64)),
    v("checksum-got", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    'provider "registry.terraform.io/hashicorp/random" {\n  version = "3.6.0"\n  hashes = [\n    "§0",\n  ]\n}',
    v("terraform-lock-h1", F, lambda: "h1:" + rs(B64, 43) + "="),
)
add(
    "tool_result",
    "$ ssh-keygen -lf id_ed25519.pub\n256 §0 ops@bastion (ED25519)",
    v("ssh-fingerprint", F, lambda: "SHA256:" + rs(B64, 43)),
)

# ---- look-alikes: identifiers ---------------------------------------------------------------
F = "identifier"
add("tool_result", 'level=info msg="order created" request_id=§0', v("uuid4-request", F, uuid4))
add(
    "tool_result",
    "event §0 published to orders.v1",
    v(
        "uuid7-event",
        F,
        lambda: (
            "0193"
            + rs(HEX, 4)
            + "-"
            + rs(HEX, 4)
            + "-7"
            + rs(HEX, 3)
            + "-"
            + r.choice("89ab")
            + rs(HEX, 3)
            + "-"
            + rs(HEX, 12)
        ),
    ),
)
add("tool_result", "queued job §0 (priority 3)", v("ulid-job", F, lambda: "01J" + rs(CROCK, 23)))
add("tool_result", '{"ksuid": "§0", "type": "track"}', v("ksuid", F, lambda: "2" + rs(B62, 26)))
add("tool_result", '{"id": "§0", "title": "Fix cart"}', v("nanoid", F, lambda: rs(URL, 21)))
add(
    "tool_result",
    "X-Amzn-Trace-Id: §0",
    v("amzn-trace-id", F, lambda: "Root=1-" + rs(HEX, 8) + "-" + rs(HEX, 24)),
)
add("tool_result", "span_id=§0 trace_flags=01 duration_ms=12", v("span-id", F, lambda: rs(HEX, 16)))
add(
    "tool_result",
    "Cloud build started: BUILD_ID=§0",
    v("build-id", F, lambda: "b-" + rs(string.ascii_lowercase + "234567", 20)),
)
add("tool_result", "$ git rev-parse HEAD\n§0", v("commit-sha", F, lambda: rs(HEX, 40)))
add(
    "tool_result",
    "posted message_id: §0 to #deploys",
    v("snowflake-id", F, lambda: "13" + rs(string.digits, 17)),
)
add(
    "tool_result",
    '{"§0": {"sku": "A-7", "qty": 2}}',
    v("firebase-push-id", F, lambda: "-O" + rs(URL, 18)),
)
add(
    "tool_call",
    "curl -s -X POST https://api.shop.test/v1/refunds -H 'Idempotency-Key: §0' -d amount=500",
    v("idempotency-key", F, lambda: rs(URL, 32)),
)
add(
    "tool_result",
    "x-amz-request-id: §0\nx-amz-id-2: §1",
    v("amz-request-id", F, lambda: rs("0123456789ABCDEF", 16)),
    v("amz-id-2", F, lambda: rs(B64, 76)),
)
add(
    "tool_result",
    "NAME                   READY   STATUS\n§0   1/1     Running",
    v(
        "pod-name",
        F,
        lambda: "api-" + rs("bcdf6789", 10) + "-" + rs("bcdfghjklmnpqrstvwxz2456789", 5),
    ),
)
add(
    "tool_result",
    "Sentry: captured exception, Event ID: §0",
    v("sentry-event-id", F, lambda: rs(HEX, 32)),
)
add(
    "tool_result",
    "operation: §0 status: RUNNING",
    v(
        "gcp-operation",
        F,
        lambda: (
            "operation-1733390000"
            + rs(string.digits, 3)
            + "-"
            + rs(HEX, 13)
            + "-"
            + rs(HEX, 8)
            + "-"
            + rs(HEX, 8)
        ),
    ),
)

# ---- look-alikes: public keys and addresses -------------------------------------------------
F = "public-key"
add(
    "tool_result",
    "$ cat ~/.ssh/authorized_keys\n§0 deploy@ci",
    v(
        "ssh-ecdsa-public",
        F,
        lambda: (
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB"
            + rs(B64, 87)
            + "="
        ),
    ),
)
add(
    "tool_result",
    "untrusted comment: minisign public key 4E1F0A2B3C4D5E6F\n§0",
    v("minisign-public", F, lambda: "RWQ" + rs(B64, 53)),
)
add("tool_result", "relay author: §0", v("nostr-npub", F, lambda: "npub1" + rs(BECH, 58)))
add(
    "tool_result",
    '{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "sig-1", "x": "§0"}]}',
    v("jwk-okp-x", F, lambda: rs(URL, 43)),
)
add(
    "tool_result",
    "HiddenServiceDir ready: §0",
    v("onion-address", F, lambda: rs("abcdefghijklmnopqrstuvwxyz234567", 56) + ".onion"),
)
add("tool_result", "refund wallet: §0", v("eth-address", F, lambda: "0x" + rs(HEX, 40)))
add("tool_result", "payout address: §0", v("btc-bech32", F, lambda: "bc1q" + rs(BECH, 38)))

# ---- look-alikes: publishable and site keys -------------------------------------------------
F = "publishable-or-site-key"
add(
    "tool_result",
    "NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=§0",
    v(
        "clerk-publishable",
        F,
        lambda: "pk_live_" + b64("clerk.shop-" + rs(string.ascii_lowercase, 6) + ".test$"),
    ),
)
add(
    "tool_result",
    "Paddle.Initialize({ token: '§0' })",
    v("paddle-client-token", F, lambda: "live_" + rs(HEX, 27)),
)
add(
    "tool_result",
    "const payments = Square.payments('§0', 'L1234ABCD')",
    v("square-app-id", F, lambda: "sq0idp-" + rs(URL, 22)),
)
add(
    "tool_result",
    '<script async src="https://www.googletagmanager.com/gtag/js?id=§0"></script>',
    v("ga4-measurement-id", F, lambda: "G-" + rs(UPPER, 10)),
)
add(
    "tool_result",
    'analytics.load("§0");  // browser write key',
    v("segment-write-key", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    "amplitude.init('§0', { defaultTracking: true });",
    v("amplitude-browser-key", F, lambda: rs(HEX, 32)),
)
add(
    "tool_result",
    'mixpanel.init("§0", {track_pageview: true});',
    v("mixpanel-project-token", F, lambda: rs(HEX, 32)),
)
add(
    "tool_result",
    "createAuth0Client({ domain: 'shop.eu.auth0.com', clientId: '§0' })",
    v("auth0-spa-client-id", F, lambda: rs(B62, 32)),
)
add(
    "tool_result",
    '"aws_user_pools_web_client_id": "§0",',
    v("cognito-web-client-id", F, lambda: rs(string.ascii_lowercase + string.digits, 26)),
)
add(
    "tool_result",
    "braintree.client.create({ authorization: '§0' })",
    v("braintree-tokenization-key", F, lambda: "production_" + rs(LOWER, 8) + "_" + rs(LOWER, 16)),
)
add(
    "tool_result",
    '<div class="g-recaptcha" data-sitekey="§0"></div>',
    v("recaptcha-site-key", F, lambda: "6L" + rs(URL, 38)),
)
add(
    "tool_result",
    "applicationServerKey: urlBase64ToUint8Array('§0')",
    v("vapid-public-key", F, lambda: "B" + rs(URL, 86)),
)

# ---- look-alikes: placeholders in many styles and languages ---------------------------------
F = "placeholder"
add(
    "tool_result",
    "# Вставьте сюда свой ключ\nAPI_KEY=§0",
    v("ph-russian", F, lambda: "<ваш_ключ_API>"),
)
add("tool_result", "CLE_API=§0  # à remplacer", v("ph-french", F, lambda: "VOTRE_CLE_API_ICI"))
add("tool_result", 'password: "§0"', v("ph-spanish", F, lambda: "tu-contraseña-aquí"))
add("tool_result", "passwort: §0", v("ph-german", F, lambda: "<dein-passwort>"))
add("tool_result", 'api_key: "§0"', v("ph-chinese", F, lambda: "请替换为你的密钥"))
add("tool_result", 'token = "§0"', v("ph-japanese", F, lambda: "<あなたのトークン>"))
add("tool_result", '  db_password: "§0"', v("ph-jinja", F, lambda: "{{ vault_db_password }}"))
add("tool_result", "set DB_PASS=§0", v("ph-windows-var", F, lambda: "%DB_PASSWORD%"))
add("tool_result", "deploy_token=§0", v("ph-at-markers", F, lambda: "@@DEPLOY_TOKEN@@"))
add("tool_result", "SECRET_KEY = '§0'", v("ph-dunder", F, lambda: "__SECRET_KEY__"))
add(
    "tool_result",
    "license_key: §0",
    v("ph-x-uuid", F, lambda: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"),
)
add("tool_result", "api_key: §0", v("ph-erb", F, lambda: '<%= ENV.fetch("API_KEY") %>'))
add("tool_result", "Password: §0", v("ph-bullets", F, lambda: "••••••••••••"))
add("tool_result", "QUIVEX_KEY=§0", v("ph-vendor-ellipsis", F, lambda: "qvx_live_…"))
add(
    "tool_result",
    "[auth]\nbasic_auth_password = §0",
    v("ph-grafana-file", F, lambda: "$__file{/run/secrets/grafana_pw}"),
)
add("tool_result", "ADMIN_PASSWORD=§0", v("ph-change-me", F, lambda: "CHANGE_ME_BEFORE_PROD"))

# ---- look-alikes: documented examples (RFCs, project docs) ----------------------------------
F = "documented-example"
add(
    "tool_result",
    'RFC 6749 5.1 example:\n{"access_token":"§0","token_type":"example","expires_in":3600,"refresh_token":"§1"}',
    v("rfc6749-access", F, lambda: "2YotnFZFEjr1zCsicMWpAA"),
    v("rfc6749-refresh", F, lambda: "tGzv3JOkF0XG5Qx2TlKWIA"),
)
add(
    "tool_result",
    "# from RFC 6749 4.4.2\nAuthorization: Basic §0",
    v("rfc6749-basic", F, lambda: "czZCaGRSa3F0MzpnWDFmQmF0M2JW"),
)
add(
    "tool_result",
    "RFC 7617 example: Authorization: Basic §0",
    v("rfc7617-basic", F, lambda: "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
)
add(
    "tool_result",
    '# RFC 6238 test seed ("12345678901234567890")\nSEED_B32 = "§0"',
    v("rfc6238-seed", F, lambda: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"),
)
add(
    "tool_result",
    '# RFC 4231 test case 1\nkey = bytes.fromhex("§0")',
    v("rfc4231-key", F, lambda: "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"),
)
add(
    "tool_result",
    '# kubeadm docs example\nbootstrapTokens:\n- token: "§0"',
    v("kubeadm-doc-token", F, lambda: "abcdef.0123456789abcdef"),
)
add(
    "tool_result",
    '# RFC 7515 A.1 key\n{"kty":"oct","k":"§0"}',
    v(
        "rfc7515-hmac-key",
        F,
        lambda: (
            "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"
        ),
    ),
)
add(
    "tool_result",
    "test vector (RFC 7519 3.1): §0",
    v(
        "rfc7519-jwt",
        F,
        lambda: (
            "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        ),
    ),
)
add(
    "tool_result",
    "# libpq docs, connection URI examples\n§0",
    v("libpq-doc-uri", F, lambda: "postgresql://user:secret@localhost"),
)
add(
    "tool_result",
    "RFC 7636 appendix B: code_challenge=§0",
    v("rfc7636-challenge", F, lambda: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
)

# ---- look-alikes: web build assets ----------------------------------------------------------
F = "web-asset"
add(
    "tool_result",
    '<nav class="§0">',
    v("css-module-class", F, lambda: "Header_nav__" + rs(URL, 5) + " _" + rs(B62, 16)),
)
add(
    "tool_result",
    "build/static/js/§0  48.2 kB",
    v("webpack-chunk", F, lambda: "main." + rs(HEX, 8) + ".chunk.js"),
)
add(
    "tool_result",
    "dist/assets/§0  12.40 kB │ gzip: 4.1 kB",
    v("vite-asset", F, lambda: "index-" + rs(URL, 8) + ".js"),
)
add("tool_result", "$ cat .next/BUILD_ID\n§0", v("next-build-id", F, lambda: rs(URL, 21)))
add(
    "tool_result",
    "cached: ~/.cache/wasm/§0.wasm",
    v("content-addressed-file", F, lambda: rs(HEX, 64)),
)
add(
    "tool_result",
    '__webpack_require__.p+"static/media/§0"',
    v("webpack-media", F, lambda: "logo." + rs(HEX, 20) + ".svg"),
)
add(
    "tool_result",
    '<img src="§0" alt="">',
    v(
        "data-uri-png",
        F,
        lambda: (
            "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        ),
    ),
)
add(
    "tool_result",
    "background: url(§0);",
    v(
        "data-uri-gif",
        F,
        lambda: "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7",
    ),
)
add(
    "tool_result",
    "//# sourceMappingURL=§0",
    v("source-map-name", F, lambda: "app." + rs(HEX, 20) + ".js.map"),
)
add(
    "tool_result",
    'precache: [{"revision": "§0", "url": "/index.html"}]',
    v("sw-precache-revision", F, lambda: rs(HEX, 32)),
)

# ---- look-alikes: test fixtures, seeds and feature flags ------------------------------------
F = "fixture-or-flag"
add(
    "tool_result",
    "loaded cassette tests/fixtures/cassettes/§0.yaml",
    v("cassette-name", F, lambda: rs(B62, 16)),
)
add(
    "tool_result", "feature flag §0 evaluated: false", v("flag-id", F, lambda: "flg_" + rs(B62, 22))
)
add(
    "tool_result",
    "experiment exp_§0 variant=B",
    v("experiment-id", F, lambda: rs(string.digits, 14)),
)
add("tool_result", "Using --randomly-seed=§0", v("pytest-seed", F, lambda: rs(string.digits, 10)))
add(
    "tool_result",
    "fuzz corpus seed=§0 (reproduce with FUZZ_SEED)",
    v("fuzz-seed-hex", F, lambda: rs(HEX, 32)),
)
add(
    "tool_result",
    'INVALID_TOKEN_FOR_TESTS = "§0"',
    v("invalid-token-fixture", F, lambda: "invalid." + rs(B62, 20) + ".not-a-token"),
)
add("tool_result", "testcache: §0 hit", v("go-testcache", F, lambda: rs(HEX, 64)))
add(
    "tool_result",
    "namespace §0 created for e2e",
    v("e2e-namespace", F, lambda: "e2e-" + rs(string.ascii_lowercase + string.digits, 10)),
)

TASKS = [
    "Fix the failing checkout test",
    "Make the export job retry on 429",
    "Move config to the new loader",
    "Repair the deploy script",
    "Add pagination to the orders API",
    "Upgrade the SDK and fix the build",
    "Debug the login redirect loop",
    "Make CI green again",
    "Add a health check endpoint",
    "Fix the nightly data sync",
    "Migrate the search client",
    "Investigate the 500s on refunds",
]
OPENERS = [
    "I will look at the repository first.",
    "Let me reproduce the failure.",
    "Reading the configuration.",
    "Checking the logs.",
]

MARK = re.compile(r"\u00a7(\d)(?:\.(\d))?")


def _split(value: str) -> str:
    """``value`` with ``«»`` in its middle (removed on load)."""
    return value[: len(value) // 2] + JOIN + value[len(value) // 2 :] if len(value) > 1 else value


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, str, str]]]:
    """The cases, the planted rows, and per case (id, plain text, text with secrets masked)."""
    turns: list[tuple[str, str, str, list[dict[str, Any]]]] = []
    for tkind, template, values in E:
        made = [(k, f, g()) for k, f, g in values]
        rows: list[dict[str, Any]] = []

        def fill(m: re.Match[str], masked: bool, joined: bool, made: list[Any] = made) -> str:
            kind, family, value = made[int(m.group(1))]
            secret = family in SECRET_FAMILIES
            if isinstance(value, Split):
                text = value.pieces[int(m.group(2))]
            elif isinstance(value, Enc):
                text = value.written
            else:
                text = value
            if secret and masked:
                return "\x00"
            return _split(text) if secret and joined else text

        plain = MARK.sub(lambda m: fill(m, False, False), template)
        masked = MARK.sub(lambda m: fill(m, True, False), template)
        joined = MARK.sub(lambda m: fill(m, False, True), template)
        for kind, family, value in made:
            secret = family in SECRET_FAMILIES
            row: dict[str, Any] = {"kind": kind, "family": family, "benign": not secret}
            if isinstance(value, Split):
                row["secret"] = "".join(value.pieces)
            elif isinstance(value, Enc):
                row["secret"], row["plain"] = value.written, value.plain
            else:
                row["secret"] = value
            rows.append(row)
        turns.append((tkind, joined, plain + "\x01" + masked, rows))
    r.shuffle(turns)
    cases, planted, texts = [], [], []
    for n in range(0, len(turns), PER_RUN):
        cid = f"f2-{n // PER_RUN + 1:02d}"
        trace = [
            {"id": f"{cid}-t0", "role": "agent", "kind": "message", "content": r.choice(OPENERS)}
        ]
        plain_all, masked_all = [], []
        for i, (tkind, joined, both, rows) in enumerate(turns[n : n + PER_RUN], 1):
            role = "agent" if tkind == "tool_call" else "tool"
            trace.append({"id": f"{cid}-t{i}", "role": role, "kind": tkind, "content": joined})
            p, m = both.split("\x01")
            plain_all.append(p)
            masked_all.append(m)
            for row in rows:
                planted.append({"case": cid, "where": "trace", **row})
        cases.append(
            {
                "id": cid,
                "kind": "agent_run",
                "task": TASKS[(n // PER_RUN) % len(TASKS)],
                "trace": trace,
            }
        )
        texts.append((cid, "\n".join(plain_all), "\n".join(masked_all)))
    return cases, planted, texts


def _grams(value: str) -> set[str]:
    if len(value) <= SIZE:
        return {value}
    return {value[i : i + SIZE] for i in range(len(value) - SIZE + 1)}


def check(
    cases: list[dict[str, Any]], planted: list[dict[str, Any]], texts: list[tuple[str, str, str]]
) -> None:
    """Refuse a set where a secret's 12-character piece stands anywhere but where it is planted,
    a planted value is missing from its run, or a turn or run exceeds the evidence budget."""
    owner: dict[str, tuple[str, str]] = {}
    masked_all = "\n".join(m for _, _, m in texts) + "\n".join(c["task"] for c in cases)
    masked_all += "\n".join(c["trace"][0]["content"] for c in cases)
    plain_of = {cid: p for cid, p, _ in texts}
    for p in planted:
        text = plain_of[p["case"]]
        if not p["benign"]:
            pieces = [p["secret"]] + ([p["plain"]] if "plain" in p else [])
            for form in pieces:
                for g in _grams(form):
                    if owner.setdefault(g, (p["case"], p["kind"])) != (p["case"], p["kind"]):
                        raise SystemExit(f"{p['kind']}: piece {g!r} shared with {owner[g]}")
                    if g in masked_all:
                        raise SystemExit(f"{p['kind']}: piece {g!r} stands outside its place")
            if "plain" not in p and not any(g in text for g in _grams(p["secret"])):
                raise SystemExit(f"{p['kind']}: not in its run")
        elif p["secret"] not in text:
            raise SystemExit(f"{p['kind']}: look-alike not in its run")
    for c in cases:
        lengths = [len(t["content"].replace(JOIN, "")) for t in c["trace"]]
        if max(lengths) > MAX_TURN or sum(lengths) + len(c["task"]) > MAX_RUN:
            raise SystemExit(f"{c['id']}: too long for the evidence budget ({lengths})")
    kinds = [(p["case"], p["kind"]) for p in planted]
    if len(set(kinds)) != len(kinds):
        raise SystemExit("a kind is planted twice in one case")


def _dump(rows: list[dict[str, Any]], secret_fields: tuple[str, ...]) -> str:
    out = []
    for row in rows:
        row = dict(row)
        if not row.get("benign", True):
            for f in secret_fields:
                if f in row:
                    row[f] = _split(row[f])
        out.append(json.dumps(row, ensure_ascii=False) + "\n")
    return "".join(out)


def main() -> None:
    """Build, check and write the set."""
    cases, planted, texts = build()
    check(cases, planted, texts)
    (HERE / "cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), "utf-8"
    )
    (HERE / "planted.jsonl").write_text(_dump(planted, ("secret", "plain")), "utf-8")
    n_secret = sum(not p["benign"] for p in planted)
    print(f"{len(cases)} runs, {n_secret} secrets, {len(planted) - n_secret} look-alikes")


if __name__ == "__main__":
    main()
