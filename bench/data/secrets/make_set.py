# ruff: noqa: E501 -- the texts are fixtures: realistic lines, kept whole so that they read as such
"""Write the held-out secrets set of issue 36 (``cases.jsonl`` and ``planted.jsonl`` beside this
file): real-shaped secrets of many services and configuration formats, split or wrapped values,
and look-alikes that must reach the judge unchanged.

    python bench/data/secrets/make_set.py

Written before the rules of issue 36 were changed (see README.md). Every value is fake: drawn
from a seeded random generator in the shape (prefix, alphabet, length) of the real thing, or a
documented example / placeholder for the look-alikes. In the files every value is split by
``«»`` (removed on load) so that secret scanners do not take them for leaks.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOIN = "\u00ab\u00bb"
R = random.Random(36)
A = string.ascii_letters + string.digits
U = string.ascii_uppercase + string.digits
L = string.ascii_lowercase + string.digits
H = "0123456789abcdef"
B64 = A + "+/"


def r(n: int, alphabet: str = A) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def pw() -> str:
    """A human-chosen looking password: words, digits and a symbol (low entropy, real)."""
    words = ["Summer", "harbor", "Tango", "violet", "Maple", "rocket", "Falcon", "copper"]
    return (
        R.choice(words) + R.choice(words).lower() + str(R.randint(10, 9999)) + R.choice("!#%&*@$")
    )


# (family, kind, secret, text holding it as "{s}") -- one trace observation each
SECRETS: list[tuple[str, str, str, str, str]] = []


def add(family: str, kind: str, secret: str, text: str, written: str = "") -> None:
    """A planted secret; ``written`` is its form in the text when it is encoded."""
    SECRETS.append((family, kind, secret, text, written))


# --- provider tokens, many services ---------------------------------------------------------
P = "provider-token"
add(P, "aws-access-key-id", "AKIA" + r(16, U), "aws_access_key_id = {s}")
add(P, "aws-secret-access-key", r(40, B64), "aws_secret_access_key = {s}")
add(P, "github-classic-pat", "ghp_" + r(36), "export GH_TOKEN={s}")
add(
    P,
    "github-fine-grained-pat",
    "github_pat_" + r(22) + "_" + r(59),
    "git remote set-url origin https://{s}@github.com/acme/api.git",
)
add(
    P,
    "gitlab-pat",
    "glpat-" + r(20, A + "-_"),
    "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.example.org/api/v4/projects",
)
add(
    P,
    "slack-bot-token",
    "xoxb-" + r(11, "0123456789") + "-" + r(13, "0123456789") + "-" + r(24),
    "SLACK_BOT_TOKEN={s} python bot.py",
)
add(P, "stripe-secret-key", "sk_live_" + r(99), 'stripe.api_key = "{s}"')
add(P, "openai-project-key", "sk-proj-" + r(156, A + "-_"), 'client = OpenAI(api_key="{s}")')
add(P, "anthropic-key", "sk-ant-api03-" + r(93, A + "-_") + "AA", "ANTHROPIC_API_KEY={s}")
add(
    P,
    "sendgrid-key",
    "SG." + r(22, A + "-_") + "." + r(43, A + "-_"),
    "sg = SendGridAPIClient('{s}')",
)
add(P, "npm-token", "npm_" + r(36), "//registry.npmjs.org/:_authToken={s}")
add(
    P,
    "pypi-token",
    "pypi-AgEIcHlwaS5vcmc" + r(70, A + "-_"),
    "twine upload -u __token__ -p {s} dist/*",
)
add(
    P, "huggingface-token", "hf_" + r(34, string.ascii_letters), "huggingface-cli login --token {s}"
)
add(P, "shopify-access-token", "shpat_" + r(32, H), "X-Shopify-Access-Token: {s}")
add(P, "digitalocean-token", "dop_v1_" + r(64, H), "doctl auth init --access-token {s}")
add(
    P,
    "telegram-bot-token",
    str(R.randint(10**9, 9 * 10**9)) + ":AA" + r(33, A + "-_"),
    "requests.get(f'https://api.telegram.org/bot{s}/getUpdates')",
)
add(
    P,
    "discord-bot-token",
    "M" + r(23) + "." + r(6, A + "-_") + "." + r(38, A + "-_"),
    "client.run('{s}')",
)
add(P, "mailgun-key", "key-" + r(32, H), "MAILGUN_API_KEY: {s}")
add(
    P,
    "mailchimp-key",
    r(32, H) + "-us14",
    "mailchimp.set_config({{'api_key': '{s}', 'server': 'us14'}})",
)
add(P, "atlassian-token", "ATATT3xFfGF0" + r(170, A + "-_="), "JIRA_API_TOKEN={s}")
add(P, "linear-key", "lin_api_" + r(40), "LINEAR_API_KEY={s}")
add(P, "postman-key", "PMAK-" + r(24, H) + "-" + r(34, H), "postman collection run --api-key {s}")
add(P, "doppler-token", "dp.st.prd." + r(43), "DOPPLER_TOKEN={s} doppler run -- ./serve")
add(P, "vault-token", "hvs." + r(24), "VAULT_TOKEN={s} vault kv get secret/app")
add(P, "databricks-token", "dapi" + r(32, H), "databricks configure --token <<< {s}")
add(
    P,
    "square-token",
    "EAAA" + r(60, A + "-_"),
    "client = Client(access_token='{s}', environment='production')",
)
add(
    P,
    "age-secret-key",
    "AGE-SECRET-KEY-1" + r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "# created: 2026-11-02\n# public key: age1"
    + r(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l")
    + "\n{s}",
)
add(
    P,
    "sentry-auth-token",
    "sntrys_" + r(120, A + "_="),
    "SENTRY_AUTH_TOKEN={s} sentry-cli releases new 1.4.2",
)
add(
    P,
    "grafana-service-account",
    "glsa_" + r(32) + "_" + r(8, H),
    "Authorization header for grafana: token {s}",
)
add(P, "newrelic-user-key", "NRAK-" + r(27, U), "NEW_RELIC_API_KEY={s}")
add(P, "flyio-token", "fo1_" + r(43, A + "-_"), "fly deploy --access-token {s}")
add(P, "supabase-token", "sbp_" + r(40, H), "supabase login --token {s}")
add(P, "notion-token", "ntn_" + r(46), 'notion = Client(auth="{s}")')
add(P, "airtable-pat", "pat" + r(14) + "." + r(64, H), "AIRTABLE_TOKEN={s}")
add(P, "pulumi-token", "pul-" + r(40, H), "PULUMI_ACCESS_TOKEN={s} pulumi up")
add(
    P,
    "terraform-cloud-token",
    r(14) + ".atlasv1." + r(67),
    'credentials "app.terraform.io" {{\n  token = "{s}"\n}}',
)
add(P, "netlify-token", "nfp_" + r(36), "netlify deploy --auth {s}")
add(P, "replicate-token", "r8_" + r(37), "REPLICATE_API_TOKEN={s}")
add(P, "groq-key", "gsk_" + r(52), "GROQ_API_KEY={s}")
add(P, "perplexity-key", "pplx-" + r(48), "PERPLEXITY_API_KEY={s}")
add(P, "resend-key", "re_" + r(8) + "_" + r(24), 'resend.api_key = "{s}"')
add(P, "figma-token", "figd_" + r(40, A + "-_"), "FIGMA_TOKEN={s}")
add(P, "alibaba-access-key", "LTAI" + r(20), "aliyun configure set --access-key-id {s}")
add(P, "sonarqube-token", "squ_" + r(40, H), "mvn sonar:sonar -Dsonar.token={s}")
add(P, "buildkite-token", "bkua_" + r(40, H), "BUILDKITE_API_TOKEN={s}")
add(P, "contentful-token", "CFPAT-" + r(43, A + "-_"), "contentful login --management-token {s}")
add(
    P,
    "mapbox-secret-token",
    "sk.eyJ1Ijoi" + r(50) + "." + r(22, A + "-_"),
    "MAPBOX_ACCESS_TOKEN={s}",
)
add(P, "planetscale-password", "pscale_pw_" + r(43, A + "-_"), "DATABASE_PASSWORD={s}")
add(P, "dynatrace-token", "dt0c01." + r(24, U) + "." + r(64, U), "Api-Token {s}")
add(P, "twilio-auth-token", r(32, H), "client = Client('AC" + r(32, H) + "', '{s}')")
add(P, "azure-openai-key", r(32, H), "AZURE_OPENAI_API_KEY={s}")
add(P, "cloudflare-api-token", r(40, A + "-_"), "export CLOUDFLARE_API_TOKEN={s}")
add(P, "cohere-key", r(40), 'co = cohere.Client("{s}")')
add(P, "algolia-admin-key", r(32, H), "client = SearchClient.create('" + r(10, U) + "', '{s}')")
add(P, "google-server-api-key", "AIza" + r(35, A + "-_"), "GOOGLE_MAPS_SERVER_KEY={s}")

# --- passwords in configuration formats -----------------------------------------------------
C = "config-password"
add(
    C,
    "yaml-password",
    pw(),
    "database:\n  host: db.internal\n  user: app\n  password: {s}\n  pool: 10",
)
add(
    C,
    "yaml-quoted-password",
    pw(),
    'spring:\n  datasource:\n    username: svc_orders\n    password: "{s}"',
)
add(C, "toml-password", pw(), '[database]\nuser = "app"\npassword = "{s}"\nport = 5432')
add(C, "ini-password", pw(), "[client]\nuser=backup\npassword={s}\nhost=10.0.4.7")
add(C, "env-password", pw(), "DB_HOST=db\nDB_USER=app\nDB_PASS={s}\nDB_NAME=orders")
add(C, "env-secret-quoted", r(18), "SMTP_PASSWORD='{s}'")
add(C, "json-password", pw(), '{{"db": {{"user": "app", "password": "{s}", "port": 5432}}}}')
add(C, "json-camel-secret", r(24), '{{"clientId": "web-portal", "clientSecret": "{s}"}}')
add(
    C,
    "xml-element-password",
    pw(),
    "<datasource>\n  <username>app</username>\n  <password>{s}</password>\n</datasource>",
)
add(
    C,
    "xml-attribute-password",
    pw(),
    '<add name="Smtp" user="mailer" password="{s}" host="smtp.example.org" />',
)
add(
    C,
    "maven-settings-password",
    pw(),
    "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{s}</password>\n</server>",
)
add(
    C,
    "properties-password",
    pw(),
    "spring.datasource.url=jdbc:postgresql://db:5432/orders\nspring.datasource.password={s}",
)
add(C, "properties-colon", pw(), "mail.smtp.user: alerts\nmail.smtp.password: {s}")
add(C, "postgres-url", pw(), "DATABASE_URL=postgresql://orders:{s}@db.internal:5432/orders")
add(C, "mongodb-srv-url", r(16), 'mongo "mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/test"')
add(C, "redis-url-empty-user", r(20), "REDIS_URL=redis://:{s}@cache:6379/0")
add(C, "amqp-url", pw(), "broker_url = 'amqp://celery:{s}@rabbit:5672//'")
add(C, "jdbc-query-password", pw(), "jdbc:mysql://db:3306/shop?user=shop&password={s}&useSSL=true")
add(
    C,
    "adonet-pwd",
    pw(),
    "Server=tcp:sql.example.net,1433;Database=crm;User ID=crm;Pwd={s};Encrypt=True;",
)
add(C, "go-mysql-dsn", pw(), 'dsn := "shop:{s}@tcp(127.0.0.1:3306)/shop?parseTime=true"')
add(C, "pgpass-line", pw(), "$ cat ~/.pgpass\ndb.internal:5432:orders:orders:{s}")
add(
    C,
    "docker-compose-env",
    pw(),
    "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {s}\n      POSTGRES_USER: app",
)
add(
    C,
    "docker-compose-list-env",
    pw(),
    "    environment:\n      - MYSQL_ROOT_PASSWORD={s}\n      - MYSQL_DATABASE=shop",
)
add(
    C,
    "terraform-password",
    pw(),
    'resource "aws_db_instance" "main" {{\n  username = "admin"\n  password = "{s}"\n}}',
)
add(C, "php-define", pw(), "define('DB_PASSWORD', '{s}');")
add(
    C,
    "django-databases",
    pw(),
    "DATABASES = {{'default': {{'ENGINE': 'django.db.backends.postgresql', 'USER': 'web', 'PASSWORD': '{s}'}}}}",
)
add(C, "python-kwarg", pw(), "conn = psycopg2.connect(host='db', user='etl', password='{s}')")
add(C, "java-setter", pw(), 'dataSource.setPassword("{s}");')
add(C, "js-object", pw(), "const pool = new Pool({{ user: 'api', password: '{s}', host: 'db' }});")
add(
    C,
    "rails-database-yml",
    pw(),
    "production:\n  adapter: postgresql\n  username: rails\n  password: <%= ENV.fetch('X', '{s}') %>",
)
add(C, "helm-values", r(22), "auth:\n  rootPassword: {s}\n  replicationPassword: changeme")
add(C, "ansible-vars", pw(), "ansible_become_password: {s}")
add(
    C,
    "nginx-proxy-auth",
    pw(),
    "wget --user=ci --password={s} https://artifacts.example.org/build.zip",
)
add(
    C,
    "pip-index-url",
    r(24),
    "pip install --index-url https://deploy:{s}@pypi.example.org/simple acme-core",
)
add(C, "git-credentials", "ghp_" + r(36), "$ cat ~/.git-credentials\nhttps://ci-bot:{s}@github.com")
add(C, "htpasswd-plain-in-yaml", pw(), "basic_auth:\n  username: admin\n  passwd: {s}")
add(C, "passphrase-key", pw(), "keystore.passphrase={s}")
add(
    C,
    "secret-key-django",
    "django-insecure-" + r(50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"),
    "SECRET_KEY = '{s}'",
)
add(C, "api-key-yaml-nested", r(32), "providers:\n  weather:\n    api_key: {s}\n    timeout: 5")
add(C, "token-ini", r(40, H), "[auth]\ntoken = {s}")
add(
    C,
    "xml-connection-string",
    pw(),
    '<connectionStrings><add name="db" connectionString="Data Source=sql;Initial Catalog=crm;User Id=crm;Password={s};" /></connectionStrings>',
)

# --- split or wrapped values ----------------------------------------------------------------
S = "split-or-wrapped"
t = "ghp_" + r(36)
add(S, "python-concat", t, 'token = "' + t[:20] + '" + "' + t[20:] + '"')
t = "sk-proj-" + r(60, A + "-_")
add(S, "python-implicit-concat", t, 'OPENAI_KEY = (\n    "' + t[:34] + '"\n    "' + t[34:] + '"\n)')
t = "AKIA" + r(16, U)
add(S, "js-concat", t, "const id = '" + t[:10] + "' + '" + t[10:] + "';")
t = "xoxb-" + r(11, "0123456789") + "-" + r(13, "0123456789") + "-" + r(24)
add(
    S,
    "shell-continuation",
    t,
    'curl -H "Authorization: Bearer '
    + t[:30]
    + "\\\n"
    + t[30:]
    + '" https://slack.com/api/auth.test',
)
t = "glpat-" + r(20, A + "-_")
w = base64.b64encode(("GITLAB_TOKEN=" + t).encode()).decode()
add(S, "base64-wrapped-token", t, "echo " + w + " | base64 -d", w)
t = pw()
w = base64.b64encode(t.encode()).decode()
add(
    S,
    "k8s-secret-base64-password",
    t,
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: " + w,
    w,
)
t = "sk_live_" + r(40)
add(S, "yaml-folded", t, "stripe:\n  key: >-\n    " + t[:24] + "\n    " + t[24:])
t = "hf_" + r(34, string.ascii_letters)
add(
    S,
    "json-escaped-in-tool-call",
    t,
    '{{"name": "bash", "arguments": "{{\\"cmd\\": \\"export HF_TOKEN=' + t + '\\"}}"}}',
)
t = r(20) + "!"
add(
    S,
    "url-encoded-password",
    t,
    "DATABASE_URL=postgres://app:" + t.replace("!", "%21") + "@db:5432/app",
    t.replace("!", "%21"),
)
t = "AKIA" + r(16, U)
add(S, "wrapped-at-column", t, "# key: " + t[:12] + "\n# " + t[12:])
t = "npm_" + r(36)
add(S, "go-concat", t, 'token := "' + t[:18] + '" +\n\t"' + t[18:] + '"')
t = r(40, B64)
w = base64.b64encode(("admin:" + t).encode()).decode()
add(S, "basic-auth-base64", t, "Authorization: Basic " + w, w)

# --- look-alikes: must reach the judge unchanged ---------------------------------------------
LOOKALIKES: list[tuple[str, str, str, str]] = []


def keep(family: str, kind: str, value: str, text: str) -> None:
    LOOKALIKES.append((family, kind, value, text))


D = "documented-example"
keep(D, "aws-example-key-id", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = {s}")
keep(
    D,
    "aws-example-secret",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws_secret_access_key = {s}",
)
keep(D, "aws-example-session-id", "ASIAIOSFODNN7EXAMPLE", '"AccessKeyId": "{s}",')
keep(
    D,
    "jwt-io-example",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "# from the jwt.io docs: {s}",
)
keep(
    D,
    "recaptcha-test-site-key",
    "6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI",
    "RECAPTCHA_SITE_KEY={s}",
)
keep(D, "stripe-docs-test-pk", "pk_test_TYooMQauvdEDq54NiTphI7jx", "Stripe('{s}')")
PK = "publishable-or-site-key"
keep(PK, "stripe-publishable-live", "pk_live_" + r(99), "const stripe = Stripe('{s}');")
keep(PK, "stripe-publishable-test", "pk_test_" + r(99), "NEXT_PUBLIC_STRIPE_KEY={s}")
keep(
    PK,
    "recaptcha-site-key",
    "6Lc" + r(37, A + "-_"),
    '<div class="g-recaptcha" data-sitekey="{s}"></div>',
)
keep(
    PK,
    "firebase-web-api-key",
    "AIza" + r(35, A + "-_"),
    'const firebaseConfig = {{\n  apiKey: "{s}",\n  authDomain: "acme-app.firebaseapp.com",\n  projectId: "acme-app",\n}};',
)
keep(
    PK,
    "mapbox-public-token",
    "pk.eyJ1Ijoi" + r(50) + "." + r(22, A + "-_"),
    "mapboxgl.accessToken = '{s}';",
)
keep(
    PK,
    "google-oauth-client-id",
    str(R.randint(10**11, 9 * 10**11)) + "-" + r(32, L) + ".apps.googleusercontent.com",
    "GOOGLE_CLIENT_ID={s}",
)
keep(
    PK,
    "sentry-public-dsn",
    "https://"
    + r(32, H)
    + "@o"
    + str(R.randint(10**5, 9 * 10**5))
    + ".ingest.sentry.io/"
    + str(R.randint(10**6, 9 * 10**6)),
    'Sentry.init({{ dsn: "{s}" }});',
)
PH = "placeholder"
keep(PH, "openai-placeholder", "sk-...your-key-here", "OPENAI_API_KEY=sk-...your-key-here")
keep(PH, "your-key-here", "your-key-here", "api_key: your-key-here")
keep(PH, "xxx-token", "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "GITHUB_TOKEN={s}")
keep(PH, "xxx-sk", "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 'openai.api_key = "{s}"')
keep(
    PH, "angle-token", "<TOKEN>", "curl -H 'Authorization: Bearer <TOKEN>' https://api.example.com"
)
keep(PH, "angle-password", "<your-password>", "password: <your-password>")
keep(PH, "env-ref", "${DB_PASSWORD}", "password: ${DB_PASSWORD}")
keep(
    PH,
    "github-actions-ref",
    "${{ secrets.NPM_TOKEN }}",
    "NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
)
keep(PH, "jinja-ref", "{{ vault_db_password }}", 'db_password: "{{ vault_db_password }}"')
keep(PH, "changeme", "changeme", "ADMIN_PASSWORD=changeme")
keep(PH, "replace-me", "REPLACE_ME", "SECRET_KEY=REPLACE_ME")
keep(PH, "your-api-key", "YOUR_API_KEY", 'client = Client(api_key="YOUR_API_KEY")')
keep(PH, "stars-masked", "********", "password: ********")
keep(
    PH,
    "dummy-test-password",
    "password",
    "user = User.objects.create_user('alice', password='password')",
)
keep(PH, "fake-secret-key", "fake-key", "SECRET_KEY = 'fake-key'")
keep(PH, "test-secret", "test-secret", "JWT_SECRET=test-secret")
keep(
    PH,
    "example-connection",
    "postgres://user:password@localhost:5432/mydb",
    "DATABASE_URL=postgres://user:password@localhost:5432/mydb",
)
keep(PH, "slack-placeholder", "xoxb-your-bot-token", "SLACK_BOT_TOKEN=xoxb-your-bot-token")
keep(PH, "env-read", 'os.environ["DB_PASSWORD"]', 'password = os.environ["DB_PASSWORD"]')
keep(PH, "getpass-call", "getpass.getpass()", "password = getpass.getpass()")
keep(PH, "null-password", "null", '{{"user": "app", "password": {s}}}')
keep(PH, "password-policy", "PASSWORD_MIN_LENGTH = 12", "PASSWORD_MIN_LENGTH = 12")
keep(
    PH,
    "secret-name-ref",
    "db-credentials",
    "secretKeyRef:\n  name: db-credentials\n  key: password",
)
HS = "hash-or-id"
keep(HS, "git-sha", r(40, H), "HEAD is now at {s}")
keep(HS, "git-sha-short-diff", r(10, H) + ".." + r(10, H), "index {s} 100644")
keep(HS, "sha256-digest", "sha256:" + r(64, H), "image: registry.example.org/api@{s}")
keep(HS, "pip-hash", "--hash=sha256:" + r(64, H), "requests==2.32.3 {s}")
keep(HS, "npm-integrity", "sha512-" + r(86, B64) + "==", '"integrity": "{s}"')
keep(HS, "go-sum", "h1:" + r(43, B64) + "=", "golang.org/x/text v0.14.0 {s}")
keep(HS, "uuid", f"{r(8, H)}-{r(4, H)}-4{r(3, H)}-a{r(3, H)}-{r(12, H)}", "request_id={s}")
keep(
    HS, "uuid-under-key", f"{r(8, H)}-{r(4, H)}-4{r(3, H)}-b{r(3, H)}-{r(12, H)}", "tenant_id: {s}"
)
keep(HS, "md5", r(32, H), "md5sum: {s}  dist/app.tar.gz")
keep(HS, "stripe-customer-id", "cus_" + r(14), "customer = stripe.Customer.retrieve('{s}')")
keep(HS, "twilio-message-sid", "SM" + r(32, H), "message.sid == '{s}'")
keep(HS, "aws-arn", "arn:aws:iam::" + r(12, "0123456789") + ":role/deployer", "assumed role {s}")
keep(HS, "etag", '"' + r(32, H) + '"', "ETag: {s}")
keep(HS, "pytest-node-id", "tests/test_auth.py::test_token_refresh[expired-token]", "FAILED {s}")
keep(HS, "css-hash", "Button_primary__" + r(5), 'class="{s}"')
keep(HS, "ssh-public-key", "AAAAC3NzaC1lZDI1NTE5AAAAI" + r(43, B64), "ssh-ed25519 {s} ci@build")
keep(
    HS,
    "base64-png",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    '<img src="data:image/png;base64,{s}">',
)
keep(
    HS,
    "password-hash-field",
    "password_hash",
    "SELECT id, password_hash FROM users WHERE email = %s",
)
keep(HS, "token-var-name", "refresh_token_expires_in", '"refresh_token_expires_in": 3600')


def _cases() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    cases: list[dict[str, object]] = []
    planted: list[dict[str, object]] = []
    rows = [(f, k, s, t, w, False) for f, k, s, t, w in SECRETS] + [
        (f, k, s, t, "", True) for f, k, s, t in LOOKALIKES
    ]
    by_family: dict[tuple[str, bool], list[tuple[str, str, str, str, str, bool]]] = {}
    for entry in rows:
        by_family.setdefault((entry[0], entry[5]), []).append(entry)
    for (family, benign), members in by_family.items():
        for start in range(0, len(members), 6):
            chunk = members[start : start + 6]
            cid = f"i36-{family}-{start // 6 + 1:02d}"
            trace = [
                {
                    "id": "t0",
                    "role": "agent",
                    "content": "Let me look at the configuration and the logs.",
                }
            ]
            for i, (_, kind, secret, text, written, _b) in enumerate(chunk, 1):
                body = text
                if "{s}" in text:
                    body = text.replace("{{", "{").replace("}}", "}").replace("{s}", secret)
                trace.append({"id": f"t{i}", "role": "observation", "content": body})
                row: dict[str, object] = {
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
                    "task": f"Fix the failing deployment of the service ({family}, part {start // 6 + 1}).",
                    "trace": trace,
                }
            )
    return cases, planted


def _split(value: str) -> str:
    """``value`` with the join mark in its middle (removed on load)."""
    if len(value) < 8:
        return value
    mid = len(value) // 2
    return value[:mid] + JOIN + value[mid:]


def write() -> None:
    cases, planted = _cases()
    lines = []
    for c in cases:
        text = json.dumps(c, ensure_ascii=False)
        lines.append(text)
    secrets = sorted(
        {str(p[k]) for p in planted if not p["benign"] for k in ("secret", "plain") if k in p},
        key=len,
        reverse=True,
    )
    body = "\n".join(lines) + "\n"
    for s in secrets:
        body = body.replace(json.dumps(s)[1:-1], json.dumps(_split(s), ensure_ascii=False)[1:-1])
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
    print(
        f"{len(cases)} cases, {sum(not p['benign'] for p in planted)} secrets, {sum(bool(p['benign']) for p in planted)} look-alikes"
    )


if __name__ == "__main__":
    write()
