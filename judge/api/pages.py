"""The review web page: server-rendered HTML (Jinja2); its scripts (keyboard shortcuts) are
static files under ``/static/`` (the Content-Security-Policy allows no inline script).

Routes: ``/login`` (open: a form that turns a reviewer's or adjudicator's API key into a session
cookie), ``/review`` (the queue), ``/review/items/{id}`` (one item, with its label form),
``/review/next`` (the next item of my queue), ``/logout``. Every route but ``/login`` sits behind
the access middleware (key or session, role, the Origin of form posts). Every form carries a
CSRF token (``judge.api.csrf``), checked before anything is done. Blind items are shown blinded
everywhere, the queue included (no score, priority, reason or judge model).
Labels given on the page are in the shown frame; the server maps them to canonical labels.

The routes take the caller, the configuration and a store per request from the dependencies of
the JSON routes (``judge.api.deps``); what goes wrong in one is answered with an HTML page at
the status the API would give it (:class:`PageRoute`), never with the API's JSON.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable, Coroutine
from functools import cache
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.exceptions import HTTPException as StarletteHTTPException

import judge.review
from judge.api import csrf
from judge.api.config import ServiceConfig
from judge.api.deps import Caller, Config, Db
from judge.api.errors import error_status
from judge.api.roles import PAGE_ROLES
from judge.api.security import SESSION_COOKIE, session_token
from judge.errors import Failure, JudgeError
from judge.service import (
    SESSION_PROBLEMS,
    Principal,
    create_session,
    end_session,
    verify_key,
)
from judge.store import Store

TEMPLATES = Path(__file__).parent / "templates"
#: The page's scripts and styles, served at /static/.
STATIC = Path(__file__).parent / "static"
_STYLE_BLOCK = re.compile(r"<style>(.*?)</style>", re.S)
_STYLE_ATTR = re.compile(r'\sstyle="([^"]*)"')
_FORM_EXPIRED = "This form expired or did not come from this page: reload it and try again."
#: The login form posted without the cookie its page set (an hour's life, path /login).
_NO_LOGIN_COOKIE = (
    "This login form expired, or your browser did not send back the cookie the login page set "
    "(an hour's life): reload the page and sign in again. If it keeps happening, the browser "
    "refuses the cookie: open the page at the address judge serve --public-url names (https "
    "when it is https)."
)

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


async def posted_form(request: Request) -> dict[str, str]:
    """The fields of a posted form (the first value of each)."""
    raw = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def form_token(request: Request, who: Caller) -> str:
    """The CSRF token of the forms of a signed-in page: tied to the session cookie, or to the
    key for a page reached with a key header (it has no session)."""
    session = session_token({"cookie": request.headers.get("cookie", "")})
    if session:
        return csrf.session_token_csrf(session)
    return csrf.key_csrf(request.app.state.signing.current(), who.key_id)


Form = Annotated[dict[str, str], Depends(posted_form)]
FormToken = Annotated[str, Depends(form_token)]


@cache
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


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` rendered with ``context``."""
    return HTMLResponse(_environment().get_template(name).render(**context), status_code=status)


def error_page(status: int, message: str) -> HTMLResponse:
    """What a page answers when it cannot be served: the status, what went wrong, the way back."""
    return render(
        "error.html", status=status, title=HTTPStatus(status).phrase, message=message, who=None
    )


