"""The review web page: server-rendered HTML (Jinja2); its scripts (keyboard shortcuts) are
static files under ``/static/`` (the Content-Security-Policy allows no inline script).

Routes: ``/login`` (open: a form that turns a reviewer's or adjudicator's API key into a session
cookie), ``/review`` (the queue), ``/review/items/{id}`` (one item, with its label form),
``/review/next`` (the next item of my queue), ``/logout``. Every route but ``/login`` sits behind
the access middleware (key or session, role, the Origin of form posts). Every form carries a
CSRF token (``judge.api.csrf``), checked before anything is done. Blind items are shown blinded
everywhere, the queue included (no score, priority, reason or judge model).
Labels given on the page are in the shown frame; the server maps them to canonical labels.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.concurrency import run_in_threadpool

import judge
import judge.review
from judge.api import csrf
from judge.api.roles import PAGE_ROLES
from judge.api.security import SESSION_COOKIE, session_token
from judge.errors import JudgeError
from judge.service import Principal, create_session, end_session, verify_key
from judge.store import Store

TEMPLATES = Path(__file__).parent / "templates"
#: The page's scripts and styles, served at /static/.
STATIC = Path(__file__).parent / "static"
_STYLE_BLOCK = re.compile(r"<style>(.*?)</style>", re.S)
_STYLE_ATTR = re.compile(r'\sstyle="([^"]*)"')
_FORM_EXPIRED = "This form expired or did not come from this page: reload it and try again."

#: Keyboard shortcut of each label (shown on the buttons).
SHORTCUTS = {"pass": "p", "fail": "f", "A": "a", "B": "b", "tie": "t", "cannot_determine": "c"}
LABEL_TEXT = {
    "pass": "Pass",
    "fail": "Fail",
    "A": "A is better",
    "B": "B is better",
    "tie": "Tie",
    "cannot_determine": "Cannot determine",
}


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("judge.api", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(shortcuts=SHORTCUTS, label_text=LABEL_TEXT)
    return env


def inline_style_hashes(folder: Path = TEMPLATES) -> list[str]:
    """CSP hashes ('sha256-...') of every inline style the templates write as literal text
    (``<style>`` blocks and ``style=""`` attributes). A style built from template variables gets
    no hash: the page's CSP refuses it, so no rendered value can ever style the page."""
    found: set[str] = set()
    for template in sorted(folder.glob("*.html")):
        text = template.read_text("utf-8")
        styles = _STYLE_BLOCK.findall(text) + [html.unescape(v) for v in _STYLE_ATTR.findall(text)]
        for style in styles:
            if "{{" in style or "{%" in style:
                continue
            digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
            found.add(f"sha256-{digest}")
    return sorted(found)


def _safe_next(target: str | None) -> str:
    # Only local paths: never redirect a reviewer to another site after login.
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/review"
    return target


