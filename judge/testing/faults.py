"""A fault-injecting OpenAI-compatible provider for reliability tests and benchmarks.

:class:`FaultInjector` is a :data:`judge.testing.loopback.Responder`: given to a
:class:`~judge.testing.loopback.LoopbackServer`, it answers each chat-completion request either
with a valid answer or with one injected fault, at configured rates:

=================  ============================================================================
fault              what the client sees
=================  ============================================================================
rate_limit         HTTP 429 with a ``Retry-After`` header
server_error       HTTP 500
reset              the connection aborted with a TCP RST before any response
hang               no answer before the client's timeout (the reply is delayed by ``hang_s``)
malformed_json     HTTP 200 whose body is not JSON
truncated          an answer cut in the middle, ``finish_reason: "length"``
schema_invalid     well-formed JSON that breaks the answer schema (an unknown label, a missing
                   field, an extra field)
=================  ============================================================================

The draw is seeded and independent of timing: the fault for a request depends only on the seed,
the conversation it belongs to (the digest of its first two messages, i.e. the judgment's
``prompt_digest``) and how many requests of that conversation came before. Concurrency changes
the order of requests, never which faults a judgment meets. Every request is logged
(:attr:`FaultInjector.log`) with the fault it got, so a test can check retry budgets and that
no fault ever became a verdict.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import judge
from judge.digests import digest
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case, TraceTurn

#: Faults that the provider layer must treat as provider failures (retry, then infra_error).
INFRA_FAULTS = ("rate_limit", "server_error", "reset", "hang", "malformed_json")
#: Faults where the provider answered but not with a valid structured answer (re-ask, then
#: parse_error).
PARSE_FAULTS = ("truncated", "schema_invalid")
FAULT_KINDS = INFRA_FAULTS + PARSE_FAULTS


@dataclass(frozen=True)
class FaultConfig:
    """Rates of each fault (each in [0, 1], summing to at most 1) and how faults behave."""

    rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    #: Value of the Retry-After header sent with a 429, in seconds.
    retry_after_s: float = 0.0
    #: How long a hanging reply waits before it is sent (set above the client's timeout).
    hang_s: float = 2.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.rates) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {unknown}; use some of {list(FAULT_KINDS)}")
        if any(not 0.0 <= r <= 1.0 for r in self.rates.values()):
            raise ValueError("every fault rate must be between 0 and 1")
        if sum(self.rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates sum to {sum(self.rates.values()):.3f} > 1")

    @classmethod
    def uniform(cls, total: float, *, seed: int = 0, **kwargs: Any) -> FaultConfig:
        """``total`` split evenly over every fault kind."""
        share = total / len(FAULT_KINDS)
        return cls(rates={kind: share for kind in FAULT_KINDS}, seed=seed, **kwargs)

    @property
    def total(self) -> float:
        """The probability that a request gets some fault."""
        return float(sum(self.rates.values()))


# --- fault builders: a registry from fault kind to the reply that produces it --------------

#: (config, the valid answer, a second seeded draw in [0, 1)) -> the faulty reply.
FaultBuilder = Callable[[FaultConfig, str, float], Reply]


def _rate_limit(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(
        status=429,
        content="rate limited (injected)",
        headers={"Retry-After": f"{config.retry_after_s:g}"},
    )


def _server_error(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(status=500, content="internal error (injected)")


def _reset(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(drop=True, reset=True)


def _hang(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(content=answer, delay_s=config.hang_s)


def _malformed_json(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(raw_body=b'{"id": "chatcmpl-injected", "object": "chat.completion", "choi')


def _truncated(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(content=answer[: max(1, len(answer) // 2)], finish_reason="length")


#: Answers that parse as JSON but break the schema, chosen by the draw.
SCHEMA_INVALID_ANSWERS = (
    '{"verdict": "maybe", "evidence": [], "rationale": "Not one of the labels."}',
    '{"evidence": ["E1"], "rationale": "The verdict is missing."}',
    '{"verdict": "pass", "evidence": ["E1"], "rationale": "ok", "score": 10}',
    '["pass", "E1"]',
)


def _schema_invalid(config: FaultConfig, answer: str, u: float) -> Reply:
    return Reply(content=SCHEMA_INVALID_ANSWERS[int(u * len(SCHEMA_INVALID_ANSWERS))])


FAULTS: Mapping[str, FaultBuilder] = MappingProxyType(
    {
        "rate_limit": _rate_limit,
        "server_error": _server_error,
        "reset": _reset,
        "hang": _hang,
        "malformed_json": _malformed_json,
        "truncated": _truncated,
        "schema_invalid": _schema_invalid,
    }
)


# --- the injector ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultEvent:
    """One request as the injector saw it."""

    index: int  # order of arrival, from 0
    conversation: str  # digest of the first two messages (= the judgment's prompt_digest)
    attempt: int  # 0 for the first request of this conversation, 1 for the next, ...
    fault: str | None  # None: a valid answer was sent
    content: str | None  # the answer text sent (None for HTTP-level faults)


def conversation_key(request: Mapping[str, Any]) -> str:
    """The digest of a request's first two messages (system and user): the judgment's
    ``prompt_digest``, shared by its retries and re-asks."""
    messages = request.get("messages") or []
    return digest(list(messages)[:2])


def draw(seed: int, conversation: str, attempt: int) -> float:
    """A number in [0, 1) fixed by (seed, conversation, attempt)."""
    data = f"{seed}:{conversation}:{attempt}".encode()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big") / 2.0**64


AnswerFn = Callable[[Mapping[str, Any]], str]


def default_answer(request: Mapping[str, Any]) -> str:
    """A valid binary answer citing E1."""
    return '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows the task done."}'


class FaultInjector:
    """A loopback responder that injects seeded faults and logs every request."""

    def __init__(self, config: FaultConfig, answer: AnswerFn = default_answer) -> None:
        self.config = config
        self.answer = answer
        self.log: list[FaultEvent] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def choose(self, conversation: str, attempt: int) -> str | None:
        """The fault for this request, or None for a valid answer."""
        u = draw(self.config.seed, conversation, attempt)
        edge = 0.0
        for kind in FAULT_KINDS:
            edge += self.config.rates.get(kind, 0.0)
            if u < edge:
                return kind
        return None

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Answer one request (the LoopbackServer responder protocol)."""
        conversation = conversation_key(request)
        with self._lock:
            attempt = self._seen[conversation]
            self._seen[conversation] += 1
            index = len(self.log)
            fault = self.choose(conversation, attempt)
            answer = self.answer(request)
            if fault is None:
                reply = Reply(content=answer)
            else:
                u = draw(self.config.seed + 1, conversation, attempt)
                reply = FAULTS[fault](self.config, answer, u)
            sent = reply.content if reply.status == 200 and reply.raw_body is None else None
            self.log.append(FaultEvent(index, conversation, attempt, fault, sent))
        return reply

    def by_conversation(self) -> dict[str, list[FaultEvent]]:
        """The log grouped by conversation, each in arrival order."""
        with self._lock:
            events = list(self.log)
        out: dict[str, list[FaultEvent]] = {}
        for event in events:
            out.setdefault(event.conversation, []).append(event)
        return out

    def counts(self) -> Counter[str]:
        """How many requests got each fault ("none" for valid answers)."""
        with self._lock:
            return Counter(event.fault or "none" for event in self.log)


