"""``inspect-ai``: Inspect AI logs read by inspect_ai's own reader (``calibrated-judge[inspect]``).

The same cases as the ``inspect`` format (each sample goes through
:mod:`judge.traces.inspect_cases`), read with ``inspect_ai.log``: to compare the two readers,
or to read a log whose layout judge's reader does not know yet. Never detected: ask for it
with ``judge import --format inspect-ai``.

How inspect_ai 0.3.285 reads (NOTES of the research, verified on the test logs):
``read_eval_log_samples(path, all_samples_required=False, resolve_attachments=True)`` yields
the samples in dataset order (sample ids x epochs, taken from the header), but reopens the
zip for each sample (quadratic in the number of samples: about 1,230 s for 10,000) and needs
``eval.dataset.sample_ids`` (old logs lack it: then ``read_eval_log``, which holds the whole
log in memory, is used). It cannot read chunked samples: it finds none, which is reported as
an error here rather than as an empty log. Importing ``inspect_ai`` takes seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.traces import BaseImporter, ImportResult
from judge.traces.inspect_log import Collector, log_kind

INSTALL_HINT = "in the clone, pip install -e '.[inspect]' (inspect-ai 0.3.285)"


class InspectAIImporter(BaseImporter):
    """Inspect AI logs read with ``inspect_ai.log`` (slow; for comparison)."""

    description = (
        "Inspect AI eval logs read by inspect_ai's own reader (needs calibrated-judge[inspect]; "
        "slower; never detected)"
    )

    def load(self, path: Path) -> ImportResult:
        """Every sample inspect_ai reads from ``path`` as a case."""
        collector = Collector(str(path))
        try:
            from inspect_ai.log import read_eval_log
        except ImportError:
            collector.error("the inspect-ai format needs inspect_ai", hint=INSTALL_HINT)
            return collector.out
        try:
            header = read_eval_log(str(path), header_only=True)
        except Exception as exc:  # inspect_ai raises ValueError, ValidationError, ...
            collector.error(f"inspect_ai cannot read the log: {type(exc).__name__}: {exc}")
            return collector.out
        collector.header(_plain(header.model_dump(mode="python", exclude_none=True)))
        try:
            for index, sample in enumerate(_samples(path)):
                collector.sample(sample, f"samples[{index}]")
        except Exception as exc:
            collector.error(f"inspect_ai cannot read the samples: {type(exc).__name__}: {exc}")
        if collector.samples == 0 and log_kind(path) == "eval" and not collector.out.errors:
            total = header.results.total_samples if header.results else None
            if total:
                collector.error(
                    f"inspect_ai read no sample though the header counts {total} (it cannot "
                    "read the chunked sample layout)",
                    hint="use the inspect format (judge's reader)",
                )
        return collector.finish()


def _samples(path: Path) -> Iterator[dict[str, Any]]:
    """The log's samples as JSON-like dicts, as inspect_ai reads them."""
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    try:
        for sample in read_eval_log_samples(
            str(path), all_samples_required=False, resolve_attachments=True
        ):
            yield _plain(sample.model_dump(mode="python", exclude_none=True))
        return
    except RuntimeError as exc:
        if "sample_ids" not in str(exc):
            raise
    log = read_eval_log(str(path), resolve_attachments=True)
    for sample in log.samples or []:
        yield _plain(sample.model_dump(mode="python", exclude_none=True))


def _plain(value: Any) -> Any:
    """A model dump as the JSON it was read from: NaN kept (JSON logs hold it), other values
    as JSON types."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return value
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
