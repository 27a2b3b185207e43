"""Errors as JSON: ``{"error": {"code", "message"}}`` with a matching HTTP status."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.errors import (
    CardError,
    ConflictError,
    Failure,
    InputError,
    JudgeError,
    NotFoundError,
    RubricError,
    UnavailableError,
)

log = logging.getLogger("judge.api")

#: Our error types -> (HTTP status, code). A registry, checked most specific first.
ERROR_STATUS: tuple[tuple[type[Failure], int, str], ...] = (
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (UnavailableError, 503, "unavailable"),
    (CardError, 409, "card_refused"),
    (RubricError, 422, "invalid_rubric"),
    (InputError, 422, "invalid_input"),
    (JudgeError, 422, "invalid_request"),
)


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
}


def error_status(exc: Failure) -> tuple[int, str]:
    """The HTTP status and code of one of our errors (:data:`ERROR_STATUS`)."""
    for kind, status, code in ERROR_STATUS:
        if isinstance(exc, kind):
            return status, code
    return 422, "invalid_request"


def error_response(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    """The JSON error body every failure uses."""
    body: dict[str, Any] = {"code": code, "message": message}
    body.update({k: v for k, v in extra.items() if v is not None})
    return JSONResponse({"error": body}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    """Map every error to the JSON error body."""

    @app.exception_handler(Failure)
    async def judge_error(_: Request, exc: Failure) -> JSONResponse:
        return error_response(*error_status(exc), str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        details = [
            {"field": ".".join(str(p) for p in e.get("loc", ())), "message": str(e.get("msg"))}
            for e in errors[:20]
        ]
        first = details[0] if details else {"field": "", "message": "invalid request"}
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        message = f"field '{first['field']}': {first['message']}{more}"
        return error_response(422, "invalid_request", message, details=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        response = error_response(exc.status_code, code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "internal error; see the server log")
