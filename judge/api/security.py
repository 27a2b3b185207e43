"""The access gate in front of every route: API key or session, role, per-key rate limit, body
size, the origin of page forms; and the security headers of every response.

Pure ASGI middlewares, so that no route can forget them: a route added later is protected
without doing anything. Order: refuse a state-changing page request (a form post) whose Origin
or Referer is another site (403); authenticate (401, or a redirect to the login form for review
pages); rate-limit per key (429 with Retry-After); refuse a role the route's entry in
``judge.api.roles.ROUTE_ROLES`` does not list (403; a route missing from the table is refused to
everyone); limit the request body (413). Only the login form and the static files of the page
are open. Every refusal of the JSON API is JSON ``{"error": {"code", "message"}}``; a refused
page form (another origin, a session that ended) is an HTML page that says why and what to do
(``page_error``). ``SecurityHeaders`` adds
the headers every response carries (a strict Content-Security-Policy on pages, ``nosniff`` and
``no-store`` everywhere).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from judge.api.proxy import host_origin, normal_origin
from judge.api.roles import OPEN_ROUTES, allowed, match_route
from judge.service import (
    SESSION_PROBLEMS,
    Principal,
    session_problem,
    take_rate_token,
    verify_key,
    verify_session,
)
from judge.store import Store

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_COOKIE = "judge_session"
#: Paths open without a key: the login form (it is how a browser gets a session), the health
#: checks of load balancers and the page's icon.
OPEN_PATHS = frozenset({"/login", "/healthz", "/readyz", "/favicon.ico"})
#: Static files of the page (scripts, styles): public, served without a key.
STATIC_PREFIX = "/static/"
#: Paths served to browsers: an unauthenticated request is sent to the login form.
PAGE_PREFIXES = ("/review", "/logout", "/docs")
#: Methods that change nothing: the only ones a page accepts without an Origin check.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: Headers of every response.
COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
#: Headers of JSON API responses (a browser must never render or frame one).
API_HEADERS = {
    **COMMON_HEADERS,
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
}


def page_csp(style_hashes: list[str]) -> str:
    """The review page's Content-Security-Policy: scripts and styles from this origin only, no
    inline script at all, inline styles only when their hash is listed (those written in the
    templates), no framing, forms posted only here."""
    styles = " ".join(
        [
            "'self'",
            *(["'unsafe-hashes'"] if style_hashes else []),
            *(f"'{h}'" for h in style_hashes),
        ]
    )
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            f"style-src {styles}",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ]
    )


def page_headers(csp: str) -> dict[str, str]:
    """Headers of the review pages (HTML)."""
    return {
        **COMMON_HEADERS,
        "content-security-policy": csp,
        # same-origin: our own form posts keep their Referer (checked when Origin is absent).
        "referrer-policy": "same-origin",
        "cross-origin-opener-policy": "same-origin",
        "permissions-policy": "camera=(), microphone=(), geolocation=()",
    }


def is_page(path: str) -> bool:
    """Whether ``path`` is served to browsers (the review page and its login form)."""
    return path in ("/", "/login") or path.startswith(PAGE_PREFIXES)


def own_origins(
    headers: dict[str, str], scheme: str, trusted: frozenset[str] = frozenset()
) -> list[str]:
    """The origins a page form may come from: the one the request's scheme and Host header
    name (as the trusted proxy said, ``judge.api.proxy``), then ``trusted`` (``--public-url``,
    ``--trusted-origin``)."""
    return [host_origin(scheme, headers.get("host", "")), *sorted(trusted)]


def origin_problem(
    headers: dict[str, str], scheme: str, trusted: frozenset[str] = frozenset()
) -> str | None:
    """Why a state-changing page request may not be trusted to come from our own pages, or None.

    Its Origin (or, without one, its Referer) must be this service's own origin (the scheme and
    the Host header) or one of ``trusted`` (normalised origins); a request that sends neither is
    refused too (every browser sends Origin with a form post). The reason says what to fix when
    the refusal is a proxy's doing rather than another site's."""
    own = own_origins(headers, scheme, trusted)
    origin = headers.get("origin")
    if origin is None:
        referer = headers.get("referer")
        if referer is None:
            return (
                "The form was posted without an Origin or Referer header, so it cannot be told "
                "from a forged one. If a proxy in front of judge removes these headers, make it "
                "pass them on; then reload the page and try again."
            )
        parts = urlsplit(referer)
        origin = f"{parts.scheme}://{parts.netloc}"
    shown = origin.strip()[:100]
    if origin.strip().lower() == "null" or normal_origin(origin) not in own:
        return (
            f"The form was posted from another site ({shown}): this service's own address is "
            f"{own[0]} (the scheme and the Host header it received"
            f"{', or ' + ', '.join(own[1:]) if own[1:] else ''}). If {shown} is the address "
            "you opened, the proxy in front of judge is misconfigured: it must send the public "
            "host with its port (nginx: proxy_set_header Host $http_host, or X-Forwarded-Host, "
            "X-Forwarded-Port and X-Forwarded-Proto from an address given to judge serve "
            f"--trusted-proxy), or judge serve must be started with --public-url {shown} (or "
            f"--trusted-origin {shown}). Otherwise the form came from another site."
        )
    return None


@dataclass
class TokenBucket:
    """``rate`` tokens per second up to ``burst``; one token per request."""

    rate: float
    burst: int
    tokens: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)
        self.stamp = time.monotonic()

    def take(self, now: float) -> float:
        """Take a token: 0.0 when allowed, else the seconds until one is available."""
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """One token bucket per API key: in the store given as ``db`` (shared by every replica on
    that store), else in this process."""

    def __init__(self, rate: float, burst: int, db: str | Path | None = None) -> None:
        self.rate = rate
        self.burst = burst
        self.db = db
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def check(self, key_id: str) -> float:
        """0.0 when the request may go on, else the seconds to wait (blocking: the store)."""
        if self.rate <= 0:
            return 0.0
        if self.db is not None:
            with Store(self.db) as store:
                return take_rate_token(store, key_id, rate=self.rate, burst=self.burst)
        with self._lock:
            bucket = self._buckets.get(key_id)
            if bucket is None:
                bucket = self._buckets[key_id] = TokenBucket(self.rate, self.burst)
            return bucket.take(time.monotonic())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def presented_keys(headers: dict[str, str]) -> list[str] | None:
    """Every credential presented in headers (``Authorization`` of any scheme counts, as ""
    when it is not ``Bearer``); None when the request presents none."""
    found = []
    auth = headers.get("authorization")
    if auth is not None:
        found.append(auth[7:].strip() if auth[:7].lower() == "bearer " else "")
    if "x-api-key" in headers:
        found.append(headers["x-api-key"])
    return found or None


def session_token(headers: dict[str, str]) -> str | None:
    """The review-page session cookie, if any."""
    raw = headers.get("cookie")
    if not raw:
        return None
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # noqa: BLE001 - http.cookies raises CookieError or others on junk
        return None
    morsel = cookie.get(SESSION_COOKIE)
    return morsel.value if morsel else None


async def send_json(
    send: Send, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> None:
    """Send a JSON error response."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


