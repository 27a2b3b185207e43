"""The strict base of every pydantic record in judge and calibration: unknown fields are errors;
and the base of every object that holds something to close (a file, a connection pool, a server).

Its own module (pydantic only) so that light modules such as ``calibration.options``, which
``judge calibrate --help`` reads, can use it without loading every record type."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Base for every record: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class Frozen(Strict):
    """A strict record that cannot be changed once made (options, sources, scored runs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Closing:
    """Something that holds what :meth:`close` releases: used as a context manager, it is
    closed when the block ends."""

    def close(self) -> None:
        """Release what it holds."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
