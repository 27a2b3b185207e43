"""Builders shared by the routing, review and API tests: cases, judgment records, cards.

Judgment records here are data (as the store holds them), not a model: tests that need a judge
to answer go through the loopback server.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from calibration.card import (
    BandSection,
    CalibrationSection,
    Card,
    ConfidenceRef,
    GoldRef,
    Guarantee,
    JudgeSection,
    PolicySection,
    RubricRef,
    SelectorRef,
    SlicePolicy,
    StagePolicy,
    build_card,
)
from judge.evidence import SELECTOR_VERSION
from judge.rubrics import load_rubric
from judge.store import Store
from judge.types import Case, Judgment, Provenance, TraceTurn, Verdict

MODEL = "openai/loopback"
T0 = datetime(2025, 6, 1, tzinfo=UTC)


@functools.cache
def rubric_digest(ref: str = "agent-run-success@1") -> str:
    """The digest of a rubric folder in this repository."""
    return load_rubric(ref).digest


def make_case(i: int | str, *, kind: str = "agent_run", **extra: Any) -> Case:
    """A small agent run (or pairwise case) with a diff and a two-turn trace."""
    cid = f"case-{i}"
    if kind == "pairwise":
        return Case(
            id=cid,
            kind="pairwise",
            task=f"Answer question {i} briefly.",
            candidates={"A": f"Answer A to {i}: short.", "B": f"Answer B to {i}: longer text."},
            **extra,
        )
    return Case(
        id=cid,
        kind="agent_run",
        task=f"Fix bug {i} in parser.py so that empty input returns [].",
        diff="--- a/parser.py\n+++ b/parser.py\n@@ -1,2 +1,2 @@\n def parse(s):\n"
        "-    return s.split()\n+    return s.split() if s else []\n",
        trace=[
            TraceTurn(id="m0", role="agent", content="Running the tests: pytest -q"),
            TraceTurn(id="m1", role="observation", content="12 passed in 0.3s"),
        ],
        agent_model="vendor/agent-model-x",
        **extra,
    )


def make_judgment(
    case_id: str,
    p_pos: float | None,
    *,
    label: str | None = None,
    model: str = MODEL,
    rubric: str = "agent-run-success",
    version: int = 1,
    digest: str | None = None,
    selector: str = SELECTOR_VERSION,
    order: str | None = None,
    sample: int = 0,
    variant: int = 0,
    status: str = "ok",
    flagged: Sequence[str] = (),
    cited: Sequence[str] = ("E1",),
) -> Judgment:
    """A stored-judgment record with P(positive label) ``p_pos`` (pass, or A for pairwise)."""
    pairwise = rubric == "pairwise-preference"
    verdict = None
    error = None
    if status in ("ok", "abstain"):
        if pairwise:
            probs = {"A": p_pos or 0.0, "B": 1.0 - (p_pos or 0.0), "tie": 0.0}
            best = label or ("A" if (p_pos or 0) >= 0.5 else "B")
        else:
            probs = {"pass": p_pos or 0.0, "fail": 1.0 - (p_pos or 0.0)}
            best = label or ("pass" if (p_pos or 0) >= 0.5 else "fail")
        if status == "abstain":
            best = "cannot_determine"
        verdict = Verdict(
            label=best,
            label_probs=probs if p_pos is not None else None,
            confidence=max(probs.values()) if p_pos is not None else None,
            cited=list(cited),
            rationale=f"rationale for {case_id}",
        )
    else:
        error = f"{status}: simulated"
    # variant 0 keeps the ids the other tests were written against
    parts: list[object] = [case_id, model, rubric, order, sample, digest]
    key = json.dumps(parts + [variant] if variant else parts)
    jid = "j-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return Judgment(
        id=jid,
        case_id=case_id,
        cache_key="sha256:" + jid,
        status=status,  # type: ignore[arg-type]
        verdict=verdict,
        error=error,
        provenance=Provenance(
            rubric_id=rubric,
            rubric_version=version,
            rubric_digest=digest or rubric_digest(f"{rubric}@{version}"),
            model=model,
            prompt_digest="sha256:prompt-" + case_id,
            evidence_digest="sha256:evidence-" + case_id,
            selector_version=selector,
            token_budget=4000,
            order=order,  # type: ignore[arg-type]
            sample=sample,
            variant=variant,
            evidence_ids=["E1", "E2", "E3"],
            flagged_evidence=list(flagged),
            judge_version="0.1.0",
        ),
        raw_output="{}",
        created_at=T0,
    )


def band(threshold: float | None, n: int = 60, errors: int = 0, alpha: float = 0.05) -> BandSection:
    """A card band section (level 0.05, the delta/2 of delta 0.1)."""
    return BandSection(
        threshold=threshold,
        n=n if threshold is not None else 0,
        errors=errors,
        upper_bound=None,
        coverage=0.3,
        alpha=alpha,
        level=0.05,
        reason=None if threshold is not None else "nothing certifies",
    )


def make_card(
    *,
    model: str = MODEL,
    kind: str = "binary",
    accept: float | None = 0.9,
    reject: float | None = 0.1,
    decide: float | None = None,
    rubric: str = "agent-run-success",
    digest: str | None = None,
    selector: str = SELECTOR_VERSION,
    calibrator: str = "none",
    calibrator_params: dict[str, Any] | None = None,
    per_slice: dict[str, tuple[float | None, float | None]] | None = None,
    slice_key: str | None = None,
    created_at: datetime | None = None,
    valid_days: int = 3650,
    source: str = "judge store",
    version: int = 1,
) -> Card:
    """A sealed card binding the judge ``model`` with the given thresholds (bands n=60, k=0)."""
    bands = (
        {"decide": band(decide)}
        if kind == "pairwise"
        else {"accept": band(accept), "reject": band(reject)}
    )
    slices = {
        value: SlicePolicy(
            auto_accept_threshold=a,
            auto_reject_threshold=r,
            n=120,
            coverage=0.5,
            bands={"accept": band(a), "reject": band(r)},
        )
        for value, (a, r) in (per_slice or {}).items()
    }
    policy = PolicySection(
        guarantee=Guarantee(
            alpha_false_accept=0.05,
            alpha_false_reject=0.05 if kind == "binary" else None,
            delta=0.1,
            method="ltt-fixed-sequence",
            statement="test card",
        ),
        auto_accept_threshold=None if slices or kind == "pairwise" else accept,
        auto_reject_threshold=None if slices or kind == "pairwise" else reject,
        decide_threshold=decide if kind == "pairwise" else None,
        human_review_band=[reject, accept],
        human_review_rule="test",
        coverage=0.6,
        grid="items",
        starts=[30],
        bands={} if slices else bands,
        slice_key=slice_key,
        per_slice=slices,
    )
    ref = f"{rubric}@{version}"
    return build_card(
        judge=JudgeSection(
            model=model,
            source=source,
            prompt_digest="sha256:p",
            rubric=RubricRef(id=rubric, version=version, digest=digest or rubric_digest(ref)),
            evidence_selector=SelectorRef(version=selector, token_budget=4000),
        ),
        calibration=CalibrationSection(
            kind=kind,  # type: ignore[arg-type]
            gold=GoldRef(name="test-gold", digest="sha256:gold", n=300, source="test"),
            confidence=ConfidenceRef(
                source="prob", calibrator=calibrator, calibrator_params=calibrator_params
            ),
        ),
        policy=policy,
        created_at=created_at or datetime.now(UTC) - timedelta(days=1),
        valid_days=valid_days,
    )


def make_cascade_card(
    stages: Sequence[tuple[str, float | None, float | None]], **card_args: Any
) -> Card:
    """A sealed cascade card: (model, accept, reject) per stage, cheapest first (bands n=60,
    k=0), on the rubric and selector of ``make_card``."""
    base = make_card(accept=None, reject=None, **card_args)
    cascade = [
        StagePolicy(
            model=model,
            auto_accept_threshold=a,
            auto_reject_threshold=r,
            n=100,
            coverage=0.5,
            bands={"accept": band(a), "reject": band(r)},
            n_calibration=100,
            n_reached=100 // (k + 1),
            n_decided=40 // (k + 1),
        )
        for k, (model, a, r) in enumerate(stages)
    ]
    policy = base.policy.model_copy(update={"cascade": cascade, "bands": {}})
    judge = base.judge.model_copy(
        update={"model": "cascade(" + " > ".join(m for m, _, _ in stages) + ")"}
    )
    return build_card(
        judge=judge,
        calibration=base.calibration,
        policy=policy,
        created_at=base.created_at,
        valid_days=3650,
    )


def make_panel_card(
    members: Sequence[str],
    *,
    rule: str = "logodds",
    params: dict[str, Any] | None = None,
    **card_args: Any,
) -> Card:
    """A sealed panel card: each member bound like ``make_card``'s judge (its own section), the
    scores combined by ``rule``, the card's thresholds applying to the combined score."""
    base = make_card(**card_args)
    member_sections = [base.judge.model_copy(update={"model": m}) for m in members]
    judge = base.judge.model_copy(
        update={"model": "panel(" + ", ".join(members) + ")", "members": member_sections}
    )
    confidence = base.calibration.confidence.model_copy(
        update={"panel_rule": rule, "panel_params": params}
    )
    calibration = base.calibration.model_copy(update={"confidence": confidence})
    return build_card(
        judge=judge,
        calibration=calibration,
        policy=base.policy,
        created_at=base.created_at,
        valid_days=3650,
    )


