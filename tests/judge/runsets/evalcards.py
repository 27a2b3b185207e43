"""Read an eval card and check it against the schema shipped in the package (jsonschema,
Draft 2020-12), and that every null figure in it gives its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from judge.runsets import load_schema
from judge.runsets.evalcard import missing_reasons


def check_card(card: dict[str, Any]) -> dict[str, Any]:
    """``card`` when it is valid against the schema and every null has a reason."""
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(card)
    assert missing_reasons(card) == []
    return card


def valid_card(path: Path) -> dict[str, Any]:
    """The card at ``path``, checked by :func:`check_card`."""
    card = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(card, dict)
    return check_card(card)
