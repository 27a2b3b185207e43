"""Forged requests and headers against the real service (uvicorn on 127.0.0.1): the findings of
issue 16. The login form and the label form accepted a post from a foreign Origin, with no
CSRF token (SameSite=strict on the cookie was the only defence); pages sent no
Content-Security-Policy, X-Content-Type-Options, X-Frame-Options, Referrer-Policy or
Cache-Control, and the API no X-Content-Type-Options.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge.review import items, route
from judge.store import Store
from tests.conftest import REPO
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

TEMPLATES = REPO / "judge" / "api" / "templates"
EVIL = "https://evil.example"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RunningService]:
    """Two cases routed to review, served."""
    db = tmp_path / "forgery.db"
    with Store(db) as store:
        cases = [make_case(i) for i in range(2)]
        seed_store(store, cases, [make_judgment(c.id, 0.55) for c in cases])
        assert route(store, make_card(), audit_fraction=0.0).enqueued == 2
    with running_service(db, rate_per_s=0) as svc:
        yield svc


def _login_form(http: httpx.Client) -> str:
    """Fetch the login form (its nonce cookie lands in ``http``); return its token."""
    return form_token(http.get("/login").text)


def test_login_refuses_a_foreign_origin_and_a_missing_or_forged_token(
    service: RunningService,
) -> None:
    key = service.keys["ann"]
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as http:
        token = _login_form(http)
        attempts = {
            # A valid key and a valid token, posted from another site.
            "foreign origin": ({"origin": EVIL}, {"csrf_token": token}),
            "foreign referer": ({"referer": EVIL + "/page"}, {"csrf_token": token}),
            "null origin": ({"origin": "null"}, {"csrf_token": token}),
            "no origin or referer": ({}, {"csrf_token": token}),
            "no token": ({"origin": service.url}, {}),
            "forged token": ({"origin": service.url}, {"csrf_token": "0" * 64}),
        }
        for name, (headers, fields) in attempts.items():
            r = http.post("/login", data={"key": key, "next": "/review", **fields}, headers=headers)
            assert r.status_code == 403, (name, r.status_code)
            assert "judge_session" not in r.cookies, name
        # A token without its nonce cookie (another browser's form) is refused too.
        with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as other:
            r = other.post(
                "/login", data={"key": key, "csrf_token": token}, headers={"origin": service.url}
            )
            assert r.status_code == 403 and "judge_session" not in r.cookies
        # From the page itself: Origin, or only a same-origin Referer, both work.
        r = http.post(
            "/login",
            data={"key": key, "csrf_token": _login_form(http)},
            headers={"referer": service.url + "/login?next=/review"},
        )
        assert r.status_code == 303 and "judge_session" in r.cookies
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as http:
        assert page_login(http, key).status_code == 303


def test_label_and_logout_forms_refuse_a_foreign_origin_and_a_missing_or_forged_token(
    service: RunningService,
) -> None:
    with Store(service.db) as store:
        item_id = items(store, status="open")[0].id
    with (
        httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as ann,
        httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as bob,
    ):
        assert page_login(ann, service.keys["ann"]).status_code == 303
        assert page_login(bob, service.keys["bob"]).status_code == 303
        page = ann.get(f"/review/items/{item_id}")
        token = form_token(page.text)
        bobs_token = form_token(bob.get(f"/review/items/{item_id}").text)
        assert token != bobs_token  # tied to the session
        label = f"/review/items/{item_id}/label"
        attempts = {
            "foreign origin": ({"origin": EVIL}, token),
            "foreign referer": ({"referer": EVIL + "/x"}, token),
            "no origin or referer": ({}, token),
            "no token": ({"origin": service.url}, None),
            "forged token": ({"origin": service.url}, "f" * 64),
            "another session's token": ({"origin": service.url}, bobs_token),
        }
        for name, (headers, given) in attempts.items():
            fields = {"label": "pass", **({"csrf_token": given} if given is not None else {})}
            r = ann.post(label, data=fields, headers=headers)
            assert r.status_code == 403, (name, r.status_code)
        with Store(service.db) as store:
            assert store.review_labels(item_id=item_id) == []  # nothing was labelled
        for name, (headers, given) in attempts.items():
            fields = {"csrf_token": given} if given is not None else {}
            r = ann.post("/logout", data=fields, headers=headers)
            assert r.status_code == 403, ("logout", name, r.status_code)
        assert ann.get("/review").status_code == 200  # still signed in
        # The real form, from the page.
        r = ann.post(
            label, data={"label": "pass", "csrf_token": token}, headers={"origin": service.url}
        )
        assert r.status_code == 303
        with Store(service.db) as store:
            assert [x.reviewer for x in store.review_labels(item_id=item_id)] == ["ann"]
        queue = ann.get("/review").text
        r = ann.post(
            "/logout", data={"csrf_token": form_token(queue)}, headers={"origin": service.url}
        )
        assert r.status_code == 303 and ann.get("/review").status_code == 303


def test_an_api_key_cannot_log_in_to_the_page_unless_its_role_reviews(
    service: RunningService,
) -> None:
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as http:
        for who in ("ops", "dan"):
            r = page_login(http, service.keys[who])
            assert r.status_code == 403 and "judge_session" not in r.cookies
            assert "for the API" in r.text
        assert page_login(http, service.keys["cat"]).status_code == 303


PAGE_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _csp(value: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in value.split(";") if d.strip()}


def test_pages_send_a_strict_csp_and_the_security_headers(service: RunningService) -> None:
    with Store(service.db) as store:
        item_id = items(store, status="open")[0].id
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as http:
        pages = {"login": http.get("/login")}
        assert page_login(http, service.keys["ann"]).status_code == 303
        pages["queue"] = http.get("/review")
        pages["item"] = http.get(f"/review/items/{item_id}")
        pages["redirect"] = http.get("/review/next")
        for name, r in pages.items():
            assert r.status_code in (200, 303), name
            for header, value in PAGE_HEADERS.items():
                assert r.headers.get(header) == value, (name, header, r.headers.get(header))
            csp = _csp(r.headers["content-security-policy"])
            assert csp["default-src"] == ["'none'"]
            assert csp["script-src"] == ["'self'"], name  # no inline script, no eval
            assert csp["frame-ancestors"] == ["'none'"] and csp["form-action"] == ["'self'"]
            assert csp["base-uri"] == ["'none'"]
            assert "'unsafe-inline'" not in r.headers["content-security-policy"]
            assert "'unsafe-eval'" not in r.headers["content-security-policy"]
        # The page's scripts are static files served with the right type.
        scripts = re.findall(r'<script src="(/static/[^"]+)"', pages["item"].text)
        assert scripts
        for src in scripts:
            js = http.get(src)
            assert js.status_code == 200 and "javascript" in js.headers["content-type"]
            assert js.headers["x-content-type-options"] == "nosniff"


def test_a_page_that_cannot_be_served_answers_html_at_the_apis_status(
    service: RunningService,
) -> None:
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=60) as http:
        assert page_login(http, service.keys["ann"]).status_code == 303
        token = form_token(http.get("/review").text)
        for r in [
            http.get("/review/items/q-nope"),
            http.post(
                "/review/items/q-nope/label",
                data={"label": "pass", "csrf_token": token},
                headers={"origin": service.url},
            ),
        ]:
            assert r.status_code == 404  # as GET /v1/review/items/q-nope
            assert r.headers["content-type"].startswith("text/html")
            assert "<h1>Not Found</h1>" in r.text and "no review item &#39;q-nope&#39;" in r.text
            assert _csp(r.headers["content-security-policy"])["script-src"] == ["'self'"]


def test_the_api_sends_nosniff_and_no_store_even_on_refusals(service: RunningService) -> None:
    key = {"X-API-Key": service.keys["ops"]}
    with httpx.Client(base_url=service.url) as http:
        for r in [
            http.get("/v1/whoami", headers=key),
            http.get("/openapi.json", headers=key),
            http.get("/v1/whoami"),  # 401
            http.get("/v1/review/queue", headers=key),  # 403
            http.get("/v1/nowhere", headers=key),
        ]:  # 404
            assert r.headers["x-content-type-options"] == "nosniff", r.url
            assert r.headers["cache-control"] == "no-store"
            assert r.headers["x-frame-options"] == "DENY"
            csp = r.headers["content-security-policy"]
            assert csp == "default-src 'none'; frame-ancestors 'none'"


def test_templates_have_no_inline_script_and_every_inline_style_is_hashed(
    service: RunningService,
) -> None:
    csp = _csp(httpx.get(service.url + "/login").headers["content-security-policy"])
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text("utf-8")
        # No inline script and no handler attribute (the CSP would refuse both).
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", text) == [], template.name
        assert re.findall(r"\son[a-z]+\s*=", text) == [], template.name
        assert "javascript:" not in text, template.name
        styles = re.findall(r"<style>(.*?)</style>", text, re.S)
        styles += re.findall(r'\sstyle="([^"]*)"', text)
        for style in styles:
            digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in csp["style-src"], (template.name, style[:40])