def seed_store(store: Store, cases: Sequence[Case], judgments: Sequence[Judgment]) -> None:
    """Put cases and judgment records into the store."""
    for case in cases:
        store.put_case(case)
    for j in judgments:
        store.put(j)


# --- A real service on 127.0.0.1 -----------------------------------------------------------


def verdict_for(p_pass: float) -> Any:
    """A loopback reply: verdict pass/fail by ``p_pass``, with token probabilities."""
    from judge.testing.loopback import Reply, logprobs_for

    label = "pass" if p_pass >= 0.5 else "fail"
    text = json.dumps(
        {"verdict": label, "evidence": ["E1", "E2"], "rationale": f"P(pass) set to {p_pass}."}
    )
    rest = 0.02
    dist = {
        "pass": p_pass * (1 - rest),
        "fail": (1 - p_pass) * (1 - rest),
        "cannot_determine": rest,
    }
    return Reply(content=text, logprobs=logprobs_for(text, dist))


def responder(request: dict[str, Any]) -> Any:
    """Answer with the P(pass) written in the task as ``[p=0.93]`` (0.5 when absent)."""
    import re

    text = json.dumps(request.get("messages", []))
    found = re.search(r"\[p=([01](?:\.\d+)?)\]", text)
    return verdict_for(float(found.group(1)) if found else 0.5)


