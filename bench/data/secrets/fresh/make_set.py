# ruff: noqa: E501 -- the texts are fixtures: realistic lines, kept whole so that they read as such
"""Write the fresh held-out secrets set (``cases.jsonl`` and ``planted.jsonl`` beside this file):
real-shaped secrets of services and formats chosen by an outside author, split or wrapped
values, and look-alikes that must reach the judge unchanged, all inside agent-run traces.

    python bench/data/secrets/fresh/make_set.py

Written apart from, and before any change of, the project's detection rules (see README.md).
Every value is fake: drawn from a seeded random generator in the shape (prefix, alphabet,
length) of the real thing, or a vendor's documented example / a placeholder for the look-alikes.
In the files every secret is split by ``«»`` (removed on load) so that secret scanners do not
take them for leaks. Stdlib only; the same seed always writes the same bytes.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JOIN = "\u00ab\u00bb"
R = random.Random(20261205)
A = string.ascii_letters + string.digits
U = string.ascii_uppercase + string.digits
L = string.ascii_lowercase + string.digits
H = "0123456789abcdef"
UH = "0123456789ABCDEF"
URL = A + "-_"
B64 = A + "+/"
#: The size of the pieces the bench looks for (``_leaked``): no secret may share one with any
#: other text of the set, so that a leak is counted only where the secret itself stands.
PIECE = 12
#: Items per case (plus an opening agent turn), and limits that keep every turn inside the
#: judge's evidence budget (nothing dropped or clipped before the provider sees it).
PER_CASE = 5
MAX_TURN_CHARS = 700
MAX_CASE_CHARS = 3000


def r(n: int, alphabet: str = A) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def uuid4() -> str:
    return f"{r(8, H)}-{r(4, H)}-4{r(3, H)}-{R.choice('89ab')}{r(3, H)}-{r(12, H)}"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(header: dict[str, object], payload: dict[str, object]) -> str:
    """A JWT-shaped value: real header and claims, a random signature."""
    return (
        b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url(json.dumps(payload, separators=(",", ":")).encode())
        + "."
        + r(43, URL)
    )


WORDS = [
    "Granite",
    "willow",
    "Copper",
    "harbour",
    "Juniper",
    "lantern",
    "Osprey",
    "meadow",
    "Cobalt",
    "thistle",
    "Saffron",
    "glacier",
    "Marlin",
    "orchard",
    "Velvet",
    "canyon",
]
NAMES = ["Marisol", "Dagny", "Teodor", "Ingrid", "Kwame", "Oksana", "Rafael", "Siobhan"]


def human_pw(style: int) -> str:
    """A password a person would choose (low entropy, real): five styles."""
    if style == 0:  # Word + word + year + symbol
        return (
            R.choice(WORDS)
            + R.choice(WORDS).lower()
            + str(R.randint(1975, 2026))
            + R.choice("!#%*")
        )
    if style == 1:  # passphrase with dashes
        return "-".join(R.choice(WORDS).lower() for _ in range(3)) + "-" + str(R.randint(10, 99))
    if style == 2:  # name + birthday
        return R.choice(NAMES) + f"{R.randint(1, 28):02d}{R.randint(1, 12):02d}" + R.choice("!$")
    if style == 3:  # leetspeak word
        word = R.choice(WORDS).capitalize()
        return word.replace("o", "0").replace("a", "@").replace("e", "3") + str(R.randint(100, 999))
    return R.choice(WORDS) + "_" + R.choice(NAMES).lower() + str(R.randint(1, 9))  # Word_name9


def rand_pw(n: int = 22) -> str:
    """A generated password (high entropy), safe in URLs and markup."""
    return r(n, A + "-_.~")


_STYLE = iter(range(10**6))


def pw() -> str:
    return human_pw(next(_STYLE) % 5)


def url_pw() -> str:
    """A human-shaped password that stands unencoded in a URL's user part (no ``@#%/:``)."""
    return pw().translate(str.maketrans("@#%", "a!*"))


# --- the planted values ------------------------------------------------------------------------
#: family, kind, secret (as in the text, or its plain form when ``written``), text with ``{s}``,
#: written (the encoded form in the text, or ""), pieces (the parts of a split value), turn kind
Row = tuple[str, str, str, str, str, tuple[str, ...], str]
SECRETS: list[Row] = []
LOOKALIKES: list[Row] = []


def add(
    family: str,
    kind: str,
    secret: str,
    text: str,
    written: str = "",
    pieces: tuple[str, ...] = (),
    turn: str = "tool_result",
) -> None:
    """A planted secret; ``written`` is its form in the text when encoded, ``pieces`` the
    parts it is written in when split."""
    SECRETS.append((family, kind, secret, text, written, pieces, turn))


def keep(family: str, kind: str, value: str, text: str, turn: str = "tool_result") -> None:
    """A look-alike that must reach the judge unchanged."""
    LOOKALIKES.append((family, kind, value, text, "", (), turn))


