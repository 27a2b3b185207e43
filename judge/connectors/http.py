"""The HTTP client every platform connector uses: httpx with timeouts, retries on 5xx, timeouts
and connection resets (tenacity, exponential back-off) and on 429 (after the ``Retry-After`` /
``retry-after-ms`` the server asks for, when it says one; a wait longer than
:data:`RETRY_AFTER_MAX_S` fails at once saying when to run again), never on 401/403 (the message
names the environment variable to set) nor on a refused connection (a server that is down is
said so at once), and every URL in a message with its secrets masked
(:func:`judge.urls.mask_url`: the password or token of the userinfo, and query values whose name
says token, key, secret, password...).

httpx and tenacity are imported inside the functions that use them (``judge --help`` loads
neither)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from judge.base import Closing
from judge.connectors.errors import (
    ConnectorError,
    PlatformAuthError,
    PlatformNotFound,
    PlatformUnavailable,
)
from judge.urls import mask_url

if TYPE_CHECKING:
    import httpx

#: Seconds to connect, and to wait for an answer (an annotation batch can take seconds).
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
#: Attempts of one request (the first and the retries) and the first back-off in seconds.
ATTEMPTS = 4
BACKOFF_S = 0.5
#: How much of an error body a message quotes.
BODY_CHARS = 300
#: The longest wait a 429's ``Retry-After`` may ask for before the request is tried again (a
#: longer one ends the command at once, saying how long to wait).
RETRY_AFTER_MAX_S = 60.0
#: Connections kept open (httpx's default): a connector sending more requests at once (from
#: several threads) asks for as many.
KEEPALIVE = 20


def _body(response: httpx.Response) -> str:
    """The start of a response body, one line, for a message."""
    try:
        text = response.text
    except Exception:  # noqa: BLE001 - an undecodable body is shown as its size
        return f"<{len(response.content)} bytes>"
    text = " ".join(text.split())
    return text[:BODY_CHARS] + ("..." if len(text) > BODY_CHARS else "")


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a response asks to wait before the next request: ``retry-after-ms``, else
    ``Retry-After`` in seconds or as an HTTP date; None when it says none (or nonsense)."""
    ms = response.headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class _Retry(Exception):
    """A failure worth another attempt (5xx, 429, timeout, reset); carries the final message
    and, for a 429 that says it, the seconds to wait first."""

    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.wait_s = wait_s