async def _form(request: Request) -> dict[str, str]:
    raw = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def page_router() -> APIRouter:
    """The HTML routes (not in the OpenAPI schema: they are pages, not API)."""
    router = APIRouter(include_in_schema=False)
    env = _environment()

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    def with_store(request: Request, fn: Callable[[Store], Any]) -> Any:
        with Store(request.app.state.config.db) as store:
            return fn(store)

    def caller(request: Request) -> Principal:
        found = getattr(request.state, "principal", None)
        if not isinstance(found, Principal):  # the middleware guarantees it; never guess
            raise JudgeError("no authenticated reviewer")
        return found

    def form_token(request: Request) -> str:
        # Tied to the session cookie; a page reached with a key header has no session.
        session = session_token({"cookie": request.headers.get("cookie", "")})
        if session:
            return csrf.session_token_csrf(session)
        return csrf.key_csrf(request.app.state.csrf_secret, caller(request).key_id)

    def login_page(request: Request, next: str, error: str | None, status: int) -> Response:
        nonce, token = csrf.login_pair(request.app.state.csrf_secret)
        response = render("login.html", status=status, next=next, error=error, who=None, csrf=token)
        response.set_cookie(
            csrf.LOGIN_COOKIE,
            nonce,
            max_age=3600,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/login",
        )
        return response

    @router.get("/login")
    def login_form(request: Request, next: str = "/review") -> Response:
        return login_page(request, _safe_next(next), None, 200)

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = await _form(request)
        target = _safe_next(form.get("next"))
        nonce = request.cookies.get(csrf.LOGIN_COOKIE)
        if not csrf.login_token_ok(request.app.state.csrf_secret, nonce, form.get(csrf.FIELD)):
            return login_page(request, target, _FORM_EXPIRED, 403)
        key = form.get("key", "").strip()
        hours = request.app.state.config.session_hours

        def open_session(store: Store) -> str | None:
            who = verify_key(store, key)
            if who is None:
                return None
            if who.role not in PAGE_ROLES:
                return ""  # a valid key of a role the page is not for: no session
            return create_session(store, who, hours)

        token = await run_in_threadpool(with_store, request, open_session)
        if token is None:
            return login_page(request, target, "That key is not valid.", 401)
        if not token:
            roles = " and ".join(sorted(PAGE_ROLES))
            return login_page(
                request,
                target,
                f"The review page is for {roles} keys; this key is for the API.",
                403,
            )
        response = RedirectResponse(target, status_code=303)
        response.delete_cookie(csrf.LOGIN_COOKIE, path="/login")
        response.set_cookie(
            SESSION_COOKIE,
            token,
            max_age=int(hours * 3600),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        form = await _form(request)
        if not csrf.token_ok(form_token(request), form.get(csrf.FIELD)):
            return HTMLResponse(_FORM_EXPIRED, status_code=403)
        token = session_token({"cookie": request.headers.get("cookie", "")})
        await run_in_threadpool(with_store, request, lambda st: end_session(st, token))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @router.get("/")
    def home() -> Response:
        return RedirectResponse("/review", status_code=303)

    @router.get("/review")
    def queue_page(request: Request, msg: str | None = None) -> HTMLResponse:
        who = caller(request)
        blind_all = request.app.state.config.blind

        def load(store: Store) -> dict[str, Any]:
            mine = judge.review.queue(store, reviewer=who.name, role=who.role, limit=200)
            # A blind item shows nothing of what the judge said: no score, priority or reason.
            shown = [judge.review.blinded(i) if (i.blind or blind_all) else i for i in mine]
            return {
                "items": shown,
                "counts": store.review_counts(),
                "pairs": judge.review.agreement(store),
                # Cards name the judge model: not beside blind items.
                "cards": [] if any(i.blind for i in shown) else store.card_records(),
            }

        data = with_store(request, load)
        return render(
            "queue.html", who=who, blind_all=blind_all, msg=msg, csrf=form_token(request), **data
        )

    @router.get("/review/next")
    def next_item(request: Request) -> Response:
        who = caller(request)
        first = with_store(
            request, lambda st: judge.review.queue(st, reviewer=who.name, role=who.role, limit=1)
        )
        if not first:
            return RedirectResponse(
                "/review?msg=" + quote("Queue empty: nothing left for you."), 303
            )
        return RedirectResponse(f"/review/items/{quote(first[0].id)}", status_code=303)

    def item_page(request: Request, item_id: str, error: str | None, status: int) -> HTMLResponse:
        who = caller(request)
        blind_all = request.app.state.config.blind

        def load(store: Store) -> tuple[Any, int, bool]:
            view = judge.review.item_view(
                store, item_id, force_blind=blind_all, viewer_role=who.role
            )
            left = len(judge.review.queue(store, reviewer=who.name, role=who.role, limit=1000))
            mine = any(x.reviewer == who.name for x in store.review_labels(item_id=item_id))
            return view, left, mine

        view, left, mine = with_store(request, load)
        can_label = _can_label(view, who) and not mine
        return render(
            "item.html",
            status=status,
            who=who,
            view=view,
            left=left,
            error=error,
            can_label=can_label,
            mine=mine,
            csrf=form_token(request),
        )

    @router.get("/review/items/{item_id}")
    def item(request: Request, item_id: str) -> HTMLResponse:
        return item_page(request, item_id, None, 200)

    @router.post("/review/items/{item_id}/label")
    async def label(request: Request, item_id: str) -> Response:
        who = caller(request)
        form = await _form(request)
        if not csrf.token_ok(form_token(request), form.get(csrf.FIELD)):
            return await run_in_threadpool(item_page, request, item_id, _FORM_EXPIRED, 403)
        shown = form.get("label", "")
        note = form.get("note", "")[:4000]

        def save(store: Store) -> None:
            judge.review.add_shown_label(
                store, item_id, reviewer=who.name, role=who.role, shown_label=shown, note=note
            )

        try:
            await run_in_threadpool(with_store, request, save)
        except JudgeError as err:
            return await run_in_threadpool(item_page, request, item_id, str(err), 409)
        return RedirectResponse("/review/next", status_code=303)

    return router


def _can_label(view: Any, who: Principal) -> bool:
    if view.item.status == "done":
        return False
    if view.item.status == "adjudicate":
        return bool(who.role == "adjudicator")
    return True
