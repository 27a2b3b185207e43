"""The strict base of every pydantic record in judge and calibration: unknown fields are errors.

Its own module (pydantic only) so that light modules such as ``calibration.options``, which
``judge calibrate --help`` reads, can use it without loading every record type."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Base for every record: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class Frozen(Strict):
    """A strict record that cannot be changed once made (options, sources, scored runs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