# The tables below are fixtures, one planted value a line, so that each reads as the line of a
# trace it is; the formatter would spread each over five to ten lines.
# fmt: off
# --- service tokens: regional clouds, CI/CD, payments, observability, DBaaS, chat, internal ----
T = "service-token"
add(T, "tencentcloud-secret-id", "AKID" + r(32), "export TENCENTCLOUD_SECRET_ID={s}\nexport TENCENTCLOUD_REGION=ap-guangzhou", turn="tool_call")
add(T, "tencentcloud-secret-key", r(32), "$ tccli configure set secretKey {s} --profile prod\nconfigure success")
add(T, "huaweicloud-sk", r(40), "[default]\nak = " + r(20, U) + "\nsk = {s}\nregion = cn-north-4")
add(T, "yandex-cloud-api-key", "AQVN" + r(36, URL), "yc config set token {s}\nyc compute instance list --folder-id b1g" + r(17, L), turn="tool_call")
add(T, "ovh-application-secret", r(32), "[ovh-eu]\napplication_key=" + r(16) + "\napplication_secret={s}\nconsumer_key=" + r(32))
add(T, "scaleway-secret-key", uuid4(), "SCW_ACCESS_KEY=SCW" + r(17, U) + "\nSCW_SECRET_KEY={s}\nSCW_DEFAULT_REGION=fr-par")
add(T, "hetzner-cloud-token", r(64), "$ hcloud context create prod\nToken: {s}\nContext prod created and activated")
add(T, "vultr-api-key", r(36, U), "provider \"vultr\" {\n  api_key     = \"{s}\"\n  rate_limit  = 700\n}", turn="diff")
add(T, "circleci-pat", "CCIPAT_" + r(22) + "_" + r(40, H), "circleci setup --token {s} --host https://circleci.com --no-prompt", turn="tool_call")
add(T, "drone-token", r(32), "DRONE_SERVER=https://drone.internal.acme.io\nDRONE_TOKEN={s}")
add(T, "azure-devops-pat", r(52, "abcdefghijklmnopqrstuvwxyz234567"), "az devops login --organization https://dev.azure.com/acme <<< {s}", turn="tool_call")
add(T, "teamcity-token", "eyJ0eXAiOiAiVENWMiJ9." + r(36, URL) + "." + r(48, URL), "teamcity.token={s}\nteamcity.url=https://ci.acme.io")
add(T, "harness-pat", "pat." + r(22, URL) + "." + r(24, H) + "." + r(20), "HARNESS_PLATFORM_API_KEY={s} harness pipeline list", turn="tool_call")
add(T, "adyen-api-key", "AQE" + r(5) + "MD8" + r(90, B64) + "=", "adyen:\n  environment: LIVE\n  api-key: \"{s}\"\n  merchant-account: AcmeECOM")
add(T, "braintree-private-key", r(32, H), "gateway = braintree.BraintreeGateway(braintree.Configuration(\n    braintree.Environment.Production, merchant_id=\"" + r(16, L) + "\",\n    public_key=\"" + r(16, L) + "\", private_key=\"{s}\"))")
add(T, "razorpay-key-secret", r(24), "client = razorpay.Client(auth=(\"rzp_live_" + r(14) + "\", \"{s}\"))")
add(T, "paystack-secret-key", "sk_live_" + r(40, H), "PAYSTACK_SECRET_KEY={s}")
add(T, "mollie-live-key", "live_" + r(30), "$mollie->setApiKey(\"{s}\");")
add(T, "datadog-app-key", r(40, H), "DD_API_KEY=" + r(32, H) + "\nDD_APP_KEY={s}\nDD_SITE=datadoghq.eu")
add(T, "honeycomb-ingest-key", "hcaik_01" + r(56, L), "OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team={s}")
add(T, "coralogix-private-key", "cxtp_" + r(30), "coralogix:\n  domain: eu2.coralogix.com\n  private_key: {s}")
add(T, "axiom-token", "xaat-" + uuid4(), "axiom auth login --token {s} --org-id acme-" + r(6, L), turn="tool_call")
add(T, "neon-api-key", "napi_" + r(64, L), "NEON_API_KEY={s} neonctl branches list --project-id " + r(6, L) + "-" + r(6, L) + "-" + r(8, L), turn="tool_call")
add(T, "mongodb-atlas-private-key", uuid4(), "atlas config set public_api_key " + r(8, L) + "\natlas config set private_api_key {s}", turn="tool_call")
add(T, "upstash-redis-token", "AX" + r(4) + "ASQgN" + r(60, URL) + "=", "UPSTASH_REDIS_REST_URL=https://eu2-" + r(8, L) + ".upstash.io\nUPSTASH_REDIS_REST_TOKEN={s}")
add(T, "cockroach-cloud-key", "CCDB1_" + r(22) + "_" + r(40), "export COCKROACH_API_KEY={s}", turn="tool_call")
add(T, "zulip-bot-key", r(32), "[api]\nemail=deploy-bot@acme.zulipchat.com\nkey={s}\nsite=https://acme.zulipchat.com")
add(T, "mattermost-bot-token", r(26, L), "MM_BOT_TOKEN={s}\nMM_SERVER_URL=https://chat.acme.io")
add(T, "line-channel-token", r(171, B64) + "=", "line_bot_api = LineBotApi('{s}')")
add(T, "teams-webhook-key", r(32, H), "WEBHOOK=https://acme.webhook.office.com/webhookb2/" + uuid4() + "@" + uuid4() + "/IncomingWebhook/{s}/" + uuid4())
add(T, "internal-prefixed-token", "acme_live_" + r(40), "ACME_INTERNAL_TOKEN={s}\nACME_ENV=production")
add(T, "internal-svc-key", "svck-v2-" + r(8, L) + "-" + r(48), "[auth]\nservice_key = \"{s}\"\naudience = \"billing-api\"")
add(T, "jwt-service-role-key", jwt({"kid": r(8, L), "alg": "HS256", "typ": "JWT"}, {"role": "service_role", "exp": 2079576000, "ref": r(20, L)}), "SUPABASE_SERVICE_ROLE_KEY={s}")
add(T, "jwt-turso-token", jwt({"alg": "EdDSA", "kid": r(10)}, {"a": "rw", "gid": uuid4()}), "turso db tokens create orders-prod\n{s}")
add(T, "jwt-internal-service-key", jwt({"typ": "JWT", "kid": "svc-" + r(6, L), "alg": "RS256"}, {"sub": "svc:ledger", "scope": "ledger.write", "aud": "internal"}), "[service-auth]\nsigned_key = {s}")
add(T, "wireguard-private-key", r(43, B64) + "=", "[Interface]\nPrivateKey = {s}\nAddress = 10.8.0.2/32\nDNS = 10.8.0.1")
add(T, "service-account-private-key", r(64, B64), "{\"type\": \"service_account\", \"project_id\": \"acme-prod\", \"private_key_id\": \"" + r(40, H) + "\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASC\\n{s}\\n-----END PRIVATE KEY-----\\n\"}")

