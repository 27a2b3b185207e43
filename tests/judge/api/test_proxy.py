"""Behind a proxy, and with more than one replica (two services in this process on one SQLite
store; tests/judge/api/test_deploy.py does it with real processes, PostgreSQL and nginx):

- a login form served by one replica is accepted by the other (the signing secret is shared
  through the store), before and after a rotation; forms signed with a dropped secret are
  refused with a page that says to reload;
- forwarded headers are read from trusted proxies only: a client that forges them gets nothing;
  from a trusted proxy, X-Forwarded-Proto/-Host/-Port (or Forwarded) make the page's origin and
  Secure cookies right;
- a proxy that sends `Host $host` on a non-default port without X-Forwarded-Port gets an HTML
  page that names the fix, and --public-url fixes it;
- a label form replayed after logout, to another replica, and a revoked key's session are
  refused with a page that says why; nothing is stored;
- /healthz, /readyz and /favicon.ico answer without a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import judge.service
from judge.api.proxy import ProxyHeaders, parse_networks
from judge.review import items, route
from judge.store import Store
from tests.review_fixtures import (
    RunningService,
    form_token,
    make_card,
    make_case,
    make_judgment,
    page_login,
    running_service,
    seed_store,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with two cases routed to review."""
    path = tmp_path / "proxy.db"
    with Store(path) as store:
        cases = [make_case(i) for i in range(2)]
        seed_store(store, cases, [make_judgment(c.id, 0.55) for c in cases])
        assert route(store, make_card(), audit_fraction=0.0).enqueued == 2
    return path


@pytest.fixture
def pair(db: Path) -> Iterator[tuple[RunningService, RunningService]]:
    """Two replicas on one store (the second makes no keys of its own)."""
    with (
        running_service(db, rate_per_s=0) as one,
        running_service(db, keys=(), rate_per_s=0) as two,
    ):
        two.keys.update(one.keys)
        yield one, two


def _post_login(http: httpx.Client, to: str, key: str, token: str, origin: str) -> Any:
    return http.post(
        to + "/login",
        data={"key": key, "next": "/review", "csrf_token": token},
        headers={"origin": origin},
    )


def test_a_login_form_served_by_one_replica_is_accepted_by_the_other(
    pair: tuple[RunningService, RunningService],
) -> None:
    one, two = pair
    key = one.keys["ann"]
    with httpx.Client(follow_redirects=False, timeout=60) as http:
        for serve, post in ((one, two), (two, one), (one, two)):
            http.cookies.clear()
            token = form_token(http.get(serve.url + "/login").text)
            # The nonce cookie is scoped to /login on 127.0.0.1: it goes to both ports.
            r = _post_login(http, post.url, key, token, post.url)
            assert r.status_code == 303, r.text
            assert "judge_session" in r.cookies
        # A rotation between the form and its post logs nobody out...
        http.cookies.clear()
        token = form_token(http.get(one.url + "/login").text)
        with Store(one.db) as store:
            judge.service.rotate_secret(store)
        assert _post_login(http, two.url, key, token, two.url).status_code == 303
        # ...but after a rotation that drops the old secrets (a leak), a form served before is
        # refused with the login page, which says to reload; no session.
        http.cookies.clear()
        token = form_token(http.get(one.url + "/login").text)
        with Store(one.db) as store:
            judge.service.rotate_secret(store, drop_old=True)
        r = _post_login(http, two.url, key, token, two.url)
        assert r.status_code == 403 and "judge_session" not in r.cookies
        assert r.headers["content-type"].startswith("text/html")
        assert "expired" in r.text and "reload" in r.text
        # A post without the login page's cookie says what that means.
        http.cookies.clear()
        r = _post_login(http, two.url, key, token, two.url)
        assert r.status_code == 403 and "cookie" in r.text


