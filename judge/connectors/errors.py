"""What a platform connector raises: each error names the URL (secrets masked) and what to do."""

from __future__ import annotations

from judge.errors import InputError, JudgeError, NotFoundError, UnavailableError


class ConnectorError(JudgeError):
    """A platform refused or failed a request (names the URL, with secrets masked)."""


class TargetError(ConnectorError, InputError):
    """A target URL that no connector reads, or that its connector cannot parse."""


class PlatformNotFound(ConnectorError, NotFoundError):
    """The project, experiment or trace named does not exist on the platform."""


class PlatformAuthError(ConnectorError):
    """The platform refused the credentials (401/403): names the variable to set."""


class PlatformUnavailable(ConnectorError, UnavailableError):
    """The platform cannot be reached, or answered 5xx after the retries. What was sent before
    stays sent: run the same command again once the platform is back."""


class LabelError(ConnectorError, InputError):
    """People's labels that cannot become gold as asked: a label that is neither pass nor fail
    and is not mapped, or an annotation name that no one used."""
