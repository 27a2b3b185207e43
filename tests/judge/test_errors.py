"""The two kinds of error: a JudgeError fails one step, the store gone away stops the batch. The
CLI and the API treat both as the same kind of failure: a message, exit 2 or an HTTP status."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from judge import cli as cli_module
from judge.api.errors import install_error_handlers
from judge.errors import Failure, JudgeError, NotFoundError, UnavailableError
from judge.store import DuplicateError, StoreError, StoreUnavailable

GONE = "postgresql://ann:***@db/judge: cannot connect: run the same command again"


def test_the_store_gone_away_is_no_per_step_error() -> None:
    err = StoreUnavailable(GONE)
    assert isinstance(err, UnavailableError) and isinstance(err, Failure)
    assert not isinstance(err, JudgeError) and not isinstance(err, StoreError)
    # The other store errors are the problem of one request or step.
    assert isinstance(StoreError("no batch"), JudgeError)
    assert isinstance(DuplicateError("exists"), JudgeError)


@pytest.mark.parametrize("err", [StoreUnavailable(GONE), NotFoundError("no item 'q-1'")])
def test_the_cli_prints_a_failure_and_exits_2(
    err: Failure, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(**_: object) -> None:
        raise err

    monkeypatch.setattr(cli_module.cli, "main", fail)
    with pytest.raises(SystemExit) as done:
        cli_module.main()
    assert done.value.code == 2
    assert capsys.readouterr().err == f"error: {err}\n"


def test_the_api_answers_the_store_gone_away_with_503() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/gone")
    def gone() -> None:
        raise StoreUnavailable(GONE)

    @app.get("/missing")
    def missing() -> None:
        raise NotFoundError("no item 'q-1'")

    client = TestClient(app)
    answer = client.get("/gone")
    assert answer.status_code == 503
    assert answer.json() == {"error": {"code": "unavailable", "message": GONE}}
    answer = client.get("/missing")
    assert answer.status_code == 404
    assert answer.json() == {"error": {"code": "not_found", "message": "no item 'q-1'"}}