# --- headers and commands ----------------------------------------------------------------------
C = "header-or-command"
add(C, "bearer-hex-header", r(64, H), "> GET /v2/metrics HTTP/1.1\n> Host: api.statuspulse.io\n> Authorization: Bearer {s}\n> Accept: */*\n< HTTP/1.1 200 OK")
add(C, "x-api-key-hex", r(40, H), "curl -s -H 'X-Api-Key: {s}' https://api.fleetwise.net/v1/vehicles | jq '.[0]'", turn="tool_call")
add(C, "x-auth-token-header", r(43, URL), "curl -H \"X-Auth-Token: {s}\" -H \"X-User-Id: " + r(17) + "\" https://chat.acme.io/api/v1/me", turn="tool_call")
add(C, "curl-user-password", rand_pw(20), "curl -u deploy:{s} -X POST https://jenkins.acme.io/job/api/build", turn="tool_call")
add(C, "jenkins-api-token", "11" + r(32, H), "curl -X POST --user admin:{s} https://jenkins.acme.io/job/release/buildWithParameters", turn="tool_call")
add(C, "httpie-api-key-param", r(32), "http GET https://api.weatherlane.com/v3/forecast city==Lyon apikey=={s}", turn="tool_call")
add(C, "token-token-header", r(40, H), "Authorization: Token token={s}\nContent-Type: application/json")
add(C, "query-string-key", r(36), "INFO  urllib3 GET https://api.shipquick.io/v1/rates?carrier=ups&access_key={s} -> 200")
add(C, "wget-header", r(48, URL), "wget --header=\"PRIVATE-TOKEN: {s}\" https://git.acme.io/api/v4/projects/12/repository/archive.tar.gz", turn="tool_call")
add(C, "splunk-hec-uuid", uuid4(), "curl -k https://splunk.acme.io:8088/services/collector/event -H \"Authorization: Splunk {s}\" -d '{\"event\": \"deploy\"}'", turn="tool_call")
add(C, "dd-api-key-header", r(32, H), "POST https://api.datadoghq.eu/api/v2/series\nDD-API-KEY: {s}\nContent-Type: application/json")
add(C, "docker-login-password", rand_pw(28), "echo '{s}' | docker login registry.acme.io -u ci-bot --password-stdin\nLogin Succeeded", turn="tool_call")
add(C, "mysql-cli-password", pw(), "mysql -h db.acme.internal -u report -p'{s}' -e 'SELECT COUNT(*) FROM orders'", turn="tool_call")
add(C, "psql-pgpassword", pw(), "PGPASSWORD='{s}' psql -h 10.0.3.14 -U analytics -d warehouse -c '\\dt'", turn="tool_call")

