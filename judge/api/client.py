"""A small typed Python client for the judge HTTP API (httpx).

    from judge.api.client import JudgeClient
    with JudgeClient("http://127.0.0.1:8321", api_key) as api:
        job = api.submit_job(cases, rubric="agent-run-success", idempotency_key="batch-7")
        job = api.wait(job.id)
        judgments = api.job_results(job.id)

Every method returns the API's pydantic models (``judge.api.schemas``); an error response raises
:class:`APIError` with the status, the error code and the server's message.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from judge.api.schemas import (
    AgreementResponse,
    AuditStatus,
    CardDetail,
    CardInfo,
    ItemView,
    Job,
    JobList,
    JobResults,
    JudgeResponse,
    LabelList,
    LabelResponse,
    QueueResponse,
    RouteResponse,
    RoutingList,
    WhoAmI,
)
from judge.base import Closing
from judge.errors import JudgeError
from judge.review import PairAgreement
from judge.types import Case, Judgment, ReviewItem, ReviewLabel, RoutingDecision

M = TypeVar("M", bound=BaseModel)


class APIError(JudgeError):
    """An error response: HTTP status, the error code and the message."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class JudgeClient(Closing):
    """Typed calls to one judge service with one API key."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 600.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # --- plumbing ------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            code, message = "http_error", response.text[:500]
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                pass  # not our JSON error shape (a proxy's page): keep the raw text
            retry = response.headers.get("retry-after")
            raise APIError(response.status_code, code, message, float(retry) if retry else None)
        return response

    def _get(self, model: type[M], path: str, **params: Any) -> M:
        clean = {k: v for k, v in params.items() if v is not None}
        return model.model_validate(self._request("GET", path, params=clean).json())

    def _post(self, model: type[M], path: str, body: Any, **kwargs: Any) -> M:
        return model.model_validate(self._request("POST", path, json=body, **kwargs).json())

    # --- access --------------------------------------------------------------------------------
    def whoami(self) -> WhoAmI:
        """The key's name and role."""
        return self._get(WhoAmI, "/v1/whoami")

    def openapi(self) -> dict[str, Any]:
        """The service's OpenAPI schema."""
        data: dict[str, Any] = self._request("GET", "/openapi.json").json()
        return data

    # --- judging -------------------------------------------------------------------------------
    def judge(
        self,
        case: Case | Mapping[str, Any],
        *,
        rubric: str = "agent-run-success",
        models: list[str] | None = None,
        card: str | None = None,
        **options: Any,
    ) -> JudgeResponse:
        """Judge one case now; with ``card`` (a stored card digest), route it too."""
        body = {
            "case": _dump(case),
            "rubric": rubric,
            "models": models,
            "card": card,
            **options,
        }
        return self._post(JudgeResponse, "/v1/judge", body)

    def submit_job(
        self,
        cases: Iterable[Case | Mapping[str, Any]],
        *,
        rubric: str = "agent-run-success",
        models: list[str] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Job:
        """Queue a batch; the same ``idempotency_key`` and body return the same job."""
        body = {"cases": [_dump(c) for c in cases], "rubric": rubric, "models": models, **options}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._post(Job, "/v1/jobs", body, headers=headers)

    def job(self, job_id: str) -> Job:
        """A job's state."""
        return self._get(Job, f"/v1/jobs/{job_id}")

    def jobs(self, *, limit: int = 50, offset: int = 0) -> list[Job]:
        """Jobs, newest first."""
        return self._get(JobList, "/v1/jobs", limit=limit, offset=offset).jobs

    def resume_job(self, job_id: str) -> Job:
        """Run a finished or failed job again (stored judgments are reused)."""
        return self._post(Job, f"/v1/jobs/{job_id}/resume", None)

    def wait(self, job_id: str, *, timeout: float = 600.0, poll: float = 0.2) -> Job:
        """Poll until the job is done or failed (APIError 408-like TimeoutError otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.job(job_id)
            if state.status in ("done", "failed"):
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {state.status} after {timeout}s")
            time.sleep(poll)

    def job_results(self, job_id: str, *, page: int = 500) -> list[Judgment]:
        """Every judgment of a job (all pages)."""
        out: list[Judgment] = []
        offset = 0
        while True:
            got = self._get(JobResults, f"/v1/jobs/{job_id}/results", limit=page, offset=offset)
            out += got.judgments
            offset += page
            if offset >= got.total:
                return out

    # --- cards and routing ---------------------------------------------------------------------
    def upload_card(self, yaml_text: str) -> CardInfo:
        """Store a card (YAML as written by ``judge calibrate``)."""
        return self._post(CardInfo, "/v1/cards", {"yaml": yaml_text})

    def cards(self) -> list[CardInfo]:
        """Stored cards."""
        data = self._request("GET", "/v1/cards").json()
        return [CardInfo.model_validate(x) for x in data]

    def card(self, digest: str) -> CardDetail:
        """One stored card with its YAML."""
        return self._get(CardDetail, f"/v1/cards/{digest}")

    def card_audit(self, digest: str) -> AuditStatus:
        """A card's live band bounds from audit labels."""
        return self._get(AuditStatus, f"/v1/cards/{digest}/audit")

    def route(
        self,
        card: str,
        *,
        job_id: str | None = None,
        audit_fraction: float = 0.05,
        double_fraction: float = 0.0,
        seed: int = 0,
        blind: bool = False,
    ) -> RouteResponse:
        """Apply a stored card to the stored judgments (or one job's)."""
        body = {
            "card": card,
            "job_id": job_id,
            "audit_fraction": audit_fraction,
            "double_fraction": double_fraction,
            "seed": seed,
            "blind": blind,
        }
        return self._post(RouteResponse, "/v1/routing", body)

    def routing(
        self,
        *,
        card: str | None = None,
        decision: str | None = None,
        case_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RoutingDecision]:
        """Stored routing decisions."""
        got = self._get(
            RoutingList,
            "/v1/routing",
            card=card,
            decision=decision,
            case_id=case_id,
            limit=limit,
            offset=offset,
        )
        return got.decisions

    # --- review --------------------------------------------------------------------------------
    def review_queue(self, *, mine: bool = True, limit: int = 50) -> list[ReviewItem]:
        """Items awaiting a label, in priority order."""
        return self._get(QueueResponse, "/v1/review/queue", mine=mine, limit=limit).items

    def review_item(self, item_id: str) -> ItemView:
        """What a reviewer sees for an item."""
        return self._get(ItemView, f"/v1/review/items/{item_id}")

    def label(self, item_id: str, label: str, note: str = "") -> LabelResponse:
        """Label an item in the canonical frame, as this key's reviewer."""
        body = {"label": label, "note": note}
        return self._post(LabelResponse, f"/v1/review/items/{item_id}/labels", body)

    def labels(self, item_id: str | None = None) -> list[ReviewLabel]:
        """Labels given."""
        return self._get(LabelList, "/v1/review/labels", item_id=item_id).labels

    def agreement(self) -> list[PairAgreement]:
        """Raw agreement and Cohen's kappa per reviewer pair."""
        return self._get(AgreementResponse, "/v1/review/agreement").pairs

    def export_gold(self, *, license: str = "unspecified") -> str:
        """Finished review items as gold JSONL text (``calibration.gold`` format, with lineage)."""
        return self._request("GET", "/v1/review/gold", params={"license": license}).text


def _dump(case: Case | Mapping[str, Any]) -> Any:
    return case.model_dump(mode="json") if isinstance(case, Case) else dict(case)