def label_of(content: str | None) -> str | None:
    """The verdict label of a valid answer text, or None."""
    if content is None:
        return None
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return None
    return str(data["verdict"]) if isinstance(data, dict) and "verdict" in data else None


# --- a fault campaign: many judgments through the Runner, then every property checked --------

#: The verdict each campaign case expects, cycled by case number.
CAMPAIGN_LABELS = (
    "pass",
    "fail",
    "pass",
    "fail",
    "pass",
    "fail",
    "pass",
    "fail",
    "pass",
    "cannot_determine",
)
_EXPECT = "expected-verdict="


def campaign_cases(n: int) -> list[Any]:
    """``n`` small agent runs; each task names the verdict the scripted judge gives it."""

    cases = []
    for i in range(n):
        label = CAMPAIGN_LABELS[i % len(CAMPAIGN_LABELS)]
        cases.append(
            Case(
                id=f"fault-{i:05d}",
                kind="agent_run",
                task=f"Task {i}: make parse() return [] on empty input. {_EXPECT}{label}",
                diff="--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-    return s.split()\n"
                "+    return s.split() if s else []\n",
                trace=[
                    TraceTurn(id="t0", role="agent", content="Running: pytest -q"),
                    TraceTurn(id="t1", role="observation", content=f"{i % 7 + 1} passed"),
                ],
            )
        )
    return cases