def test_forwarded_headers_only_from_trusted_proxies(db: Path) -> None:
    forged = {
        "x-forwarded-proto": "https",
        "x-forwarded-host": "judge.example.org",
        "x-forwarded-for": "203.0.113.9",
    }
    # Not trusted (the proxy is elsewhere): forged headers change nothing.
    with (
        running_service(db, rate_per_s=0, trusted_proxies=("10.9.9.0/24",)) as svc,
        httpx.Client(base_url=svc.url, follow_redirects=False, timeout=60) as http,
    ):
        token = form_token(http.get("/login", headers=forged).text)
        r = http.post(
            "/login",
            data={"key": svc.keys["ann"], "csrf_token": token},
            headers={**forged, "origin": "https://judge.example.org"},
        )
        assert r.status_code == 403 and "judge_session" not in r.cookies
        assert r.headers["content-type"].startswith("text/html")
        assert "posted from another site (https://judge.example.org)" in r.text
        assert f"own address is {svc.url}" in r.text, r.text
        # The login nonce cookie is not Secure: the request was plain http.
        assert "secure" not in http.get("/login", headers=forged).headers["set-cookie"].lower()
    # Trusted (127.0.0.1 is the proxy): the browser's scheme and host are believed.
    with (
        running_service(db, keys=(), rate_per_s=0, trusted_proxies=("127.0.0.1",)) as svc,
        httpx.Client(base_url=svc.url, follow_redirects=False, timeout=60) as http,
    ):
        with Store(db) as store:
            key = judge.service.create_key(store, "zed", "reviewer")[1]
        form = http.get("/login", headers=forged)
        assert "secure" in form.headers["set-cookie"].lower()  # https at the browser
        nonce = form.cookies["judge_login"]
        r = http.post(
            "/login",
            data={"key": key, "csrf_token": form_token(form.text)},
            headers={
                **forged,
                "origin": "https://judge.example.org",
                "cookie": f"judge_login={nonce}",
            },
        )
        assert r.status_code == 303, r.text
        assert "secure" in r.headers["set-cookie"].lower()
        # The standard Forwarded header works the same way.
        form = http.get("/login")
        r = http.post(
            "/login",
            data={"key": key, "csrf_token": form_token(form.text)},
            headers={
                "forwarded": 'for="[2001:db8::1]:4711";proto=https;host=judge.example.org',
                "origin": "https://judge.example.org",
                "cookie": f"judge_login={form.cookies['judge_login']}",
            },
        )
        assert r.status_code == 303, r.text


def test_host_without_its_port_gets_a_page_that_names_the_fix(db: Path) -> None:
    # nginx's `proxy_set_header Host $host` on port 8080: the port is dropped.
    browser_origin = "http://judge.internal:8080"
    headers = {"host": "judge.internal", "x-forwarded-proto": "http"}
    with (
        running_service(db, rate_per_s=0, trusted_proxies=("127.0.0.1",)) as svc,
        httpx.Client(base_url=svc.url, follow_redirects=False, timeout=60) as http,
    ):
        form = http.get("/login", headers=headers)
        data = {"key": svc.keys["ann"], "csrf_token": form_token(form.text)}
        r = http.post("/login", data=data, headers={**headers, "origin": browser_origin})
        assert r.status_code == 403 and r.headers["content-type"].startswith("text/html")
        text = r.text.replace("&#39;", "'")
        for words in (
            "posted from another site (http://judge.internal:8080)",
            "own address is http://judge.internal",
            "proxy_set_header Host $http_host",
            "X-Forwarded-Port",
            "--trusted-proxy",
            "--public-url http://judge.internal:8080",
            "Nothing was saved",
        ):
            assert words in text, words
        # With X-Forwarded-Port from the trusted proxy the port is put back: accepted.
        r = http.post(
            "/login",
            data=data,
            headers={**headers, "x-forwarded-port": "8080", "origin": browser_origin},
        )
        assert r.status_code == 303, r.text
    # --public-url: accepted whatever Host the proxy sends.
    with (
        running_service(db, keys=(), rate_per_s=0, public_url=browser_origin) as svc,
        httpx.Client(base_url=svc.url, follow_redirects=False, timeout=60) as http,
    ):
        form = http.get("/login", headers=headers)
        r = http.post(
            "/login",
            data={**data, "csrf_token": form_token(form.text)},
            headers={**headers, "origin": browser_origin + "/"},
        )
        assert r.status_code == 303, r.text