def scripted_case(i: int, p_pass: float, **extra: Any) -> Case:
    """An agent-run case whose loopback verdict has P(pass) = ``p_pass``."""
    case = make_case(i, **extra)
    return case.model_copy(update={"task": f"{case.task} [p={p_pass}]"})


@dataclass
class RunningService:
    """A judge service running in a thread: its URL, app, keys by name, and store path."""

    url: str
    app: Any
    db: Path
    keys: dict[str, str]
    server: Any


def free_socket() -> socket.socket:
    """A listening-ready TCP socket bound to a free port on 127.0.0.1."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: no 40 ms delayed-ACK stalls on small responses.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def running_service(
    db: Path,
    *,
    keys: Sequence[tuple[str, str]] = (
        ("ops", "admin"),
        ("ann", "reviewer"),
        ("bob", "reviewer"),
        ("cat", "adjudicator"),
        ("dan", "client"),
        ("eve", "client"),
    ),
    **config: Any,
) -> Iterator[RunningService]:
    """Start ``create_app`` under uvicorn on a free 127.0.0.1 port, in a thread; stop it after.

    Keys by name: ops (admin), ann and bob (reviewers), cat (adjudicator), dan and eve
    (clients)."""
    import uvicorn

    from judge.api.app import ServiceConfig, create_app
    from judge.service.access import create_key

    made: dict[str, str] = {}
    with Store(db) as store:
        for name, role in keys:
            made[name] = create_key(store, name, role)[1]
    app = create_app(ServiceConfig(db=db, **config))
    sock = free_socket()
    port = sock.getsockname()[1]
    # As judge serve runs it: forwarded headers are the app's business (--trusted-proxy),
    # not uvicorn's (which would believe them from 127.0.0.1).
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", proxy_headers=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the judge service did not start")
        time.sleep(0.02)
    try:
        yield RunningService(f"http://127.0.0.1:{port}", app, db, made, server)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        app.state.jobs.stop()
        sock.close()


#: The hidden CSRF field of the review page's forms.
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def form_token(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = _CSRF.search(html)
    if found is None:
        raise AssertionError("the page has no CSRF token")
    return found.group(1)


def page_login(http: Any, key: str, next: str = "/review") -> Any:
    """Log in to the review page as a browser would: fetch the form (its CSRF token and nonce
    cookie), post it from the page's own origin. ``http``: an httpx.Client with base_url."""
    form = http.get("/login", params={"next": next})
    origin = str(http.base_url).rstrip("/")
    return http.post(
        "/login",
        data={"key": key, "next": next, "csrf_token": form_token(form.text)},
        headers={"origin": origin},
    )