def campaign_answer(request: Mapping[str, Any]) -> str:
    """The valid answer for a campaign request: the verdict its task names."""
    messages = request.get("messages") or []
    user = str(messages[1].get("content", "")) if len(messages) > 1 else ""
    at = user.find(_EXPECT)
    label = user[at + len(_EXPECT) :].split()[0].strip("<>\"'") if at >= 0 else "pass"
    return json.dumps({"verdict": label, "evidence": ["E1"], "rationale": "Scripted answer."})


@dataclass
class CampaignReport:
    """What a fault campaign did, and every property it broke (``violations``)."""

    planned: int
    stored: int
    distinct_cases: int
    statuses: Counter[str]
    requests: int
    faults: Counter[str]
    retry_budget: int
    max_requests_per_judgment: int
    seconds: float
    violations: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One paragraph for people."""
        injected = sum(n for k, n in self.faults.items() if k != "none")
        return (
            f"{self.planned} planned, {self.stored} stored ({self.distinct_cases} distinct "
            f"cases); statuses {dict(sorted(self.statuses.items()))}; {self.requests} provider "
            f"requests, {injected} with an injected fault ({injected / max(1, self.requests):.1%})"
            f": {dict(sorted(self.faults.items()))}; at most {self.max_requests_per_judgment} "
            f"requests for one judgment (budget {self.retry_budget}); {self.seconds:.1f}s; "
            f"{len(self.violations)} violation(s)"
        )


def check_campaign(
    judgments: list[Any],
    injector: FaultInjector,
    *,
    planned: int,
    max_attempts: int,
    max_reasks: int,
    seconds: float = 0.0,
) -> CampaignReport:
    """Check every property of a finished campaign against the injector's request log.

    - every planned judgment is stored exactly once, with one status;
    - a judgment's requests stay within ``max_attempts * (1 + max_reasks)``;
    - ``ok``/``abstain`` only when the last request got a valid answer, with its label;
    - ``parse_error`` only after a parse fault, ``infra_error`` only after exactly
      ``max_attempts`` provider faults; neither carries a verdict;
    - every conversation the server saw ended in a stored judgment.
    """
    budget = max_attempts * (1 + max_reasks)
    conversations = injector.by_conversation()
    violations: list[str] = []
    statuses: Counter[str] = Counter(j.status for j in judgments)
    case_ids = [j.case_id for j in judgments]
    if len(judgments) != planned:
        violations.append(f"{len(judgments)} judgments stored, {planned} planned")
    if len(set(case_ids)) != len(case_ids):
        dupes = sorted(c for c, n in Counter(case_ids).items() if n > 1)
        violations.append(f"duplicated cases: {dupes[:5]}")
    stored_conversations = {j.provenance.prompt_digest for j in judgments}
    for j in judgments:
        events = conversations.get(j.provenance.prompt_digest, [])
        violations += _judgment_violations(j, events, budget=budget, max_attempts=max_attempts)
    lost = set(conversations) - stored_conversations
    if lost:
        violations.append(
            f"{len(lost)} conversation(s) reached the server but no judgment was stored"
        )
    return CampaignReport(
        planned=planned,
        stored=len(judgments),
        distinct_cases=len(set(case_ids)),
        statuses=statuses,
        requests=len(injector.log),
        faults=injector.counts(),
        retry_budget=budget,
        max_requests_per_judgment=max((len(v) for v in conversations.values()), default=0),
        seconds=seconds,
        violations=violations,
    )


def _judgment_violations(
    j: Any, events: list[FaultEvent], *, budget: int, max_attempts: int
) -> list[str]:
    """What is wrong with one stored judgment given the requests of its conversation (see
    :func:`check_campaign`)."""
    where = f"{j.case_id} ({j.status})"
    if not events:
        return [f"{where}: stored without any provider request"]
    found = []
    if len(events) > budget:
        found.append(f"{where}: {len(events)} requests > budget {budget}")
    last = events[-1]
    n_infra = sum(1 for e in events if e.fault in INFRA_FAULTS)
    if j.status in ("ok", "abstain"):
        expected = label_of(last.content) if last.fault is None else None
        label = j.verdict.label if j.verdict is not None else None
        if last.fault is not None or expected is None or label != expected:
            found.append(
                f"{where}: verdict {label!r} but the last request got "
                f"{last.fault or 'answer ' + repr(expected)}"
            )
        if n_infra >= max_attempts:
            found.append(f"{where}: answered after {n_infra} provider faults")
    elif j.status in ("parse_error", "infra_error"):
        faults = PARSE_FAULTS if j.status == "parse_error" else INFRA_FAULTS
        if j.verdict is not None or last.fault not in faults:
            found.append(f"{where}: last request got {last.fault or 'a valid answer'}")
        if j.status == "infra_error" and n_infra != max_attempts:
            found.append(f"{where}: gave up after {n_infra} provider faults, budget {max_attempts}")
    else:
        found.append(f"{where}: unknown status")
    return found


@dataclass
class Campaign:
    """A finished campaign: what was stored, and the server's request log."""

    judgments: list[Any]
    injector: FaultInjector
    planned: int
    max_attempts: int
    max_reasks: int
    seconds: float

    def check(self) -> CampaignReport:
        """Every property checked (see :func:`check_campaign`)."""
        return check_campaign(
            self.judgments,
            self.injector,
            planned=self.planned,
            max_attempts=self.max_attempts,
            max_reasks=self.max_reasks,
            seconds=self.seconds,
        )


