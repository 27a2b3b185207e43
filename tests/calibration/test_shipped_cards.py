"""calibration/cards/: the shipped cards of the default judge are intact and bind what ships."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibration.card import load_card, verify_card
from judge.defaults import DEFAULT_MODEL
from judge.evidence import SELECTOR_VERSION
from judge.rubrics import load_rubric
from tests.conftest import REPO

CARDS = sorted((REPO / "calibration" / "cards").glob("*.yaml"))


def test_there_is_a_card_for_each_dev_gold_file() -> None:
    names = {p.name for p in CARDS}
    for dev in ("swebench_verified_dev", "taubench_airline_dev", "llmbar_natural"):
        assert any(dev in n for n in names), f"no shipped card for {dev}"


@pytest.mark.parametrize("path", CARDS, ids=[p.name for p in CARDS])
def test_shipped_card_is_intact_and_binds_the_shipped_rubric(path: Path) -> None:
    card = load_card(path)  # refuses an edited card (digest mismatch)
    rubric = load_rubric(f"{card.judge.rubric.id}@{card.judge.rubric.version}")
    # The rubric files it was calibrated with are the ones in rubrics/ (published versions are
    # immutable), with the selector in use; expiry is checked at its calibration time, since
    # a shipped card is a record of a measurement, not a licence to route forever.
    verify_card(
        card,
        judge_model=DEFAULT_MODEL,
        rubric_digest=rubric.digest,
        selector_version=SELECTOR_VERSION,
        now=card.created_at,
    )
