"""The vocabulary of routing: decisions, and every reason a decision can carry."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

AUTO_DECISIONS: frozenset[str] = frozenset({"auto_accept", "auto_reject", "auto_decide"})


#: Every reason a routing decision can carry, and what it means.
REASONS: Mapping[str, str] = MappingProxyType(
    {
        "in_accept_band": "P(pass) is inside the certified accept band",
        "in_reject_band": "P(pass) is inside the certified reject band",
        "in_decide_band": "the judge's confidence is inside the certified decide band",
        "outside_bands": "the score is outside every certified band",
        "no_certified_band": "the card certifies no band here: every item goes to review",
        "check_failed": "a hard deterministic check failed the run (the composite verdict): "
        "it is rejected with the check's reason, whatever a judge would say",
        "check_fired": "a soft deterministic check fired on the run: a person weighs its evidence",
        "flagged_evidence": "evidence was flagged as instructions aimed at the judge",
        "masked_changed": "the verdict changes when evidence that reads like instructions to "
        "the judge is withheld",
        "masked_missing": "evidence that reads like instructions to the judge was recorded but "
        "the check without it failed or was not run",
        "facts_changed": "the verdict changes when the run is judged from a copy whose untrusted "
        "text (tool outputs, files, pages, messages) is reduced to facts written by code",
        "facts_missing": "the verdict would be decided automatically but its check on the run's "
        "facts-only copy failed or was not run",
        "parse_error": "the judge's answer could not be parsed",
        "provider_failure": "the provider failed after every retry",
        "abstained": "the judge said the evidence shown cannot decide",
        "orders_disagreed": "the two answer orders gave different verdicts",
        "samples_disagreed": "repeated samples gave different verdicts",
        "variants_disagreed": "the rubric's prompt variants gave different verdicts",
        "uncited": "the judge cited no evidence it was shown, so its verdict cannot be checked",
        "unscored": "no verdict with a probability or a usable label",
        "member_missing": "a panel card's member has not judged this case: a panel decides only "
        "with every member's judgment",
        "member_failed": "a panel card's member gave no usable verdict (parse or provider "
        "failure, abstention)",
        "long_trace_probe_failed": "the card says this judge failed the length probe (its "
        "verdict moves when neutral turns are padded in) and this trace is long",
        "stage_missing": "a cascade stage this case reached has not judged it yet (not queued "
        "for people: judge the case with that stage's model and route again)",
    }
)


#: Review reasons that wait for a judge rather than a person: never put in the review queue.
AWAITING_JUDGE: frozenset[str] = frozenset({"stage_missing"})