class SecurityHeaders:
    """Add the security headers to every response: pages, API, static files and refusals."""

    def __init__(self, app: ASGIApp, *, csp: str) -> None:
        self.app = app
        self.page = [(k.encode(), v.encode()) for k, v in page_headers(csp).items()]
        self.api = [(k.encode(), v.encode()) for k, v in API_HEADERS.items()]
        self.static = [
            (k.encode(), v.encode()) for k, v in COMMON_HEADERS.items() if k != "cache-control"
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        extra = (
            self.static
            if path.startswith(STATIC_PREFIX)
            else self.page
            if is_page(path)
            else self.api
        )

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in extra if k not in names),
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


class AccessMiddleware:
    """Check the origin of page forms; authenticate, authorise, rate-limit and size-limit every
    HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        db: str | Path,
        limiter: RateLimiter,
        max_body_bytes: int,
        trusted_origins: frozenset[str] = frozenset(),
        page_error: Callable[[int, str], ASGIApp] | None = None,
    ) -> None:
        self.app = app
        self.db = db
        self.limiter = limiter
        self.max_body = max_body_bytes
        self.trusted_origins = frozenset(normal_origin(o) for o in trusted_origins)
        self.page_error = page_error

    def _authenticate(self, headers: dict[str, str], page: bool) -> Principal | None:
        with Store(self.db) as store:
            keys = presented_keys(headers)
            if keys is not None:
                # Every credential presented must be valid and name the same key: an invalid
                # or conflicting one is refused rather than ignored in favour of another.
                found = {verify_key(store, key) for key in keys}
                return found.pop() if len(found) == 1 else None
            # The session cookie opens the review pages only: the JSON API needs a key in a
            # header, so a cross-site form can never act through a reviewer's browser.
            return verify_session(store, session_token(headers)) if page else None

    def _session_problem(self, token: str) -> str:
        with Store(self.db) as store:
            return session_problem(store, token)

    async def _refuse_page(
        self, scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
    ) -> None:
        """A refused page request: an HTML page saying why (JSON without a page renderer)."""
        if self.page_error is None:
            await send_json(send, status, code, message)
            return
        await self.page_error(status, message)(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.concurrency import run_in_threadpool

        path: str = scope["path"]
        headers = _headers(scope)
        if path.startswith(STATIC_PREFIX):
            await self.app(scope, receive, send)
            return
        page = is_page(path)
        if page and scope["method"] not in SAFE_METHODS:
            # A page form (login, label, logout) only from our own pages: cookies are sent
            # with a cross-site post whatever SameSite promises in older browsers.
            problem = origin_problem(headers, scope.get("scheme", "http"), self.trusted_origins)
            if problem is not None:
                await self._refuse_page(
                    scope, receive, send, 403, "forbidden_origin", f"{problem} Nothing was saved."
                )
                return
        route = match_route(scope["app"].router.routes, scope) if "app" in scope else None
        if path not in OPEN_PATHS and route not in OPEN_ROUTES:
            principal = await run_in_threadpool(self._authenticate, headers, page)
            if principal is None:
                token = session_token(headers) if page else None
                if token and presented_keys(headers) is None:
                    why = await run_in_threadpool(self._session_problem, token)
                    if scope["method"] == "GET":
                        target = "/login?next=" + quote(path, safe="/") + "&why=" + why
                        await _redirect(send, target)
                    else:
                        await self._refuse_page(
                            scope, receive, send, 401, "session_ended", SESSION_PROBLEMS[why]
                        )
                    return
                if page and scope["method"] == "GET":
                    await _redirect(send, "/login?next=" + quote(path, safe="/"))
                    return
                missing = presented_keys(headers) is None and not session_token(headers)
                message = (
                    "an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key'"
                    if missing
                    else "the API key is not valid (unknown, revoked or mistyped)"
                )
                code = "unauthorized" if missing else "invalid_key"
                if page:
                    shown = SESSION_PROBLEMS["signed_out"] if missing else message
                    await self._refuse_page(scope, receive, send, 401, code, shown)
                    return
                await send_json(send, 401, code, message, {"www-authenticate": "Bearer"})
                return
            scope.setdefault("state", {})["principal"] = principal
            wait = await run_in_threadpool(self.limiter.check, principal.key_id)
            if wait > 0:
                await send_json(
                    send,
                    429,
                    "rate_limited",
                    f"too many requests for key {principal.name!r}; retry after {wait:.2f}s",
                    {"retry-after": str(max(1, math.ceil(wait)))},
                )
                return
            if route is not None and principal.role not in allowed(route):
                who = ", ".join(sorted(allowed(route))) or "no role (undeclared route)"
                await send_json(
                    send,
                    403,
                    "forbidden",
                    f"a {principal.role} key may not call {route} (allowed: {who})",
                )
                return
        await self._limited(scope, receive, send, headers)

    async def _limited(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        limit = self.max_body
        too_big = (
            f"the request body is over the limit of {limit} bytes; split the batch into "
            "smaller jobs"
        )
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await send_json(send, 400, "bad_request", "invalid Content-Length header")
                return
            if int(length) > limit:
                await send_json(send, 413, "payload_too_large", too_big)
                return
            await self.app(scope, receive, send)
            return
        # No length given (chunked): read the body up to the limit, then replay it.
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await send_json(send, 413, "payload_too_large", too_big)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