# --- structured files: Dockerfile, CI, manifests, notebooks, state, dotfiles ------------------
F = "structured-file"
add(F, "dockerfile-env", r(40), "FROM python:3.12-slim\nENV APP_ENV=production \\\n    PAYMENTS_API_SECRET={s}\nCOPY . /app")
add(F, "gha-env-block", r(44, URL), "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      FASTLY_API_TOKEN: {s}\n      REGION: eu-west-1", turn="diff")
add(F, "k8s-env-value", pw(), "      containers:\n        - name: api\n          env:\n            - name: DB_PASSWORD\n              value: \"{s}\"")
add(F, "k8s-stringdata", rand_pw(30), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\ntype: Opaque\nstringData:\n  SMTP_PASSWORD: {s}")
add(F, "jupyter-output", r(40), "{\"cell_type\": \"code\", \"execution_count\": 7, \"outputs\": [{\"name\": \"stdout\", \"output_type\": \"stream\", \"text\": [\"using key {s}\\n\"]}], \"source\": [\"print('using key', cfg.key)\"]}")
add(F, "tfstate-attribute", rand_pw(32), "{\"type\": \"aws_db_instance\", \"name\": \"main\", \"instances\": [{\"attributes\": {\"identifier\": \"orders\", \"username\": \"orders_admin\", \"password\": \"{s}\", \"port\": 5432}}]}")
add(F, "npmrc-auth-token", r(36), "@acme:registry=https://npm.pkg.acme.io/\n//npm.pkg.acme.io/:_authToken={s}\nalways-auth=true")
add(F, "pypirc-password", rand_pw(26), "[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.acme.io/simple\nusername = release\npassword = {s}")
add(F, "netrc-password", pw(), "machine artifacts.acme.io\n  login ci-reader\n  password {s}")
add(F, "ssh-config-sshpass", pw(), "Host bastion\n  HostName 203.0.113.20\n  User ops\n  ProxyCommand sshpass -p '{s}' ssh -W %h:%p jump@198.51.100.7")
add(F, "helm-values", rand_pw(24), "redis:\n  auth:\n    enabled: true\n    password: {s}\n  master:\n    persistence:\n      size: 8Gi", turn="diff")
add(F, "env-diff", pw(), "--- a/.env\n+++ b/.env\n@@ -3,2 +3,3 @@\n DB_HOST=db\n+DB_PASSWORD={s}\n DB_PORT=5432", turn="diff")

# --- passwords in configuration formats --------------------------------------------------------
P = "config-password"
add(P, "yaml-password", pw(), "database:\n  host: pg.internal\n  user: billing\n  password: {s}")
add(P, "toml-password", pw(), "[database]\nurl = \"pg.internal\"\nuser = \"ledger\"\npassword = \"{s}\"")
add(P, "ini-password", pw(), "[smtp]\nhost = mail.acme.io\nuser = noreply\npass = {s}")
add(P, "json-password", rand_pw(20), "{\"ldap\": {\"bind_dn\": \"cn=svc,dc=acme,dc=io\", \"bind_password\": \"{s}\"}}")
add(P, "xml-element-password", pw(), "<datasource>\n  <user-name>app</user-name>\n  <password>{s}</password>\n</datasource>")
add(P, "hcl-password", rand_pw(24), "resource \"azurerm_mssql_server\" \"main\" {\n  administrator_login          = \"sqladmin\"\n  administrator_login_password = \"{s}\"\n}")
add(P, "properties-password", pw(), "spring.datasource.url=jdbc:postgresql://db:5432/shop\nspring.datasource.username=shop\nspring.datasource.password={s}")
add(P, "dotenv-password", pw(), "REDIS_HOST=cache\nREDIS_PASSWORD={s}")
add(P, "php-array-password", pw(), "'mysql' => [\n    'driver' => 'mysql',\n    'username' => 'forge',\n    'password' => '{s}',\n],")
add(P, "ruby-hash-password", rand_pw(20), "config.action_mailer.smtp_settings = { address: 'smtp.acme.io', user_name: 'mailer', password: '{s}' }")
add(P, "js-object-password", pw(), "const pool = new Pool({ host: 'db', user: 'api', password: '{s}', max: 20 });")
add(P, "java-builder-password", pw(), "HikariConfig cfg = new HikariConfig();\ncfg.setUsername(\"orders\");\ncfg.setPassword(\"{s}\");")
add(P, "java-builder-chain", rand_pw(24), "RedisURI uri = RedisURI.builder().withHost(\"cache\").withPassword(\"{s}\".toCharArray()).build();")
add(P, "csharp-connection", pw(), "services.AddDbContext<Ctx>(o => o.UseSqlServer(\"Server=sql01;Database=crm;User Id=crm_app;Password={s};\"));")
add(P, "django-secret-key", r(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"), "SECRET_KEY = '{s}'\nDEBUG = False")
add(P, "rails-secret-key-base", r(128, H), "production:\n  secret_key_base: {s}")
add(P, "flask-secret", r(32, H), "app.config['SECRET_KEY'] = '{s}'")
add(P, "ansible-become-pass", pw(), "[web]\n10.0.4.21 ansible_user=deploy ansible_become_pass={s}")

# --- connection strings ------------------------------------------------------------------------
N = "connection-string"
add(N, "postgres-url", rand_pw(20), "DATABASE_URL=postgres://app_user:{s}@pg-prod.acme.internal:5432/orders?sslmode=require")
add(N, "mysql-url", url_pw(), "mysql+pymysql://shop:{s}@10.0.2.9:3306/shop")
add(N, "mongodb-srv", rand_pw(18), "MONGO_URI=mongodb+srv://analytics:{s}@cluster0." + r(5, L) + ".mongodb.net/events?retryWrites=true")
add(N, "rediss-url", r(32), "CELERY_BROKER_URL=rediss://:{s}@cache.acme.io:6380/0")
add(N, "amqp-url", url_pw(), "amqp://orders:{s}@rabbit.acme.internal:5672/%2Fprod")
add(N, "oracle-jdbc", url_pw(), "jdbc:oracle:thin:billing/{s}@//ora-prd.acme.internal:1521/BILLPDB")
add(N, "clickhouse-dsn", rand_pw(22), "clickhouse://reader:{s}@ch.acme.io:9440/metrics?secure=true")
add(N, "snowflake-conn", url_pw(), "snowflake://etl_user:{s}@acme-xy12345/analytics/public?warehouse=ETL_WH")
add(N, "neo4j-bolt", url_pw(), "NEO4J_URI=neo4j+s://neo4j:{s}@graph.acme.io:7687")
add(N, "elastic-url", rand_pw(20), "ELASTICSEARCH_HOSTS=https://elastic:{s}@es.acme.io:9243")
add(N, "kafka-jaas", rand_pw(24), "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + r(16, U) + "\" password=\"{s}\";")
add(N, "mssql-odbc", pw(), "Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql.acme.io,1433;Uid=report;Pwd={s};Encrypt=yes;")
add(N, "ldap-simple-bind", pw(), "conn = ldap.initialize('ldaps://ldap.acme.io')\nconn.simple_bind_s('cn=reader,ou=svc,dc=acme,dc=io', '{s}')")
add(N, "cassandra-cql", pw(), "cqlsh cass.acme.io 9042 -u ingest -p '{s}' --ssl", turn="tool_call")

# --- logs and stack traces ---------------------------------------------------------------------
G = "log-or-trace"
add(G, "log-line-key", r(40), "2026-12-05T09:14:22.118Z DEBUG http.client sending headers {'x-api-key': '{s}', 'user-agent': 'acme/2.3'}", turn="tool_result")
add(G, "python-traceback-locals", pw(), "Traceback (most recent call last):\n  File \"/app/db.py\", line 41, in connect\n    conn = psycopg.connect(host=host, user=user, password=password)\n    password = '{s}'\npsycopg.OperationalError: connection refused", turn="error")
add(G, "java-exception-url", r(40, H), "java.io.IOException: Server returned HTTP response code: 401 for URL: https://api.payfabric.io/v2/charges?secret={s}\n\tat sun.net.www.protocol.http.HttpURLConnection.getInputStream", turn="error")
add(G, "node-error-config", rand_pw(24), "Error: connect ECONNREFUSED 10.0.5.3:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] {\n  config: { user: 'api', password: '{s}', host: '10.0.5.3' }\n}", turn="error")
add(G, "structured-log-json", r(48, URL), "{\"level\":\"warn\",\"ts\":1764926062.4,\"msg\":\"retrying webhook\",\"url\":\"https://hooks.acme.io/in\",\"signing_secret\":\"{s}\"}")
add(G, "nginx-access-log", r(32), "10.0.0.7 - - [05/Dec/2026:09:20:11 +0000] \"GET /export?format=csv&token={s} HTTP/1.1\" 200 5123")

# --- split or wrapped values -------------------------------------------------------------------
S = "split-or-wrapped"


def split_add(kind: str, secret: str, text: str, cuts: tuple[int, ...], turn: str = "tool_result") -> None:
    """A secret written in pieces cut at ``cuts``; ``text`` holds ``{0}``, ``{1}``... per piece."""
    bounds = (0, *cuts, len(secret))
    pieces = tuple(secret[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1))
    body = text
    for i, piece in enumerate(pieces):
        body = body.replace("{" + str(i) + "}", piece)
    add(S, kind, secret, body, pieces=pieces, turn=turn)


t = "dop_v1_" + r(64, H)
split_add("python-plus-concat", t, 'DO_TOKEN = "{0}" + "{1}"', (30,))
t = "hcaik_01" + r(56, L)
split_add("python-implicit-concat", t, 'HONEYCOMB_KEY = (\n    "{0}"\n    "{1}"\n)', (32,))
t = r(40, H)
split_add("js-template-concat", t, "const key = `{0}` +\n  `{1}`;", (20,))
t = rand_pw(26)
split_add("java-string-concat", t, 'String pw = "{0}"\n    + "{1}"\n    + "{2}";', (9, 18))
t = "CCIPAT_" + r(22) + "_" + r(40, H)
split_add("go-concat", t, 'const ciToken = "{0}" +\n\t"{1}"', (35,))
t = "live_" + r(30)
split_add("php-dot-concat", t, "$key = '{0}' . '{1}';", (17,))
t = r(48, URL)
split_add("ruby-concat", t, 'TOKEN = "{0}" \\\n  "{1}"', (24,))
t = "napi_" + r(64, L)
split_add("csharp-concat", t, 'var apiKey = "{0}"\n    + "{1}";', (34,))
t = "AQVN" + r(36, URL)
split_add("shell-line-continuation", t, "yc iam key create --token {0}\\\n{1} --output key.json", (20,), turn="tool_call")
t = r(44)
split_add("yaml-folded", t, "notifier:\n  token: >-\n    {0}\n    {1}", (22,))
t = "xaat-" + uuid4()
split_add("log-two-lines", t, "2026-12-05 09:31:07 INFO export cfg token={0}\n2026-12-05 09:31:07 INFO ...{1} (continued)", (21,))
t = r(36, U)
split_add("sql-concat", t, "UPDATE integrations SET api_key = '{0}' || '{1}' WHERE name = 'vultr';", (18,))
t = r(32)
split_add("bash-array-join", t, 'parts=("{0}" "{1}" "{2}")\nexport ZULIP_KEY=$(IFS=; echo "${parts[*]}")', (11, 22), turn="tool_call")

t = pw()
w = urllib.parse.quote(t + "/%@:", safe="")
add(S, "url-encoded-password", t + "/%@:", "postgresql://svc_ro:{s}@pg.acme.internal:5432/ro", written=w)
t = pw() + '"' + r(4) + "\u00e9"
inner = json.dumps({"path": "config/db.json", "content": {"user": "orders", "password": t}})
call = json.dumps({"name": "write_file", "arguments": inner})
w = json.dumps(json.dumps(t)[1:-1])[1:-1]
assert w in call
add(S, "json-escaped-tool-call", t, call.replace(w, "{s}"), written=w, turn="tool_call")
t = r(40, H)
cfg = "datadog:\n  api_key: " + r(32, H) + "\n  app_key: " + t + "\n"
w = base64.b64encode(cfg.encode()).decode()
add(S, "base64-config-k8s", t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dd-config\ndata:\n  datadog.yaml: {s}", written=w)
t = pw()
w = base64.b64encode(("DB_PASSWORD=" + t + "\nDB_USER=api\n").encode()).decode()
add(S, "base64-dotenv", t, "$ echo {s} | base64 -d > .env", written=w, turn="tool_call")
t = rand_pw(20)
w = base64.b64encode(("ci-bot:" + t).encode()).decode()
add(S, "basic-auth-header", t, "Authorization: Basic {s}", written=w)
t = rand_pw(22)
w = base64.b64encode(("deployer:" + t).encode()).decode()
add(S, "docker-config-auth", t, "{\"auths\": {\"registry.acme.io\": {\"auth\": \"{s}\"}}}", written=w)


# --- look-alikes: must reach the judge unchanged -----------------------------------------------
D = "documented-example"
keep(D, "aws-doc-key-id", "AKIAIOSFODNN7EXAMPLE", "# from the AWS CLI guide\n[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE")
keep(D, "aws-doc-secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY  # documentation example")
keep(D, "aws-doc-key-id-2", "AKIAI44QH8DHBEXAMPLE", "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE  # value from the AWS docs")
keep(D, "aws-doc-secret-2", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY", "export AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY")
keep(D, "jwt-io-example", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "# sample token from jwt.io used in the parser test\nTOKEN = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c'")
keep(D, "jwt-io-secret", "your-256-bit-secret", "HMACSHA256(base64UrlEncode(header) + \".\" + base64UrlEncode(payload), your-256-bit-secret)")
keep(D, "stripe-doc-test-secret", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "# Stripe docs sample key (test mode)\nstripe.api_key = \"sk_test_4eC39HqLyjWDarjtT1zdp7dc\"")
keep(D, "stripe-doc-test-publishable", "pk_test_TYooMQauvdEDq54NiTphI7jx", "const stripe = Stripe('pk_test_TYooMQauvdEDq54NiTphI7jx');")
keep(D, "recaptcha-test-secret", "6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe", "RECAPTCHA_SECRET_KEY=6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe  # Google's always-pass test key")
keep(D, "azurite-account-key", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;")
keep(D, "slack-doc-token", "xoxb-not-a-real-token-this-will-not-work", "SLACK_BOT_TOKEN=xoxb-not-a-real-token-this-will-not-work  # as in the Bolt tutorial")

K = "publishable-or-site-key"
v = "pk_live_" + r(99)
keep(K, "stripe-publishable-live", v, "<script>const stripe = Stripe('" + v + "');</script>")
v = "phc_" + r(43)
keep(K, "posthog-project-key", v, "posthog.init('" + v + "', { api_host: 'https://eu.i.posthog.com' })")
v = "0x4AAAAAAA" + r(14, URL)
keep(K, "turnstile-site-key", v, '<div class="cf-turnstile" data-sitekey="' + v + '"></div>')
v = uuid4()
keep(K, "hcaptcha-site-key", v, '<div class="h-captcha" data-sitekey="' + v + '"></div>')
v = "AIza" + r(35, URL)
keep(K, "firebase-web-api-key", v, "const firebaseConfig = {\n  apiKey: \"" + v + "\",\n  authDomain: \"acme-prod.firebaseapp.com\",\n  projectId: \"acme-prod\"\n};")
v = "pk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6Im" + r(20, URL) + "In0." + r(22, URL)
keep(K, "mapbox-public-token", v, "mapboxgl.accessToken = '" + v + "';")
v = "pub" + r(32, H)
keep(K, "datadog-rum-client-token", v, "datadogRum.init({ applicationId: '" + uuid4() + "', clientToken: '" + v + "', site: 'datadoghq.eu' });")
v = "rzp_live_" + r(14)
keep(K, "razorpay-key-id", v, "var options = { \"key\": \"" + v + "\", \"amount\": 50000, \"currency\": \"INR\" };")
v = "live_" + r(32, U)
keep(K, "adyen-client-key", v, "const checkout = await AdyenCheckout({ environment: 'live', clientKey: '" + v + "' });")
v = r(24, H)
keep(K, "launchdarkly-client-id", v, "const client = LDClient.initialize('" + v + "', { key: 'anonymous' });")
v = "https://" + r(32, H) + "@o" + str(R.randint(10**5, 10**6)) + ".ingest.sentry.io/" + str(R.randint(10**6, 10**7))
keep(K, "sentry-dsn", v, "Sentry.init({ dsn: \"" + v + "\" });")
v = r(32, H)
keep(K, "algolia-search-only-key", v, "const searchClient = algoliasearch('" + r(10, U) + "', '" + v + "'); // search-only key")
v = jwt({"alg": "HS256", "typ": "JWT"}, {"iss": "supabase", "ref": r(20, L), "role": "anon", "iat": 1763512345, "exp": 2078999999})
keep(K, "supabase-anon-key", v, "NEXT_PUBLIC_SUPABASE_ANON_KEY=" + v)

PH = "placeholder"
for kind, value, text in [
    ("angle-bracket", "<YOUR_API_KEY>", "curl -H 'X-Api-Key: <YOUR_API_KEY>' https://api.fleetwise.net/v1/vehicles"),
    ("shell-var", "${DATADOG_API_KEY}", "DD_API_KEY=${DATADOG_API_KEY}"),
    ("command-substitution", "$(cat /run/secrets/db_password)", "export DB_PASSWORD=$(cat /run/secrets/db_password)"),
    ("gha-secret-ref", "${{ secrets.FASTLY_API_TOKEN }}", "    env:\n      FASTLY_API_TOKEN: ${{ secrets.FASTLY_API_TOKEN }}"),
    ("helm-template", "{{ .Values.redis.password }}", "    password: {{ .Values.redis.password }}"),
    ("python-percent", "%(db_password)s", "[database]\npassword = %(db_password)s"),
    ("replace-me", "REPLACE_WITH_YOUR_SECRET", "PAYSTACK_SECRET_KEY=REPLACE_WITH_YOUR_SECRET"),
    ("your-here", "your-secret-here", "app.config['SECRET_KEY'] = 'your-secret-here'"),
    ("prefixed-xs", "sk_live_XXXXXXXXXXXXXXXXXXXXXXXX", "PAYSTACK_SECRET_KEY=sk_live_XXXXXXXXXXXXXXXXXXXXXXXX  # fill in"),
    ("prefixed-zeros", "hcaik_0000000000000000000000000000000000000000000000000000", "HONEYCOMB_KEY=hcaik_0000000000000000000000000000000000000000000000000000"),
    ("prefixed-angle", "napi_<your-neon-key>", "NEON_API_KEY=napi_<your-neon-key> neonctl projects list"),
    ("prefixed-dots", "CCIPAT_...", "circleci setup --token CCIPAT_... --no-prompt"),
    ("asterisks", "************", "password: ************   # masked by the CI log"),
    ("redacted-word", "[REDACTED]", "Authorization: Bearer [REDACTED]"),
    ("changeit", "changeit", "keytool -list -keystore cacerts -storepass changeit"),
    ("vault-ref", "vault:secret/data/orders#password", "DB_PASSWORD=vault:secret/data/orders#password"),
    ("onepassword-ref", "op://Prod/orders-db/password", "DB_PASSWORD=op://Prod/orders-db/password"),
    ("null-value", "null", "{\"password\": null, \"user\": \"svc\"}"),
    ("todo", "TODO-set-in-prod", "SECRET_KEY=TODO-set-in-prod"),
]:
    keep(PH, kind, value, text)

E = "encrypted-or-reference"
v = "ENC[AES256_GCM,data:" + r(24, B64) + "=,iv:" + r(43, B64) + "=,tag:" + r(22, B64) + "==,type:str]"
keep(E, "sops-encrypted", v, "database:\n  password: " + v)
v = "AgB" + r(160, B64) + "=="
keep(E, "sealed-secret", v, "kind: SealedSecret\nspec:\n  encryptedData:\n    password: " + v)
v = r(64, H)
keep(E, "ansible-vault", v, "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + v + "\n  " + r(64, H))
v = "arn:aws:secretsmanager:eu-west-1:" + r(12, "0123456789") + ":secret:prod/orders/db-" + r(6)
keep(E, "secrets-manager-arn", v, "\"valueFrom\": \"" + v + "\"")
keep(E, "k8s-secret-key-ref", "secretKeyRef", "            - name: DB_PASSWORD\n              valueFrom:\n                secretKeyRef:\n                  name: orders-db\n                  key: password")

HS = "hash-or-id"
v = r(40, H)
keep(HS, "git-sha", v, "commit " + v + "\nAuthor: dev <dev@acme.io>\n\n    fix: retry on 502")
v = "sha256:" + r(64, H)
keep(HS, "image-digest", v, "image: registry.acme.io/api@" + v)
v = "sha512-" + r(86, B64) + "=="
keep(HS, "npm-integrity", v, "\"node_modules/left-pad\": {\n  \"version\": \"1.3.0\",\n  \"integrity\": \"" + v + "\"\n}")
v = "sha256:" + r(64, H)
keep(HS, "poetry-lock-hash", v, "files = [\n    {file = \"idna-3.10-py3-none-any.whl\", hash = \"" + v + "\"},\n]")
v = r(64, H)
keep(HS, "cargo-checksum", v, "[[package]]\nname = \"serde\"\nversion = \"1.0.215\"\nchecksum = \"" + v + "\"")
v = "h1:" + r(43, B64) + "="
keep(HS, "go-sum", v, "golang.org/x/net v0.31.0 " + v)
v = "sha384-" + r(64, B64)
keep(HS, "sri-hash", v, '<script src="https://cdn.acme.io/app.js" integrity="' + v + '" crossorigin="anonymous"></script>')
v = uuid4()
keep(HS, "request-uuid", v, "2026-12-05T09:40:02Z INFO request_id=" + v + " status=200 dur=41ms")
v = r(24, H)
keep(HS, "mongo-objectid", v, "{ \"_id\": ObjectId(\"" + v + "\"), \"status\": \"shipped\" }")
v = "cus_" + r(14)
keep(HS, "stripe-customer-id", v, "stripe.Customer.retrieve(\"" + v + "\")")
v = "AC" + r(32, H)
keep(HS, "twilio-account-sid", v, "TWILIO_ACCOUNT_SID=" + v)
v = "00-" + r(32, H) + "-" + r(16, H) + "-01"
keep(HS, "traceparent", v, "traceparent: " + v)
v = r(64, H)
keep(HS, "container-id", v, "$ docker ps --no-trunc -q\n" + v)
v = '"' + r(32, H) + '"'
keep(HS, "etag", v, "HTTP/1.1 304 Not Modified\nETag: " + v)
v = r(40, UH)
keep(HS, "pgp-fingerprint", v, "gpg: using RSA key " + v)
v = "C0" + r(9, U)
keep(HS, "slack-channel-id", v, "chat.postMessage channel=" + v + " ok=true")

PK = "public-key"
v = "AAAAC3NzaC1lZDI1NTE5AAAAI" + r(43, B64)
keep(PK, "ssh-ed25519-public", v, "ssh-ed25519 " + v + " deploy@ci")
v = r(43, B64) + "="
keep(PK, "wireguard-public-key", v, "[Peer]\nPublicKey = " + v + "\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.io:51820")
v = "age1" + r(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l")
keep(PK, "age-recipient", v, "sops --encrypt --age " + v + " secrets.yaml")
v = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + r(64, B64)
keep(PK, "pem-public-key", v, "-----BEGIN PUBLIC KEY-----\n" + v + "\n-----END PUBLIC KEY-----")
v = r(86, URL)
keep(PK, "jwks-modulus", v, "{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"k1\", \"use\": \"sig\", \"e\": \"AQAB\", \"n\": \"" + v + "\"}]}")

TF = "test-fixture"
for kind, value, text in [
    ("fake-token-const", "fake-github-token-for-tests", "FAKE_TOKEN = \"fake-github-token-for-tests\"\nmonkeypatch.setenv(\"GH_TOKEN\", FAKE_TOKEN)"),
    ("test-password", "test-password", "def test_login(client):\n    r = client.post('/login', json={'user': 'alice', 'password': 'test-password'})"),
    ("dummy-key", "dummy-api-key-123", "@pytest.fixture\ndef api():\n    return Client(api_key=\"dummy-api-key-123\")"),
    ("not-a-secret", "not-a-real-secret", "SECRET_KEY = 'not-a-real-secret'  # tests only"),
    ("example-password", "example-password", "mock_db = MockDB(user='test', password='example-password')"),
]:
    keep(TF, kind, value, text)

NE = "name-or-env-read"
for kind, value, text in [
    ("python-environ", 'os.environ["STRIPE_SECRET_KEY"]', 'stripe.api_key = os.environ["STRIPE_SECRET_KEY"]'),
    ("node-process-env", "process.env.DATABASE_PASSWORD", "const pool = new Pool({ password: process.env.DATABASE_PASSWORD });"),
    ("java-getenv", 'System.getenv("AWS_SECRET_ACCESS_KEY")', 'String secret = System.getenv("AWS_SECRET_ACCESS_KEY");'),
    ("ruby-env-fetch", 'ENV.fetch("SECRET_KEY_BASE")', 'config.secret_key_base = ENV.fetch("SECRET_KEY_BASE")'),
    ("go-getenv", 'os.Getenv("HCLOUD_TOKEN")', 'client := hcloud.NewClient(hcloud.WithToken(os.Getenv("HCLOUD_TOKEN")))'),
    ("powershell-env", "$env:AZURE_CLIENT_SECRET", "Connect-AzAccount -ServicePrincipal -Credential $env:AZURE_CLIENT_SECRET"),
    ("field-name", "client_secret_expires_at", '{"client_id": "app-42", "client_secret_expires_at": 0}'),
    ("setting-read", "settings.payments_api_secret", "headers = {\"X-Api-Key\": settings.payments_api_secret}"),
]:
    keep(NE, kind, value, text)


# fmt: on


# --- cases ------------------------------------------------------------------------------------


def _body(text: str, value: str) -> str:
    return text.replace("{s}", value)


def _cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Secrets and look-alikes shuffled together (seeded), five to a case."""
    rows = [(row, False) for row in SECRETS] + [(row, True) for row in LOOKALIKES]
    R.shuffle(rows)
    cases: list[dict[str, Any]] = []
    planted: list[dict[str, Any]] = []
    for n, start in enumerate(range(0, len(rows), PER_CASE), 1):
        cid = f"fresh-{n:02d}"
        trace: list[dict[str, Any]] = [
            {
                "id": "t0",
                "role": "agent",
                "kind": "message",
                "content": "I will check the service configuration, the recent changes and the logs.",
            }
        ]
        for i, ((family, kind, secret, text, written, pieces, turn), benign) in enumerate(
            rows[start : start + PER_CASE], 1
        ):
            role = "agent" if turn == "tool_call" else "tool"
            content = text if (benign or pieces) else _body(text, written or secret)
            trace.append({"id": f"t{i}", "role": role, "kind": turn, "content": content})
            row: dict[str, Any] = {
                "case": cid,
                "where": "trace",
                "secret": written or secret,
                "kind": kind,
                "family": family,
                "benign": benign,
            }
            if written:
                row["plain"] = secret
            planted.append(row)
        cases.append(
            {
                "id": cid,
                "kind": "agent_run",
                "task": f"The nightly deployment of the orders service fails; find out why and fix it (run {n}).",
                "trace": trace,
            }
        )
    return cases, planted


def _check(cases: list[dict[str, Any]], planted: list[dict[str, Any]]) -> None:
    """Fail loudly when the set would measure the wrong thing: a secret planted twice or
    absent, a piece of a secret standing anywhere but where it is planted (the bench would count
    a leak that is not one), a look-alike not in its text, a kind twice in a case, a turn or a
    case too long for the judge's evidence budget."""
    values = [row[2] for row in SECRETS]
    assert len(set(values)) == len(values), "a secret is planted twice"
    turns = [str(t["content"]) for c in cases for t in c["trace"]]
    tasks = [str(c["task"]) for c in cases]
    at = {t: i for i, t in enumerate(turns)}
    assert len(at) == len(turns) - len(cases) + 1, "two turns of the set are the same text"
    for _, kind, secret, text, written, pieces, _ in SECRETS:
        home = at[text if pieces else _body(text, written or secret)]
        own = turns[home]
        assert all(f in own for f in (pieces or (written or secret,))), kind
        mine = own
        for form in sorted({f for f in (secret, written, *pieces) if f}, key=len, reverse=True):
            mine = mine.replace(form, "\x00")
        rest = "\n".join([mine] + tasks + [t for i, t in enumerate(turns) if i != home])
        for form in (secret, written):
            for i in range(max(1, len(form) - PIECE + 1)):
                piece = form[i : i + PIECE]
                assert not piece or piece not in rest, f"{kind}: {piece!r} stands elsewhere too"
    for _, kind, value, text, *_ in LOOKALIKES:
        assert value in text, kind
    for c in cases:
        kinds = [p["kind"] for p in planted if p["case"] == c["id"]]
        assert len(kinds) == len(set(kinds)), c["id"]
        sizes = [len(str(t["content"])) for t in c["trace"]]
        assert max(sizes) <= MAX_TURN_CHARS and sum(sizes) <= MAX_CASE_CHARS, c["id"]


def _split(value: str) -> str:
    """``value`` with the join mark in its middle (removed on load)."""
    if len(value) < 8:
        return value
    mid = len(value) // 2
    return value[:mid] + JOIN + value[mid:]


def write() -> None:
    cases, planted = _cases()
    _check(cases, planted)
    forms = sorted(
        {f for _, _, s, _, w, pieces, _ in SECRETS for f in (s, w, *pieces) if f},
        key=len,
        reverse=True,
    )
    body = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    for f in forms:
        body = body.replace(json.dumps(f)[1:-1], json.dumps(_split(f), ensure_ascii=False)[1:-1])
    assert [json.loads(line.replace(JOIN, "")) for line in body.splitlines()] == cases
    (HERE / "cases.jsonl").write_text(body, "utf-8")
    (HERE / "planted.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    **p,
                    **(
                        {}
                        if p["benign"]
                        else {k: _split(str(p[k])) for k in ("secret", "plain") if k in p}
                    ),
                },
                ensure_ascii=False,
            )
            + "\n"
            for p in planted
        ),
        "utf-8",
    )
    n_secrets = sum(not p["benign"] for p in planted)
    print(f"{len(cases)} cases, {n_secrets} secrets, {len(planted) - n_secrets} look-alikes")


if __name__ == "__main__":
    write()
