"""judge: a calibrated LLM-as-judge service for evaluating AI agents.

The library API (``judge.library``) is re-exported here and loaded on first use, so that
``import judge`` and ``judge --help`` stay cheap::

    import judge

    with judge.open_store("judge.db") as store:
        summary = judge.judge_cases(store, judge.load_cases("runs.jsonl").cases,
                                    rubric="agent-run-success@2", models=["openai/gpt-4o"])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from judge.version import __version__

if TYPE_CHECKING:
    from judge.library import (
        ApiKeyRecord,
        AuditStatus,
        Card,
        CardRecord,
        Case,
        GoldExport,
        InstalledModel,
        ItemView,
        JobManager,
        JudgeOptions,
        JudgeSettings,
        Judgment,
        LoadedCases,
        Outcome,
        PairAgreement,
        Principal,
        ReviewItem,
        RoutingDecision,
        RoutingRun,
        Rubric,
        RunSummary,
        Step,
        Store,
        add_label,
        add_shown_label,
        agreement,
        apply_card,
        audit_cards,
        bad_value,
        blinded,
        check_card_before_judging,
        create_job,
        create_key,
        create_session,
        default_location,
        dumps_gold_record,
        embedded_status,
        end_session,
        export_gold,
        get_card,
        get_job,
        gold_records,
        install_model,
        item_view,
        job_judgments,
        judge_cases,
        list_keys,
        list_rubrics,
        load_card,
        load_cases,
        load_rubric,
        open_store,
        parse_card,
        queue,
        refresh_audit,
        resume_job,
        revoke_key,
        route,
        run_job,
        save_card,
        store_exists,
        verify_key,
        verify_session,
    )

__all__ = [
    "ApiKeyRecord",
    "AuditStatus",
    "Card",
    "CardRecord",
    "Case",
    "GoldExport",
    "InstalledModel",
    "ItemView",
    "JobManager",
    "JudgeOptions",
    "JudgeSettings",
    "Judgment",
    "LoadedCases",
    "Outcome",
    "PairAgreement",
    "Principal",
    "ReviewItem",
    "RoutingDecision",
    "RoutingRun",
    "Rubric",
    "RunSummary",
    "Step",
    "Store",
    "__version__",
    "add_label",
    "add_shown_label",
    "agreement",
    "apply_card",
    "audit_cards",
    "bad_value",
    "blinded",
    "check_card_before_judging",
    "create_job",
    "create_key",
    "create_session",
    "default_location",
    "dumps_gold_record",
    "embedded_status",
    "end_session",
    "export_gold",
    "get_card",
    "get_job",
    "gold_records",
    "install_model",
    "item_view",
    "job_judgments",
    "judge_cases",
    "list_keys",
    "list_rubrics",
    "load_card",
    "load_cases",
    "load_rubric",
    "open_store",
    "parse_card",
    "queue",
    "refresh_audit",
    "resume_job",
    "revoke_key",
    "route",
    "run_job",
    "save_card",
    "store_exists",
    "verify_key",
    "verify_session",
]


def __getattr__(name: str) -> Any:
    """The library API, imported on first use (the package's one lazy boundary)."""
    if name in __all__:
        return getattr(importlib.import_module("judge.library"), name)
    raise AttributeError(f"module 'judge' has no attribute {name!r}")