class HttpClient(Closing):
    """One platform's HTTP root (``base``), with the headers every request carries.

    ``platform`` and ``auth_env`` name the platform and the environment variable of its
    credentials in messages (a 401/403 says to set it; ``auth_fix``, when given, is what a
    401/403 says to do instead); ``connections``: how many are kept open (one per thread of a
    connector that sends from several). Safe to share between threads. Use as a context
    manager, or close()."""

    def __init__(
        self,
        base: str,
        *,
        platform: str,
        headers: Mapping[str, str] | None = None,
        auth_env: str | None = None,
        auth_fix: str | None = None,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        read_timeout_s: float = READ_TIMEOUT_S,
        connections: int = KEEPALIVE,
    ) -> None:
        import httpx

        self.base = base.rstrip("/")
        self.platform = platform
        self.auth_env = auth_env
        self.auth_fix = auth_fix
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        #: Requests sent (every attempt), for reports and tests.
        self.sent = 0
        self._client = httpx.Client(
            base_url=self.base,
            headers=dict(headers or {}),
            timeout=httpx.Timeout(read_timeout_s, connect=CONNECT_TIMEOUT_S),
            limits=httpx.Limits(
                max_connections=max(connections, 100), max_keepalive_connections=connections
            ),
        )

    def url(self, path: str, params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None) -> str:
        """The masked URL of a request, for messages."""
        query = urlencode(list(params.items()) if isinstance(params, Mapping) else params or [])
        return mask_url(self.base + path + (f"?{query}" if query else ""))

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        not_found: str | None = None,
        ok: Sequence[int] = (),
    ) -> httpx.Response:
        """Send one request (retried on 5xx, 429, timeouts and resets) and return a 2xx answer,
        or one of the statuses in ``ok`` (never retried: a platform whose duplicate-key answer
        is a 500 lets its connector read it). A 429 is tried again after the wait its
        ``Retry-After`` asks for (the back-off when it asks none; PlatformUnavailable at once
        when it asks more than :data:`RETRY_AFTER_MAX_S`). A 404 is PlatformNotFound
        (``not_found`` is its message), 401/403 PlatformAuthError, another 4xx ConnectorError,
        a refused connection or a failure left after the retries PlatformUnavailable; every
        message names the URL."""
        shown = self.url(path, params)

        def attempt() -> httpx.Response:
            response = self._send(
                method,
                path,
                shown,
                params=params,
                json_body=json_body,
                content=content,
                headers=headers,
            )
            self._raise_to_retry(response, method, shown, ok)
            return response

        started = time.monotonic()
        try:
            response = self._retrying(attempt)
        except _Retry as err:
            raise PlatformUnavailable(
                f"{err.message} in {time.monotonic() - started:.0f}s; what was sent before "
                "stays sent: run the same command again once the server is back"
            ) from err
        return self._answer(response, method, shown, not_found, ok)

    def _retrying(self, attempt: Callable[[], httpx.Response]) -> httpx.Response:
        """``attempt()``, tried again while it raises _Retry (up to :attr:`attempts` in all),
        after the wait a 429 asked for, else the exponential back-off; the last _Retry is
        raised."""
        from tenacity import (
            RetryCallState,
            retry,
            retry_if_exception_type,
            stop_after_attempt,
            wait_exponential,
        )

        backoff = wait_exponential(multiplier=self.backoff_s, max=8.0)

        def wait(state: RetryCallState) -> float:
            failure = state.outcome.exception() if state.outcome is not None else None
            if isinstance(failure, _Retry) and failure.wait_s is not None:
                return failure.wait_s
            return float(backoff(state))

        retrying = retry(
            retry=retry_if_exception_type(_Retry),
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            reraise=True,
        )
        return retrying(attempt)()

    def _send(
        self,
        method: str,
        path: str,
        shown: str,
        *,
        params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None,
        json_body: Any,
        content: bytes | None,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        """One attempt of a request (counted in :attr:`sent`): its answer, whatever the status;
        PlatformUnavailable when the connection is refused, _Retry on a timeout or a reset."""
        import httpx

        self.sent += 1
        try:
            return self._client.request(
                method,
                path,
                params=params,  # type: ignore[arg-type]
                json=json_body,
                content=content,
                headers=headers,
            )
        except httpx.ConnectError as err:
            raise PlatformUnavailable(
                f"cannot reach {self.platform} at {mask_url(self.base)} ({err}); is the "
                "server running and the URL right? What was sent before stays sent: run "
                "the same command again once it answers"
            ) from err
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as err:
            raise _Retry(
                f"{method} {shown}: {type(err).__name__} ({err or 'no answer'}) after "
                f"{self.attempts} attempts"
            ) from err

    def _raise_to_retry(
        self, response: httpx.Response, method: str, shown: str, ok: Sequence[int]
    ) -> None:
        """_Retry for an answer worth another attempt (a 5xx, a 429, unless ``ok`` lists it);
        PlatformUnavailable for a 429 asking to wait more than :data:`RETRY_AFTER_MAX_S`."""
        if response.status_code >= 500 and response.status_code not in ok:
            raise _Retry(
                f"{method} {shown}: {self.platform} answered {response.status_code} "
                f"({_body(response)}) after {self.attempts} attempts"
            )
        if response.status_code == 429 and 429 not in ok:
            asked = retry_after(response)
            if asked is not None and asked > RETRY_AFTER_MAX_S:
                raise PlatformUnavailable(
                    f"{method} {shown}: {self.platform} is rate limiting (429 "
                    f"{_body(response)}) and asks to wait {asked:.0f}s; what was sent "
                    "before stays sent: run the same command again after that"
                )
            raise _Retry(
                f"{method} {shown}: {self.platform} is rate limiting (429 "
                f"{_body(response)}) after {self.attempts} attempts",
                wait_s=asked,
            )

    def _answer(
        self,
        response: httpx.Response,
        method: str,
        shown: str,
        not_found: str | None,
        ok: Sequence[int],
    ) -> httpx.Response:
        """The final answer: ``response`` when it is a 2xx or in ``ok``; else the error its
        status means (PlatformAuthError, PlatformNotFound, ConnectorError)."""
        status = response.status_code
        if 200 <= status < 300 or status in ok:
            return response
        if status in (401, 403):
            what = "refused the credentials" if status == 401 else "does not allow this"
            fix = self.auth_fix or (
                f"set {self.auth_env} to an API key of that {self.platform}"
                if self.auth_env
                else "check the credentials"
            )
            raise PlatformAuthError(
                f"{method} {shown}: {self.platform} {what} ({status} {_body(response)}); {fix}"
                + (" with the rights to write" if status == 403 else "")
            )
        if status == 404:
            raise PlatformNotFound(
                not_found or f"{method} {shown}: not found (404 {_body(response)})"
            )
        raise ConnectorError(f"{method} {shown}: {status} {_body(response)}")

    def get_json(self, path: str, **kwargs: Any) -> Any:
        """GET ``path`` and parse the JSON answer."""
        return self._json(self.request("GET", path, **kwargs), path)

    def post_json(self, path: str, body: Any, **kwargs: Any) -> Any:
        """POST ``body`` as JSON to ``path`` and parse the JSON answer (None when empty)."""
        return self._json(self.request("POST", path, json_body=body, **kwargs), path)

    def _json(self, response: httpx.Response, path: str) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ConnectorError(
                f"{self.url(path, None)}: {self.platform} answered {response.status_code} with "
                f"something that is not JSON ({_body(response)})"
            ) from err

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
