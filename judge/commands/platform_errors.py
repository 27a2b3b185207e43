"""How the commands that talk to a platform end on its errors: the message on stderr and an exit
code that says what to do (2: fix the command, the URL or the credentials; 3: the platform is
unreachable or failing, run the same command again later: what was sent stays sent)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

import judge.connectors
from judge.errors import JudgeError

#: A platform that cannot be reached or fails (5xx) after the retries.
EXIT_UNAVAILABLE = 3
#: Anything else judge refuses on purpose (as every command: bad URL, unknown project or trace,
#: credentials refused, a label that is not mapped).
EXIT_ERROR = 2


@contextmanager
def platform_errors() -> Iterator[None]:
    """End the command with the error's message and its exit code."""
    try:
        yield
    except judge.connectors.PlatformUnavailable as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    except JudgeError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_ERROR)
