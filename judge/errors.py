"""The project's own errors. Each names where the problem is and says what to do.

Two kinds: a :class:`JudgeError` is the problem of one thing (a file, a record, a step, a
request), which a batch records against that step before going on with the others; an
:class:`UnavailableError` (the store went away) stops the whole batch, so handlers of per-step
errors never see it. Both are a :class:`Failure`, what the CLI prints (exit 2) and the API
answers with the status of its kind (judge/api/errors.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


class Failure(Exception):
    """Base of every error judge raises on purpose."""


class JudgeError(Failure):
    """An error of one thing: an input, a rubric, a card, a step, a request. A batch records it
    against its step and goes on."""


class InputError(JudgeError):
    """Bad input: names the file, the record (line) and the field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file, self.line, self.field, self.hint = file, line, field, hint
        self.reason = message
        where = ":".join(str(p) for p in (file, line) if p is not None)
        parts = [where] if where else []
        if field:
            parts.append(f"field '{field}'")
        head = " ".join(parts)
        text = f"{head}: {message}" if head else message
        if hint:
            text += f" ({hint})"
        super().__init__(text)


def first_error(
    err: ValidationError,
    *,
    file: str | None = None,
    line: int | None = None,
    hint: str | None = None,
) -> InputError:
    """The first problem of a pydantic ValidationError as an InputError naming the file, the
    line and the field (its dotted path; none for the record as a whole), in pydantic's words."""
    first = err.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    return InputError(first["msg"], file=file, line=line, field=field, hint=hint)


class RubricError(JudgeError):
    """A rubric is missing, malformed, or cannot be rendered for a case."""


class CardError(JudgeError):
    """A calibration card is malformed, stale, expired or for another judge."""


class ProviderError(JudgeError):
    """A model call failed. Carries what is known of the attempts for the record."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int = 0,
        last_output: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_output = last_output
        self.usage = usage or {}


class InfraError(ProviderError):
    """The provider failed (rate limit, timeout, 5xx, connection) after every retry."""


class ParseError(ProviderError):
    """The model answered, but not with a valid structured verdict after every re-ask."""


class NotFoundError(JudgeError):
    """A record (review item, job, card...) does not exist."""


class ConflictError(JudgeError):
    """The request contradicts a record's state (already labelled, not awaiting you, ...)."""


class UnavailableError(Failure):
    """Something the judge needs (its database) cannot be reached now: try again later.

    Not a JudgeError: no step can be stored while it lasts, so it stops the whole batch (what
    was written before is kept; a rerun resumes) instead of failing one step."""
