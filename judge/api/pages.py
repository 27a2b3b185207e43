"""The review web page: server-rendered HTML (Jinja2); its scripts (keyboard shortcuts) are
static files under ``/static/`` (the Content-Security-Policy allows no inline script).

Routes: ``/login`` (open: a form that turns a reviewer's or adjudicator's API key into a session
cookie), ``/review`` (the queue), ``/review/items/{id}`` (one item, with its label form),
``/review/next`` (the next item of my queue), ``/logout``. Every route but ``/login`` sits behind
the access middleware (key or session, role, the Origin of form posts). Every form carries a
CSRF token (``judge.api.csrf``), checked before anything is done. Blind items are shown blinded
everywhere, the queue included (no score, priority, reason or judge model), and so is every
item of a case whose blind item still awaits the reviewer's label (``judge.review.blindness``).
Labels given on the page are in the shown frame; the server maps them to canonical labels. A
first-bad-decision item shows the run's steps as a timeline; its form posts ``located`` with the
``step`` picked on it (the judge's step, or another), ``no_single_step`` or
``cannot_determine``.
After a label the next page says it was saved (``?done=ITEM``: the message is built from the
stored label, never from text in the URL).

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
from jinja2 import Environment
from starlette.exceptions import HTTPException as StarletteHTTPException

import judge.review
from judge.api import csrf
from judge.api.config import ServiceConfig
from judge.api.deps import Caller, Config, Db
from judge.api.errors import error_status
from judge.api.roles import PAGE_ROLES
from judge.api.security import SESSION_COOKIE, session_token
from judge.errors import Failure, JudgeError
from judge.rubrics import package_environment
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

#: Keyboard shortcut of each label (shown on the buttons). On a first-bad-decision item, J and
#: K also move the picked step, O opens it (static/review.js).
SHORTCUTS = {
    "pass": "p",
    "fail": "f",
    "A": "a",
    "B": "b",
    "tie": "t",
    "cannot_determine": "c",
    "located": "l",
    "no_single_step": "s",
}
#: Rows of the queue page (the count above it is of the whole queue).
QUEUE_SHOWN = 200
LABEL_TEXT = {
    "pass": "Pass",
    "fail": "Fail",
    "A": "A is better",
    "B": "B is better",
    "tie": "Tie",
    "cannot_determine": "Cannot determine",
    "located": "Critical step",
    "no_single_step": "No single step",
}
#: The labels on the compact bar of a narrow screen (one row of buttons).
SHORT_TEXT = {
    **LABEL_TEXT,
    "A": "A better",
    "B": "B better",
    "cannot_determine": "Can't tell",
    "located": "This step",
    "no_single_step": "No single",
}
#: What each label means, for a reviewer who hovers a button.
LABEL_HELP = {
    "pass": "The run does what the task asks.",
    "fail": "The run does not do what the task asks.",
    "A": "Response A is the better one.",
    "B": "Response B is the better one.",
    "tie": "Neither response is better.",
    "cannot_determine": "What is shown cannot decide it (counted as neither).",
    "located": "The step picked on the timeline is the first bad decision (confirm the judge's "
    "step, or pick another to move it).",
    "no_single_step": "The run failed, but no single step was its first bad decision.",
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
    env = package_environment("judge.api")
    env.globals.update(
        shortcuts=SHORTCUTS, label_text=LABEL_TEXT, short_text=SHORT_TEXT, label_help=LABEL_HELP
    )
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
    who: Caller, store: Db, config: Config, token: FormToken, done: str | None = None
) -> HTMLResponse:
    """My queue, with the counts, the reviewers' agreement and the cards."""
    mine = judge.review.reviewer_queue(
        store, reviewer=who.name, role=who.role, force_blind=config.blind
    )
    # A blind item shows nothing of what the judge said: no score, priority or reason; nor
    # does any item of a case whose blind item awaits this reviewer (judge.review.blindness).
    shown = [mine.shown(i) for i in mine.items[:QUEUE_SHOWN]]
    hide_judges = config.blind or any(i.blind for i in shown)
    return render(
        "queue.html",
        who=who,
        blind_all=config.blind,
        flash=_flash(store, who, done),
        csrf=token,
        items=shown,
        waiting=len(mine.items),
        counts=store.review_counts(),
        pairs=judge.review.agreement(store),
        # Judges' rows name the judge model: only people's beside blind items.
        steps=[
            a for a in judge.review.step_agreement(store) if a.who == "people" or not hide_judges
        ],
        # Cards name the judge model: not beside blind items.
        cards=[] if hide_judges else store.card_records(),
    )