def execute_campaign(
    db_path: str,
    *,
    n: int,
    fault_rate: float = 0.3,
    seed: int = 0,
    concurrency: int = 32,
    max_attempts: int = 3,
    max_reasks: int = 1,
    timeout_s: float = 3.0,
) -> Campaign:
    """Judge ``n`` campaign cases through the Runner against a fault server.

    The rates are split evenly over every fault kind; backoff is tiny so that a campaign of
    1,000 judgments takes a minute or so, not hours. ``timeout_s`` must stay well above a normal
    reply's latency under load (a valid answer that times out on a busy machine is a real
    provider failure to the client, but the server logged it as answered); a hanging reply
    waits twice as long. Needs OPENAI_API_KEY set (any value: the loopback server does not
    check it).
    """

    config = FaultConfig.uniform(fault_rate, seed=seed, retry_after_s=0.0, hang_s=timeout_s * 2)
    injector = FaultInjector(config, campaign_answer)
    cases = campaign_cases(n)
    with LoopbackServer(injector) as server, judge.open_store(db_path) as store:
        options = judge.JudgeOptions(
            api_base=server.api_base,
            timeout_s=timeout_s,
            max_attempts=max_attempts,
            max_reasks=max_reasks,
            backoff_base_s=0.001,
            backoff_max_s=0.01,
            concurrency=concurrency,
        )
        started = time.perf_counter()
        summary = judge.judge_cases(
            store,
            cases,
            rubric="agent-run-success@1",
            models=["openai/loopback"],
            options=options,
            source="fault campaign",
        )
        seconds = time.perf_counter() - started
        judgments = list(store.judgments())
    steps = len(summary.outcomes) + len(summary.errors)
    return Campaign(judgments, injector, steps, max_attempts, max_reasks, seconds)


def run_campaign(db_path: str, *, n: int, **options: Any) -> CampaignReport:
    """:func:`execute_campaign`, then :func:`check_campaign`."""
    return execute_campaign(db_path, n=n, **options).check()
