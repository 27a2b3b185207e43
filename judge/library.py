"""The library API: the typed functions a Python user calls, and every interface calls.

``judge`` (the package) re-exports these names lazily, so ``import judge`` stays cheap::

    import judge

    with judge.open_store("judge.db") as store:
        cases = judge.load_cases("runs.jsonl").cases
        summary = judge.judge_cases(store, cases, rubric="agent-run-success@2",
                                    models=["openai/gpt-4o"])
        run = judge.route(store, judge.load_card("card.yaml"))

The click commands (``judge.commands``), the HTTP routes (``judge.api``), ``judge demo`` and the
benchmark scripts call these functions and nothing private below them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from calibration.card import Card, load_card, parse_card
from calibration.gold import GoldSet, load_gold
from calibration.gold import dumps_record as dumps_gold_record
from calibration.workflow import CalibrationOptions, CompareOptions
from judge.access import (
    Principal,
    create_key,
    create_session,
    end_session,
    list_keys,
    revoke_key,
    verify_key,
    verify_session,
)
from judge.calibrating import (
    CalibrationRun,
    VerdictSource,
    calibrate_judge,
    check_card,
    compare_judges,
    load_store_rows,
)
from judge.cases import LoadedCases, bad_value, read_jsonl
from judge.cases import load_cases as _load_cases
from judge.jobs import (
    JobManager,
    JudgeSettings,
    create_job,
    get_job,
    job_judgments,
    list_jobs,
    resume_job,
    run_job,
)
from judge.judging import (
    JudgeOptions,
    Outcome,
    RayOptions,
    RunSummary,
    Step,
    check_case_ids,
    judge_cases,
)
from judge.local.weights import InstalledModel, embedded_status, install_model
from judge.otel_export import SEMCONV_VERSION, export_store
from judge.providers import check_models, read_router_config
from judge.review import (
    GoldExport,
    ItemView,
    PairAgreement,
    RoutingRun,
    StoredPlan,
    add_label,
    add_shown_label,
    agreement,
    apply_card,
    blinded,
    export_gold,
    gold_records,
    item_view,
    load_plan,
    queue,
)
from judge.routing import (
    AuditStatus,
    check_card_before_judging,
    get_card,
    refresh_audit,
    save_card,
)
from judge.rubrics import Rubric, list_rubrics, load_rubric
from judge.runsets import (
    GateResult,
    LoadedRuns,
    Run,
    RunSetReport,
    load_report,
    load_runs,
    runset_from_gold,
    write_report,
    write_runs,
)
from judge.runsets.labels import HumanLabels, PlanResult, load_labels, plan_review
from judge.runsets.render import headline_markdown
from judge.runsets.workflow import ReportOptions, gate, score_runs
from judge.store import Store, default_location, mask_url, store_exists
from judge.traces import ImportResult, formats, get_importer, import_file
from judge.traces.tasks import read_tasks, task_text
from judge.transfer import CopyReport, MigrationReport, TableCopy, copy_store, migrate_store
from judge.types import ApiKeyRecord, CardRecord, Case, Judgment, ReviewItem, RoutingDecision

__all__ = [
    "ApiKeyRecord",
    "AuditStatus",
    "CalibrationOptions",
    "CalibrationRun",
    "Card",
    "CardRecord",
    "Case",
    "CompareOptions",
    "CopyReport",
    "GateResult",
    "GoldExport",
    "GoldSet",
    "HumanLabels",
    "ImportResult",
    "InstalledModel",
    "ItemView",
    "JobManager",
    "JudgeOptions",
    "JudgeSettings",
    "Judgment",
    "LoadedCases",
    "LoadedRuns",
    "MigrationReport",
    "Outcome",
    "PairAgreement",
    "PlanResult",
    "Principal",
    "RayOptions",
    "ReportOptions",
    "ReviewItem",
    "RoutingDecision",
    "RoutingRun",
    "Rubric",
    "Run",
    "RunSetReport",
    "RunSummary",
    "SEMCONV_VERSION",
    "Step",
    "Store",
    "StoredPlan",
    "TableCopy",
    "VerdictSource",
    "add_label",
    "add_shown_label",
    "agreement",
    "apply_card",
    "audit_cards",
    "bad_value",
    "blinded",
    "calibrate",
    "calibrate_judge",
    "check_card",
    "check_card_before_judging",
    "check_models",
    "compare_judges",
    "copy_store",
    "create_job",
    "create_key",
    "create_session",
    "default_location",
    "dumps_gold_record",
    "embedded_status",
    "end_session",
    "export_gold",
    "export_store",
    "formats",
    "gate",
    "get_card",
    "get_importer",
    "get_job",
    "gold_records",
    "headline_markdown",
    "import_file",
    "install_model",
    "item_view",
    "job_judgments",
    "check_case_ids",
    "judge_cases",
    "list_jobs",
    "list_keys",
    "list_rubrics",
    "load_card",
    "load_cases",
    "load_gold",
    "load_labels",
    "load_plan",
    "load_report",
    "load_rubric",
    "load_runs",
    "load_store_rows",
    "mask_url",
    "migrate_store",
    "open_store",
    "parse_card",
    "plan_review",
    "queue",
    "read_jsonl",
    "read_router_config",
    "read_tasks",
    "refresh_audit",
    "resume_job",
    "revoke_key",
    "route",
    "run_job",
    "runset_from_gold",
    "save_card",
    "score_runs",
    "store_exists",
    "take_rate_token",
    "task_text",
    "verify_key",
    "verify_session",
    "write_report",
    "write_runs",
]


def open_store(location: str | Path | None = None) -> Store:
    """Open (and migrate) the store at ``location``: a SQLite file path or a database URL;
    default ``$JUDGE_DB`` or ``judge.db``. Use it as a context manager to close it."""
    return Store(location if location is not None else default_location())


def take_rate_token(store: Store, key_id: str, *, rate: float, burst: int) -> float:
    """Take a request token from API key ``key_id``'s bucket in the store (``rate`` a second,
    up to ``burst``), shared by every service replica on it: 0.0 when the request may go on,
    else the seconds until it may."""
    return store.take_rate_token(key_id, rate=rate, burst=burst, now=time.time())


def load_cases(path: str | Path, *, limit: int | None = None) -> LoadedCases:
    """Validate a JSONL of cases (gold format): the valid cases, and each invalid record's
    error naming its line and field."""
    return _load_cases(Path(path), limit=limit)


def route(
    store: Store,
    card: Card | str | Path,
    *,
    judgments: Sequence[Judgment] | None = None,
    audit_fraction: float = 0.05,
    seed: int = 0,
    double_fraction: float = 0.0,
    blind: bool = False,
    now: datetime | None = None,
) -> RoutingRun:
    """Apply a calibration card (or the path of one) to the store's judgments, or to
    ``judgments``: decide auto-accept, auto-reject, auto-decide or review for each (case, judge),
    keep the decisions, and queue review items and a seeded fraction of audits.

    Refuses (CardError) a card that binds another judge, has expired or was flagged stale."""
    chosen = card if isinstance(card, Card) else load_card(card)
    return apply_card(
        store,
        chosen,
        judgments=judgments,
        audit_fraction=audit_fraction,
        seed=seed,
        double_fraction=double_fraction,
        blind=blind,
        now=now,
    )


def audit_cards(store: Store, digest: str | None = None) -> list[AuditStatus]:
    """Each stored card's (or one card's) live band error bounds from the audit labels so far;
    a card whose bound exceeds its alpha is flagged stale (routing with it is then refused)."""
    digests = [digest] if digest else [record.digest for record in store.card_records()]
    return [refresh_audit(store, d) for d in digests]


def calibrate(
    *,
    db: str | Path | None = None,
    judgments: str | Path | None = None,
    recorded: str | Path | None = None,
    gold: str | Path | None = None,
    options: CalibrationOptions | None = None,
    rubric: str | None = None,
    out: str | Path | None = None,
    report: str | Path | None = None,
) -> CalibrationRun:
    """Measure a judge against gold and write its calibration card (and an HTML report).

    The verdicts come from exactly one of a judge store (``db``), a JSONL of judgments or a
    JSONL of recorded verdicts; ``gold`` is a gold JSONL (None: the labels the verdicts carry).
    ``options`` set the guarantee (alpha, delta), the threshold grid, cascades and panels."""
    source = VerdictSource(
        db=None if db is None else str(db),
        judgments=None if judgments is None else str(judgments),
        recorded=None if recorded is None else str(recorded),
        rubric=rubric,
    )
    return calibrate_judge(
        source,
        options or CalibrationOptions(),
        gold=None if gold is None else str(gold),
        out=out,
        report=report,
    )