def next_item(who: Caller, store: Db, done: str | None = None) -> Response:
    """The first item of my queue (or the queue, when it is empty), saying that the label
    just given (``done``: its item) was saved."""
    after = f"?done={quote(done, safe='')}" if done else ""
    first = judge.review.queue(store, reviewer=who.name, role=who.role, limit=1)
    if not first:
        return RedirectResponse("/review" + after, status_code=303)
    return RedirectResponse(f"/review/items/{quote(first[0].id)}{after}", status_code=303)


def _flash(store: Store, who: Principal, done: str | None) -> str | None:
    """What the page says about the label just given: built from the store (the label this
    reviewer gave on item ``done``, in the frame they saw), never from text in the URL."""
    if not done:
        return None
    item = store.review_item(done)
    given = [x for x in store.review_labels(item_id=done) if x.reviewer == who.name]
    if item is None or not given:
        return None
    shown = judge.review.to_shown(item, given[-1].label) or given[-1].label
    if given[-1].step is not None:
        return f"Saved: {item.case_id} labelled {LABEL_TEXT[shown].lower()} {given[-1].step}."
    return f"Saved: {item.case_id} labelled {LABEL_TEXT.get(shown, shown)}."


def _item_page(
    store: Store,
    who: Principal,
    config: ServiceConfig,
    token: str,
    item_id: str,
    error: str | None,
    status: int,
    done: str | None = None,
) -> HTMLResponse:
    mine = judge.review.reviewer_queue(
        store, reviewer=who.name, role=who.role, force_blind=config.blind
    )
    view = judge.review.item_view(
        store, item_id, force_blind=config.blind, viewer_role=who.role, viewer=mine
    )
    labelled = any(x.reviewer == who.name for x in store.review_labels(item_id=item_id))
    return render(
        "item.html",
        status=status,
        who=who,
        view=view,
        left=len(mine.items),
        error=error,
        flash=_flash(store, who, done),
        can_label=_can_label(view, who) and not labelled,
        mine=labelled,
        csrf=token,
    )


def item_page(
    item_id: str,
    who: Caller,
    store: Db,
    config: Config,
    token: FormToken,
    done: str | None = None,
) -> HTMLResponse:
    """One item, with its label form."""
    return _item_page(store, who, config, token, item_id, None, 200, done)


def label(
    item_id: str, who: Caller, form: Form, token: FormToken, store: Db, config: Config
) -> Response:
    """Label an item in the shown frame; then the next item, which says the label was saved.
    A refused label shows the item again with the reason."""
    if not csrf.token_ok(token, form.get(csrf.FIELD)):
        return _item_page(store, who, config, token, item_id, _FORM_EXPIRED, 403)
    shown = form.get("label", "")
    try:
        judge.review.add_shown_label(
            store,
            item_id,
            reviewer=who.name,
            role=who.role,
            shown_label=shown,
            note=form.get("note", "")[:4000],
            # The timeline's picked step goes with "located" only (it stays picked on the form
            # whichever button is pressed).
            step=_picked_step(form) if shown == "located" else None,
        )
    except JudgeError as err:
        return _item_page(store, who, config, token, item_id, str(err), 409)
    return RedirectResponse(f"/review/next?done={quote(item_id, safe='')}", status_code=303)


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


def _picked_step(form: dict[str, str]) -> int | None:
    """The step picked on a first-bad-decision item's timeline (None when none is)."""
    picked = form.get("step", "").strip()
    if not picked:
        return None
    if not picked.isdigit():
        raise JudgeError(f"the picked step must be a step number, not {picked[:20]!r}")
    return int(picked)


def _can_label(view: Any, who: Principal) -> bool:
    if view.item.status == "done":
        return False
    if view.item.status == "adjudicate":
        return bool(who.role == "adjudicator")
    return True