class PageRoute(APIRoute):
    """A route of the review page. What goes wrong in it (one of judge's errors, or the HTTP
    error of a dependency) is answered with :func:`error_page` at the status the API gives it,
    not with the API's JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except Failure as err:
                return error_page(error_status(err)[0], str(err))
            except StarletteHTTPException as err:
                return error_page(err.status_code, str(err.detail))

        return page_handler


def _login_page(request: Request, next: str, error: str | None, status: int) -> Response:
    # Signed with the secret every replica shares (judge.service.signing): any replica
    # accepts the form.
    nonce, token = csrf.login_pair(request.app.state.signing.current())
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


def login_form(request: Request, next: str = "/review", why: str | None = None) -> Response:
    """The login form (open: it is how a browser gets a session); ``why``: the reason a
    session ended (``judge.service.SESSION_PROBLEMS``), said above the form."""
    return _login_page(request, _safe_next(next), SESSION_PROBLEMS.get(why or ""), 200)


def login(request: Request, form: Form, store: Db, config: Config) -> Response:
    """Turn a reviewer's or adjudicator's API key into a session cookie."""
    target = _safe_next(form.get("next"))
    nonce = request.cookies.get(csrf.LOGIN_COOKIE)
    if not nonce:
        return _login_page(request, target, _NO_LOGIN_COOKIE, 403)
    given = form.get(csrf.FIELD)
    if not request.app.state.signing.verify(lambda s: csrf.login_token_ok(s, nonce, given)):
        return _login_page(request, target, _FORM_EXPIRED, 403)
    who = verify_key(store, form.get("key", "").strip())
    if who is None:
        return _login_page(request, target, "That key is not valid.", 401)
    if who.role not in PAGE_ROLES:  # a valid key of a role the page is not for: no session
        roles = " and ".join(sorted(PAGE_ROLES))
        return _login_page(
            request, target, f"The review page is for {roles} keys; this key is for the API.", 403
        )
    token = create_session(store, who, config.session_hours)
    response = RedirectResponse(target, status_code=303)
    response.delete_cookie(csrf.LOGIN_COOKIE, path="/login")
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(config.session_hours * 3600),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def logout(request: Request, form: Form, token: FormToken, store: Db) -> Response:
    """End the session."""
    if not csrf.token_ok(token, form.get(csrf.FIELD)):
        return error_page(403, _FORM_EXPIRED)
    end_session(store, session_token({"cookie": request.headers.get("cookie", "")}))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def home() -> Response:
    """The queue."""
    return RedirectResponse("/review", status_code=303)


def queue_page(
    who: Caller, store: Db, config: Config, token: FormToken, msg: str | None = None
) -> HTMLResponse:
    """My queue, with the counts, the reviewers' agreement and the cards."""
    mine = judge.review.queue(store, reviewer=who.name, role=who.role, limit=200)
    # A blind item shows nothing of what the judge said: no score, priority or reason.
    shown = [judge.review.blinded(i) if (i.blind or config.blind) else i for i in mine]
    return render(
        "queue.html",
        who=who,
        blind_all=config.blind,
        msg=msg,
        csrf=token,
        items=shown,
        counts=store.review_counts(),
        pairs=judge.review.agreement(store),
        # Cards name the judge model: not beside blind items.
        cards=[] if any(i.blind for i in shown) else store.card_records(),
    )


def next_item(who: Caller, store: Db) -> Response:
    """The first item of my queue (or the queue, when it is empty)."""
    first = judge.review.queue(store, reviewer=who.name, role=who.role, limit=1)
    if not first:
        return RedirectResponse("/review?msg=" + quote("Queue empty: nothing left for you."), 303)
    return RedirectResponse(f"/review/items/{quote(first[0].id)}", status_code=303)


def _item_page(
    store: Store,
    who: Principal,
    config: ServiceConfig,
    token: str,
    item_id: str,
    error: str | None,
    status: int,
) -> HTMLResponse:
    view = judge.review.item_view(store, item_id, force_blind=config.blind, viewer_role=who.role)
    left = len(judge.review.queue(store, reviewer=who.name, role=who.role, limit=1000))
    mine = any(x.reviewer == who.name for x in store.review_labels(item_id=item_id))
    return render(
        "item.html",
        status=status,
        who=who,
        view=view,
        left=left,
        error=error,
        can_label=_can_label(view, who) and not mine,
        mine=mine,
        csrf=token,
    )


def item_page(
    item_id: str, who: Caller, store: Db, config: Config, token: FormToken
) -> HTMLResponse:
    """One item, with its label form."""
    return _item_page(store, who, config, token, item_id, None, 200)


def label(
    item_id: str, who: Caller, form: Form, token: FormToken, store: Db, config: Config
) -> Response:
    """Label an item in the shown frame; then the next item. A refused label shows the item
    again with the reason."""
    if not csrf.token_ok(token, form.get(csrf.FIELD)):
        return _item_page(store, who, config, token, item_id, _FORM_EXPIRED, 403)
    try:
        judge.review.add_shown_label(
            store,
            item_id,
            reviewer=who.name,
            role=who.role,
            shown_label=form.get("label", ""),
            note=form.get("note", "")[:4000],
        )
    except JudgeError as err:
        return _item_page(store, who, config, token, item_id, str(err), 409)
    return RedirectResponse("/review/next", status_code=303)


def page_router() -> APIRouter:
    """The HTML routes (not in the OpenAPI schema: they are pages, not API)."""
    router = APIRouter(include_in_schema=False, route_class=PageRoute)
    router.add_api_route("/login", login_form, methods=["GET"])
    router.add_api_route("/login", login, methods=["POST"])
    router.add_api_route("/logout", logout, methods=["POST"])
    router.add_api_route("/", home, methods=["GET"])
    router.add_api_route("/review", queue_page, methods=["GET"])
    router.add_api_route("/review/next", next_item, methods=["GET"])
    router.add_api_route("/review/items/{item_id}", item_page, methods=["GET"])
    router.add_api_route("/review/items/{item_id}/label", label, methods=["POST"])
    return router


def _can_label(view: Any, who: Principal) -> bool:
    if view.item.status == "done":
        return False
    if view.item.status == "adjudicate":
        return bool(who.role == "adjudicator")
    return True