def test_a_form_replayed_after_logout_or_a_revoked_keys_session_is_refused_with_a_page(
    pair: tuple[RunningService, RunningService],
) -> None:
    one, two = pair
    with Store(one.db) as store:
        item_id = items(store, status="open")[0].id
    label = f"/review/items/{item_id}/label"
    with httpx.Client(follow_redirects=False, timeout=60) as ann:
        ann.base_url = httpx.URL(one.url)
        assert page_login(ann, one.keys["ann"]).status_code == 303
        token = form_token(ann.get(f"/review/items/{item_id}").text)
        queue = ann.get("/review").text
        cookie = ann.cookies["judge_session"]
        r = ann.post("/logout", data={"csrf_token": form_token(queue)}, headers={"origin": one.url})
        assert r.status_code == 303
        # The label form, replayed with the old session cookie to the other replica.
        r = httpx.post(
            two.url + label,
            data={"label": "pass", "csrf_token": token},
            headers={"origin": two.url, "cookie": f"judge_session={cookie}"},
            timeout=60,
        )
        assert r.status_code == 401 and r.headers["content-type"].startswith("text/html")
        assert "You are signed out" in r.text and "nothing was saved" in r.text
        # A GET with it goes to the login page, which says why.
        r = httpx.get(
            two.url + "/review", headers={"cookie": f"judge_session={cookie}"}, timeout=60
        )
        assert r.status_code == 303 and r.headers["location"].endswith("why=signed_out")
        assert "You are signed out" in httpx.get(two.url + r.headers["location"]).text
    with httpx.Client(base_url=two.url, follow_redirects=False, timeout=60) as bob:
        assert page_login(bob, two.keys["bob"]).status_code == 303
        token = form_token(bob.get(f"/review/items/{item_id}").text)
        with Store(one.db) as store:
            assert judge.service.revoke_key(store, "bob")
        r = bob.post(
            label, data={"label": "fail", "csrf_token": token}, headers={"origin": two.url}
        )
        assert r.status_code == 401 and "was revoked" in r.text
        r = bob.get("/review")
        assert r.status_code == 303 and r.headers["location"].endswith("why=revoked")
        assert "Ask an admin for a new key" in bob.get(r.headers["location"]).text
    with Store(one.db) as store:
        assert store.review_labels(item_id=item_id) == []  # nothing was stored


def test_health_checks_and_the_icon_need_no_key(db: Path) -> None:
    with (
        running_service(db, rate_per_s=0) as svc,
        httpx.Client(base_url=svc.url, timeout=60) as http,
    ):
        assert http.get("/healthz").json()["status"] == "ok"
        assert http.get("/readyz").json()["status"] == "ready"
        icon = http.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == (
            "image/vnd.microsoft.icon"
        )
        assert icon.content[:4] == b"\x00\x00\x01\x00" and b"PNG" in icon.content[:40]
        assert http.get("/v1/whoami").status_code == 401  # the rest still needs a key


async def _run(trusted: str, headers: list[tuple[bytes, bytes]], peer: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)

    proxy = ProxyHeaders(app, trusted=parse_networks([trusted]))
    scope = {
        "type": "http",
        "scheme": "http",
        "client": (peer, 5000),
        "headers": [(b"host", b"10.0.0.11:8321"), *headers],
    }
    await proxy(scope, None, None)  # type: ignore[arg-type]
    return seen


def test_the_client_address_is_the_first_untrusted_hop_from_the_right() -> None:
    xff = [(b"x-forwarded-for", b"198.51.100.7, 203.0.113.9, 10.0.0.3")]
    seen = asyncio.run(_run("10.0.0.0/8", xff, "10.0.0.5"))
    assert seen["client"] == ("203.0.113.9", 0)  # 198.51.100.7 was written by the client
    assert dict(seen["headers"])[b"host"] == b"10.0.0.11:8321"
    assert b"x-forwarded-for" not in dict(seen["headers"])  # read, then dropped
    seen = asyncio.run(_run("10.0.0.0/8", xff, "192.0.2.1"))  # from an untrusted peer
    assert seen["client"] == ("192.0.2.1", 5000)
    assert b"x-forwarded-for" not in dict(seen["headers"])
    with pytest.raises(ValueError, match="not an IP address"):
        parse_networks(["judge.example.org"])
