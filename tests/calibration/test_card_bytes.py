"""Cards written by the calibration workflow stay byte for byte what they were, on any machine.

The cards under ``tests/data/calibration/cards/`` were written by ``calibrate_rows`` before the
workflow was split into measure, certify and seal and its summaries were built as typed models
(issue "House, second pass"), from the recorded verdicts beside them, with the creation time
fixed. A refactor that changes a number, a key, a key's order or a number's type (1 vs 1.0)
changes the YAML and the card's digest, and fails here. They were written again twice: once when
the numbers that depended on the processor were made not to (the fitted Platt map rounded to 10
significant digits, and the bootstrap's resampled sums made exact: the ECE and Brier intervals
had float32's rounding, in an order that depends on the BLAS kernel), and once when Wilson
bounds were made exactly 0 at k = 0 and 1 at k = n (rounding had left 1.7e-18 or
0.9999999999999999 there; only those bounds and the card digests changed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from calibration.card import Card, parse_card, write_card
from calibration.inputs import load_recorded
from calibration.options import CalibrationOptions
from calibration.workflow import attach_gold, calibrate_rows, unbound
from tests.conftest import DATA, REPO

T0 = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
HERE = DATA / "calibration"
BINARY = HERE / "binary_verdicts.jsonl"
PAIRWISE = HERE / "pairwise_verdicts.jsonl"

CASES: dict[str, tuple[Path, CalibrationOptions]] = {
    "b_slice": (
        BINARY,
        CalibrationOptions(judges=("strong",), slice_key="repo", grid="items", n_boot=200),
    ),
    "b_platt": (
        BINARY,
        CalibrationOptions(judges=("strong",), calibrator="platt", n_boot=200, split_study=4),
    ),
    "b_cascade": (
        BINARY,
        CalibrationOptions(
            judges=("cheap", "strong"),
            cascade=True,
            costs={"cheap": 0.1, "strong": 1.0},
            n_boot=200,
            split_study=3,
        ),
    ),
    "b_panel": (
        BINARY,
        # Written when a panel pooled its judges' rows (the default then); pooled is no longer
        # the default rule, so the case names it: the same procedure writes the same bytes.
        CalibrationOptions(
            judges=("cheap", "strong"),
            panel=True,
            panel_rule="pooled",
            n_boot=200,
            slice_key="repo",
        ),
    ),
    "p_single": (
        PAIRWISE,
        CalibrationOptions(judges=("strong",), n_boot=200, slice_key="category"),
    ),
    "p_cascade": (
        PAIRWISE,
        CalibrationOptions(
            judges=("cheap", "strong"), cascade=True, cascade_mode="shared", n_boot=200
        ),
    ),
}


#: Another processor, as far as one machine can play it: OpenBLAS's kernels for an older x86
#: core, and numpy without its AVX2 and AVX-512 loops (numpy 2 and numpy 1 spell them apart;
#: a name a build does not know is ignored with a warning, as is the BLAS variable).
ANOTHER_PROCESSOR = {
    "OPENBLAS_CORETYPE": "Nehalem",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR AVX2 AVX512F AVX512_SKX",
}


def card_of(name: str) -> Card:
    """The card of case ``name``, calibrated now."""
    path, options = CASES[name]
    rows, gold = attach_gold(load_recorded(path), None, source=str(path))
    result = calibrate_rows(
        rows, gold=gold, judge=unbound("recorded verdicts"), options=options, created_at=T0
    )
    return result.card


@pytest.mark.parametrize("name", sorted(CASES))
def test_card_bytes_are_unchanged(name: str, tmp_path: Path) -> None:
    card = card_of(name)
    expected = (HERE / "cards" / f"{name}.card.yaml").read_text(encoding="utf-8")
    assert card.to_yaml() == expected
    written = tmp_path / "card.yaml"
    assert write_card(card, written) == card.card_digest
    assert written.read_text(encoding="utf-8") == expected
    # Loaded back (digest checked), the card serialises to the same bytes.
    assert parse_card(expected).to_yaml() == expected


@pytest.mark.slow
def test_card_bytes_do_not_depend_on_the_processor(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tests.calibration.test_card_bytes import CASES, card_of\n"
        "for name in CASES:\n"
        "    Path(sys.argv[1], name).write_text(card_of(name).to_yaml(), encoding='utf-8')\n"
    )
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = os.environ | ANOTHER_PROCESSOR | {"PYTHONPATH": path}
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, cwd=REPO, check=True)
    for name in sorted(CASES):
        expected = (HERE / "cards" / f"{name}.card.yaml").read_text(encoding="utf-8")
        assert (tmp_path / name).read_text(encoding="utf-8") == expected, name
