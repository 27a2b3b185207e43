"""judge.urls: every URL, database location and header judge prints goes through one masker.
Each form a secret can take in a URL or a libpq connection string is masked; the rest is kept
as written; odd input never raises."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

import judge.connectors
import judge.store
from judge.cli import cli
from judge.connectors import http
from judge.store import postgres
from judge.urls import MaskingFilter, mask_header, mask_text, mask_url, mask_urls_in


def test_there_is_one_masker() -> None:
    assert judge.store.mask_url is mask_url
    assert judge.connectors.mask_url is mask_url
    assert http.mask_url is mask_url
    assert postgres.mask_url is mask_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # The bug: a password given as a query parameter of a database URL was printed.
        ("postgresql://judge@db/judge?password=s3cret", "postgresql://judge@db/judge?password=***"),
        ("postgresql://ann:s3cret@db:5432/judge", "postgresql://ann:***@db:5432/judge"),
        ("postgres://ann:s3cret@db/judge", "postgres://ann:***@db/judge"),
        # A password holding '@' or ':' is masked whole.
        ("postgresql://ann:p@ss:w@db/judge", "postgresql://ann:***@db/judge"),
        ("postgresql://ann:s3%40cret@db/judge", "postgresql://ann:***@db/judge"),
        # Several hosts (libpq), and the scheme's case kept.
        ("POSTGRESQL://ann:pw@h1:5432,h2:5433/judge", "POSTGRESQL://ann:***@h1:5432,h2:5433/judge"),
        # libpq's secret parameters, in any case, beside parameters that are not secret.
        (
            "postgresql:///judge?host=/run/pg&sslpassword=k3y&sslmode=require",
            "postgresql:///judge?host=/run/pg&sslpassword=***&sslmode=require",
        ),
        ("postgresql://db/judge?PassWord=s3cret", "postgresql://db/judge?PassWord=***"),
        # passfile and sslkey are paths of files: shown.
        (
            "postgresql://db/judge?passfile=/home/ann/.pgpass&sslkey=/k/client.key",
            "postgresql://db/judge?passfile=/home/ann/.pgpass&sslkey=/k/client.key",
        ),
        # Percent-encoded names and values.
        ("postgresql://db/judge?pass%77ord=s3%20cret", "postgresql://db/judge?pass%77ord=***"),
        ("https://h/x?api%5Fkey=abc", "https://h/x?api%5Fkey=***"),
        # The platforms' tokens and keys.
        ("http://h/x?api_key=abc&limit=5&token=t", "http://h/x?api_key=***&limit=5&token=***"),
        (
            "https://h/x?access_token=a&auth_token=b&apikey=c&key=d&secret=e&client_secret=f",
            "https://h/x?access_token=***&auth_token=***&apikey=***&key=***&secret=***"
            "&client_secret=***",
        ),
        (
            "https://b.s3.amazonaws.com/o?X-Amz-Credential=c&X-Amz-Signature=s&X-Amz-Date=d",
            "https://b.s3.amazonaws.com/o?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Date=d",
        ),
        ("https://h/x?sig=abc&sv=2024", "https://h/x?sig=***&sv=2024"),
        # A token in the fragment (OAuth's implicit flow) and after a ';'.
        ("https://h/cb#access_token=abc&state=1", "https://h/cb#access_token=***&state=1"),
        ("https://h/x?a=1;token=abc&b=2", "https://h/x?a=1;token=***&b=2"),
        # The userinfo of a platform URL: a password, or a lone user that is then a token.
        ("phoenix+https://u:pw@h/projects/a", "phoenix+https://u:***@h/projects/a"),
        ("https://TOKEN@h/x", "https://***@h/x"),
        # Nothing secret: returned as written.
        ("postgresql://db/judge", "postgresql://db/judge"),
        ("postgresql://judge@db/judge", "postgresql://judge@db/judge"),
        ("http://h/x?trace_id=abc", "http://h/x?trace_id=abc"),
        ("http://h/x?q=a%20b&password=", "http://h/x?q=a%20b&password="),
        ("judge.db", "judge.db"),
        ("runs/a=b/judge.db", "runs/a=b/judge.db"),
        ("", ""),
    ],
)
def test_each_form_of_a_secret_in_a_url_is_masked(url: str, shown: str) -> None:
    assert mask_url(url) == shown


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("host=db password=s3cret user=ann", "host=db password=*** user=ann"),
        ("host=db PASSWORD = s3cret dbname=judge", "host=db PASSWORD = *** dbname=judge"),
        (r"host=db password='a b\'c' sslmode=require", "host=db password=*** sslmode=require"),
        ("host=db password='never closed", "host=db password=***"),
        (
            "host=db sslpassword=k passfile=/p/.pgpass",
            "host=db sslpassword=*** passfile=/p/.pgpass",
        ),
        # libpq expands a URL given as dbname.
        (
            "dbname=postgresql://ann:pw@db/judge user=x",
            "dbname=postgresql://ann:***@db/judge user=x",
        ),
        # A bare query string.
        ("a=1&token=abc", "a=1&token=***"),
        ("host=db dbname=judge", "host=db dbname=judge"),
    ],
)
def test_libpq_keyword_value_strings_are_masked(dsn: str, shown: str) -> None:
    assert mask_url(dsn) == shown


@pytest.mark.parametrize(
    "odd",
    ["http://[::1", "http://[bad/x?password=s3cret", "://", "?", "#", "@", "=", "a=", None, 3],
)
def test_odd_input_never_raises_and_never_shows_a_password(odd: object) -> None:
    shown = mask_url(odd)
    assert isinstance(shown, str)
    assert "s3cret" not in shown


def test_an_object_that_cannot_be_shown_is_unparsable() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert mask_url(Broken()) == "<unparsable URL>"


def test_the_secrets_of_a_url_are_masked_in_another_text() -> None:
    url = "postgresql://ann:s3%zzcret@db/judge?sslpassword=k3y%21"
    message = 'invalid percent-encoded token: "s3%zzcret"; sslpassword k3y! refused'
    assert (
        mask_text(message, url) == 'invalid percent-encoded token: "***"; sslpassword *** refused'
    )
    assert mask_text("password 'a b' refused", r"host=db password='a b'") == "password *** refused"
    assert mask_text("password a b refused", r"host=db password='a b'") == "password *** refused"
    assert mask_text("nothing to hide", "postgresql://db/judge") == "nothing to hide"


def test_headers_are_masked_by_name() -> None:
    assert mask_header("Authorization", "Bearer abc") == "Bearer ***"
    assert mask_header("proxy-authorization", "Basic dTpw") == "Basic ***"
    assert mask_header("Authorization", "abc") == "***"
    assert mask_header("X-Api-Key", "abc") == "***"
    assert mask_header("Cookie", "session=abc") == "***"
    assert mask_header("Accept", "application/json") == "application/json"


def test_an_invalid_database_url_error_does_not_quote_the_password() -> None:
    """libpq quotes the part of a URL it cannot decode: the message masks it."""
    pytest.importorskip("psycopg")
    with pytest.raises(judge.store.StoreError) as err:
        judge.store.Store("postgresql://ann:s3%zzcret@127.0.0.1:1/judge")
    assert "not a valid PostgreSQL URL" in str(err.value)
    assert "zzcret" not in str(err.value)
    assert err.value.__suppress_context__  # a traceback does not show libpq's message either


def test_urls_in_a_text_and_in_a_log_record_are_masked() -> None:
    line = 'HTTP Request: GET https://h/v1/x?key=AIza123&alt=sse "HTTP/1.1 200 OK"'
    assert (
        mask_urls_in(line) == 'HTTP Request: GET https://h/v1/x?key=***&alt=sse "HTTP/1.1 200 OK"'
    )
    assert mask_urls_in("no URL here, key=abc") == "no URL here, key=abc"
    record = logging.LogRecord(
        "httpx", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("GET", "http://u:pw@h/x"), None
    )
    assert MaskingFilter().filter(record)
    assert record.getMessage() == "HTTP Request: GET http://u:***@h/x"
    plain = logging.LogRecord("judge", logging.INFO, __file__, 1, "job %s done", ("j1",), None)
    assert MaskingFilter().filter(plain) and plain.args == ("j1",)


def test_judge_serve_masks_the_urls_of_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``judge serve`` logs at INFO, where httpx writes every request's URL, query included."""
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    root = logging.getLogger()
    try:
        result = CliRunner().invoke(
            cli, ["serve", "--db", str(tmp_path / "j.db"), "--model", "openai/gpt-4o-mini"]
        )
        assert result.exit_code == 0, result.output
        assert any(isinstance(f, MaskingFilter) for h in root.handlers for f in h.filters)
    finally:
        for handler in root.handlers:
            handler.filters = [f for f in handler.filters if not isinstance(f, MaskingFilter)]
